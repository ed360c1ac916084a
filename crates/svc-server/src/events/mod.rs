//! Authorization and workload events leave the request path through [`EventSink`]: a bounded
//! channel drained by one writer task that inserts in batches. A request never waits for the
//! database while the queue has room; when it is nearly full, an edge request waits (without
//! blocking a thread) for the writer to take a batch before it starts, so a sustained overload
//! slows the edge down to what the database can store instead of losing events (architecture
//! invariant 2). Should the queue still be full, the event is dropped, counted, and a log line
//! says so. Audit entries of management writes do not pass here: they commit in the same
//! transaction as the change they describe.

pub mod audit;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};

use crate::store::{EventRow, Store};

/// Queued events at most: ~1 KB each, so the queue's memory stays around 20 MB.
const CAPACITY: usize = 16_384;
/// Free slots an edge request waits for before it starts (it records at most a handful of
/// events; the margin covers the requests already past the wait).
const ROOM: usize = 256;
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
    waited: AtomicU64,
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
            waited: AtomicU64::new(0),
        }
    }

    /// Waits until the queue has room for a request's events (see the module comment). Free
    /// while the writer keeps up.
    pub async fn wait_for_room(&self) {
        if self.tx.capacity() >= ROOM {
            return;
        }
        let n = self.waited.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_power_of_two() {
            tracing::warn!(
                waits_total = n,
                "event queue nearly full: edge requests wait for the event writer"
            );
        }
        // The permits are given back at once: they only mark the moment the writer has taken
        // enough events off the queue.
        let _ = self.tx.reserve_many(ROOM).await;
    }

    /// Queues an event without waiting.
    pub fn record(&self, e: EventRow) {
        if self.tx.try_send(Msg::Event(Box::new(e))).is_err() {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(dropped_total = n, "event queue full: events dropped");
            }
        }
    }

    /// Events dropped because the queue was full, and events written, since start.
    pub fn counters(&self) -> (u64, u64) {
        (
            self.dropped.load(Ordering::Relaxed),
            self.written.load(Ordering::Relaxed),
        )
    }

    /// Waits until everything queued so far is written.
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
        tokio::spawn(async move {
            let mut batch: Vec<EventRow> = Vec::with_capacity(BATCH);
            let mut waiters: Vec<oneshot::Sender<()>> = Vec::new();
            while let Some(first) = rx.recv().await {
                // Linger: a batch is written when it is full, when a flush is asked for, or
                // LINGER after its first event. Fewer, fuller transactions cost the database thread
                // far less per event than one small transaction per wake-up (docs/PERFORMANCE.md).
                let deadline = tokio::time::Instant::now() + LINGER;
                let mut next = Some(first);
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
                        Err(_) => tokio::time::timeout_at(deadline, rx.recv()).await.ok().flatten(),
                    };
                }
                if !batch.is_empty() {
                    write_batch(&store, &batch, &written).await;
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
        match store.insert_events(batch).await {
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
        EventRow {
            table: EventTable::Authorization,
            id: crate::util::uuid_v7(crate::clock::now_millis()).to_string(),
            rs: crate::domain::DEFAULT_RESOURCE_SET.to_string(),
            ts: crate::clock::now_millis(),
            event_type: "access.request".into(),
            severity: "Info".into(),
            result: Some("Received".into()),
            client_ip: None,
            client_workload: None,
            server_workload: None,
            app_protocol: None,
            user_id: None,
            search: "access.request".into(),
            body: "{}".into(),
        }
    }

    #[tokio::test]
    async fn edge_requests_wait_for_room_instead_of_dropping_events() {
        let path = std::env::temp_dir().join(format!("svc-events-{}.db", crate::util::uuid_v4()));
        let store = Store::open(&crate::config::DatabaseUrl::Sqlite(path.clone()))
            .await
            .unwrap();
        let sink = EventSink::new(store);
        let queued = CAPACITY - ROOM + 1;
        for _ in 0..queued {
            sink.record(row());
        }
        // The writer has not started: no room, the request waits.
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(200), sink.wait_for_room()).await;
        assert!(waiting.is_err(), "a nearly full queue makes the request wait");
        sink.start();
        tokio::time::timeout(std::time::Duration::from_secs(30), sink.wait_for_room())
            .await
            .expect("room once the writer drains the queue");
        sink.flush().await;
        assert_eq!(
            sink.counters(),
            (0, queued as u64),
            "nothing dropped, everything written"
        );
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
}
