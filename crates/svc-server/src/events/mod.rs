//! Authorization and workload events leave the request path through [`EventSink`]: a bounded
//! channel drained by one writer task that stores them in batches. An edge request collects its
//! events in a [`Recorder`] as it goes and hands them over together ([`EventSink::commit`]);
//! unless `SVC_EVENTS_FAIL_OPEN` is set, it answers only once the batch holding them is
//! committed, and with 503 when they cannot be stored within `SVC_EVENTS_COMMIT_TIMEOUT_MS`
//! (issue 19: no credential leaves without its record). The requests in flight share one
//! transaction (group commit): the writer takes everything queued while it was committing.
//! A request first reserves room in the queue ([`EventSink::reserve`]): one atomic update while
//! the queue has room; without room it waits (no thread blocked), so a sustained overload slows
//! the edge down to what the database can store (architecture invariant 2). Audit entries of
//! management writes do not pass here: they commit in the same transaction as the change they
//! describe.

pub mod audit;
pub mod object_storage;
pub mod shape;
pub mod streams;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, mpsc, oneshot, watch};

use crate::store::{EventRow, RequestRow, Store};

/// Queued requests at most (each with its ≤ 4 events of ~1 KB): ~16 MB of queue at worst.
const CAPACITY: usize = 4_096;
/// Events per transaction at most.
const BATCH: usize = 512;
/// Fail-open only: the longest an event waits in the writer for its batch to fill.
const LINGER: Duration = Duration::from_millis(5);
/// Fail closed: the longest the writer waits for the requests still in flight (admitted, not yet
/// handed over) to join a batch someone waits for. Without it a commit served one or two
/// requests at a time (+50% server CPU per request at c=10, docs/PERFORMANCE.md); with it the
/// requests in flight share one transaction, and a request that takes long (an upstream call)
/// delays the others' answers by this much at most.
const GROUP_WAIT: Duration = Duration::from_millis(2);
/// Fail closed: how many times in a row the writer lets the runtime's ready tasks run before it
/// seals a batch without a new request in it.
const YIELDS: u32 = 2;

enum Msg {
    /// One request's stored rows (one, unless it recorded more than a row holds), its number of
    /// events and, unless it does not wait (fail open), where to say whether they were stored.
    Events(Vec<RequestRow>, usize, Option<oneshot::Sender<bool>>),
    Flush(oneshot::Sender<()>),
}

/// The events one edge request records, in order, until it hands them to
/// [`EventSink::commit`].
#[derive(Default)]
pub struct Recorder {
    rows: Vec<EventRow>,
    /// What the request's authorization events share, stored once ([`RequestRow::shared`]).
    shared: Option<Arc<str>>,
    /// The request's client port, kept out of its stored template with its `contextId`
    /// ([`RequestRow::context`]).
    port: Option<u16>,
}

impl Recorder {
    pub fn push(&mut self, e: EventRow) {
        debug_assert_eq!(
            crate::store::v7_millis(&e.id),
            Some(e.ts),
            "an event's id is a v7 UUID of its own time"
        );
        self.rows.push(e);
    }

    /// The id of the next event of the request: time-ordered (v7, `util::uuid_v7`) for its
    /// first, and the first's with the event's index in its last hex digit for the others
    /// ([`crate::store::nth_event_id`]): a request row stores one id, the views derive the rest.
    pub fn next_event_id(&mut self, ts: i64) -> uuid::Uuid {
        match self.rows.first() {
            // Past a row's worth of events the next row starts with an id of its own.
            Some(first) if self.rows.len() < crate::store::EVENTS_PER_REQUEST => {
                crate::store::nth_event_id(first.id, self.rows.len())
            }
            _ => crate::util::uuid_v7(ts),
        }
    }

    /// Sets, once per request (`make` runs for its first authorization event only), the JSON
    /// object its authorization event bodies are stored without and get back when read (their
    /// `meta.contextId`, `clientRequest`, `environment`).
    pub fn share_once(&mut self, make: impl FnOnce() -> Arc<str>) {
        self.shared.get_or_insert_with(make);
    }

    /// Sets the request's client port (its events' `clientRequest.network.sourcePort`, a
    /// workload event's `clientWorkloadPort`), stored in its row rather than its template with
    /// its `contextId` (`meta.contextId`, a workload event's `connectionId`): the one its first
    /// event's id gives ([`crate::store::context_of`]).
    pub fn client_port(&mut self, source_port: u16) {
        self.port = Some(source_port);
    }

    /// The request's `contextId` and client port, once its first event is recorded.
    fn request_context(&self) -> Option<crate::store::RequestContext> {
        let first = self.rows.first()?;
        Some(crate::store::RequestContext {
            context_id: crate::store::context_of(first.id),
            source_port: self.port?,
        })
    }
}

/// How answers wait for their events (`SVC_EVENTS_FAIL_OPEN`, `SVC_EVENTS_COMMIT_TIMEOUT_MS`).
#[derive(Clone, Copy, Debug)]
pub struct Durability {
    pub fail_open: bool,
    pub commit_timeout: Duration,
}

impl Default for Durability {
    fn default() -> Self {
        Durability {
            fail_open: false,
            commit_timeout: Duration::from_secs(5),
        }
    }
}

pub struct EventSink {
    tx: mpsc::Sender<Msg>,
    rx: Mutex<Option<mpsc::Receiver<Msg>>>,
    store: Store,
    durability: Durability,
    dropped: Arc<AtomicU64>,
    written: Arc<AtomicU64>,
    /// Transactions that stored a batch.
    commits: Arc<AtomicU64>,
    /// Events put on the queue since start (counted after they are on it).
    enqueued: AtomicU64,
    /// Events the writer has taken off the queue and handled (stored, or given up on), in queue
    /// order: once it reaches a count read from `enqueued`, every event queued before that read
    /// is handled. What [`EventSink::caught_up`] waits for.
    handled: Arc<watch::Sender<u64>>,
    waited: AtomicU64,
    /// Queue slots promised to requests in flight (released when their [`Room`] drops): also
    /// how many requests the writer can expect to hand over events soon.
    reserved: Arc<AtomicUsize>,
    /// Signalled when room may have come free: by the writer each time it has taken requests off
    /// the queue, and by a request giving its room back while others wait.
    taken: Arc<Notify>,
    /// Requests waiting in [`EventSink::reserve`].
    waiting: AtomicUsize,
}

/// Queue room a request holds until it has handed over its events (see
/// [`EventSink::reserve`]).
pub struct Room<'a> {
    sink: &'a EventSink,
}

impl Drop for Room<'_> {
    fn drop(&mut self) {
        // SeqCst with `reserve`'s count of waiters: either this sees the waiter, or the waiter's
        // check sees the room given back.
        self.sink.reserved.fetch_sub(1, Ordering::SeqCst);
        // Room held by requests in flight (an upstream call can keep one for seconds) may be
        // what others wait for, with no event coming to wake them.
        if self.sink.waiting.load(Ordering::SeqCst) > 0 {
            self.sink.taken.notify_waiters();
        }
    }
}

impl EventSink {
    pub fn new(store: Store, durability: Durability) -> EventSink {
        let (tx, rx) = mpsc::channel(CAPACITY);
        EventSink {
            tx,
            rx: Mutex::new(Some(rx)),
            store,
            durability,
            dropped: Arc::new(AtomicU64::new(0)),
            written: Arc::new(AtomicU64::new(0)),
            commits: Arc::new(AtomicU64::new(0)),
            enqueued: AtomicU64::new(0),
            handled: Arc::new(watch::Sender::new(0)),
            waited: AtomicU64::new(0),
            reserved: Arc::new(AtomicUsize::new(0)),
            taken: Arc::new(Notify::new()),
            waiting: AtomicUsize::new(0),
        }
    }

    /// Reserves the queue slot of one request's events, waiting (asynchronously) while the queue
    /// has none free; the slot is held until the returned [`Room`] drops, so the events handed
    /// over meanwhile find it. One atomic update while the writer keeps up.
    ///
    /// The slots are counted here, not taken from the channel: waiting on the channel for them
    /// (`reserve_many`) queued the waiter for the slots the writer frees, and requests already
    /// admitted then found the queue full and lost their events (seen with a starved writer).
    pub async fn reserve(&self) -> Room<'_> {
        if let Some(room) = self.try_reserve() {
            return room;
        }
        let w = self.waited.fetch_add(1, Ordering::Relaxed) + 1;
        if w.is_power_of_two() {
            tracing::warn!(
                waits_total = w,
                "event queue full: edge requests wait for the event writer"
            );
        }
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(&self.waiting);
        loop {
            // Registered before the check, so a signal between the two is not missed.
            let taken = self.taken.notified();
            tokio::pin!(taken);
            taken.as_mut().enable();
            if let Some(room) = self.try_reserve() {
                return room;
            }
            taken.await;
        }
    }

    fn try_reserve(&self) -> Option<Room<'_>> {
        let mut r = self.reserved.load(Ordering::SeqCst);
        while self.tx.capacity() > r {
            match self
                .reserved
                .compare_exchange(r, r + 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return Some(Room { sink: self }),
                Err(now) => r = now,
            }
        }
        None
    }

    /// Hands a request's events to the writer and, unless the sink is fail-open, waits until
    /// they are committed: `true` when they are (or there were none; or fail-open and queued),
    /// `false` when they could not be stored within the commit timeout — the request must then
    /// answer 503 and hand out nothing.
    pub async fn commit(&self, room: Room<'_>, rec: Recorder) -> bool {
        if rec.rows.is_empty() {
            return true;
        }
        // The database cannot store them now (issue 32): answer 503 at once rather than after
        // the commit timeout. One relaxed load.
        if !self.accepting() {
            return false;
        }
        let n = rec.rows.len() as u64;
        // The rows are built here, on the request's own thread, not by the one writer.
        let requests = RequestRow::group(&rec.rows, rec.shared.as_ref(), rec.request_context());
        let (waiter, done) = if self.durability.fail_open {
            (None, None)
        } else {
            let (tx, rx) = oneshot::channel();
            (Some(tx), Some(rx))
        };
        // The reserved slot is ours: the send cannot find the queue full.
        let sent = self.tx.try_send(Msg::Events(requests, rec.rows.len(), waiter)).is_ok();
        drop(room);
        if !sent {
            self.lost(n);
            return self.durability.fail_open;
        }
        self.enqueued.fetch_add(n, Ordering::SeqCst);
        let Some(done) = done else { return true };
        match tokio::time::timeout(self.durability.commit_timeout, done).await {
            Ok(Ok(stored)) => stored,
            _ => {
                tracing::error!("edge events not committed in time: answering 503");
                false
            }
        }
    }

    /// Whether an answer can wait for its events now: fail-open, or the database can be written
    /// (`store::Health`; one or two relaxed loads). An edge handler asks before it does any work
    /// (issue 32: `/edge/v1/credentials` answers 503 within a second of the database's loss).
    pub fn accepting(&self) -> bool {
        self.durability.fail_open || !self.store.health().refuses_writes()
    }

    fn lost(&self, n: u64) {
        crate::metrics::event_dropped();
        let before = self.dropped.fetch_add(n, Ordering::Relaxed);
        if (before + n).is_power_of_two() || before == 0 {
            tracing::warn!(dropped_total = before + n, "event queue full: events dropped");
        }
    }

    /// Events queued and not yet handled by the writer (the metrics' queue depth).
    pub fn depth(&self) -> u64 {
        self.enqueued
            .load(Ordering::SeqCst)
            .saturating_sub(*self.handled.borrow())
    }

    /// Events dropped (queue full, or not stored), and events written, since start.
    pub fn counters(&self) -> (u64, u64) {
        (
            self.dropped.load(Ordering::Relaxed),
            self.written.load(Ordering::Relaxed),
        )
    }

    /// Transactions that stored a batch, since start.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Waits (at most `limit`) until the writer has handled every event queued before this call:
    /// what an event read does first, so that it shows the events of the edge requests already
    /// answered (in fail-open mode; otherwise they are stored before the answer). Takes no room in
    /// the queue and sends the writer nothing. `false` when `limit` passed.
    pub async fn caught_up(&self, limit: Duration) -> bool {
        let target = self.enqueued.load(Ordering::SeqCst);
        let mut handled = self.handled.subscribe();
        tokio::time::timeout(limit, handled.wait_for(|n| *n >= target))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Waits until everything queued so far is written, cutting the writer's linger short
    /// (shutdown, tests).
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Msg::Flush(tx)).await.is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(10), rx).await;
        }
    }

    /// Spawns the writer task (once).
    pub fn start(&self) {
        let Some(mut rx) = self.rx.lock().ok().and_then(|mut g| g.take()) else {
            return;
        };
        let writer = Writer {
            store: self.store.clone(),
            written: self.written.clone(),
            committed: self.commits.clone(),
            dropped: self.dropped.clone(),
            batch: Vec::with_capacity(BATCH),
            events: 0,
            commits: Vec::new(),
            flushes: Vec::new(),
        };
        let handled = self.handled.clone();
        let taken = self.taken.clone();
        let in_flight = self.reserved.clone();
        tokio::spawn(async move {
            let mut w = writer;
            while let Some(first) = rx.recv().await {
                // Group commit. A batch someone waits for takes what is queued and then, while
                // admitted requests are still computing their answers, waits for them (each is
                // one message), at most GROUP_WAIT: the requests in flight share one commit. A
                // batch nobody waits for (fail-open) lingers instead, a sleep rather than a wait
                // on the queue, for fewer, fuller transactions (docs/PERFORMANCE.md).
                let started = tokio::time::Instant::now();
                let mut next = Some(first);
                let mut lingered = false;
                let mut quiet = 0;
                loop {
                    if let Some(m) = next.take() {
                        w.take(m);
                        quiet = 0;
                    }
                    if w.events >= BATCH || !w.flushes.is_empty() {
                        break;
                    }
                    if let Ok(m) = rx.try_recv() {
                        next = Some(m);
                        continue;
                    }
                    if !w.commits.is_empty() {
                        let left = GROUP_WAIT.saturating_sub(started.elapsed());
                        if left.is_zero() {
                            break;
                        }
                        // Requests that are ready to run (their bytes arrived, their answer
                        // is being computed) go first: sealing the batch at once, as the task
                        // woken by the first request's events, made a commit per request or two.
                        if quiet < YIELDS {
                            quiet += 1;
                            tokio::task::yield_now().await;
                            continue;
                        }
                        if in_flight.load(Ordering::SeqCst) == 0 {
                            break;
                        }
                        match tokio::time::timeout(left, rx.recv()).await {
                            Ok(Some(m)) => next = Some(m),
                            _ => break,
                        }
                    } else if !lingered {
                        lingered = true;
                        tokio::time::sleep_until(started + LINGER).await;
                    } else {
                        break;
                    }
                }
                // The batch's slots are free again: requests waiting for room may go on.
                taken.notify_waiters();
                let n = w.write().await;
                handled.send_modify(|h| *h += n);
            }
        });
    }
}

/// The writer task's batch: the rows, who waits for their commit, who waits for a flush.
struct Writer {
    store: Store,
    written: Arc<AtomicU64>,
    committed: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
    batch: Vec<RequestRow>,
    /// Events in `batch`.
    events: usize,
    /// Requests waiting for the batch's commit, with their number of rows.
    commits: Vec<(oneshot::Sender<bool>, usize)>,
    flushes: Vec<oneshot::Sender<()>>,
}

impl Writer {
    fn take(&mut self, m: Msg) {
        match m {
            Msg::Events(rows, events, waiter) => {
                if let Some(w) = waiter {
                    self.commits.push((w, rows.len()));
                }
                self.batch.extend(rows);
                self.events += events;
            }
            Msg::Flush(f) => self.flushes.push(f),
        }
    }

    /// Writes the batch (with retries while its requests can still wait), tells every waiter,
    /// and returns how many events it handled.
    async fn write(&mut self) -> u64 {
        let n = self.events as u64;
        if n > 0 {
            let mut stored = false;
            for attempt in 1..=4u64 {
                // A request that gave up (its timeout answered 503) is not waited for, but its
                // events still describe what happened: they stay in the batch.
                let started = std::time::Instant::now();
                let r = self.store.insert_requests(&self.batch).await;
                crate::metrics::event_batch(self.events, r.is_ok(), attempt == 4, started.elapsed());
                match r {
                    Ok(()) => {
                        self.written.fetch_add(n, Ordering::Relaxed);
                        self.committed.fetch_add(1, Ordering::Relaxed);
                        stored = true;
                        break;
                    }
                    // Not again once the database is known unusable: its requests answer 503 now.
                    Err(e)
                        if attempt < 4
                            && !self.all_gave_up()
                            && !(e.unavailable() && self.store.health().refuses_writes()) =>
                    {
                        tracing::warn!(error = %e, attempt, "event batch write failed; retrying");
                        tokio::time::sleep(Duration::from_millis(100 * attempt)).await;
                    }
                    Err(e) => {
                        tracing::error!(error = %e, lost = n, "event batch could not be written");
                        self.dropped.fetch_add(n, Ordering::Relaxed);
                        break;
                    }
                }
            }
            for (w, _) in self.commits.drain(..) {
                let _ = w.send(stored);
            }
            self.batch.clear();
            self.events = 0;
        }
        for f in self.flushes.drain(..) {
            let _ = f.send(());
        }
        n
    }

    /// Every request of the batch waited for its commit and has answered 503 meanwhile.
    fn all_gave_up(&self) -> bool {
        !self.commits.is_empty()
            && self.commits.iter().map(|(_, n)| n).sum::<usize>() == self.batch.len()
            && self.commits.iter().all(|(w, _)| w.is_closed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::EventTable;

    fn row() -> EventRow {
        let now = crate::clock::now_millis();
        EventRow {
            table: EventTable::Authorization,
            id: crate::util::uuid_v7(now),
            rs: crate::domain::DEFAULT_RESOURCE_SET,
            ts: now,
            event_type: "access.request",
            severity: "Info",
            result: Some("Received"),
            client_ip: None,
            client_workload: None,
            server_workload: None,
            app_protocol: None,
            user_id: None,
            search: None,
            body: "{}".into(),
        }
    }

    fn rec(n: usize) -> Recorder {
        let mut r = Recorder::default();
        for _ in 0..n {
            r.push(row());
        }
        r
    }

    const OPEN: Durability = Durability {
        fail_open: true,
        commit_timeout: Duration::from_secs(5),
    };

    async fn sink(d: Durability) -> (EventSink, std::path::PathBuf) {
        let path = std::env::temp_dir().join(format!("svc-events-{}.db", crate::util::uuid_v4()));
        let store = Store::open(&crate::config::DatabaseUrl::Sqlite(path.clone()))
            .await
            .unwrap();
        (EventSink::new(store, d), path)
    }

    fn remove(path: &std::path::Path) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }

    /// Hands `n` events over as one request, fail-open (returns at once).
    async fn queue(sink: &EventSink, n: usize) {
        let room = sink.reserve().await;
        assert!(sink.commit(room, rec(n)).await);
    }

    const WAIT: Duration = Duration::from_millis(200);

    #[tokio::test]
    async fn a_request_answers_only_once_its_events_are_committed() {
        let (sink, path) = sink(Durability::default()).await;
        sink.start();
        let sink = Arc::new(sink);
        // Ten requests at once: each returns after its own events are stored, and they share
        // transactions.
        let all = futures_util::future::join_all((0..10).map(|_| {
            let sink = sink.clone();
            async move {
                let room = sink.reserve().await;
                let ok = sink.commit(room, rec(4)).await;
                (ok, sink.counters().1)
            }
        }))
        .await;
        for (ok, written) in all {
            assert!(ok, "stored");
            assert!(written >= 4, "its events were written before it returned");
        }
        assert_eq!(sink.counters(), (0, 40));
        remove(&path);
    }

    #[tokio::test]
    async fn requests_in_flight_share_one_commit() {
        let (sink, path) = sink(Durability::default()).await;
        sink.start();
        let sink = Arc::new(sink);
        // Eight requests admitted at once hand over their events one after another, as they
        // finish computing: the writer waits for those still in flight instead of committing
        // each alone.
        let rooms: Vec<Room<'_>> = futures_util::future::join_all((0..8).map(|_| sink.reserve())).await;
        let all = futures_util::future::join_all(rooms.into_iter().enumerate().map(|(i, room)| {
            let sink = &sink;
            async move {
                tokio::time::sleep(Duration::from_micros(100 * i as u64)).await;
                sink.commit(room, rec(4)).await
            }
        }))
        .await;
        assert!(all.into_iter().all(|ok| ok));
        assert_eq!(sink.counters(), (0, 32));
        assert!(
            sink.commits() <= 2,
            "{} commits for 8 requests in flight",
            sink.commits()
        );
        remove(&path);
    }

    #[tokio::test]
    async fn a_commit_the_writer_does_not_make_in_time_fails_the_request() {
        let d = Durability {
            fail_open: false,
            commit_timeout: WAIT,
        };
        let (sink, path) = sink(d).await;
        // The writer is stuck (not started): the request gives up after the bound.
        let room = sink.reserve().await;
        let started = std::time::Instant::now();
        assert!(
            !sink.commit(room, rec(2)).await,
            "not stored in time: the request answers 503"
        );
        assert!(started.elapsed() >= WAIT);
        // A request without events does not wait at all.
        let room = sink.reserve().await;
        assert!(sink.commit(room, Recorder::default()).await);
        remove(&path);
    }

    #[tokio::test]
    async fn events_sent_while_the_writer_lingers_join_its_batch_and_a_flush_returns() {
        let (sink, path) = sink(OPEN).await;
        sink.start();
        queue(&sink, 1).await;
        // The writer took the first event and sleeps out its linger; these come in meanwhile.
        tokio::time::sleep(LINGER / 5).await;
        queue(&sink, 2).await;
        tokio::time::timeout(Duration::from_secs(5), sink.flush())
            .await
            .expect("a flush returns once the batch is written");
        assert_eq!(sink.counters(), (0, 3));
        // And again with nothing queued: the flush alone.
        tokio::time::timeout(Duration::from_secs(5), sink.flush())
            .await
            .expect("a flush with nothing queued returns");
        sink.store.close().await;
        remove(&path);
    }

    #[tokio::test]
    async fn a_reader_waits_for_the_writer_without_taking_queue_room() {
        let (sink, path) = sink(OPEN).await;
        assert!(sink.caught_up(WAIT).await, "nothing queued: caught up at once");
        queue(&sink, 2).await;
        // The writer has not started: the reader gives up after its limit and took no slot.
        let room = sink.tx.capacity();
        assert!(!sink.caught_up(WAIT).await);
        assert_eq!(sink.tx.capacity(), room);
        sink.start();
        assert!(sink.caught_up(Duration::from_secs(10)).await);
        assert_eq!(sink.counters(), (0, 2), "both written by the time the reader goes on");
        // Many readers at once share the writer's progress.
        queue(&sink, 1).await;
        let readers = futures_util::future::join_all((0..20).map(|_| sink.caught_up(Duration::from_secs(10)))).await;
        assert!(readers.into_iter().all(|ok| ok));
        assert_eq!(sink.counters(), (0, 3));
        remove(&path);
    }

    #[tokio::test]
    async fn edge_requests_wait_for_room_instead_of_dropping_events() {
        let (sink, path) = sink(OPEN).await;
        let queued = CAPACITY - 1;
        for _ in 0..queued {
            queue(&sink, 1).await;
        }
        let last = sink.reserve().await;
        // The writer has not started: no room for another request, which waits.
        assert!(
            tokio::time::timeout(WAIT, sink.reserve()).await.is_err(),
            "a full queue makes the request wait"
        );
        assert!(sink.commit(last, rec(4)).await);
        sink.start();
        let room = tokio::time::timeout(Duration::from_secs(30), sink.reserve())
            .await
            .expect("room once the writer drains the queue");
        assert!(sink.commit(room, rec(4)).await);
        sink.flush().await;
        assert_eq!(
            sink.counters(),
            (0, queued as u64 + 8),
            "nothing dropped, everything written"
        );
        remove(&path);
    }

    #[tokio::test]
    async fn room_given_back_by_a_request_wakes_a_waiting_one() {
        let (sink, path) = sink(OPEN).await;
        // Requests in flight (e.g. in a slow upstream call) hold all the room; nothing is queued,
        // so the writer has nothing to take and would never signal.
        let rooms: Vec<Room<'_>> = futures_util::future::join_all((0..CAPACITY).map(|_| sink.reserve())).await;
        let waiter = sink.reserve();
        tokio::pin!(waiter);
        assert!(
            tokio::time::timeout(WAIT, waiter.as_mut()).await.is_err(),
            "no room while every slot is reserved"
        );
        let mut rooms = rooms;
        rooms.pop();
        tokio::time::timeout(WAIT, waiter)
            .await
            .expect("the room given back goes to the waiting request");
        drop(rooms);
        remove(&path);
    }

    #[tokio::test]
    async fn a_waiting_request_never_takes_the_room_of_one_already_admitted() {
        let (sink, path) = sink(OPEN).await;
        for _ in 0..CAPACITY - 2 {
            queue(&sink, 1).await;
        }
        let sink = Arc::new(sink);
        let (a, b) = (sink.reserve().await, sink.reserve().await);
        let waiter = {
            let sink = sink.clone();
            tokio::spawn(async move {
                let _room = sink.reserve().await;
            })
        };
        tokio::time::sleep(WAIT).await;
        assert!(!waiter.is_finished(), "no room for a third request");
        // The two admitted requests hand over their events: none is lost.
        assert!(sink.commit(a, rec(4)).await);
        assert!(sink.commit(b, rec(4)).await);
        assert_eq!(sink.counters().0, 0, "no event of an admitted request dropped");
        waiter.abort();
        remove(&path);
    }
}
