//! Token buckets for the Edge API (contract §4.12): `/auth` keyed by (clientId, peer IP),
//! `/credentials` by the access token's `jti`. Per node, sharded, with stale buckets swept.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::Mutex;

use crate::config::Config;

const SHARDS: usize = 32;

struct Bucket {
    tokens: f64,
    last_ms: i64,
}

pub struct Limiter {
    rate: f64,
    burst: f64,
    shards: Vec<Mutex<HashMap<u64, Bucket>>>,
    hasher: std::collections::hash_map::RandomState,
}

impl Limiter {
    pub fn new(rate: u32, burst: u32) -> Limiter {
        Limiter {
            rate: rate as f64,
            burst: burst as f64,
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            hasher: Default::default(),
        }
    }

    /// Takes one token for `key`; `Err(retry_after_secs)` when the bucket is empty.
    pub fn check<K: Hash>(&self, key: &K, now_ms: i64) -> Result<(), u64> {
        let h = self.hasher.hash_one(key);
        let mut shard = self.shards[(h as usize) % SHARDS]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if shard.len() > 100_000 {
            // Sweep buckets that have refilled completely: they hold no information.
            let full_after = (self.burst / self.rate * 1000.0) as i64;
            shard.retain(|_, b| now_ms - b.last_ms < full_after);
        }
        let b = shard.entry(h).or_insert(Bucket {
            tokens: self.burst,
            last_ms: now_ms,
        });
        let elapsed = (now_ms - b.last_ms).max(0) as f64 / 1000.0;
        b.tokens = (b.tokens + elapsed * self.rate).min(self.burst);
        b.last_ms = now_ms;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            let wait = ((1.0 - b.tokens) / self.rate).ceil().max(1.0);
            Err(wait as u64)
        }
    }
}

pub struct Limiters {
    pub auth: Limiter,
    pub credentials: Limiter,
}

impl Limiters {
    pub fn new(cfg: &Config) -> Limiters {
        Limiters {
            auth: Limiter::new(cfg.edge_auth_rate, cfg.edge_auth_burst),
            credentials: Limiter::new(cfg.edge_credentials_rate, cfg.edge_credentials_burst),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refill() {
        let l = Limiter::new(2, 3);
        for _ in 0..3 {
            assert!(l.check(&"k", 0).is_ok());
        }
        assert_eq!(l.check(&"k", 0), Err(1));
        assert!(l.check(&"other", 0).is_ok());
        assert!(l.check(&"k", 500).is_ok());
        assert!(l.check(&"k", 500).is_err());
    }
}
