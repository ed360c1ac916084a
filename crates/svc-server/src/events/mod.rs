//! Authorization and workload events leave the request path through [`EventSink`]: a bounded
//! channel drained by one writer task that inserts in batches. An edge request first reserves
//! room in the queue for the events it may record ([`EventSink::reserve`]); while the queue has
//! room that is one atomic update, and when it has none the request waits (without blocking a
//! thread) until the writer has taken a batch, so a sustained overload slows the edge down to
//! what the database can store instead of losing events (architecture invariant 2). An event
//! recorded without a reservation, on a full queue, is dropped, counted, and a log line says
//! so. Audit entries of management writes do not pass here: they commit in the same transaction
//! as the change they describe.

pub mod audit;
pub mod object_storage;
pub mod shape;
pub mod streams;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, mpsc, oneshot, watch};

use crate::store::{EventRow, Store};

/// Queued events at most: ~1 KB each, so the queue's memory stays around 20 MB.
const CAPACITY: usize = 16_384;
const BATCH: usize = 512;
/// The longest an event waits in the writer for its batch to fill.
const LINGER: std::time::Duration = std::time::Duration::from_millis(5);

enum Msg {
    Event(Box<EventRow>),
    Flush(oneshot::Sender<()>),
}

pub struct EventSink {
    tx: mpsc::Sender<Msg>,
    rx: Mutex<Option<mpsc::Receiver<Msg>>>,
    store: Store,
    dropped: Arc<AtomicU64>,
    written: Arc<AtomicU64>,
    /// Events put on the queue since start (counted after they are on it).
    enqueued: AtomicU64,
    /// Events the writer has taken off the queue and handled (stored, or given up on after its
    /// retries), in queue order: once it reaches a count read from `enqueued`, every event
    /// queued before that read is handled. What [`EventSink::caught_up`] waits for.
    handled: Arc<watch::Sender<u64>>,
    waited: AtomicU64,
    /// Queue slots promised to requests in flight (released when their [`Room`] drops).
    reserved: AtomicUsize,
    /// Signalled when room may have come free: by the writer each time it has taken events off
    /// the queue, and by a request giving its room back while others wait.
    taken: Arc<Notify>,
    /// Requests waiting in [`EventSink::reserve`].
    waiting: AtomicUsize,
}

/// Queue room a request holds for its events until it has recorded them (see
/// [`EventSink::reserve`]).
pub struct Room<'a> {
    sink: &'a EventSink,
    n: usize,
}

impl Drop for Room<'_> {
    fn drop(&mut self) {
        // SeqCst with `reserve`'s count of waiters: either this sees the waiter, or the waiter's
        // check sees the room given back.
        self.sink.reserved.fetch_sub(self.n, Ordering::SeqCst);
        // Room held by requests in flight (an upstream call can keep one for seconds) may be
        // what others wait for, with no event coming to wake them.
        if self.sink.waiting.load(Ordering::SeqCst) > 0 {
            self.sink.taken.notify_waiters();
        }
    }
}

impl EventSink {
    pub fn new(store: Store) -> EventSink {
        let (tx, rx) = mpsc::channel(CAPACITY);
        EventSink {
            tx,
            rx: Mutex::new(Some(rx)),
            store,
            dropped: Arc::new(AtomicU64::new(0)),
            written: Arc::new(AtomicU64::new(0)),
            enqueued: AtomicU64::new(0),
            handled: Arc::new(watch::Sender::new(0)),
            waited: AtomicU64::new(0),
            reserved: AtomicUsize::new(0),
            taken: Arc::new(Notify::new()),
            waiting: AtomicUsize::new(0),
        }
    }

    /// Reserves queue room for the `n` events a request may record, waiting (asynchronously)
    /// while the queue lacks it; the room is held until the returned [`Room`] drops, so every
    /// event recorded meanwhile finds a free slot. One atomic update while the writer keeps up.
    ///
    /// The slots are counted here, not taken from the channel: waiting on the channel for them
    /// (`reserve_many`) queued the waiter for the slots the writer frees, and requests already
    /// admitted then found the queue full and lost their events (seen with a starved writer).
    pub async fn reserve(&self, n: usize) -> Room<'_> {
        assert!(n <= CAPACITY, "a request records at most a handful of events");
        if let Some(room) = self.try_reserve(n) {
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
            if let Some(room) = self.try_reserve(n) {
                return room;
            }
            taken.await;
        }
    }

    fn try_reserve(&self, n: usize) -> Option<Room<'_>> {
        let mut r = self.reserved.load(Ordering::SeqCst);
        while self.tx.capacity() >= r + n {
            match self
                .reserved
                .compare_exchange(r, r + n, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return Some(Room { sink: self, n }),
                Err(now) => r = now,
            }
        }
        None
    }

    /// Queues an event without waiting.
    pub fn record(&self, e: EventRow) {
        debug_assert_eq!(
            crate::store::v7_millis(&e.id),
            Some(e.ts),
            "an event's id is a v7 UUID of its own time"
        );
        if self.tx.try_send(Msg::Event(Box::new(e))).is_ok() {
            self.enqueued.fetch_add(1, Ordering::SeqCst);
        } else {
            crate::metrics::event_dropped();
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(dropped_total = n, "event queue full: events dropped");
            }
        }
    }

    /// Events queued and not yet handled by the writer (the metrics' queue depth).
    pub fn depth(&self) -> u64 {
        self.enqueued
            .load(Ordering::SeqCst)
            .saturating_sub(*self.handled.borrow())
    }

    /// Events dropped because the queue was full, and events written, since start.
    pub fn counters(&self) -> (u64, u64) {
        (
            self.dropped.load(Ordering::Relaxed),
            self.written.load(Ordering::Relaxed),
        )
    }

    /// Waits (at most `limit`) until the writer has handled every event queued before this call:
    /// what an event read does first, so that it shows the events of the edge requests already
    /// answered. Takes no room in the queue and sends the writer nothing (its batching stays as
    /// it is): any number of readers share the writer's progress. `false` when `limit` passed.
    pub async fn caught_up(&self, limit: std::time::Duration) -> bool {
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
            let _ = tokio::time::timeout(std::time::Duration::from_secs(10), rx).await;
        }
    }

    /// Spawns the writer task (once).
    pub fn start(&self) {
        let Some(mut rx) = self.rx.lock().ok().and_then(|mut g| g.take()) else {
            return;
        };
        let store = self.store.clone();
        let written = self.written.clone();
        let handled = self.handled.clone();
        let taken = self.taken.clone();
        tokio::spawn(async move {
            let mut batch: Vec<EventRow> = Vec::with_capacity(BATCH);
            let mut waiters: Vec<oneshot::Sender<()>> = Vec::new();
            while let Some(first) = rx.recv().await {
                // Linger: a batch is written when it is full, when a flush is asked for, or
                // LINGER after its first event. Fewer, fuller transactions cost the database thread
                // far less per event than one small transaction per wake-up (docs/PERFORMANCE.md).
                // The linger is a sleep, not a wait on the queue: waiting on it woke this task for
                // every event sent meanwhile (up to four per `/credentials` request); what came
                // in is taken when the sleep ends.
                let deadline = tokio::time::Instant::now() + LINGER;
                let mut next = Some(first);
                let mut lingered = false;
                while let Some(m) = next.take() {
                    match m {
                        Msg::Event(e) => batch.push(*e),
                        Msg::Flush(w) => waiters.push(w),
                    }
                    if batch.len() >= BATCH || !waiters.is_empty() {
                        break;
                    }
                    next = match rx.try_recv() {
                        Ok(m) => Some(m),
                        Err(_) if !lingered => {
                            lingered = true;
                            tokio::time::sleep_until(deadline).await;
                            rx.try_recv().ok()
                        }
                        Err(_) => None,
                    };
                }
                // The batch's slots are free again: requests waiting for room may go on.
                taken.notify_waiters();
                if !batch.is_empty() {
                    write_batch(&store, &batch, &written).await;
                    let n = batch.len() as u64;
                    handled.send_modify(|h| *h += n);
                    batch.clear();
                }
                for w in waiters.drain(..) {
                    let _ = w.send(());
                }
            }
        });
    }
}

async fn write_batch(store: &Store, batch: &[EventRow], written: &AtomicU64) {
    for attempt in 1..=4u64 {
        let started = std::time::Instant::now();
        let r = store.insert_events(batch).await;
        crate::metrics::event_batch(batch.len(), r.is_ok(), attempt == 4, started.elapsed());
        match r {
            Ok(()) => {
                written.fetch_add(batch.len() as u64, Ordering::Relaxed);
                return;
            }
            Err(e) if attempt < 4 => {
                tracing::warn!(error = %e, attempt, "event batch write failed; retrying");
                tokio::time::sleep(std::time::Duration::from_millis(200 * attempt)).await;
            }
            Err(e) => {
                tracing::error!(error = %e, lost = batch.len(), "event batch could not be written")
            }
        }
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

    async fn sink() -> (EventSink, std::path::PathBuf) {
        let path = std::env::temp_dir().join(format!("svc-events-{}.db", crate::util::uuid_v4()));
        let store = Store::open(&crate::config::DatabaseUrl::Sqlite(path.clone()))
            .await
            .unwrap();
        (EventSink::new(store), path)
    }

    fn remove(path: &std::path::Path) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }

    const WAIT: std::time::Duration = std::time::Duration::from_millis(200);

    #[tokio::test]
    async fn events_sent_while_the_writer_lingers_join_its_batch_and_a_flush_returns() {
        let (sink, path) = sink().await;
        sink.start();
        sink.record(row());
        // The writer took the first event and sleeps out its linger; these come in meanwhile.
        tokio::time::sleep(LINGER / 5).await;
        sink.record(row());
        sink.record(row());
        tokio::time::timeout(std::time::Duration::from_secs(5), sink.flush())
            .await
            .expect("a flush returns once the batch is written");
        assert_eq!(sink.counters(), (0, 3));
        // And again with nothing queued: the flush alone.
        tokio::time::timeout(std::time::Duration::from_secs(5), sink.flush())
            .await
            .expect("a flush with nothing queued returns");
        sink.store.close().await;
        remove(&path);
    }

    #[tokio::test]
    async fn a_reader_waits_for_the_writer_without_taking_queue_room() {
        let (sink, path) = sink().await;
        assert!(sink.caught_up(WAIT).await, "nothing queued: caught up at once");
        sink.record(row());
        sink.record(row());
        // The writer has not started: the reader gives up after its limit and took no slot.
        let room = sink.tx.capacity();
        assert!(!sink.caught_up(WAIT).await);
        assert_eq!(sink.tx.capacity(), room);
        sink.start();
        assert!(sink.caught_up(std::time::Duration::from_secs(10)).await);
        assert_eq!(sink.counters(), (0, 2), "both written by the time the reader goes on");
        // Many readers at once share the writer's progress.
        sink.record(row());
        let readers =
            futures_util::future::join_all((0..20).map(|_| sink.caught_up(std::time::Duration::from_secs(10)))).await;
        assert!(readers.into_iter().all(|ok| ok));
        assert_eq!(sink.counters(), (0, 3));
        remove(&path);
    }

    #[tokio::test]
    async fn edge_requests_wait_for_room_instead_of_dropping_events() {
        let (sink, path) = sink().await;
        let queued = CAPACITY - 2;
        for _ in 0..queued {
            sink.record(row());
        }
        // The writer has not started: no room for a request's 4 events, the request waits.
        assert!(
            tokio::time::timeout(WAIT, sink.reserve(4)).await.is_err(),
            "a full queue makes the request wait"
        );
        sink.start();
        let room = tokio::time::timeout(std::time::Duration::from_secs(30), sink.reserve(4))
            .await
            .expect("room once the writer drains the queue");
        for _ in 0..4 {
            sink.record(row());
        }
        drop(room);
        sink.flush().await;
        assert_eq!(
            sink.counters(),
            (0, queued as u64 + 4),
            "nothing dropped, everything written"
        );
        remove(&path);
    }

    #[tokio::test]
    async fn room_given_back_by_a_request_wakes_a_waiting_one() {
        let (sink, path) = sink().await;
        // Requests in flight (e.g. in a slow upstream call) hold all the room; nothing is queued,
        // so the writer has nothing to take and would never signal.
        let rooms: Vec<Room<'_>> = futures_util::future::join_all((0..CAPACITY / 4).map(|_| sink.reserve(4))).await;
        let waiter = sink.reserve(4);
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
        let (sink, path) = sink().await;
        for _ in 0..CAPACITY - 8 {
            sink.record(row());
        }
        let sink = Arc::new(sink);
        let (a, b) = (sink.reserve(4).await, sink.reserve(4).await);
        let waiter = {
            let sink = sink.clone();
            tokio::spawn(async move {
                let _room = sink.reserve(4).await;
            })
        };
        tokio::time::sleep(WAIT).await;
        assert!(!waiter.is_finished(), "no room for a third request");
        // The writer takes two events off the queue while the third request waits.
        let mut rx = sink.rx.lock().unwrap().take().unwrap();
        for _ in 0..2 {
            rx.recv().await.unwrap();
        }
        sink.taken.notify_waiters();
        tokio::time::sleep(WAIT).await;
        assert!(!waiter.is_finished(), "2 free slots are not room for 4 events");
        // The two admitted requests record their events: none is lost.
        for _ in 0..8 {
            sink.record(row());
        }
        assert_eq!(sink.counters().0, 0, "no event of an admitted request dropped");
        drop((a, b));
        waiter.abort();
        remove(&path);
    }
}
