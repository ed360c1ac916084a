//! Time comes from here (architecture invariant 7). Each node has a [`Clock`]: the system time
//! plus an offset that in-process tests move forward (`Clock::advance`) instead of sleeping. The
//! node's request and job tasks run inside [`scope`], so the free functions below read that
//! node's clock; code outside any node (the CLI, unit tests) reads the system time.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use svc_api::Timestamp;

/// A node's clock: the system time shifted by an offset that only moves forward.
#[derive(Debug, Default)]
pub struct Clock {
    offset_ms: AtomicI64,
}

impl Clock {
    /// Moves this node's time forward by `ms` (tests; a clock never goes back).
    pub fn advance(&self, ms: i64) {
        self.offset_ms.fetch_add(ms.max(0), Ordering::Relaxed);
    }

    fn offset(&self) -> i64 {
        self.offset_ms.load(Ordering::Relaxed)
    }
}

tokio::task_local! {
    /// The clock of the node whose task this is.
    static CURRENT: Arc<Clock>;
}

/// Runs `f` on `clock`: every time read inside it (not in tasks it spawns) is that node's.
pub fn scope<F: Future>(clock: Arc<Clock>, f: F) -> impl Future<Output = F::Output> {
    CURRENT.scope(clock, f)
}

pub fn now_millis() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    d.as_millis() as i64 + CURRENT.try_with(|c| c.offset()).unwrap_or(0)
}

pub fn now() -> Timestamp {
    Timestamp(now_millis())
}

pub fn now_secs() -> i64 {
    now_millis().div_euclid(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_nodes_clock_moves_only_inside_its_scope() {
        let clock = Arc::new(Clock::default());
        clock.advance(3_600_000);
        let outside = now_millis();
        let inside = scope(clock.clone(), async { now_millis() }).await;
        assert!(inside - outside >= 3_599_000, "{inside} vs {outside}");
        clock.advance(-5);
        assert_eq!(clock.offset(), 3_600_000, "a clock never goes back");
    }
}
