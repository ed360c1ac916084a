//! A node's side of the log streams (docs/log-streams/): the transaction counters GET shows (the
//! cursor rows', read by every node at the start of each cycle and at start-up, changed at once on
//! the node that delivers), the stop signal, the delivery lock and the event table of each data
//! type. The delivery itself, which needs the `App`, is `service::streams`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use tokio::sync::watch;
use uuid::Uuid;

use crate::config::Config;
use crate::domain::stream::DataType;
use crate::store::{CursorRow, Deliverer, EventTable, Store};
use crate::upstream::Upstream;

/// Records per transaction at most (§3.14).
pub const MAX_RECORDS: i64 = 1000;
/// An errored transaction is retried until its first attempt is this old (§3.14: 24 h).
pub const GIVE_UP_MS: i64 = 24 * 3_600_000;
/// How long a stopping node waits for a transaction in flight to end (and its cursor to move).
const STOP_WAIT: Duration = Duration::from_secs(30);

/// A stream's transaction counts (§3.14: `inProgTransactionCount`, `completedTransactionCount`,
/// `erroredTransactionCount`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub in_progress: i64,
    pub completed: i64,
    pub errored: i64,
}

impl From<&CursorRow> for Counters {
    fn from(r: &CursorRow) -> Counters {
        Counters {
            in_progress: r.in_progress,
            completed: r.completed,
            errored: r.errored,
        }
    }
}

/// A node's side of the log streams.
pub struct Streams {
    counters: RwLock<HashMap<Uuid, Counters>>,
    pub(crate) deliverer: Deliverer,
    pub(crate) stopping: watch::Sender<bool>,
    /// Held while a cycle runs ([`Streams::stop`] waits for it).
    pub(crate) cycle: tokio::sync::Mutex<()>,
    /// The client of `tlsVerification: none` collectors, built on first use.
    unverified: OnceLock<Result<Arc<Upstream>, String>>,
    /// Transactions this node sent and a sink acknowledged.
    pub(crate) sent: AtomicU64,
}

/// The event table of a data type.
pub fn table_of(d: DataType) -> EventTable {
    match d {
        DataType::AuditLogs => EventTable::Audit,
        DataType::AccessAuthorizationEvents => EventTable::Authorization,
        DataType::WorkloadEvents => EventTable::Workload,
    }
}

impl Streams {
    /// `rows`: the stored counters, shown until the first cycle reads them again.
    pub fn new(store: &Store, rows: Vec<CursorRow>) -> Streams {
        let s = Streams {
            counters: RwLock::default(),
            deliverer: store.deliverer(),
            stopping: watch::Sender::new(false),
            cycle: tokio::sync::Mutex::new(()),
            unverified: OnceLock::new(),
            sent: AtomicU64::new(0),
        };
        s.refresh(&rows);
        s
    }

    /// The counters of a stream as last read or changed here.
    pub fn counters(&self, stream: Uuid) -> Counters {
        self.counters
            .read()
            .ok()
            .and_then(|m| m.get(&stream).copied())
            .unwrap_or_default()
    }

    /// Transactions this node delivered since it started.
    pub fn transactions_sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    pub(crate) fn refresh(&self, rows: &[CursorRow]) {
        if let Ok(mut m) = self.counters.write() {
            *m = rows.iter().map(|r| (r.stream, Counters::from(r))).collect();
        }
    }

    pub(crate) fn change(&self, stream: Uuid, f: impl FnOnce(&mut Counters)) {
        if let Ok(mut m) = self.counters.write() {
            f(m.entry(stream).or_default());
        }
    }

    pub(crate) fn stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// Stops delivery on this node (the server is stopping): no new transaction starts; one in
    /// flight ends (its answer recorded, so nothing is sent twice) within [`STOP_WAIT`]; then
    /// the node's streams are free for other nodes.
    pub async fn stop(&self) {
        self.stopping.send_replace(true);
        let _ = tokio::time::timeout(STOP_WAIT, self.cycle.lock()).await;
        self.deliverer.close().await;
    }

    pub(crate) fn unverified(&self, cfg: &Config) -> Result<Arc<Upstream>, String> {
        self.unverified
            .get_or_init(|| Upstream::unverified(cfg).map(Arc::new))
            .clone()
    }
}
