//! The JWT verification shared by every token kind, in the order of contract §4.5: structure,
//! pinned algorithm (never `none`/`HS*`), key by `kid` (one refresh for an unknown one) or by type,
//! signature, then `exp` (required), `nbf`, `iat` with leeway, `iss`, and `aud` normalised to an
//! array. Each kind module supplies a [`Profile`] and turns the verified payload into facts.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::keycache::{self, Loaded};
use super::{ClaimCheck, CompiledTrust, KeySource, TrustError};

use crate::crypto::jose::{self, Alg, JwsError, VerifyingKey};
use crate::trust::VerifyCx;

/// RS/PS/ES algorithms accepted for generic OIDC and orchestrator tokens.
pub const ASYMMETRIC: &[Alg] = &[
    Alg::RS256,
    Alg::RS384,
    Alg::RS512,
    Alg::PS256,
    Alg::PS384,
    Alg::PS512,
    Alg::ES256,
    Alg::ES384,
];
pub const RS256_ONLY: &[Alg] = &[Alg::RS256];

pub enum Issuer<'a> {
    /// `iss` must equal the discovery document's issuer (trailing `/` ignored).
    Discovered,
    Exact(&'a str),
    OneOf(&'a [String]),
    /// Checked elsewhere (rules) or not at all.
    Unchecked,
}

pub enum Audience<'a> {
    /// One `aud` element must equal this.
    Contains(&'a str),
    /// One `aud` element must equal one of these.
    OneOf(Vec<&'a str>),
}

pub struct Profile<'a> {
    pub algs: &'static [Alg],
    pub issuer: Issuer<'a>,
    pub audience: Audience<'a>,
}

/// Where keys come from for this verification.
pub enum Keys<'a> {
    /// An issuer's discovery document (URL), or a JWKS URL.
    Fetched(&'a str, keycache::Kind),
    Static(&'a [Arc<VerifyingKey>]),
    Own,
}

/// The key source of a compiled provider, the kind's default issuer filling `KindDefault`.
pub fn keys_of<'a>(tp: &'a CompiledTrust, default_issuer: &'a str) -> Keys<'a> {
    match &tp.keys {
        KeySource::Discovery(u) => Keys::Fetched(u, keycache::Kind::Discovery),
        KeySource::KindDefault | KeySource::None => Keys::Fetched(default_issuer, keycache::Kind::Discovery),
        KeySource::Static(k) => Keys::Static(k),
        KeySource::OwnIssuer => Keys::Own,
    }
}

fn sig_err(e: JwsError) -> TrustError {
    match e {
        JwsError::Malformed(m) => TrustError::InvalidEvidence(format!("malformed token: {m}")),
        JwsError::Algorithm(m) | JwsError::Signature(m) => TrustError::InvalidSignature(m),
    }
}

/// `aud` as a list, whether it came as a string or an array.
pub fn audiences(claims: &Map<String, Value>) -> Vec<String> {
    match claims.get("aud") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => vec![],
    }
}

/// A failed claim check: the claim, what it had to be and what it was (never the token).
fn claim_failed(
    claim: &'static str,
    expected: Vec<String>,
    actual: Option<String>,
    message: &'static str,
) -> TrustError {
    TrustError::Claim(Box::new(ClaimCheck {
        stale: false,
        claim,
        expected,
        actual,
        message,
    }))
}

/// A time claim outside the accepted window: the claim's time and the bound it crossed (both
/// RFC 3339; `exp` must be after the bound, `nbf` and `iat` before it).
fn time_failed(claim: &'static str, at: i64, bound: i64, message: &'static str) -> TrustError {
    // Years 0–9999 as RFC 3339; a claim beyond them as its number.
    let time = |secs: i64| match secs {
        -62_167_219_200..=253_402_300_799 => svc_api::Timestamp::from_secs(secs).to_rfc3339(),
        _ => secs.to_string(),
    };
    let side = if claim == "exp" { "after" } else { "before" };
    TrustError::Claim(Box::new(ClaimCheck {
        stale: true,
        claim,
        expected: vec![format!("{side} {}", time(bound))],
        actual: Some(time(at)),
        message,
    }))
}

fn num(claims: &Map<String, Value>, name: &str) -> Result<Option<i64>, TrustError> {
    match claims.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map(Some)
            .ok_or_else(|| TrustError::InvalidEvidence(format!("{name} is not a number"))),
        Some(_) => Err(TrustError::InvalidEvidence(format!("{name} is not a number"))),
    }
}

/// Verifies a token and returns its payload; `extra` keys (certificate secrets) are also tried.
pub async fn verify(
    cx: &VerifyCx<'_>,
    token: &str,
    keys: Keys<'_>,
    extra: &[Arc<VerifyingKey>],
    profile: &Profile<'_>,
) -> Result<Map<String, Value>, TrustError> {
    let jws = jose::split(token).map_err(sig_err)?;
    let alg = jose::check_alg(&jws.header, profile.algs).map_err(sig_err)?;

    // Keys: fetched (with one refresh for an unknown kid), static, or our own.
    let mut discovered_issuer: Option<String> = None;
    let verified = match keys {
        Keys::Fetched(url, kind) => {
            let loaded = cx
                .key_cache
                .get(cx.upstream, url, kind)
                .await
                .map_err(|e| TrustError::Upstream(e.to_string()))?;
            discovered_issuer = loaded.issuer.clone();
            match try_keys(&jws, alg, &loaded, extra)? {
                true => true,
                false => match cx.key_cache.refresh_for_unknown_kid(cx.upstream, url, kind).await {
                    Some(Ok(fresh)) => {
                        discovered_issuer = fresh.issuer.clone();
                        try_keys(&jws, alg, &fresh, extra)?
                    }
                    Some(Err(e)) => return Err(TrustError::Upstream(e.to_string())),
                    None => false,
                },
            }
        }
        Keys::Static(k) => {
            let all: Vec<&VerifyingKey> = k.iter().chain(extra).map(|a| a.as_ref()).collect();
            jose::verify_with(&jws, alg, &all).map_err(sig_err)?
        }
        Keys::Own => {
            let ring = cx.keys.load();
            let own = ring.verifying_keys(crate::clock::now_millis());
            let all: Vec<&VerifyingKey> = own
                .iter()
                .map(|a| a.as_ref())
                .chain(extra.iter().map(|a| a.as_ref()))
                .collect();
            jose::verify_with(&jws, alg, &all).map_err(sig_err)?
        }
    };
    if !verified {
        return Err(TrustError::InvalidSignature(format!(
            "no key with kid {:?}",
            jws.header.kid.as_deref().unwrap_or("")
        )));
    }

    let claims: Map<String, Value> = match serde_json::from_slice(&jws.payload) {
        Ok(Value::Object(m)) => m,
        _ => {
            return Err(TrustError::InvalidEvidence("payload is not a JSON object".into()));
        }
    };
    let now = crate::clock::now_secs();
    let leeway = cx.cfg.jwt_leeway_seconds as i64;
    let exp = num(&claims, "exp")?.ok_or_else(|| TrustError::InvalidEvidence("exp is required".into()))?;
    // Saturating: a claim at the end of the i64 range (or a float beyond it, read as that end)
    // must not wrap around into the past or the future.
    if exp.saturating_add(leeway) < now {
        return Err(time_failed("exp", exp, now - leeway, "token expired"));
    }
    if let Some(nbf) = num(&claims, "nbf")?.filter(|nbf| nbf.saturating_sub(leeway) > now) {
        return Err(time_failed("nbf", nbf, now + leeway, "token not yet valid (nbf)"));
    }
    if let Some(iat) = num(&claims, "iat")?.filter(|iat| iat.saturating_sub(leeway) > now) {
        return Err(time_failed(
            "iat",
            iat,
            now + leeway,
            "token issued in the future (iat)",
        ));
    }
    let iss = claims.get("iss").and_then(Value::as_str);
    let iss_ok = match &profile.issuer {
        Issuer::Discovered => match (iss, &discovered_issuer) {
            // The token's `iss` is the discovery `issuer` exactly (§4.5); only the discovery
            // issuer against the configured URL ignores a trailing `/` (keycache).
            (Some(i), Some(d)) => i == d,
            _ => false,
        },
        Issuer::Exact(want) => iss == Some(want),
        Issuer::OneOf(list) => iss.is_some_and(|i| list.iter().any(|w| w == i)),
        Issuer::Unchecked => true,
    };
    if !iss_ok {
        let expected = match &profile.issuer {
            Issuer::Discovered => discovered_issuer.into_iter().collect(),
            Issuer::Exact(want) => vec![want.to_string()],
            Issuer::OneOf(list) => list.to_vec(),
            Issuer::Unchecked => vec![],
        };
        return Err(claim_failed(
            "iss",
            expected,
            iss.map(str::to_string),
            "iss is not the expected issuer",
        ));
    }
    let auds = audiences(&claims);
    let aud_ok = match &profile.audience {
        Audience::Contains(want) => auds.iter().any(|a| a == want),
        Audience::OneOf(list) => auds.iter().any(|a| list.contains(&a.as_str())),
    };
    if !aud_ok {
        let expected = match &profile.audience {
            Audience::Contains(want) => vec![want.to_string()],
            Audience::OneOf(list) => list.iter().map(|a| a.to_string()).collect(),
        };
        let actual = match auds.as_slice() {
            [] => None,
            [one] => Some(one.clone()),
            many => serde_json::to_string(many).ok(),
        };
        return Err(claim_failed(
            "aud",
            expected,
            actual,
            "aud does not contain an accepted audience",
        ));
    }
    Ok(claims)
}

fn try_keys(jws: &jose::Jws<'_>, alg: Alg, loaded: &Loaded, extra: &[Arc<VerifyingKey>]) -> Result<bool, TrustError> {
    let all: Vec<&VerifyingKey> = loaded.keys.iter().chain(extra).map(|a| a.as_ref()).collect();
    jose::verify_with(jws, alg, &all).map_err(sig_err)
}

/// Copies string/number/bool claims into facts (`attribute ← claim`).
pub fn facts_from(claims: &Map<String, Value>, mapping: &[(&str, &str)], facts: &mut super::Facts) {
    for (attr, claim) in mapping {
        if let Some(v) = claims.get(*claim) {
            let vals = super::rules::claim_values(v);
            match vals.len() {
                0 => {}
                1 => {
                    facts.insert(
                        attr.to_string(),
                        super::Fact::One(vals.into_iter().next().unwrap_or_default()),
                    );
                }
                _ => {
                    facts.insert(attr.to_string(), super::Fact::Many(vals));
                }
            }
        }
    }
}
