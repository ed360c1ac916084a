//! The edge access token (contract §4.7): HS256 under the internal token key, `aud = svc-edge`,
//! carrying the trust provider, the resource set and the verified facts, so `/credentials` needs no
//! state per token. Revocation is a snapshot check: the provider must still exist in its resource
//! set, be active, and not have been deactivated after the token was issued.
//!
//! A workload presents the token it got from `/auth` on every `/credentials` call until it
//! expires, so a verified token is kept ([`Verified`]): the next request with the very same token
//! skips the signature, the base64 and the JSON of its claims, and still passes every check that
//! depends on time or state (the key, expiry, issuer, audience, the provider's revocation).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::app::App;
use crate::domain::trust::TrustKind;
use crate::state::State;
use crate::trust::{Fact, Facts};

pub const EDGE_AUDIENCE: &str = "svc-edge";
const LEEWAY: i64 = 30;

#[derive(Serialize)]
struct IssueClaims<'a> {
    iss: &'a str,
    aud: &'static str,
    sub: &'a str,
    iat: i64,
    nbf: i64,
    exp: i64,
    jti: Uuid,
    svc: IssueSvc<'a>,
}

#[derive(Serialize)]
struct IssueSvc<'a> {
    tp: Uuid,
    tpk: TrustKind,
    rs: Uuid,
    facts: &'a Facts,
    #[serde(skip_serializing_if = "Option::is_none")]
    claims: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

/// Signs an edge access token; returns it with its lifetime in seconds.
pub fn issue(
    app: &App,
    client_id: &str,
    tp: Uuid,
    tpk: TrustKind,
    rs: Uuid,
    facts: &Facts,
    claims: Option<&serde_json::Map<String, serde_json::Value>>,
) -> (String, i32) {
    let ttl = app.cfg.edge_token_ttl_seconds as i64;
    let now = crate::clock::now_secs();
    let c = IssueClaims {
        iss: app.cfg.issuer(),
        aud: EDGE_AUDIENCE,
        sub: client_id,
        iat: now,
        nbf: now,
        exp: now + ttl,
        jti: crate::util::uuid_v4(),
        svc: IssueSvc {
            tp,
            tpk,
            rs,
            facts,
            claims,
        },
    };
    let bytes = serde_json::to_vec(&c).expect("claims serialise");
    (app.keys().sign_internal(&bytes, crate::clock::now_millis()), ttl as i32)
}

/// A validated edge token's claims.
#[derive(Deserialize)]
pub struct Token {
    iss: String,
    aud: String,
    pub sub: String,
    pub iat: i64,
    nbf: i64,
    exp: i64,
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
    key: Key,
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
    fn get(&self, token: &str, key_ok: impl Fn(&Key) -> bool) -> Option<Known> {
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

    fn put(&self, token: &str, key: Key, claims: Arc<Token>, now: i64) {
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

/// A token verified before, if `token` is exactly that token and its key is still valid: what
/// step 1 keys the rate limit by and step 2 starts from.
pub fn known(app: &App, token: &str) -> Option<Known> {
    let now_ms = crate::clock::now_millis();
    let keys = app.keys();
    app.edge_tokens.get(token, |k| keys.hmac_still_valid(k, now_ms))
}

/// Validates a bearer token (§4.7); on any failure (→ 401) the check that refused it, in a few
/// words for the request's event (never the token). `known` is [`known`]'s answer for it, when
/// the caller asked already.
pub fn validate(app: &App, st: &State, token: &str, known: Option<Known>) -> Result<Arc<Token>, &'static str> {
    let now_ms = crate::clock::now_millis();
    let now = now_ms.div_euclid(1000);
    let (t, verified_now) = match known {
        // Its key asked again: step 1 may have been a while ago (the body is read in between).
        Some(k) if app.keys().hmac_still_valid(&k.key, now_ms) => (k.claims, None),
        Some(_) => return Err("signed by a token key that is no longer valid"),
        None => {
            let (payload, key) = app
                .keys()
                .verify_internal_by(token, now_ms)
                .ok_or("not a token signed by a current or previous token key")?;
            let t: Token = serde_json::from_slice(&payload).map_err(|_| "not an edge token's claims")?;
            (Arc::new(t), Some(key))
        }
    };
    if t.iss != app.cfg.issuer() || t.aud != EDGE_AUDIENCE {
        return Err("not an edge token of this service (iss, aud)");
    }
    if t.exp + LEEWAY < now {
        return Err("expired");
    }
    if t.nbf - LEEWAY > now {
        return Err("not yet valid (nbf)");
    }
    let tp = st
        .idx
        .trust
        .get(&t.svc.tp)
        .ok_or("its trust provider no longer exists")?;
    // Still that provider: same resource set and kind (a provider re-created under the id of a
    // deleted one is another provider), active, and the token not revoked.
    if tp.rs != t.svc.rs || tp.kind != t.svc.tpk {
        return Err("its trust provider no longer exists");
    }
    if !tp.active {
        return Err("its trust provider is inactive");
    }
    if t.iat < tp.tokens_valid_after {
        return Err("revoked: issued before its trust provider's tokens were revoked");
    }
    // Kept only once it passed: a token refused now is verified again if it is presented again.
    if let Some(key) = verified_now {
        app.edge_tokens.put(token, key, t.clone(), now);
    }
    Ok(t)
}

/// The unverified `jti` of a well-formed token: the rate-limit bucket's key (§4.12), taken
/// before the token is validated. The payload's first `"jti":"<uuid>"` member is read without
/// parsing the rest: step 2 parses the whole payload once its signature is verified, and this
/// key decides only which bucket a request is counted in (our tokens are compact JSON).
pub fn peek_jti(token: &str) -> Option<Uuid> {
    const KEY: &str = "\"jti\":\"";
    let p = crate::crypto::jws::peek_payload(token)?;
    let text = std::str::from_utf8(&p).ok()?;
    let at = text.find(KEY)? + KEY.len();
    if text.as_bytes().get(at + 36) != Some(&b'"') {
        return None;
    }
    Uuid::try_parse(text.get(at..at + 36)?).ok()
}

#[cfg(test)]
mod tests {
    use super::peek_jti;
    use crate::crypto::b64url;

    fn token(payload: &str) -> String {
        format!("{}.{}.sig", b64url(br#"{"alg":"HS256"}"#), b64url(payload.as_bytes()))
    }

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

    #[test]
    fn peek_jti_reads_the_jti_member_and_nothing_inside_a_string() {
        let id = "0191d2a4-5b6c-7d8e-9f00-112233445566";
        let ours = format!(r#"{{"iss":"https://svc","sub":"x","exp":1,"jti":"{id}","svc":{{"facts":{{}}}}}}"#);
        assert_eq!(peek_jti(&token(&ours)).map(|u| u.to_string()).as_deref(), Some(id));
        // A `"jti":"…` inside a string value is escaped, so it is not the member.
        let other = "0191d2a4-5b6c-7d8e-9f00-000000000000";
        let hidden = format!(r#"{{"sub":"\"jti\":\"{other}","jti":"{id}"}}"#);
        assert_eq!(peek_jti(&token(&hidden)).map(|u| u.to_string()).as_deref(), Some(id));
        assert_eq!(
            peek_jti(&token(r#"{"jti":"not-a-uuid-at-all-not-a-uuid-at-all"}"#)),
            None
        );
        assert_eq!(peek_jti(&token(r#"{"jti":"0191d2a4"}"#)), None);
        assert_eq!(peek_jti(&token(&format!(r#"{{"jti":"{id}x"}}"#))), None);
        assert_eq!(peek_jti(&token(r#"{"sub":"x"}"#)), None);
        assert_eq!(peek_jti("not a token"), None);
        assert_eq!(peek_jti(&format!("{}.%%%.sig", b64url(b"{}"))), None);
    }
}
