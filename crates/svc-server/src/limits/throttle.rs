//! Sign-in throttling per source address (issue 22: password spraying), in addition to the
//! per-account lock-out of §2.2: each failed password sign-in from an address fills its leaky
//! bucket, which drains at `SVC_LOGIN_FAILURES_PER_MINUTE` per minute; a full bucket (that many
//! failures) refuses every sign-in from the address with 429 until it drains, before any
//! password is looked at and without counting towards any account's lock-out. Per node, in
//! memory, like the Edge API's rate limits (§4.12).

use std::collections::HashMap;
use std::sync::Mutex;

struct Level {
    failures: f64,
    last_ms: i64,
}

pub struct Throttle {
    /// Failures an address may have in hand (the bucket's size), and per minute (its drain);
    /// 0 switches throttling off.
    per_minute: u32,
    levels: Mutex<HashMap<String, Level>>,
}

impl Throttle {
    pub fn new(per_minute: u32) -> Throttle {
        Throttle {
            per_minute,
            levels: Mutex::new(HashMap::new()),
        }
    }

    fn drain_per_ms(&self) -> f64 {
        self.per_minute as f64 / 60_000.0
    }

    fn level(&self, l: &Level, now_ms: i64) -> f64 {
        (l.failures - (now_ms - l.last_ms).max(0) as f64 * self.drain_per_ms()).max(0.0)
    }

    /// `Err(retry_after_secs)` when the address has used up its failed sign-ins.
    pub fn check(&self, address: Option<&str>, now_ms: i64) -> Result<(), u64> {
        let (Some(a), true) = (address, self.per_minute > 0) else {
            return Ok(());
        };
        let levels = self.levels.lock().unwrap_or_else(|p| p.into_inner());
        let Some(l) = levels.get(a) else {
            return Ok(());
        };
        let level = self.level(l, now_ms);
        let limit = self.per_minute as f64;
        if level + 1.0 > limit {
            // Until one more failure fits.
            let wait_ms = (level + 1.0 - limit) / self.drain_per_ms();
            return Err(((wait_ms / 1000.0).ceil() as u64).max(1));
        }
        Ok(())
    }

    /// Records a failed sign-in from the address.
    pub fn failed(&self, address: Option<&str>, now_ms: i64) {
        let (Some(a), true) = (address, self.per_minute > 0) else {
            return;
        };
        let mut levels = self.levels.lock().unwrap_or_else(|p| p.into_inner());
        if levels.len() > 100_000 {
            // Forget drained addresses: they hold no information.
            let drain = self.drain_per_ms();
            levels.retain(|_, l| l.failures - (now_ms - l.last_ms).max(0) as f64 * drain > 0.0);
        }
        let current = levels.get(a).map_or(0.0, |l| self.level(l, now_ms));
        levels.insert(
            a.to_string(),
            Level {
                failures: current + 1.0,
                last_ms: now_ms,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::Throttle;

    #[test]
    fn an_address_is_refused_after_its_failures_until_they_drain() {
        let t = Throttle::new(3);
        let a = Some("192.0.2.1");
        for _ in 0..3 {
            assert_eq!(t.check(a, 0), Ok(()));
            t.failed(a, 0);
        }
        assert_eq!(t.check(a, 0), Err(20), "one failure drains in 20 s");
        assert_eq!(t.check(Some("192.0.2.2"), 0), Ok(()), "per address");
        assert_eq!(t.check(a, 20_000), Ok(()));
        assert_eq!(Throttle::new(0).check(a, 0), Ok(()), "0 switches it off");
    }
}
