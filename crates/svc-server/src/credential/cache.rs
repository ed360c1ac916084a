//! Reuse of upstream credentials (contract §4.8): the same provider (same configuration version)
//! and the same resolved inputs get the same credential until 60 s before its expiry, never later.
//! Bounded; entries past their useful life are swept.

use std::collections::HashMap;
use std::sync::Mutex;

use super::Issued;

const MARGIN_MS: i64 = 60_000;
const MAX_ENTRIES: usize = 50_000;

#[derive(Default)]
pub struct CredentialCache {
    map: Mutex<HashMap<String, (Issued, i64)>>,
}

impl CredentialCache {
    pub fn get(&self, key: &str) -> Option<Issued> {
        let now = crate::clock::now_millis();
        let m = self.map.lock().unwrap_or_else(|p| p.into_inner());
        m.get(key)
            .filter(|(_, exp)| exp - MARGIN_MS > now)
            .map(|(i, _)| i.clone())
    }

    pub fn put(&self, key: String, issued: Issued, expires_at_ms: i64) {
        let now = crate::clock::now_millis();
        if expires_at_ms - MARGIN_MS <= now {
            return;
        }
        let mut m = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if m.len() >= MAX_ENTRIES {
            m.retain(|_, (_, exp)| *exp - MARGIN_MS > now);
            if m.len() >= MAX_ENTRIES {
                m.clear();
            }
        }
        m.insert(key, (issued, expires_at_ms));
    }

    /// Forgets one entry (a credential the upstream refused before its expiry).
    pub fn remove(&self, key: &str) {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
    }

    /// Forgets every entry of a provider (on change or deletion entries are unreachable anyway
    /// through the version in the key; this frees them early).
    pub fn clear(&self) {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}
