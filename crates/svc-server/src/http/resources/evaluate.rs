//! `POST /api/v1/access-policies/evaluate` (issue 22, ext; docs/API-CONVENTIONS.md "Explain"):
//! what `/edge/v1/credentials` would answer for a workload presenting this evidence, and why.
//! The evidence is verified as `/edge/v1/auth` would (clientId, trust provider, match rules), then
//! the steps of `policy::decide` run as the Edge handler runs them; `policy::explain` turns them
//! into the trace. Nothing is issued, no credential provider is called, nothing is written.

use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};
use svc_api::edge::{ApiCredentialsRequest, AuthRequest, ClientWorkloadDetails};
use uuid::Uuid;

use crate::app::App;
use crate::credential::IssueCx;
use crate::domain::Perm;
use crate::edge::events::Parts;
use crate::edge::identity::Subject;
use crate::error::{Error, Result};
use crate::http::api::{Api, Op, Untyped};
use crate::http::extract::JsonBody;
use crate::http::guard::{Ctx, Scope};
use crate::http::ok;
use crate::policy::decide::{self, Attestation, Decision, NOT_APPLICABLE};
use crate::policy::explain::{self, Outcome, Trace};
use crate::state::State as Snapshot;
use crate::trust::{self, CompiledTrust, TrustError, Verified};

/// The body: the `/edge/v1/credentials` body plus `clientId`.
const FIELDS: [&str; 6] = [
    "clientId",
    "client",
    "server",
    "credentialType",
    "connectionMetadata",
    "certSigningRequest",
];

pub fn register(api: &mut Api<'_>) {
    // A read: it changes nothing (§2.6 asks `read` of reads; this one needs a body).
    api.guarded("/api/v1/access-policies/evaluate", Perm::AccessPolicies, Scope::Rs)
        .as_write(false)
        .post(
            evaluate,
            Op::new("Explain what /edge/v1/credentials would answer, step by step (ext)")
                .body::<Untyped>()
                .ok::<Untyped>(200),
        );
}

async fn evaluate(State(app): State<App>, ctx: Ctx, headers: HeaderMap, JsonBody(body): JsonBody) -> Result<Response> {
    let Value::Object(mut obj) = body else {
        return Err(Error::bad("body: must be a JSON object"));
    };
    if let Some(k) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(Error::field(k, "unknown property"));
    }
    let client_id = match obj.remove("clientId") {
        None | Some(Value::Null) => return Err(Error::field("clientId", "is required")),
        Some(Value::String(s)) => s,
        Some(_) => return Err(Error::field("clientId", "must be a string")),
    };
    // The two bodies a workload would send, read as the Edge API reads them.
    let auth_body: Option<AuthRequest> = serde_json::from_value(json!({
        "clientId": client_id,
        "client": obj.get("client").cloned().unwrap_or(Value::Null),
    }))
    .ok();
    let cred_body: Option<ApiCredentialsRequest> = serde_json::from_value(Value::Object(obj)).ok();

    let st = app.state_full();
    let client = auth_body.as_ref().and_then(|r| r.client.as_ref());
    let selected_rs = crate::edge::select_rs(&st, &headers, client);
    // The trace reads the selected set's entities: the caller must be able to read them there.
    if let Some(rs) = selected_rs
        && rs != ctx.rs
    {
        ctx.check(&st, rs)?;
    }
    let trace = explain_request(&app, &st, &client_id, client, selected_rs, &cred_body).await;
    Ok(ok(serde_json::to_value(&trace).map_err(Error::internal)?))
}

async fn explain_request(
    app: &App,
    st: &Arc<Snapshot>,
    client_id: &str,
    client: Option<&ClientWorkloadDetails>,
    selected_rs: Option<Uuid>,
    cred_body: &Option<ApiCredentialsRequest>,
) -> Trace {
    let mut trace = Trace::default();
    trace.skip(1, json!({"message": "explain applies no rate limit"}));

    // Step 2: the edge token /auth would issue for this evidence.
    let (tp, verified, rs) = match authenticate(app, st, client_id, client, selected_rs).await {
        Ok(a) => a,
        Err((reason, detail)) => {
            trace.push(2, "edgeToken", Outcome::Failed, Some(reason), detail);
            trace.decided(
                401,
                Some("InvalidToken"),
                Some(crate::edge::credentials::UNAUTHORIZED.into()),
            );
            trace.skip_after(2);
            return trace;
        }
    };
    trace.pass(
        2,
        json!({"clientId": client_id, "resourceSet": rs,
               "trustProvider": {"id": tp.id, "name": tp.name, "provider": tp.kind.spec().name}}),
    );

    // Step 3: the body.
    let valid = match decide::validate_body(cred_body) {
        Ok(v) => v,
        Err(message) => {
            trace.push(
                3,
                "requestBody",
                Outcome::Failed,
                Some("InvalidRequest".into()),
                json!({"message": message}),
            );
            trace.decided(400, Some("InvalidRequest"), Some(message));
            trace.skip_after(3);
            return trace;
        }
    };
    trace.pass(
        3,
        json!({"host": valid.host, "port": valid.port, "credentialType": valid.credential_type.as_str()}),
    );
    let client = valid.req.client.as_ref().expect("validated");

    // Steps 4–7, with the subject /credentials would identify from that token.
    let claims_raw = verified.claims.as_ref().and_then(|c| serde_json::to_string(c).ok());
    let source_ip = client
        .source_ip
        .as_deref()
        .and_then(|s| s.trim().parse::<std::net::IpAddr>().ok())
        .map(crate::net::canonical);
    let subject = Subject::new(&verified.facts, tp.kind, claims_raw.as_deref(), client, source_ip);
    let mut ev = Parts::default();
    let mut identified = None;
    let matched = decide::match_policy(st, selected_rs, rs, &subject, &valid, &mut ev, &mut identified);
    let clients = decide::client_candidates(st, rs, &subject);
    let servers = decide::server_candidates(st, rs, valid.host, valid.port);
    let policy_detail = |chosen: bool| {
        let listed: Vec<Value> = if ev.access_policies.is_empty() {
            ev.access_policy
                .iter()
                .map(|p| json!({"id": p.id, "name": p.name}))
                .collect()
        } else {
            ev.access_policies
                .iter()
                .map(|p| json!({"id": p.id, "name": p.name}))
                .collect()
        };
        let pick = ev.access_policy.as_ref().filter(|_| chosen);
        json!({"candidates": listed, "chosen": pick.map(|p| json!({"id": p.id, "name": p.name}))})
    };
    let detail_of = |n: u8, chosen: bool| match n {
        4 => json!({"resourceSet": rs}),
        5 => explain::candidates(&clients, ev.client_workload.as_ref()),
        6 => explain::candidates(&servers, ev.server_workload.as_ref()),
        _ => policy_detail(chosen),
    };
    let matched = match matched {
        Ok(m) => {
            for n in 4..=7 {
                let d = detail_of(n, true);
                trace.pass(n, d);
            }
            m
        }
        Err(d) => {
            let at = explain::step_of(d.reason.unwrap_or("InvalidRequest")).clamp(4, 7);
            for n in 4..at {
                let detail = detail_of(n, false);
                trace.pass(n, detail);
            }
            let detail = detail_of(at, false);
            trace.fail(at, &d, detail);
            trace.skip_after(at);
            return trace;
        }
    };
    let (rs, policy) = (matched.rs, matched.policy);

    // Step 8: attestation by the policy's trust providers, verified as /credentials verifies.
    let mut checks: Vec<explain::Step> = Vec::new();
    let kind_of = |id: &Uuid| st.idx.trust.get(id).map_or("", |t| t.kind.spec().name);
    let attested = match decide::attestation(st, &policy, tp.id, rs, &mut ev) {
        Attestation::Done if policy.trust_providers.is_empty() => {
            trace.pass(8, json!({"message": "the access policy lists no trust provider"}));
            true
        }
        Attestation::Done => {
            trace.pass(
                8,
                json!({"message": "the access policy lists the trust provider of the edge token"}),
            );
            checks.extend(
                ev.trust_providers
                    .iter()
                    .map(|a| explain::trust_check(a, kind_of(&a.id))),
            );
            true
        }
        Attestation::Verify(providers) => {
            let mut passed = false;
            let mut tried: Vec<Uuid> = Vec::new();
            for p in providers {
                tried.push(p.id);
                let outcome = trust::verify(&app.verify_cx(), p, client).await.map(|_| ());
                let ok = decide::record_attestation(p, outcome, &mut ev);
                if let Some(a) = ev.trust_providers.last() {
                    checks.push(explain::trust_check(a, p.kind.spec().name));
                }
                if ok {
                    passed = true;
                    break;
                }
            }
            // The listed providers not verified: inactive, of another set, or not needed.
            for id in policy.trust_providers.iter().filter(|&id| !tried.contains(id)) {
                let (name, why) = match st.idx.trust.get(id) {
                    Some(t) if t.active && t.rs == rs => {
                        (t.name.clone(), "not needed: another trust provider attested")
                    }
                    Some(t) => (t.name.clone(), "inactive or in another resource set"),
                    None => (String::new(), "no such trust provider"),
                };
                checks.push(explain::Step {
                    step: 8,
                    name: "trustProvider",
                    result: Outcome::Skipped,
                    reason: None,
                    detail: json!({"id": id, "name": name, "provider": kind_of(id), "message": why}),
                });
            }
            let detail = json!({"message": "the access policy does not list the trust provider of the edge token: the request's evidence is verified against the providers it lists"});
            if passed {
                trace.pass(8, detail);
            } else {
                trace.fail(8, &decide::attestation_failed(), detail);
            }
            passed
        }
    };
    trace.steps.extend(checks);
    if !attested {
        trace.skip_after(8);
        return trace;
    }

    // Step 9: access conditions, evaluated as /credentials evaluates them (a vendor condition
    // asks its vendor, which is a read).
    let conds = decide::access_conditions_of(st, &policy);
    if !conds.is_empty() {
        let outcome =
            crate::edge::conditions::check(app, st, &conds, client, &verified.facts, source_ip, &mut ev).await;
        let detail = json!({"conditions": ev.access_conditions.iter().map(|c| json!({
            "id": c.id, "name": c.name, "result": c.result, "reason": c.reason,
            "attribute": c.attribute, "expectedValues": c.expected_values, "actualValue": c.actual_value,
        })).collect::<Vec<_>>()});
        if let Err(d) = outcome {
            trace.fail(9, &d, detail);
            trace.skip_after(9);
            return trace;
        }
        trace.pass(9, detail);
    } else {
        trace.pass(9, json!({"conditions": []}));
    }

    // Steps 10–11.
    let mappings: Vec<Value> = policy
        .mappings
        .iter()
        .map(|m| {
            let cp = st.idx.credentials.get(&m.credential_provider);
            json!({"id": m.credential_provider, "name": cp.map(|c| c.name.clone()),
                   "type": cp.map(|c| c.cp_type.clone()), "isActive": cp.is_some_and(|c| c.active),
                   "mappingType": m.mapping_type})
        })
        .collect();
    let (cp, _) = match decide::choose_provider(st, &policy, &valid, &mut ev) {
        Ok(c) => c,
        Err(d) if d.reason == Some("CredentialTypeMismatch") => {
            let cp = ev.credential_provider.as_ref();
            trace.pass(
                10,
                json!({"mappings": mappings, "chosen": cp.map(|c| json!({"id": c.id, "name": c.name, "type": c.cp_type}))}),
            );
            let provides = cp
                .and_then(|c| st.idx.credentials.get(&c.id))
                .and_then(|c| c.credential_type())
                .map(|t| t.as_str());
            trace.fail(
                11,
                &d,
                json!({"requested": valid.credential_type.as_str(), "provided": provides}),
            );
            trace.skip_after(11);
            return trace;
        }
        Err(d) => {
            trace.fail(10, &d, json!({"mappings": mappings, "chosen": null}));
            trace.skip_after(10);
            return trace;
        }
    };
    trace.pass(
        10,
        json!({"mappings": mappings, "chosen": {"id": cp.id, "name": cp.name, "type": cp.cp_type}}),
    );
    // Step 11: the type, and the dynamic values (§3.5.3) resolved as /credentials resolves them.
    let cw_name = st
        .client_workloads
        .get(&policy.client_workload)
        .map(|c| c.meta.name.clone())
        .unwrap_or_default();
    let values = crate::credential::dynamic::Values {
        kind: tp.kind,
        facts: &verified.facts,
        claims: subject.claims(),
        client,
        client_workload: (policy.client_workload, &cw_name),
    };
    let cx = IssueCx {
        svc: app.services(),
        rs,
        client_workload: Some((policy.client_workload, &cw_name)),
        server_workload: policy.server_workload,
        access_policy: policy.meta.id,
        credential_provider: cp.id,
        trust_provider: tp.id,
        values: Some(&values),
        csr: valid.req.cert_signing_request.as_deref(),
    };
    let type_detail = json!({"requested": valid.credential_type.as_str(),
                             "provided": cp.credential_type().map(|t| t.as_str())});
    if let Err(expr) = cp.prepare(&cx) {
        let mut detail = type_detail;
        detail["unresolvable"] = json!(expr);
        trace.fail(11, &Decision::fail(403, NOT_APPLICABLE, "UnresolvableClaim"), detail);
        trace.skip_after(11);
        return trace;
    }
    trace.pass(11, type_detail);
    trace.skip(
        12,
        json!({"message": "explain never issues a credential: /edge/v1/credentials would now fetch it from the chosen credential provider"}),
    );
    trace
}

/// What `/edge/v1/auth` decides for this clientId and evidence (§4.4 steps 2–6): the trust
/// provider, the verified evidence and the token's resource set; or the event reason of the
/// refusal and the step's detail (with the status `/auth` would answer).
async fn authenticate(
    app: &App,
    st: &Snapshot,
    client_id: &str,
    client: Option<&ClientWorkloadDetails>,
    selected_rs: Option<Uuid>,
) -> std::result::Result<(Arc<CompiledTrust>, Verified, Uuid), (String, Value)> {
    let refused = |reason: &str, status: u16, message: String| {
        Err((
            reason.to_string(),
            json!({"clientId": client_id, "authStatus": status, "message": message}),
        ))
    };
    let Some(client) = client else {
        return refused("InvalidRequest", 400, "client: is required (an object)".into());
    };
    let Some(rs) = selected_rs else {
        return refused(
            "InvalidRequest",
            400,
            "the resource set of X-Svc-ResourceSet and SVC_RESOURCE_SET_ID is malformed, unknown or ambiguous".into(),
        );
    };
    let Some((kind, tp_id)) = crate::edge::auth::parse_client_id(app, client_id) else {
        return refused("InvalidClientId", 400, crate::edge::auth::INVALID_CLIENT_ID.into());
    };
    let tp = match st.idx.trust.get(&tp_id) {
        Some(tp) if tp.rs == rs && tp.active && tp.kind == kind => tp.clone(),
        _ => {
            return refused(
                "UnknownTrustProvider",
                401,
                "no active trust provider of that id and kind in the resource set".into(),
            );
        }
    };
    let st = app.state();
    let is_id_token = |id| crate::credential::issued_jwt::is_id_token_provider(&st, id);
    let outcome = match trust::verify_evidence(&app.verify_cx(), &tp, client)
        .await
        .and_then(|v| trust::check_own_issued(&tp, &v, app.cfg.issuer(), is_id_token).map(|()| v))
    {
        Ok(v) => trust::rules::check(&tp.rules, &v).map(|()| v),
        Err(e) => Err(e),
    };
    match outcome {
        Ok(v) => Ok((tp, v, rs)),
        Err(e) => {
            let status = if matches!(e, TrustError::Upstream(_)) { 500 } else { 401 };
            let mut detail = json!({"clientId": client_id, "authStatus": status, "message": e.detail(),
                                    "trustProvider": {"id": tp.id, "name": tp.name, "provider": tp.kind.spec().name}});
            if let TrustError::MatchRuleFailed {
                attribute,
                expected,
                actual,
            } = &e
            {
                detail["attribute"] = json!(attribute);
                detail["expectedValues"] = json!(expected);
                detail["actualValue"] = json!(actual);
            }
            Err((e.reason().to_string(), detail))
        }
    }
}
