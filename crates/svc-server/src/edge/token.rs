//! The edge access token (contract §4.7): HS256 under the internal token key, `aud = svc-edge`,
//! carrying the trust provider, the resource set and the verified facts, so `/credentials` needs no
//! state per token. Revocation is a snapshot check: the provider must still exist in its resource
//! set, be active, and not have been deactivated after the token was issued.
//!
//! A workload presents the token it got from `/auth` on every `/credentials` call until it
//! expires, so a verified token is kept ([`crate::caches::edge_tokens::Verified`]): the next
//! request with the very same token skips the signature, the base64 and the JSON of its claims, and still passes every check that
//! depends on time or state (the key, expiry, issuer, audience, the provider's revocation).

use std::sync::Arc;

use serde::Serialize;
use uuid::Uuid;

use crate::app::App;
use crate::caches::edge_tokens::{Known, LEEWAY, Token};
use crate::domain::trust::TrustKind;
use crate::state::State;
use crate::trust::Facts;

pub const EDGE_AUDIENCE: &str = "svc-edge";

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
