//! The edge access token (contract §4.7): HS256 under the internal token key, `aud = svc-edge`,
//! carrying the trust provider, the resource set and the verified facts, so `/credentials` needs no
//! state per token. Revocation is a snapshot check: the provider must still exist in its resource
//! set, be active, and not have been deactivated after the token was issued.

use std::collections::BTreeMap;

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

/// Validates a bearer token (§4.7); `None` on any failure (→ 401).
pub fn validate(app: &App, st: &State, token: &str) -> Option<Token> {
    let now_ms = crate::clock::now_millis();
    let payload = app.keys().verify_internal(token, now_ms)?;
    let t: Token = serde_json::from_slice(&payload).ok()?;
    let now = now_ms.div_euclid(1000);
    if t.iss != app.cfg.issuer() || t.aud != EDGE_AUDIENCE || t.exp + LEEWAY < now || t.nbf - LEEWAY > now {
        return None;
    }
    let tp = st.idx.trust.get(&t.svc.tp)?;
    // Still that provider: same resource set and kind (a provider re-created under the id of a
    // deleted one is another provider), active, and the token not revoked.
    if tp.rs != t.svc.rs || tp.kind != t.svc.tpk || !tp.active || t.iat < tp.tokens_valid_after {
        return None;
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
