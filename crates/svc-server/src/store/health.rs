//! Whether the database can be used, known without waiting for it (issue 32, fail fast): a probe
//! of its own (a dedicated PostgreSQL connection, not one of the pool's) looks every 500 ms, and
//! at once when a query fails the way a dead database makes it fail; every 100 ms while the
//! database is down or its disk full. A refused or failed connection counts at once; looks that
//! take too long count only twice in a row (a busy server or machine is not a dead one). Requests ask [`Health`] first and answer 503 at once
//! instead of waiting for the pool's acquire timeout; work already waiting on the database is cut
//! short the moment the probe sees it gone (`Store::live`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, watch};

/// What the database can do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    Ok,
    /// Connections are refused, fail or time out: nothing can be read or written.
    Unreachable,
    /// Writes fail for want of space (SQLite's `SQLITE_FULL`, an I/O error while writing):
    /// reads work, writes do not.
    Unwritable,
}

impl Condition {
    /// The text of `/api/v1/health`'s `degraded` field (`None` when all is well).
    pub fn degraded(self) -> Option<&'static str> {
        match self {
            Condition::Ok => None,
            Condition::Unreachable => Some(
                "database unreachable: writes and /edge/v1/credentials answer 503; the configuration is served from memory",
            ),
            Condition::Unwritable => {
                Some("database not writable (disk full?): writes and /edge/v1/credentials answer 503; reads work")
            }
        }
    }
}

/// The shared view of the database's [`Condition`] (one per store, shared by its clones).
pub struct Health {
    /// Mirrors of the condition for the request paths: one relaxed load each.
    unreachable: AtomicBool,
    unwritable: AtomicBool,
    changed: watch::Sender<Condition>,
    /// Asks the probe to look now (a query failed as a dead database makes it fail).
    kick: Notify,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            unreachable: AtomicBool::new(false),
            unwritable: AtomicBool::new(false),
            changed: watch::Sender::new(Condition::Ok),
            kick: Notify::new(),
        }
    }
}

/// How often the probe looks while all is well, and while it is not.
pub const PROBE_EVERY: Duration = Duration::from_millis(500);
pub const PROBE_EVERY_DEGRADED: Duration = Duration::from_millis(100);
/// The longest a probe's query and its connection attempt may take; two looks in a row that
/// take longer count the database as unreachable (a refused or failed connection counts at once).
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
pub const PROBE_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// The free bytes on a SQLite database's filesystem before the probe tries whether it can write
/// again after a full disk: more than the WAL holds between checkpoints (250 pages) and a
/// checkpoint's growth of the database.
pub const HEADROOM: u64 = 4 << 20;

impl Health {
    pub fn condition(&self) -> Condition {
        *self.changed.borrow()
    }

    /// Nothing can be read or written (one relaxed load).
    pub fn unreachable(&self) -> bool {
        self.unreachable.load(Ordering::Relaxed)
    }

    /// A write would fail now: the database is unreachable or cannot grow (one relaxed load each).
    pub fn refuses_writes(&self) -> bool {
        self.unreachable.load(Ordering::Relaxed) || self.unwritable.load(Ordering::Relaxed)
    }

    /// Records what the probe found (or a failed write), logging each change once.
    pub(super) fn set(&self, c: Condition) {
        self.unreachable.store(c == Condition::Unreachable, Ordering::Relaxed);
        self.unwritable.store(c == Condition::Unwritable, Ordering::Relaxed);
        let before = self.changed.send_replace(c);
        if before != c {
            match c {
                Condition::Ok => tracing::info!(was = ?before, "database usable again"),
                Condition::Unreachable => {
                    tracing::error!("database unreachable: writes and edge credentials answer 503 until it is back")
                }
                Condition::Unwritable => tracing::error!(
                    "database not writable (disk full?): writes and edge credentials answer 503 until space is freed"
                ),
            }
        }
    }

    /// A query failed with `fault`: an unreachable database is looked at now, a full one marked.
    pub(super) fn saw(&self, fault: super::Fault) {
        match fault {
            super::Fault::Unreachable => self.kick.notify_one(),
            super::Fault::Unwritable => {
                if self.condition() == Condition::Ok {
                    self.set(Condition::Unwritable);
                }
                self.kick.notify_one();
            }
            super::Fault::Other => {}
        }
    }

    /// Resolves once the database is seen unreachable.
    pub(super) async fn gone(&self) {
        let mut rx = self.changed.subscribe();
        let _ = rx.wait_for(|c| *c == Condition::Unreachable).await;
    }

    /// Waits for the next probe: the period, or a kick.
    pub(super) async fn next_probe(&self) {
        let every = if self.condition() == Condition::Ok {
            PROBE_EVERY
        } else {
            PROBE_EVERY_DEGRADED
        };
        let _ = tokio::time::timeout(every, self.kick.notified()).await;
    }

    /// Waits until the condition is `c` (tests, tools), at most `limit`; whether it is.
    pub async fn wait_for(&self, c: Condition, limit: Duration) -> bool {
        let mut rx = self.changed.subscribe();
        tokio::time::timeout(limit, rx.wait_for(|now| *now == c))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}
