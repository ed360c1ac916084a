//! Encryption of secrets at rest: AES-256-GCM with a random 96-bit nonce, the key id stored with
//! every ciphertext (`v1:<kid>:<base64(nonce|ciphertext|tag)>`) and an associated-data label that
//! binds a ciphertext to its row, so one row's secret cannot be pasted into another. A node may
//! hold several keys during an at-rest key rotation (docs/OPERATIONS.md): it opens with whichever
//! a ciphertext names and seals with the database's current one.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arc_swap::ArcSwap;
use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};

use super::{b64std, b64std_decode, hex, random_bytes, sha256};

/// The encryption keys a node holds (issue 32: at-rest key rotation): the one it seals with (the
/// database's current key, `service::startup`) and the others it can still open with, each found
/// by the key id a ciphertext carries. Swapped whole when a rotation moves on.
pub struct Cipher {
    ring: ArcSwap<Ring>,
    /// The database seals with a key this node does not hold: it must not write (its secrets
    /// would be unreadable to the others).
    stale: AtomicBool,
}

struct Ring {
    keys: Vec<Arc<Key>>,
    active: usize,
}

struct Key {
    kid: String,
    key: LessSafeKey,
}

impl std::fmt::Debug for Cipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cipher({}; holds {})", self.kid(), self.kids().join(","))
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum OpenError {
    Malformed,
    UnknownKey(String),
    Tampered,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Malformed => f.write_str("malformed ciphertext"),
            OpenError::UnknownKey(k) => write!(f, "ciphertext was made with key {k}, which is not configured"),
            OpenError::Tampered => f.write_str("ciphertext failed authentication (wrong key or tampered data)"),
        }
    }
}

/// The id of a key: the first six bytes of its SHA-256, in hex (never the key).
pub fn key_id(key: &[u8; 32]) -> String {
    hex(&sha256(key)[..6])
}

/// The key id a sealed value names (`v1:<kid>:…`), without opening it.
pub fn kid_of(sealed: &str) -> Option<&str> {
    let mut parts = sealed.splitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("v1"), Some(kid), Some(_)) => Some(kid),
        _ => None,
    }
}

fn ring(keys: &[[u8; 32]]) -> Ring {
    let mut out: Vec<Arc<Key>> = Vec::new();
    for k in keys {
        let kid = key_id(k);
        if out.iter().any(|o| o.kid == kid) {
            continue;
        }
        out.push(Arc::new(Key {
            kid,
            key: LessSafeKey::new(UnboundKey::new(&AES_256_GCM, k).expect("32-byte key")),
        }));
    }
    assert!(!out.is_empty(), "a cipher holds a key");
    Ring { keys: out, active: 0 }
}

impl Cipher {
    /// One key, sealing and opening.
    pub fn new(key: &[u8; 32]) -> Cipher {
        Self::with_keys(&[*key])
    }

    /// Several keys: the first seals until [`Cipher::set_active`] names another; all open.
    pub fn with_keys(keys: &[[u8; 32]]) -> Cipher {
        Cipher {
            ring: ArcSwap::from_pointee(ring(keys)),
            stale: AtomicBool::new(false),
        }
    }

    /// The id of the key that seals.
    pub fn kid(&self) -> String {
        let r = self.ring.load();
        r.keys[r.active].kid.clone()
    }

    /// The ids of every key held, the sealing one first.
    pub fn kids(&self) -> Vec<String> {
        let r = self.ring.load();
        let active = &r.keys[r.active].kid;
        std::iter::once(active.clone())
            .chain(r.keys.iter().filter(|k| &k.kid != active).map(|k| k.kid.clone()))
            .collect()
    }

    pub fn holds(&self, kid: &str) -> bool {
        self.ring.load().keys.iter().any(|k| k.kid == kid)
    }

    /// Seals with the key `kid` from now on; `false` (and nothing changes) when it is not held.
    pub fn set_active(&self, kid: &str) -> bool {
        let r = self.ring.load();
        let Some(i) = r.keys.iter().position(|k| k.kid == kid) else {
            return false;
        };
        if i != r.active {
            self.ring.store(Arc::new(Ring {
                keys: r.keys.clone(),
                active: i,
            }));
        }
        true
    }

    /// Holds exactly `keys` from now on (a key file read again), sealing with `active` when it is
    /// among them, else with the first.
    pub fn replace(&self, keys: &[[u8; 32]], active: &str) {
        let mut r = ring(keys);
        if let Some(i) = r.keys.iter().position(|k| k.kid == active) {
            r.active = i;
        }
        self.ring.store(Arc::new(r));
    }

    /// Forgets the key `kid` (a rotation retired it); the sealing key is kept.
    pub fn forget(&self, kid: &str) {
        let r = self.ring.load();
        if r.keys.len() < 2 || r.keys[r.active].kid == kid || !r.keys.iter().any(|k| k.kid == kid) {
            return;
        }
        let active = r.keys[r.active].kid.clone();
        let keys: Vec<Arc<Key>> = r.keys.iter().filter(|k| k.kid != kid).cloned().collect();
        let active = keys.iter().position(|k| k.kid == active).unwrap_or(0);
        self.ring.store(Arc::new(Ring { keys, active }));
    }

    /// Whether the database seals with a key this node does not hold (see [`Cipher::set_stale`]).
    pub fn stale(&self) -> bool {
        self.stale.load(Ordering::Relaxed)
    }

    pub fn set_stale(&self, stale: bool) {
        self.stale.store(stale, Ordering::Relaxed);
    }

    pub fn seal(&self, plaintext: &[u8], label: &str) -> String {
        let r = self.ring.load();
        let k = &r.keys[r.active];
        let nonce_bytes = random_bytes::<NONCE_LEN>();
        let mut buf = plaintext.to_vec();
        k.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce_bytes),
                Aad::from(label.as_bytes()),
                &mut buf,
            )
            .expect("AES-GCM seal");
        let mut out = Vec::with_capacity(NONCE_LEN + buf.len());
        out.extend_from_slice(&nonce_bytes);
        out.extend_from_slice(&buf);
        format!("v1:{}:{}", k.kid, b64std(&out))
    }

    pub fn open(&self, sealed: &str, label: &str) -> Result<Vec<u8>, OpenError> {
        let mut parts = sealed.splitn(3, ':');
        let (Some("v1"), Some(kid), Some(data)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(OpenError::Malformed);
        };
        let r = self.ring.load();
        let Some(k) = r.keys.iter().find(|k| k.kid == kid) else {
            return Err(OpenError::UnknownKey(kid.to_string()));
        };
        let raw = b64std_decode(data).ok_or(OpenError::Malformed)?;
        if raw.len() < NONCE_LEN + 16 {
            return Err(OpenError::Malformed);
        }
        let (nonce, ct) = raw.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| OpenError::Malformed)?;
        let mut buf = ct.to_vec();
        let plain = k
            .key
            .open_in_place(nonce, Aad::from(label.as_bytes()), &mut buf)
            .map_err(|_| OpenError::Tampered)?;
        Ok(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_binding() {
        let c = Cipher::new(&[7u8; 32]);
        let s = c.seal(b"hunter2hunter2", "entity:user:1");
        assert!(s.starts_with(&format!("v1:{}:", c.kid())));
        assert!(!s.contains("hunter2"));
        assert_eq!(c.open(&s, "entity:user:1").unwrap(), b"hunter2hunter2");
        assert_eq!(c.open(&s, "entity:user:2").unwrap_err(), OpenError::Tampered);
        let other = Cipher::new(&[8u8; 32]);
        assert!(matches!(other.open(&s, "entity:user:1"), Err(OpenError::UnknownKey(_))));
    }
}
