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

/// Tokens whose signature verified, by their signature: at most this many (a token is ~1 KB,
/// its parsed claims about as much again: ~10 MB at most). Only tokens this node's keys signed
/// get in, so the bound is reached only by that many workloads at once; then the expired ones
/// go, and if that is not enough, all of them (verified again on their next use).
const VERIFIED_CAP: usize = 4096;

struct Entry {
    /// The whole token: a hit must be this exact text, not only its signature.
    token: Box<str>,
    key: Arc<crate::crypto::jws::HmacKey>,
    claims: Arc<Token>,
}

/// The verified-token cache of one node (the idea of Envoy's `jwt_cache_config`).
#[derive(Default)]
pub struct Verified {
    map: Mutex<HashMap<Box<str>, Entry>>,
}

impl Verified {
    /// The claims of `token` when it is exactly a token verified before under a key `key_ok`
    /// still accepts. The text is compared in constant time.
    fn get(&self, token: &str, key_ok: impl Fn(&Arc<crate::crypto::jws::HmacKey>) -> bool) -> Option<Arc<Token>> {
        let (_, sig) = token.rsplit_once('.')?;
        let m = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let e = m.get(sig)?;
        let same = aws_lc_rs::constant_time::verify_slices_are_equal(e.token.as_bytes(), token.as_bytes()).is_ok();
        (same && key_ok(&e.key)).then(|| e.claims.clone())
    }

    fn put(&self, token: &str, key: Arc<crate::crypto::jws::HmacKey>, claims: Arc<Token>, now: i64) {
        let Some((_, sig)) = token.rsplit_once('.') else { return };
        let mut m = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() >= VERIFIED_CAP {
            m.retain(|_, e| e.claims.exp + LEEWAY >= now);
            if m.len() >= VERIFIED_CAP {
                m.clear();
            }
        }
        m.insert(
            sig.into(),
            Entry {
                token: token.into(),
                key,
                claims,
            },
        );
    }

    /// Tokens held (tests).
    pub fn len(&self) -> usize {
        self.map.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The claims of a token verified before, if `token` is exactly that token and its key is still
/// valid: what step 1 keys the rate limit by and step 2 starts from.
pub fn known(app: &App, token: &str) -> Option<Arc<Token>> {
    let now_ms = crate::clock::now_millis();
    let keys = app.keys();
    app.edge_tokens.get(token, |k| keys.hmac_still_valid(k, now_ms))
}

/// Validates a bearer token (§4.7); `None` on any failure (→ 401). `known` is [`known`]'s answer
/// for it, when the caller asked already.
pub fn validate(app: &App, st: &State, token: &str, known: Option<Arc<Token>>) -> Option<Arc<Token>> {
    let now_ms = crate::clock::now_millis();
    let now = now_ms.div_euclid(1000);
    let (t, verified_now) = match known {
        Some(t) => (t, None),
        None => {
            let (payload, key) = app.keys().verify_internal_by(token, now_ms)?;
            let t: Token = serde_json::from_slice(&payload).ok()?;
            (Arc::new(t), Some(key))
        }
    };
    if t.iss != app.cfg.issuer() || t.aud != EDGE_AUDIENCE || t.exp + LEEWAY < now || t.nbf - LEEWAY > now {
        return None;
    }
    let tp = st.idx.trust.get(&t.svc.tp)?;
    // Still that provider: same resource set and kind (a provider re-created under the id of a
    // deleted one is another provider), active, and the token not revoked.
    if tp.rs != t.svc.rs || tp.kind != t.svc.tpk || !tp.active || t.iat < tp.tokens_valid_after {
        return None;
    }
    // Kept only once it passed: a token refused now is verified again if it is presented again.
    if let Some(key) = verified_now {
        app.edge_tokens.put(token, key, t.clone(), now);
    }
    Some(t)
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
        let a = "ha.pa.sig-a";
        let id = "0191d2a4-0000-7000-8000-000000000001";
        v.put(a, key.clone(), claims(id), 0);
        assert_eq!(v.get(a, |_| true).map(|t| t.jti.to_string()).as_deref(), Some(id));
        // The same signature under another header or claims; a key no longer valid.
        assert!(v.get("ha.pb.sig-a", |_| true).is_none());
        assert!(v.get("hb.pa.sig-a", |_| true).is_none());
        assert!(v.get("ha.pa.sig-a.", |_| true).is_none());
        assert!(v.get(a, |k| !Arc::ptr_eq(k, &key)).is_none());
        // Bounded: when full, the expired go first (exp 100 + 30 s of leeway), then all.
        for i in 0..super::VERIFIED_CAP * 2 {
            v.put(&format!("h.p.s{i}"), key.clone(), claims(id), 200);
            assert!(v.len() <= super::VERIFIED_CAP);
        }
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
