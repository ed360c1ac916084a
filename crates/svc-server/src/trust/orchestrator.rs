//! `OrchestratorServiceAccount`: projected service-account JWTs (contract §4.5). Algorithms
//! RS/PS/ES; keys from exactly the configured source; `iss` = discovery issuer (oidcUrl) or
//! `{issuer}` (own tokens); `aud` contains the edge audience; `exp` required. Claims come from the
//! `kubernetes.io` object, falling back to the legacy `kubernetes.io/serviceaccount/*` claims. No
//! token-review call.

use serde_json::{Map, Value};

use super::jwt::{self, ASYMMETRIC, Audience, Issuer, Profile};
use super::{CompiledTrust, Fact, KeySource, TrustError, Verified};
use crate::domain::trust::TrustKind;
use crate::trust::VerifyCx;
use crate::trust::kinds::{Evidence, KindSpec, non_blank};

/// (namespace, pod name, pod uid, service-account name, service-account uid). A number or boolean
/// claim is its JSON text (§4.6), as for every other kind.
pub fn orchestrator_claims(c: &Map<String, Value>) -> [Option<String>; 5] {
    let s = |v: Option<&Value>| match v? {
        Value::String(s) => Some(s.clone()),
        v @ (Value::Number(_) | Value::Bool(_)) => Some(v.to_string()),
        _ => None,
    };
    let k = c.get("kubernetes.io");
    let at = |path: &[&str]| k.and_then(|k| path.iter().try_fold(k, |v, p| v.get(*p)));
    [
        s(at(&["namespace"])).or_else(|| s(c.get("kubernetes.io/serviceaccount/namespace"))),
        s(at(&["pod", "name"])),
        s(at(&["pod", "uid"])),
        s(at(&["serviceaccount", "name"])).or_else(|| s(c.get("kubernetes.io/serviceaccount/service-account.name"))),
        s(at(&["serviceaccount", "uid"])).or_else(|| s(c.get("kubernetes.io/serviceaccount/service-account.uid"))),
    ]
}

pub const KIND: KindSpec = KindSpec {
    kind: TrustKind::OrchestratorServiceAccount,
    name: "OrchestratorServiceAccount",
    client_id_type: "orchestrator_idtoken",
    match_attributes: &[
        "OrchestratorIss",
        "OrchestratorIoNamespace",
        "OrchestratorIoPodName",
        "OrchestratorIoServiceAccountName",
        "OrchestratorSub",
    ],
    key_fields: &["oidcUrl", "jwks", "certificate", "isSvcTenantOidcToken"],
    one_key_source: true,
    accepts_secrets: true,
    jwt: true,
    payload_prefixes: &[
        "orchestrator.identityToken.decode.payload.",
        "orchestrator.serviceAccountToken.decode.payload.",
    ],
    evidence: Evidence::Token(|c| non_blank(c.orchestrator.as_ref()?.service_account_token.as_ref())),
};

pub async fn verify(cx: &VerifyCx<'_>, tp: &CompiledTrust, token: &str) -> Result<Verified, TrustError> {
    let profile = Profile {
        algs: ASYMMETRIC,
        issuer: match &tp.keys {
            KeySource::Discovery(_) => Issuer::Discovered,
            KeySource::OwnIssuer => Issuer::Exact(cx.cfg.issuer()),
            _ => Issuer::Unchecked,
        },
        audience: Audience::Contains(&cx.cfg.edge_audience),
    };
    let claims = jwt::verify(cx, token, jwt::keys_of(tp, cx.cfg.issuer()), &tp.extra_keys, &profile).await?;
    let mut v = Verified::default();
    jwt::facts_from(
        &claims,
        &[("OrchestratorIss", "iss"), ("OrchestratorSub", "sub")],
        &mut v.facts,
    );
    let [ns, pod, _pod_uid, sa, sa_uid] = orchestrator_claims(&claims);
    v.service_account_uid = sa_uid;
    for (attr, val) in [
        ("OrchestratorIoNamespace", ns),
        ("OrchestratorIoPodName", pod),
        ("OrchestratorIoServiceAccountName", sa),
    ] {
        if let Some(val) = val {
            v.facts.insert(attr.into(), Fact::One(val));
        }
    }
    v.claims = Some(claims);
    Ok(v)
}
