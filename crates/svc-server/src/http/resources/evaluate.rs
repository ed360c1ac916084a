//! `POST /api/v1/access-policies/evaluate` (issue 22, ext; docs/API-CONVENTIONS.md "Explain"):
//! what `/edge/v1/credentials` would answer for a workload presenting this evidence, and why.
//! The evidence is verified as `/edge/v1/auth` would (clientId, trust provider, match rules), then
//! steps 3–11 run through the one driver `/edge/v1/credentials` runs (`edge::pipeline`: the same
//! routing, content security, conditions and dynamic values), without the fetch;
//! `policy::explain` turns its run into the trace. Nothing is issued, no credential provider is
//! called, nothing is written. The body and the answer are `svc_api::mgmt::evaluate`'s DTOs.

use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use svc_api::edge::ClientWorkloadDetails;
use svc_api::mgmt::evaluate::{Evaluation, EvaluationRequest, StepDetail, StepName, StepResult, TrustProviderRef};
use uuid::Uuid;

use crate::app::App;
use crate::domain::Perm;
use crate::edge::pipeline::{self, Fetch, Input};
use crate::error::{Error, Result};
use crate::http::api::{Api, Op};
use crate::http::extract::JsonBody;
use crate::http::guard::{Ctx, Scope};
use crate::http::ok;
use crate::policy::decide::trust_result;
use crate::policy::explain::{self, Trace, note};
use crate::policy::identity::Subject;
use crate::policy::outcome::Parts;
use crate::state::State as Snapshot;
use crate::trust::{self, CompiledTrust, TrustError, Verified};

pub fn register(api: &mut Api<'_>) {
    // A read: it changes nothing (§2.6 asks `read` of reads; this one needs a body).
    api.guarded("/api/v1/access-policies/evaluate", Perm::AccessPolicies, Scope::Rs)
        .as_write(false)
        .post(
            evaluate,
            Op::new("Explain what /edge/v1/credentials would answer, step by step (ext)")
                .body::<EvaluationRequest>()
                .ok::<Evaluation>(200),
        );
}

async fn evaluate(State(app): State<App>, ctx: Ctx, headers: HeaderMap, JsonBody(body): JsonBody) -> Result<Response> {
    let req: EvaluationRequest = svc_api::schema::read(body)?;
    // The two bodies a workload would send, read as the Edge API reads them.
    let auth_body = req.auth_request();
    let cred_body = req.credentials_request();

    let st = app.state_full();
    let client = auth_body.as_ref().and_then(|r| r.client.as_ref());
    let selected_rs = crate::http::edge::select_rs(&st, &headers, client);
    // The trace reads the selected set's entities: the caller must be able to read them there.
    if let Some(rs) = selected_rs
        && rs != ctx.rs
    {
        ctx.check(&st, rs)?;
    }
    let trace = explain_request(&app, &st, &req.client_id, client, selected_rs, &cred_body).await;
    Ok(ok(serde_json::to_value(&trace.0).map_err(Error::internal)?))
}

/// Step 2 as `/edge/v1/auth` would decide it, then steps 3–12 as `/edge/v1/credentials` runs
/// them (`edge::pipeline`, without the fetch).
async fn explain_request(
    app: &App,
    st: &Arc<Snapshot>,
    client_id: &str,
    client: Option<&ClientWorkloadDetails>,
    selected_rs: Option<Uuid>,
    cred_body: &Option<svc_api::edge::ApiCredentialsRequest>,
) -> Trace {
    let mut trace = Trace::default();
    trace.skip(1, note("explain applies no rate limit"));

    // Step 2: the edge token /auth would issue for this evidence.
    let (tp, verified, rs) = match authenticate(app, st, client_id, client, selected_rs).await {
        Ok(a) => a,
        Err((reason, detail)) => {
            trace.push(2, StepName::EdgeToken, StepResult::Failed, Some(reason), *detail);
            trace.decided(
                401,
                Some("InvalidToken"),
                Some(crate::http::edge::credentials::UNAUTHORIZED.into()),
            );
            trace.skip_after(2);
            return trace;
        }
    };
    trace.pass(
        2,
        StepDetail {
            client_id: Some(client_id.to_string()),
            resource_set: Some(rs),
            trust_provider: Some(provider_ref(&tp)),
            ..Default::default()
        },
    );

    // Steps 3–12, with the subject /credentials would identify from that token.
    let claims_raw = verified.claims.as_ref().and_then(|c| serde_json::to_string(c).ok());
    let no_client = ClientWorkloadDetails::default();
    let reported = cred_body.as_ref().and_then(|b| b.client.as_ref());
    let source_ip = reported
        .and_then(|c| c.source_ip.as_deref())
        .and_then(|s| s.trim().parse::<std::net::IpAddr>().ok())
        .map(crate::net::canonical);
    let subject = Subject::new(
        &verified.facts,
        tp.kind,
        claims_raw.as_deref(),
        reported.unwrap_or(&no_client),
        source_ip,
    );
    let input = Input {
        st,
        parsed: cred_body,
        selected_rs,
        tp: tp.id,
        kind: tp.kind,
        token_rs: rs,
        facts: &verified.facts,
        subject,
        source_ip,
    };
    let mut ev = Parts::default();
    let run = pipeline::run(app, input, Fetch::No, &mut ev).await;
    explain::steps(&mut trace, st, &run, &ev, rs);
    trace
}

fn provider_ref(tp: &CompiledTrust) -> TrustProviderRef {
    TrustProviderRef {
        id: tp.id,
        name: tp.name.clone(),
        provider: tp.kind.spec().name.to_string(),
    }
}

/// What `/edge/v1/auth` decides for this clientId and evidence (§4.4 steps 2–6): the trust
/// provider, the verified evidence and the token's resource set; or the event reason of the
/// refusal and the step's detail (with the status `/auth` would answer, and the failed check as
/// `/auth`'s event records it).
async fn authenticate(
    app: &App,
    st: &Snapshot,
    client_id: &str,
    client: Option<&ClientWorkloadDetails>,
    selected_rs: Option<Uuid>,
) -> std::result::Result<(Arc<CompiledTrust>, Verified, Uuid), (String, Box<StepDetail>)> {
    let refused = |reason: &str, status: u16, message: &str| {
        Err((
            reason.to_string(),
            Box::new(StepDetail {
                client_id: Some(client_id.to_string()),
                auth_status: Some(status),
                message: Some(message.to_string()),
                ..Default::default()
            }),
        ))
    };
    let Some(client) = client else {
        return refused("InvalidRequest", 400, "client: is required (an object)");
    };
    let Some(rs) = selected_rs else {
        return refused(
            "InvalidRequest",
            400,
            "the resource set of X-Svc-ResourceSet and SVC_RESOURCE_SET_ID is malformed, unknown or ambiguous",
        );
    };
    let Some((kind, tp_id)) = crate::http::edge::auth::parse_client_id(app, client_id) else {
        return refused("InvalidClientId", 400, crate::http::edge::auth::INVALID_CLIENT_ID);
    };
    let tp = match st.idx.trust.get(&tp_id) {
        Some(tp) if tp.rs == rs && tp.active && tp.kind == kind => tp.clone(),
        _ => {
            return refused(
                "UnknownTrustProvider",
                401,
                "no active trust provider of that id and kind in the resource set",
            );
        }
    };
    // Verified as /auth verifies: through the routing of the provider's resource set, with the
    // own-issuer evidence rule.
    let up = app.upstream_for(tp.rs);
    let is_id_token = |id| crate::credential::issued_jwt::is_id_token_provider(st, id);
    let outcome = match trust::verify_evidence(&app.verify_cx_via(&up), &tp, client)
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
            let checked = trust_result(&tp, Some(&e));
            let detail = StepDetail {
                client_id: Some(client_id.to_string()),
                auth_status: Some(status),
                trust_provider: Some(provider_ref(&tp)),
                message: checked.detail,
                attribute: checked.attribute,
                expected_values: checked.expected_values,
                actual_value: checked.actual_value,
                ..Default::default()
            };
            Err((e.reason().to_string(), Box::new(detail)))
        }
    }
}
