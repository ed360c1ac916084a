//! Dynamic values (contract §3.5.3): `${…}` expressions in subjects, SPIFFE ids and claims,
//! resolved at issuance from the verified facts and claims of the edge token, the request's
//! self-reported environment and the matched client workload. An expression that cannot be
//! resolved denies the request (403, reason `UnresolvableClaim`).

use serde_json::{Map, Value};
use svc_api::edge::ClientWorkloadDetails;
use uuid::Uuid;

use crate::domain::trust::TrustKind;
use crate::trust::Facts;
use crate::trust::rules::{claim, claim_values};

/// What an expression can read.
pub struct Values<'a> {
    /// The edge token's trust-provider kind (`tpk`).
    pub kind: TrustKind,
    pub facts: &'a Facts,
    pub claims: Option<&'a Map<String, Value>>,
    pub client: &'a ClientWorkloadDetails,
    pub client_workload: (Uuid, &'a str),
}

fn lookup(expr: &str, v: &Values<'_>) -> Option<String> {
    // A kind's verified payload (§3.5.3): only from the evidence of that kind.
    for spec in crate::trust::kinds::KINDS {
        if let Some(path) = spec.payload_prefixes.iter().find_map(|p| expr.strip_prefix(p)) {
            if v.kind != spec.kind {
                return None;
            }
            let vals = claim_values(claim(v.claims?, path)?);
            return (vals.len() == 1).then(|| vals.into_iter().next()).flatten();
        }
    }
    if let Some(var) = expr.strip_prefix("os.environment.") {
        let env = v.client.os.as_ref()?.environment.as_ref()?;
        let val = match var {
            "ORCH_POD_NAME" => env.orch_pod_name.clone(),
            "CLIENT_WORKLOAD_ID" => env.client_workload_id.clone(),
            "ORCH_PROVIDER_ID" => env.orch_provider_id.clone(),
            "SVC_RESOURCE_SET_ID" => env.svc_resource_set_id.clone(),
            _ => None,
        };
        return val.filter(|s| !s.is_empty());
    }
    let fact = |name: &str| v.facts.get(name).and_then(|f| f.values().first().cloned());
    match expr {
        "cloudA.account" => fact("CloudAAccountId"),
        "cloudA.region" => fact("CloudARegion"),
        "svc.clientWorkload.id" => Some(v.client_workload.0.to_string()),
        "svc.clientWorkload.name" => Some(v.client_workload.1.to_string()),
        _ => None,
    }
}

/// Replaces every `${…}` of `template`; `Err(expression)` for the first one that cannot be resolved
/// (including every expression when there is no request, as for `verification`).
pub fn resolve(template: &str, values: Option<&Values<'_>>) -> Result<String, String> {
    resolve_with(template, values, str::to_string)
}

/// [`resolve`], each value passed through `escape` (for templates of a syntax of their own, such
/// as an RFC 4514 subject, where a value must stay one value).
pub fn resolve_with(
    template: &str,
    values: Option<&Values<'_>>,
    escape: impl Fn(&str) -> String,
) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| rest[start..].to_string())?;
        let expr = after[..end].trim();
        let value = values
            .and_then(|v| lookup(expr, v))
            .ok_or_else(|| format!("${{{expr}}}"))?;
        out.push_str(&escape(&value));
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The environment variables a request reports (§4.1 ClientWorkloadDetails `os.environment`).
const ENV_VARS: &[&str] = &[
    "ORCH_POD_NAME",
    "CLIENT_WORKLOAD_ID",
    "ORCH_PROVIDER_ID",
    "SVC_RESOURCE_SET_ID",
];

/// Checks an expression template's syntax on write (balanced `${…}`, known roots).
pub fn check_template(template: &str) -> Result<(), String> {
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or("unterminated ${ expression")?;
        let expr = after[..end].trim();
        let known = crate::trust::kinds::KINDS
            .iter()
            .flat_map(|k| k.payload_prefixes)
            .any(|p| expr.starts_with(p) && expr.len() > p.len())
            || expr
                .strip_prefix("os.environment.")
                .is_some_and(|var| ENV_VARS.contains(&var))
            || matches!(
                expr,
                "cloudA.account" | "cloudA.region" | "svc.clientWorkload.id" | "svc.clientWorkload.name"
            );
        if !known {
            return Err(format!("unknown expression ${{{expr}}}"));
        }
        rest = &after[end + 1..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use svc_api::edge::{Os, OsEnvironment};

    use super::*;
    use crate::trust::Fact;

    #[test]
    fn resolves_each_source_and_refuses_the_rest() {
        let mut facts = Facts::new();
        facts.insert("CloudAAccountId".into(), Fact::One("123456789012".into()));
        let claims = json!({"sub": "repo:acme/app", "org": {"team": "blue"}, "n": 7})
            .as_object()
            .cloned()
            .unwrap();
        let client = ClientWorkloadDetails {
            os: Some(Os {
                environment: Some(OsEnvironment {
                    orch_pod_name: Some("pod-1".into()),
                    ..Default::default()
                }),
            }),
            ..Default::default()
        };
        let id = Uuid::nil();
        let v = Values {
            kind: TrustKind::CiAIdentityToken,
            facts: &facts,
            claims: Some(&claims),
            client: &client,
            client_workload: (id, "build"),
        };
        assert_eq!(
            resolve("spiffe://acme/${ciA.identityToken.decode.payload.sub}", Some(&v)).unwrap(),
            "spiffe://acme/repo:acme/app"
        );
        assert_eq!(
            resolve(
                "${ciA.identityToken.decode.payload.org.team}-${ciA.identityToken.decode.payload.n}",
                Some(&v)
            )
            .unwrap(),
            "blue-7"
        );
        assert_eq!(
            resolve("${os.environment.ORCH_POD_NAME}/${svc.clientWorkload.name}", Some(&v)).unwrap(),
            "pod-1/build"
        );
        assert_eq!(
            resolve("acct-${cloudA.account}", Some(&v)).unwrap(),
            "acct-123456789012"
        );
        assert_eq!(resolve("plain", None).unwrap(), "plain");
        // Another kind's prefix, a missing claim, a missing variable, no request at all.
        assert_eq!(
            resolve("${oidc.identityToken.decode.payload.sub}", Some(&v)).unwrap_err(),
            "${oidc.identityToken.decode.payload.sub}"
        );
        assert!(resolve("${ciA.identityToken.decode.payload.nope}", Some(&v)).is_err());
        assert!(resolve("${os.environment.CLIENT_WORKLOAD_ID}", Some(&v)).is_err());
        assert!(resolve("${svc.clientWorkload.id}", None).is_err());
        assert!(check_template("${bogus.thing}").is_err());
        assert!(check_template("${oidc.identityToken.decode.payload.sub").is_err());
        assert!(check_template("a ${svc.clientWorkload.id} b").is_ok());
    }
}
