//! Identifying the client workload (contract §4.8 step 5, §3.3, §4.6): the request's values for
//! each identity type — verified ones only from the edge token's facts, self-reported ones from the
//! request body — matched against workload identities (types ANDed, values of one type ORed).

use std::borrow::Cow;
use std::cell::OnceCell;
use std::net::IpAddr;

use serde_json::{Map, Value};
use svc_api::edge::ClientWorkloadDetails;

use crate::domain::identity::{self, IdentityType, Source};
use crate::domain::trust::TrustKind;
use crate::domain::workload::ClientWorkload;
use crate::net::IpNet;
use crate::state::index::normalise;
use crate::trust::Facts;
use crate::trust::orchestrator::orchestrator_claims;
use crate::trust::rules::{claim, claim_values};

/// Everything the request says about its caller.
pub struct Subject<'a> {
    pub facts: &'a Facts,
    /// The kind of the trust provider that verified the evidence (the edge token's `tpk`): the
    /// claim-based identity types take values only from their own kind's evidence (§4.6).
    kind: TrustKind,
    claims_raw: Option<&'a str>,
    claims: OnceCell<Option<Map<String, Value>>>,
    pub client: &'a ClientWorkloadDetails,
    pub source_ip: Option<IpAddr>,
    ecs_task: OnceCell<Option<Value>>,
}

fn s(v: &Option<String>) -> Option<&str> {
    v.as_deref()
}

impl<'a> Subject<'a> {
    pub fn new(
        facts: &'a Facts,
        kind: TrustKind,
        claims_raw: Option<&'a str>,
        client: &'a ClientWorkloadDetails,
        source_ip: Option<IpAddr>,
    ) -> Self {
        Subject {
            facts,
            kind,
            claims_raw,
            claims: OnceCell::new(),
            client,
            source_ip,
            ecs_task: OnceCell::new(),
        }
    }

    /// The verified evidence payload (parsed on first use).
    pub fn claims(&self) -> Option<&Map<String, Value>> {
        self.claims
            .get_or_init(|| self.claims_raw.and_then(|r| serde_json::from_str(r).ok()))
            .as_ref()
    }

    /// Whether the evidence payload can hold an orchestrator claim: each is under a
    /// `kubernetes.io` key, which JSON can spell otherwise only with a `\u` escape. Saves
    /// parsing the payload (~1 µs) for every other token, since the events' `environment` asks
    /// for the service-account UID on every `/credentials` request.
    fn may_have_orchestrator_claims(&self) -> bool {
        self.kind == TrustKind::OrchestratorServiceAccount
            && self
                .claims_raw
                .is_some_and(|r| r.contains("kubernetes.io") || r.contains("\\u"))
    }

    fn ecs_task(&self) -> Option<&Value> {
        self.ecs_task
            .get_or_init(|| {
                let text = self.client.cloud_a.as_ref()?.ecs.as_ref()?.task_metadata.as_ref()?;
                serde_json::from_str(text).ok()
            })
            .as_ref()
    }

    pub fn client_workload_id(&self) -> Option<&str> {
        s(&self.client.os.as_ref()?.environment.as_ref()?.client_workload_id).filter(|v| !v.is_empty())
    }

    fn pod_name(&self) -> Option<Cow<'_, str>> {
        match self.facts.get("OrchestratorIoPodName") {
            Some(f) => f.values().first().map(|v| Cow::Borrowed(v.as_str())),
            None => s(&self.client.os.as_ref()?.environment.as_ref()?.orch_pod_name).map(Cow::Borrowed),
        }
    }

    fn reported(&self, name: &str) -> Option<Cow<'_, str>> {
        let c = self.client;
        let host = || c.host.as_ref();
        let process = || c.host.as_ref()?.process.as_ref();
        let v = match name {
            "svcClientId" => self.client_workload_id(),
            "cloudALambdaArn" => s(&c.cloud_a.as_ref()?.lambda.as_ref()?.arn),
            "cloudAEcsServiceName" => self.ecs_task()?.get("ServiceName")?.as_str(),
            "cloudAEcsTaskFamily" => self.ecs_task()?.get("Family")?.as_str(),
            "hostname" => s(&host()?.hostname),
            "processName" => s(&process()?.name),
            "processUserName" => s(&process()?.user_name),
            "processPath" => s(&process()?.exe_path),
            "processCommandLine" => s(&process()?.command_line),
            _ => None,
        };
        v.map(Cow::Borrowed)
    }

    /// The request's values for an identity type (and claim key).
    pub fn values(&self, ty: &IdentityType, key: Option<&str>) -> Vec<Cow<'_, str>> {
        match ty.source {
            Source::Fact("OrchestratorIoPodName") => self.pod_name().into_iter().collect(),
            Source::Fact(attr) => self
                .facts
                .get(attr)
                .map(|f| f.values().iter().map(|v| Cow::Borrowed(v.as_str())).collect())
                .unwrap_or_default(),
            Source::OrchestratorClaim(_) if !self.may_have_orchestrator_claims() => vec![],
            Source::OrchestratorClaim(i) => self
                .claims()
                .and_then(|c| orchestrator_claims(c)[i].clone())
                .map(Cow::Owned)
                .into_iter()
                .collect(),
            Source::CustomClaim if self.kind != TrustKind::OidcIdToken => vec![],
            Source::CustomClaim => match (self.claims(), key) {
                (Some(c), Some(k)) => claim(c, k)
                    .map(claim_values)
                    .unwrap_or_default()
                    .into_iter()
                    .map(Cow::Owned)
                    .collect(),
                _ => vec![],
            },
            Source::Reported => self.reported(ty.name).into_iter().collect(),
            Source::SourceIp => self
                .source_ip
                .map(|ip| Cow::Owned(ip.to_string()))
                .into_iter()
                .collect(),
        }
    }

    fn group_matches(&self, ty: &IdentityType, key: Option<&str>, wanted: &[&str]) -> bool {
        if ty.source == Source::SourceIp {
            let Some(ip) = self.source_ip else {
                return false;
            };
            return wanted.iter().any(|w| IpNet::parse(w).is_some_and(|n| n.contains(ip)));
        }
        let actual = self.values(ty, key);
        if ty.name == "orchestratorPodNamePrefix" {
            return actual.iter().any(|a| wanted.iter().any(|w| a.starts_with(w)));
        }
        actual.iter().any(|a| {
            let a = normalise(ty, a);
            wanted.iter().any(|w| normalise(ty, w) == a)
        })
    }

    /// Whether every identity group of the workload matches (a workload without identities never does).
    pub fn matches(&self, w: &ClientWorkload) -> bool {
        if w.identities.is_empty() {
            return false;
        }
        let mut groups: Vec<(&str, Option<&str>)> = Vec::new();
        for i in &w.identities {
            let g = (i.kind.as_str(), i.key.as_deref());
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        groups.iter().all(|(kind, key)| {
            let Some(ty) = identity::lookup(kind) else {
                return false;
            };
            let wanted: Vec<&str> = w
                .identities
                .iter()
                .filter(|i| i.kind == *kind && i.key.as_deref() == *key)
                .map(|i| i.value.as_str())
                .collect();
            self.group_matches(ty, *key, &wanted)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orchestrator_claims_are_read_whenever_the_payload_can_hold_one() {
        let facts = Facts::new();
        let client = ClientWorkloadDetails::default();
        let ty = identity::lookup("orchestratorServiceAccountUID").expect("known type");
        let uid = |raw: &str| -> Vec<String> {
            Subject::new(&facts, TrustKind::OrchestratorServiceAccount, Some(raw), &client, None)
                .values(ty, None)
                .into_iter()
                .map(Cow::into_owned)
                .collect()
        };
        assert_eq!(uid(r#"{"kubernetes.io":{"serviceaccount":{"uid":"sa-1"}}}"#), ["sa-1"]);
        assert_eq!(
            uid(r#"{"kubernetes.io/serviceaccount/service-account.uid":"sa-2"}"#),
            ["sa-2"]
        );
        // The key spelled with an escape is the same key.
        assert_eq!(
            uid(r#"{"kubernetes\u002eio":{"serviceaccount":{"uid":"sa-3"}}}"#),
            ["sa-3"]
        );
        assert!(uid(r#"{"sub":"system:job:x"}"#).is_empty());
    }

    /// §4.6: a verified identity type takes values only from the evidence of its own kind of
    /// trust provider: `oidcIdToken` claims from an OidcIdToken provider's token, the
    /// service-account UID from an OrchestratorServiceAccount token; never from another
    /// platform's token that happens to carry the same claims.
    #[test]
    fn claim_identities_come_only_from_their_own_kind_of_evidence() {
        let facts = Facts::new();
        let client = ClientWorkloadDetails::default();
        let raw = r#"{"sub":"repo:acme/app","kubernetes.io":{"serviceaccount":{"uid":"sa-1"}}}"#;
        let values = |kind: &str, ty: &str, key: Option<&str>| -> Vec<String> {
            let ty = identity::lookup(ty).expect("known type");
            Subject::new(&facts, TrustKind::parse(kind).unwrap(), Some(raw), &client, None)
                .values(ty, key)
                .into_iter()
                .map(Cow::into_owned)
                .collect()
        };
        assert_eq!(values("OidcIdToken", "oidcIdToken", Some("sub")), ["repo:acme/app"]);
        for other in [
            "CiAIdentityToken",
            "CiBIdentityToken",
            "CloudCIdentityToken",
            "OrchestratorServiceAccount",
        ] {
            assert!(values(other, "oidcIdToken", Some("sub")).is_empty(), "{other}");
        }
        assert_eq!(
            values("OrchestratorServiceAccount", "orchestratorServiceAccountUID", None),
            ["sa-1"]
        );
        assert!(values("OidcIdToken", "orchestratorServiceAccountUID", None).is_empty());
    }
}
