//! Step 9's vendor caches of one node, which `App` holds (docs/conditions/): integration tokens
//! and device / resource lookups, each with the instant it stops being valid, bounded. The calls
//! that fill them are `edge::conditions`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use uuid::Uuid;

use crate::domain::Secret;
use crate::policy::conditions::{CloudResource, Device, Lookup};

/// Entries per cache; a full cache first drops what expired, then everything (a burst of
/// distinct devices cannot grow memory without bound).
const CAP: usize = 10_000;
type Key = (Uuid, i64, String);
/// A cache: key → (value, valid until).
type Cache<K, V> = Mutex<HashMap<K, (V, Instant)>>;

/// The token and lookup caches of one node.
#[derive(Default)]
pub struct VendorCache {
    pub(crate) tokens: Cache<(Uuid, i64), Arc<Secret<String>>>,
    pub(crate) devices: Cache<Key, Lookup<Device>>,
    pub(crate) resources: Cache<Key, Lookup<CloudResource>>,
}

pub(crate) fn get<K: std::hash::Hash + Eq, V: Clone>(m: &Cache<K, V>, k: &K) -> Option<V> {
    let m = m.lock().unwrap_or_else(|e| e.into_inner());
    m.get(k)
        .filter(|(_, until)| *until > Instant::now())
        .map(|(v, _)| v.clone())
}

pub(crate) fn put<K: std::hash::Hash + Eq, V>(m: &Cache<K, V>, k: K, v: V, until: Instant) {
    let mut m = m.lock().unwrap_or_else(|e| e.into_inner());
    if m.len() >= CAP {
        let now = Instant::now();
        m.retain(|_, (_, u)| *u > now);
        if m.len() >= CAP {
            m.clear();
        }
    }
    m.insert(k, (v, until));
}

impl VendorCache {
    /// How many upstream answers are cached (tests, metrics).
    pub fn len(&self) -> usize {
        self.tokens.lock().map(|m| m.len()).unwrap_or(0)
            + self.devices.lock().map(|m| m.len()).unwrap_or(0)
            + self.resources.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
