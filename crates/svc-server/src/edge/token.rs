//! The edge access token (contract §4.7): HS256 under the internal token key, `aud = svc-edge`,
//! carrying the trust provider, the resource set and the verified facts, so `/credentials` needs no
//! state per token. Revocation is a snapshot check: the provider must still exist in its resource
//! set, be active, and not have been deactivated after the token was issued.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::app::App;
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
    tpk: &'a str,
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
    tpk: &str,
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
    pub tpk: String,
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
    if tp.rs != t.svc.rs || !tp.active || t.iat < tp.tokens_valid_after {
        return None;
    }
    Some(t)
}

/// The unverified `jti` of a well-formed token (rate-limit bucket key, §4.12).
pub fn peek_jti(token: &str) -> Option<Uuid> {
    #[derive(Deserialize)]
    struct J {
        jti: Uuid,
    }
    let p = crate::crypto::jws::peek_payload(token)?;
    serde_json::from_slice::<J>(&p).ok().map(|j| j.jti)
}
