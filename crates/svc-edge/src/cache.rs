//! The agent's credential cache, without I/O: entries with their refresh time (80 % of the
//! lifetime, or a fixed period for credentials without expiry), per-entry backoff after failed
//! refreshes (exponential, jittered, 1 s to 60 s), a least-recently-used bound, and no serving
//! past expiry. Time is passed in, so every rule is tested with a manual clock.

use std::collections::HashMap;
use std::hash::Hash;

pub const BACKOFF_MIN_MS: i64 = 1_000;
pub const BACKOFF_MAX_MS: i64 = 60_000;

#[derive(Clone, Debug)]
pub struct Entry<V> {
    pub value: V,
    pub fetched_ms: i64,
    pub expires_ms: Option<i64>,
    pub refresh_at_ms: i64,
    /// Failed refreshes in a row.
    pub failures: u32,
    /// No refresh before this time (backoff).
    pub next_try_ms: i64,
    /// A refresh is running.
    pub refreshing: bool,
    last_used: u64,
}

/// When a value fetched at `fetched` is refreshed: at 80 % of its lifetime, or after
/// `static_ms` when it does not expire.
pub fn refresh_at(fetched: i64, expires: Option<i64>, static_ms: i64) -> i64 {
    match expires {
        Some(e) => fetched + (e - fetched).max(0) * 8 / 10,
        None => fetched + static_ms,
    }
}

/// The wait after the `failures`-th failed refresh in a row: 1, 2, 4, ... s capped at 60 s, each
/// scaled by a jitter in [0.5, 1.0) (`jitter` in [0, 1)), never under 1 s.
pub fn backoff_ms(failures: u32, jitter: f64) -> i64 {
    let base = (BACKOFF_MIN_MS << failures.saturating_sub(1).min(6)).min(BACKOFF_MAX_MS);
    let j = (base as f64 * (0.5 + 0.5 * jitter.clamp(0.0, 1.0))) as i64;
    j.clamp(BACKOFF_MIN_MS, BACKOFF_MAX_MS)
}

pub struct Cache<K, V> {
    entries: HashMap<K, Entry<V>>,
    max: usize,
    static_ms: i64,
    tick: u64,
}

impl<K: Clone + Eq + Hash, V: Clone> Cache<K, V> {
    pub fn new(max: usize, static_refresh_ms: i64) -> Self {
        Cache {
            entries: HashMap::new(),
            max: max.max(1),
            static_ms: static_refresh_ms,
            tick: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn entry(&self, k: &K) -> Option<&Entry<V>> {
        self.entries.get(k)
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    /// A value that has not expired (a hit counts as a use). An expired entry is dropped.
    pub fn get(&mut self, k: &K, now: i64) -> Option<V> {
        let expired = match self.entries.get(k) {
            None => return None,
            Some(e) => e.expires_ms.is_some_and(|x| now >= x),
        };
        if expired {
            self.entries.remove(k);
            return None;
        }
        let t = self.next_tick();
        let e = self.entries.get_mut(k)?;
        e.last_used = t;
        Some(e.value.clone())
    }

    /// Stores a value fetched on demand (a use); returns the keys evicted to stay within the
    /// bound. A value already expired is not stored.
    pub fn insert(&mut self, k: K, v: V, now: i64, expires: Option<i64>) -> Vec<K> {
        if expires.is_some_and(|x| x <= now) {
            return vec![];
        }
        let t = self.next_tick();
        self.entries.insert(
            k.clone(),
            Entry {
                value: v,
                fetched_ms: now,
                expires_ms: expires,
                refresh_at_ms: refresh_at(now, expires, self.static_ms),
                failures: 0,
                next_try_ms: 0,
                refreshing: false,
                last_used: t,
            },
        );
        let mut evicted = vec![];
        while self.entries.len() > self.max {
            let Some(lru) = self
                .entries
                .iter()
                .filter(|(key, _)| **key != k)
                .min_by_key(|(_, e)| e.last_used)
                .map(|(key, _)| key.clone())
            else {
                break;
            };
            self.entries.remove(&lru);
            evicted.push(lru);
        }
        evicted
    }

    /// Entries due for a background refresh; each is marked as refreshing.
    pub fn due(&mut self, now: i64) -> Vec<K> {
        let mut out = vec![];
        for (k, e) in self.entries.iter_mut() {
            if !e.refreshing && now >= e.refresh_at_ms.max(e.next_try_ms) {
                e.refreshing = true;
                out.push(k.clone());
            }
        }
        out
    }

    /// A background refresh succeeded (not a use: the LRU order is kept).
    pub fn refreshed(&mut self, k: &K, v: V, now: i64, expires: Option<i64>) {
        if expires.is_some_and(|x| x <= now) {
            self.refresh_failed(k, now, 0.5);
            return;
        }
        let static_ms = self.static_ms;
        if let Some(e) = self.entries.get_mut(k) {
            e.value = v;
            e.fetched_ms = now;
            e.expires_ms = expires;
            e.refresh_at_ms = refresh_at(now, expires, static_ms);
            e.failures = 0;
            e.next_try_ms = 0;
            e.refreshing = false;
        }
    }

    /// A background refresh failed: the entry keeps its value until it expires and is retried
    /// after the backoff. Returns the wait and the failure count.
    pub fn refresh_failed(&mut self, k: &K, now: i64, jitter: f64) -> Option<(i64, u32)> {
        let e = self.entries.get_mut(k)?;
        e.failures += 1;
        let wait = backoff_ms(e.failures, jitter);
        e.next_try_ms = now + wait;
        e.refreshing = false;
        Some((wait, e.failures))
    }

    pub fn remove(&mut self, k: &K) {
        self.entries.remove(k);
    }

    /// Drops expired entries (nothing to serve; a request fetches anew).
    pub fn purge_expired(&mut self, now: i64) -> usize {
        let before = self.entries.len();
        self.entries
            .retain(|_, e| e.expires_ms.is_none_or(|x| now < x) || e.refreshing);
        before - self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};

    #[test]
    fn refresh_at_eighty_percent_and_static_period() {
        assert_eq!(refresh_at(1_000, Some(11_000), 300_000), 9_000);
        assert_eq!(refresh_at(1_000, None, 300_000), 301_000);
        let clock = ManualClock::at(0);
        let mut c: Cache<&str, u32> = Cache::new(10, 300_000);
        c.insert("a", 1, clock.now_ms(), Some(100_000));
        c.insert("s", 2, clock.now_ms(), None);
        assert!(c.due(clock.now_ms()).is_empty());
        clock.advance(79_999);
        assert!(c.due(clock.now_ms()).is_empty());
        clock.advance(1);
        assert_eq!(c.due(clock.now_ms()), vec!["a"]);
        assert!(c.due(clock.now_ms()).is_empty(), "marked as refreshing");
        c.refreshed(&"a", 3, clock.now_ms(), Some(180_000));
        assert_eq!(c.entry(&"a").unwrap().refresh_at_ms, 80_000 + 80_000);
        clock.advance(220_000);
        let mut due = c.due(clock.now_ms());
        due.sort();
        assert_eq!(due, vec!["a", "s"]);
    }

    #[test]
    fn never_serves_past_expiry_even_while_refresh_fails() {
        let clock = ManualClock::at(0);
        let mut c: Cache<&str, u32> = Cache::new(10, 300_000);
        c.insert("a", 1, 0, Some(10_000));
        clock.advance(8_000);
        assert_eq!(c.due(clock.now_ms()), vec!["a"]);
        let (wait, n) = c.refresh_failed(&"a", clock.now_ms(), 0.0).unwrap();
        assert_eq!((wait, n), (1_000, 1));
        assert_eq!(c.get(&"a", clock.now_ms()), Some(1), "served while refresh fails");
        clock.advance(999);
        assert!(c.due(clock.now_ms()).is_empty(), "backoff");
        clock.advance(1);
        assert_eq!(c.due(clock.now_ms()), vec!["a"]);
        c.refresh_failed(&"a", clock.now_ms(), 0.0);
        assert_eq!(c.get(&"a", 9_999), Some(1));
        assert_eq!(c.get(&"a", 10_000), None);
        assert!(c.is_empty());
        // Already expired on arrival: not stored.
        c.insert("b", 1, 5, Some(5));
        assert!(c.is_empty());
    }

    #[test]
    fn backoff_grows_to_sixty_seconds_with_jitter() {
        assert_eq!(backoff_ms(1, 0.0), 1_000);
        assert_eq!(backoff_ms(1, 0.999), 1_000);
        assert_eq!(backoff_ms(2, 0.0), 1_000);
        assert_eq!(backoff_ms(2, 0.999), 1_999);
        assert_eq!(backoff_ms(3, 1.0), 4_000);
        assert_eq!(backoff_ms(7, 1.0), 60_000);
        assert_eq!(backoff_ms(50, 0.0), 30_000);
        assert_eq!(backoff_ms(50, 1.0), 60_000);
        for n in 1..40 {
            for j in [0.0, 0.3, 0.7, 0.99] {
                let w = backoff_ms(n, j);
                assert!((1_000..=60_000).contains(&w));
            }
        }
    }

    #[test]
    fn lru_bound_counts_hits_as_uses() {
        let mut c: Cache<u32, u32> = Cache::new(2, 300_000);
        assert!(c.insert(1, 1, 0, None).is_empty());
        assert!(c.insert(2, 2, 0, None).is_empty());
        assert_eq!(c.get(&1, 0), Some(1)); // 2 is now least recently used
        assert_eq!(c.insert(3, 3, 0, None), vec![2]);
        assert_eq!(c.len(), 2);
        assert_eq!(c.get(&2, 0), None);
        // A background refresh is not a use.
        c.due(400_000);
        c.refreshed(&1, 10, 400_000, None);
        assert_eq!(c.insert(4, 4, 400_000, None), vec![1]);
    }

    #[test]
    fn a_failing_entry_does_not_touch_the_others() {
        let mut c: Cache<&str, u32> = Cache::new(10, 1_000);
        c.insert("ok", 1, 0, None);
        c.insert("bad", 2, 0, Some(5_000));
        let mut due = c.due(4_000);
        due.sort();
        assert_eq!(due, vec!["bad", "ok"]);
        c.refreshed(&"ok", 1, 4_000, None);
        c.refresh_failed(&"bad", 4_000, 0.0);
        assert_eq!(c.entry(&"ok").unwrap().failures, 0);
        assert_eq!(c.entry(&"bad").unwrap().failures, 1);
        assert_eq!(c.get(&"bad", 6_000), None);
        assert_eq!(c.get(&"ok", 6_000), Some(1));
    }
}
