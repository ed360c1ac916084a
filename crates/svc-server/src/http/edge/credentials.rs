//! `POST /edge/v1/credentials` (contract §4.8): the handler. Steps 1–2 (rate limit, bearer
//! token) are its own; steps 3–12 are the one driver the explain endpoint runs too
//! ([`super::pipeline`]), which fetches the credential for it; the handler answers from the run and
//! records its events (§4.11) with its status (§4.9). Reads only the in-memory state.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use svc_api::edge::{ApiCredentialsRequest, ApiCredentialsResponse};

use super::{generic, peer, select_rs, too_many};
use crate::app::App;
use crate::caches::edge_tokens::Token;
use crate::credential::{CompiledCredential, Issued};
use crate::domain::DEFAULT_RESOURCE_SET;
use crate::edge::events::{self, RequestInfo, WorkloadEvent};
use crate::edge::pipeline::{self, Fetch, Input};
use crate::edge::token;
use crate::events::Recorder;
use crate::policy::decide::{self, Decision, Identified, Run};
use crate::policy::identity::Subject;
use crate::policy::outcome::{CpResult, Parts};
use crate::trust::Facts;

pub const UNAUTHORIZED: &str = "Unauthorized access.";
pub const INTERNAL: &str = "Failed to retrieve credentials due to an internal error.";
/// An `InvalidRequest` event's detail when the body could not be read at all.
const UNREADABLE: &str =
    "the body is missing, too large, not JSON announced as such, repeats a key, or is not of the Edge API's shape";

fn status_of(d: &Decision) -> StatusCode {
    StatusCode::from_u16(d.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn respond(d: &Decision) -> Response {
    if d.body_unknown {
        (status_of(d), axum::Json(ApiCredentialsResponse::unknown())).into_response()
    } else {
        generic(status_of(d), d.message)
    }
}

pub async fn credentials(State(app): State<App>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let (peer_ip, peer_port) = peer(&parts.extensions);
    let bearer = crate::service::auth::bearer(
        parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok()),
    );

    // Step 1: rate limit by the token id (unverified, unless it is a token verified before),
    // else the peer.
    let known = bearer.and_then(|b| token::known(&app, b));
    let now = crate::clock::now_millis();
    let jti = known
        .as_ref()
        .map(|t| t.claims.jti)
        .or_else(|| bearer.and_then(token::peek_jti));
    let limited = match jti {
        Some(jti) => app.limits.credentials.check(&jti, now),
        None => app.limits.credentials.check(&peer_ip, now),
    };
    if let Err(wait) = limited {
        return too_many(wait);
    }
    // Issue 32: with the database unusable no credential can leave with its record; answer now,
    // before any upstream call (one relaxed load).
    if !app.events.accepting() {
        return super::unavailable();
    }
    // The body first: a request counts as in flight for the event writer's group commit
    // (`EventSink::reserve`) only once it is computing its answer, not while a slow client sends.
    let bytes = super::read_body(&parts, body).await;
    let room = app.events.reserve().await;
    let mut rec = Recorder::default();

    let parsed: Option<ApiCredentialsRequest> = bytes.as_ref().and_then(|b| svc_api::edge::parse_body(b).ok());
    let st = app.state_full();
    let client = parsed.as_ref().and_then(|r| r.client.as_ref());
    let source_ip = super::effective_ip(&app, peer_ip, &parts.headers, client);
    let selected_rs = select_rs(&st, &parts.headers, client);
    // Step 2: the bearer token.
    let token: Result<Arc<Token>, &str> = match bearer {
        Some(b) => token::validate(&app, &st, b, known),
        None => Err("no bearer token (Authorization: Bearer <token>)"),
    };
    let valid_token = token.as_ref().ok();
    // The subject's pod and service account, for every event of the request (`access.request`
    // included): from the token's facts and claims, and the request's reported pod name.
    // Built once: once step 3 has validated the body, `client` is the request's client and this
    // is the subject step 5 identifies (its claims are parsed at most once).
    let no_client = svc_api::edge::ClientWorkloadDetails::default();
    let subject = valid_token.map(|t| {
        Subject::new(
            &t.svc.facts,
            t.svc.tpk,
            t.svc.claims.as_deref().map(|r| r.get()),
            client.unwrap_or(&no_client),
            source_ip,
        )
    });
    let info = request_info(
        &parsed,
        valid_token,
        subject.as_ref(),
        selected_rs,
        source_ip,
        peer_port,
    );
    let response = match (valid_token, subject) {
        (Some(token), Some(subject)) => {
            // Steps 3–12, driven here rather than in a function of their own: the run's future
            // then sits in the handler's, not in one more future moved into it.
            let mut ev = Parts::default();
            let input = Input {
                st: &st,
                parsed: &parsed,
                selected_rs,
                tp: token.svc.tp,
                kind: token.svc.tpk,
                token_rs: token.svc.rs,
                facts: &token.svc.facts,
                subject,
                source_ip,
            };
            let run = pipeline::run(&app, input, Fetch::Yes, &mut ev).await;
            answer(&mut rec, &info, run, &ev)
        }
        _ => {
            let why = token.as_ref().err().copied().unwrap_or_default();
            events::request_refused(&mut rec, &info, "InvalidToken", why);
            generic(StatusCode::UNAUTHORIZED, UNAUTHORIZED)
        }
    };
    super::settle(&app, room, rec, response).await
}

/// What every event of the request shares.
fn request_info(
    parsed: &Option<ApiCredentialsRequest>,
    token: Option<&Arc<Token>>,
    subject: Option<&Subject<'_>>,
    selected_rs: Option<uuid::Uuid>,
    source_ip: Option<std::net::IpAddr>,
    peer_port: u16,
) -> RequestInfo {
    let empty = Facts::new();
    let client = parsed.as_ref().and_then(|r| r.client.as_ref());
    let server = parsed.as_ref().and_then(|r| r.server.as_ref());
    let ids = subject.map_or((None, None), crate::edge::environment::subject_ids);
    RequestInfo {
        ts: crate::clock::now_millis(),
        rs: selected_rs.or(token.map(|t| t.svc.rs)).unwrap_or(DEFAULT_RESOURCE_SET),
        client_ip: source_ip.map(super::ip_text),
        source_port: peer_port,
        target_host: server.and_then(|s| s.host.clone()),
        target_port: server
            .and_then(|s| s.port)
            .and_then(|p| i32::try_from(p).ok())
            .unwrap_or(0),
        environment: crate::edge::environment::environment(
            token.map(|t| &t.svc.facts).unwrap_or(&empty),
            ids,
            client,
            token.map(|t| t.sub.as_str()),
        ),
    }
}

/// The answer to a request whose token was valid, from the decision's run, with its events:
/// `access.request`, `access.authorization`, `access.credential` when step 12 ran, and the
/// workload event once a server workload was identified.
fn answer(rec: &mut Recorder, info: &RequestInfo, mut run: Run<'_>, ev: &Parts) -> Response {
    if let Some(message) = run.invalid.take() {
        let why = match message.strip_prefix(decide::INVALID).map(str::trim) {
            Some("") | None => UNREADABLE,
            Some(field) => field,
        };
        events::request_refused(rec, info, "InvalidRequest", why);
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(svc_api::GenericResponse::error(message)),
        )
            .into_response();
    }
    events::authorization(rec, info, "access.request", "Received", None, "Info", &Parts::default());
    let decision = run.decision();
    let authorized = decision.status == 200;
    events::authorization(
        rec,
        info,
        "access.authorization",
        if authorized { "Authorized" } else { "Unauthorized" },
        decision.reason,
        events::severity_for(decision.status),
        ev,
    );

    let (status, response, action) = match (&run.issued, &run.provider) {
        (Some(result), Some(cp)) => deliver(rec, info, result, cp),
        _ => (
            status_of(&decision),
            respond(&decision),
            if status_of(&decision).is_server_error() {
                "CredentialError"
            } else {
                "CredentialDenied"
            },
        ),
    };
    if let Some(Identified {
        server,
        app_protocol,
        port,
        policy,
        client,
    }) = run.identified
    {
        events::workload(
            rec,
            info,
            WorkloadEvent {
                action,
                success: action == "CredentialIssued",
                severity: events::severity_for(status.as_u16()),
                policy,
                client_workload: client,
                server_workload: server,
                app_protocol: app_protocol.shared(),
                server_port: port,
            },
        );
    }
    response
}

/// Step 12's answer and its `access.credential` event: the credential (or `Unknown` when the
/// provider had nothing to give, or 500 when the upstream failed), with the workload event's
/// action.
fn deliver(
    rec: &mut Recorder,
    info: &RequestInfo,
    result: &Result<Issued, String>,
    cp: &CompiledCredential,
) -> (StatusCode, Response, &'static str) {
    let (cp_res, reason, status, response, action) = match result {
        Ok(Issued::Credential {
            credential_type,
            data,
            expires_at,
        }) => (
            "Retrieved",
            None,
            StatusCode::OK,
            (
                StatusCode::OK,
                axum::Json(ApiCredentialsResponse {
                    credential_type: *credential_type,
                    expires_at: *expires_at,
                    data: data.clone(),
                }),
            )
                .into_response(),
            "CredentialIssued",
        ),
        Ok(Issued::Nothing(why)) => (
            "NotRetrieved",
            Some(why.clone()),
            StatusCode::OK,
            (StatusCode::OK, axum::Json(ApiCredentialsResponse::unknown())).into_response(),
            "CredentialDenied",
        ),
        Err(why) => {
            tracing::warn!(provider = %cp.id, reason = %why, "credential fetch failed");
            (
                "Error",
                Some(why.clone()),
                StatusCode::INTERNAL_SERVER_ERROR,
                generic(StatusCode::INTERNAL_SERVER_ERROR, INTERNAL),
                "CredentialError",
            )
        }
    };
    let cev = Parts {
        credential_provider: Some(CpResult {
            id: cp.id,
            name: cp.name.clone(),
            result: cp_res,
            cp_type: cp.cp_type.clone(),
            reason,
            ..Default::default()
        }),
        ..Default::default()
    };
    let (outcome, why) = if status == StatusCode::OK {
        ("Authorized", None)
    } else {
        ("Error", Some("UpstreamError"))
    };
    events::authorization(
        rec,
        info,
        "access.credential",
        outcome,
        why,
        events::severity_for(status.as_u16()),
        &cev,
    );
    (status, response, action)
}
