//! Time comes from here (architecture invariant 5). In-process tests can shift the clock with
//! [`set_offset_ms`] to exercise expiry and lock-out windows without sleeping.

use std::sync::atomic::{AtomicI64, Ordering};

use svc_api::Timestamp;

static OFFSET_MS: AtomicI64 = AtomicI64::new(0);

pub fn now_millis() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    d.as_millis() as i64 + OFFSET_MS.load(Ordering::Relaxed)
}

pub fn now() -> Timestamp {
    Timestamp(now_millis())
}

pub fn now_secs() -> i64 {
    now_millis().div_euclid(1000)
}

/// Shifts the service clock (tests only; the process-wide offset applies to every caller).
pub fn set_offset_ms(ms: i64) {
    OFFSET_MS.store(ms, Ordering::Relaxed);
}
