//! The edge access token's claims (docs/edge-api.md, the access token) and the per-node cache of
//! verified tokens that `App` holds (the idea of Envoy's `jwt_cache_config`): the next request
//! with the very same token skips the signature, the base64 and the JSON of its claims. Issuing
//! and validating (every check that depends on time or state, on each use) are `edge::token`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::domain::trust::TrustKind;
use crate::trust::Fact;

/// Clock skew allowed on `exp` and `nbf`, in seconds.
pub const LEEWAY: i64 = 30;

#[derive(Deserialize)]
pub struct Token {
    pub(crate) iss: String,
    pub(crate) aud: String,
    pub sub: String,
    pub iat: i64,
    pub(crate) nbf: i64,
    pub(crate) exp: i64,
    pub jti: Uuid,
    pub svc: Svc,
}

#[derive(Deserialize)]
pub struct Svc {
    pub tp: Uuid,
    pub tpk: TrustKind,
    pub rs: Uuid,
    #[serde(default)]
    pub facts: BTreeMap<String, Fact>,
    /// The verified evidence payload, parsed only when needed.
    #[serde(default)]
    pub claims: Option<Box<RawValue>>,
}

/// What the kept tokens may hold, counting each token's text twice (its parsed claims are about
/// as large): 8 MB. A typical token is ~1 KB, so ~4,000 tokens. Only tokens this node's keys
/// signed get in, so the bound is reached only by that many workloads at once; then the expired
/// ones go, and if that is not enough, all of them (verified again on their next use).
const VERIFIED_BYTES: usize = 8 << 20;
/// A token larger than this (evidence claims of a few hundred KB) is verified every time.
const VERIFIED_TOKEN_MAX: usize = 16 << 10;
/// The length of an HS256 signature in base64url: the only length looked up, so that no caller
/// without a token can make every request hash a long string under the cache's lock.
const HS256_SIG_LEN: usize = 43;

type Key = Arc<crate::crypto::jws::HmacKey>;

struct Entry {
    /// The whole token: a hit must be this exact text, not only its signature.
    token: Box<str>,
    key: Key,
    claims: Arc<Token>,
}

#[derive(Default)]
struct Held {
    map: HashMap<Box<str>, Entry>,
    bytes: usize,
}

/// The verified-token cache of one node (the idea of Envoy's `jwt_cache_config`).
#[derive(Default)]
pub struct Verified {
    held: Mutex<Held>,
    hits: std::sync::atomic::AtomicU64,
}

/// A token verified before: its claims and the key that verified it (checked again at step 2).
pub struct Known {
    pub claims: Arc<Token>,
    pub(crate) key: Key,
}

fn signature(token: &str) -> Option<&str> {
    token
        .rsplit_once('.')
        .map(|(_, sig)| sig)
        .filter(|s| s.len() == HS256_SIG_LEN)
}

impl Verified {
    /// The entry of `token` when it is exactly a token verified before under a key `key_ok`
    /// still accepts. The text is compared in constant time.
    pub(crate) fn get(&self, token: &str, key_ok: impl Fn(&Key) -> bool) -> Option<Known> {
        let sig = signature(token)?;
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let e = held.map.get(sig)?;
        if !(crate::util::ct_eq(e.token.as_bytes(), token.as_bytes()) && key_ok(&e.key)) {
            return None;
        }
        self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(Known {
            claims: e.claims.clone(),
            key: e.key.clone(),
        })
    }

    pub(crate) fn put(&self, token: &str, key: Key, claims: Arc<Token>, now: i64) {
        let Some(sig) = signature(token).filter(|_| token.len() <= VERIFIED_TOKEN_MAX) else {
            return;
        };
        let cost = 2 * token.len();
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.bytes + cost > VERIFIED_BYTES {
            held.map.retain(|_, e| e.claims.exp + LEEWAY >= now);
            held.bytes = held.map.values().map(|e| 2 * e.token.len()).sum();
            if held.bytes + cost > VERIFIED_BYTES {
                held.map.clear();
                held.bytes = 0;
            }
        }
        let old = held.map.insert(
            sig.into(),
            Entry {
                token: token.into(),
                key,
                claims,
            },
        );
        held.bytes += cost - old.map_or(0, |e| 2 * e.token.len());
    }

    /// Forgets every token: the key ring was reloaded, so none is kept under a key object the
    /// ring no longer holds (nor keeps that key's material alive).
    pub fn clear(&self) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.map.clear();
        held.bytes = 0;
    }

    /// Tokens held (tests).
    pub fn len(&self) -> usize {
        self.held.lock().map(|h| h.map.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Requests answered from a kept token since start (tests).
    pub fn hits(&self) -> u64 {
        self.hits.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn verified_tokens_are_reused_only_for_the_same_text_under_a_valid_key() {
        use std::sync::Arc;

        use super::{Token, Verified};
        use crate::crypto::jws::HmacKey;
        let claims = |jti: &str| -> Arc<Token> {
            let t = format!(
                r#"{{"iss":"i","aud":"svc-edge","sub":"s","iat":1,"nbf":1,"exp":100,"jti":"{jti}","svc":{{"tp":"{jti}","tpk":"OidcIdToken","rs":"{jti}"}}}}"#
            );
            Arc::new(serde_json::from_str(&t).unwrap())
        };
        let key = Arc::new(HmacKey::new("k1".into(), &[1u8; 32]));
        let v = Verified::default();
        let sig_a = "a".repeat(43);
        let a = format!("ha.pa.{sig_a}");
        let a = a.as_str();
        let id = "0191d2a4-0000-7000-8000-000000000001";
        v.put(a, key.clone(), claims(id), 0);
        assert_eq!(
            v.get(a, |_| true).map(|t| t.claims.jti.to_string()).as_deref(),
            Some(id)
        );
        assert_eq!(v.hits(), 1);
        // The same signature under another header or claims; a key no longer valid; a token
        // whose signature is not an HS256 one is not looked up.
        assert!(v.get(&format!("ha.pb.{sig_a}"), |_| true).is_none());
        assert!(v.get(&format!("hb.pa.{sig_a}"), |_| true).is_none());
        assert!(v.get(&format!("{a}."), |_| true).is_none());
        assert!(v.get(a, |k| !Arc::ptr_eq(k, &key)).is_none());
        v.put("h.p.short", key.clone(), claims(id), 0);
        assert_eq!(v.len(), 1);
        // Bounded by bytes: when full, the expired go first (exp 100 + 30 s of leeway: gone at
        // 200), then all (exp 100 still valid at 50).
        let big = |i: usize| format!("{}.{:043}", "p".repeat(4000), i);
        for now in [200, 50] {
            for i in 0..super::VERIFIED_BYTES / 8000 * 2 {
                v.put(&big(i), key.clone(), claims(id), now);
                assert!(v.held.lock().unwrap().bytes <= super::VERIFIED_BYTES);
            }
            assert!(v.len() < super::VERIFIED_BYTES / 8000);
        }
        // A token too large to keep; clearing.
        v.put(
            &format!("{}.{sig_a}", "p".repeat(super::VERIFIED_TOKEN_MAX)),
            key.clone(),
            claims(id),
            0,
        );
        assert!(
            v.get(&format!("{}.{sig_a}", "p".repeat(super::VERIFIED_TOKEN_MAX)), |_| true)
                .is_none()
        );
        v.clear();
        assert!(v.is_empty());
    }
}
