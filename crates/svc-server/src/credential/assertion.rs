//! JWTs this service signs for upstreams and workloads (contract §5.2): federation assertions
//! (RS256 under the published issuer key), and the `oidc-id-token` / `jwt-svid-token` credentials
//! (ES256 or RS256).

use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::IssueCx;
use super::Services;
use crate::crypto::jose;

/// Lifetime of exchange assertions (`exp = iat + 300`).
pub const EXCHANGE_LIFETIME: i64 = 300;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Alg {
    ES256,
    RS256,
}

/// Builds the standard claims (§5.2) around `sub` and `aud`; `with_svc` adds the `svc` object.
pub fn claims(cx: &IssueCx<'_>, sub: &str, aud: &str, lifetime: i64, with_svc: bool) -> (Map<String, Value>, i64) {
    let (mut c, exp) = base_claims(&cx.svc, sub, aud, lifetime);
    if with_svc {
        c.insert(
            "svc".into(),
            json!({
                "tenant": cx.svc.cfg.tenant,
                "resourceSetId": cx.rs,
                "clientWorkloadId": cx.client_workload.map(|c| c.0),
                "serverWorkloadId": cx.server_workload,
                "accessPolicyId": cx.access_policy,
                "credentialProviderId": cx.credential_provider,
                "trustProviderId": cx.trust_provider,
            }),
        );
    }
    (c, exp)
}

/// `iss`, `sub`, `aud`, `iat`, `nbf`, `exp` (= `iat + lifetime`) and `jti`; also the expiry.
fn base_claims(svc: &Services<'_>, sub: &str, aud: &str, lifetime: i64) -> (Map<String, Value>, i64) {
    let now = crate::clock::now_secs();
    let mut c = Map::new();
    c.insert("iss".into(), json!(svc.cfg.issuer()));
    c.insert("sub".into(), json!(sub));
    c.insert("aud".into(), json!(aud));
    c.insert("iat".into(), json!(now));
    c.insert("nbf".into(), json!(now));
    c.insert("exp".into(), json!(now + lifetime));
    c.insert("jti".into(), json!(Uuid::new_v4()));
    (c, now + lifetime)
}

/// Signs claims with the issuer's current key of the algorithm.
pub fn sign(svc: &Services<'_>, alg: Alg, claims: &Map<String, Value>) -> String {
    let bytes = serde_json::to_vec(claims).expect("claims serialise");
    let now = crate::clock::now_millis();
    let ring = svc.keys.load();
    match alg {
        Alg::ES256 => {
            let k = ring.ec_signer(now);
            jose::sign_es256(&k.pair, &k.kid, &bytes)
        }
        Alg::RS256 => {
            let k = ring.rsa_signer(now);
            jose::sign_rs256(&k.pair, Some(&k.kid), &bytes)
        }
    }
}

/// A federation assertion for an upstream (RS256, `exp = iat + 300`).
pub fn federation(cx: &IssueCx<'_>, sub: &str, aud: &str) -> String {
    let (c, _) = claims(cx, sub, aud, EXCHANGE_LIFETIME, true);
    sign(&cx.svc, Alg::RS256, &c)
}

/// A federation assertion the service makes for itself, outside any request (objectStorageC log
/// streams, §5.2): RS256, `exp = iat + 300`, and an `svc` object holding only the tenant (no
/// workload, policy or provider takes part).
pub fn service_federation(svc: &Services<'_>, sub: &str, aud: &str) -> String {
    let (mut c, _) = base_claims(svc, sub, aud, EXCHANGE_LIFETIME);
    c.insert("svc".into(), json!({"tenant": svc.cfg.tenant}));
    sign(svc, Alg::RS256, &c)
}

/// The subject prefix of the service's own assertions for log streams (§5.2).
pub const LOG_STREAM_SUBJECT: &str = "svc-log-stream:";

/// Why a JWT the service signs may not carry `sub` for a provider (issue 31): the subjects of
/// the service's own assertions are reserved — a client workload's id, which federation
/// assertions carry for that workload (§5.2), unless it is the workload the credential is for
/// (`own`), and a log stream's `svc-log-stream:` subject. Every JWT is signed with the one
/// published issuer key, so a provider whose configured subject or custom `sub` claim named
/// them would mint, for whoever configures providers, the assertion a relying party trusts as
/// that workload's.
pub fn reserved_subject(st: &dyn super::Lookup, sub: &str, own: Option<Uuid>) -> Option<&'static str> {
    if sub.starts_with(LOG_STREAM_SUBJECT) {
        return Some("is reserved for the service's log-stream assertions");
    }
    match Uuid::parse_str(sub.trim()) {
        Ok(id) if Some(id) != own && st.has_client_workload(&id) => {
            Some("names a client workload, the subject of that workload's own assertions")
        }
        _ => None,
    }
}

/// [`reserved_subject`] at issuance, against the configuration as committed now.
pub fn check_subject(cx: &IssueCx<'_>, sub: &str) -> Result<(), String> {
    let st = cx.svc.renewals.current();
    match reserved_subject(&*st, sub, cx.client_workload.map(|c| c.0)) {
        Some(why) => Err(format!("the subject {why}")),
        None => Ok(()),
    }
}

/// The default assertion subject: the matched client workload's id (§5.2).
pub fn default_subject(cx: &IssueCx<'_>) -> String {
    cx.client_workload.map(|c| c.0).unwrap_or(Uuid::nil()).to_string()
}
