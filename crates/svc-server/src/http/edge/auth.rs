//! `POST /edge/v1/auth` (contract §4.2–§4.5): the workload presents evidence for the trust provider
//! named by `clientId` and receives an edge access token.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use svc_api::edge::{AuthRequest, TokenDto};
use uuid::Uuid;

use super::{generic, peer, select_rs, too_many};
use crate::app::App;
use crate::domain::DEFAULT_RESOURCE_SET;
use crate::domain::trust::TrustKind;
use crate::edge::events::{self, RequestInfo};
use crate::policy::decide::trust_result;
use crate::policy::outcome::{AttestationResult, Parts};
use crate::trust::{self, Facts, TrustError};

pub const INVALID_REQUEST: &str = "The authentication request is invalid.";
pub const INVALID_CLIENT_ID: &str = "Invalid client ID.";
pub const UNAUTHORIZED: &str = "Unauthorized.";
pub const INTERNAL: &str = "Authentication failed due to an internal error.";

/// A parsed clientId: `svc:<stack>:<tenant>:identity:<type>:<uuid>` (§4.2).
pub fn parse_client_id(app: &App, id: &str) -> Option<(TrustKind, Uuid)> {
    let mut parts = id.split(':');
    let mut next = || parts.next();
    let (Some(svc), Some(stack), Some(tenant), Some(identity), Some(ty), Some(uuid), None) =
        (next(), next(), next(), next(), next(), next(), next())
    else {
        return None;
    };
    if svc != "svc" || identity != "identity" || stack != app.cfg.stack || tenant != app.cfg.tenant {
        return None;
    }
    let kind = TrustKind::from_client_id_type(ty)?;
    let id = svc_api::reader::parse_uuid(uuid)?;
    Some((kind, id))
}

struct Outcome {
    status: StatusCode,
    message: &'static str,
    result: &'static str,
    reason: Option<String>,
    provider: Option<AttestationResult>,
}

pub async fn auth(State(app): State<App>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let (peer_ip, peer_port) = peer(&parts.extensions);
    let bytes = super::read_body(&parts, body).await;
    let parsed: Option<AuthRequest> = bytes.as_ref().and_then(|b| svc_api::edge::parse_body(b).ok());
    // The bucket is the trust provider the clientId names, however its UUID is spelled (upper
    // case, braces: one provider, one bucket); every clientId that names none shares one bucket
    // per peer, so varying it buys no requests (nor the events a 400 writes).
    let named = parsed
        .as_ref()
        .and_then(|r| r.client_id.as_deref())
        .and_then(|id| parse_client_id(&app, id));
    let bucket = named.map(|(_, tp)| tp);
    if let Err(wait) = app.limits.auth.check(&(bucket, peer_ip), crate::clock::now_millis()) {
        return too_many(wait);
    }
    let room = app.events.reserve().await;

    let st = app.state();
    let client = parsed.as_ref().and_then(|r| r.client.as_ref());
    let client_id = parsed.as_ref().and_then(|r| r.client_id.as_deref());
    let source_ip = super::effective_ip(&app, peer_ip, &parts.headers, client);
    let selected = select_rs(&st, &parts.headers, client);
    let mut facts = Facts::new();
    // The service-account UID of a verified orchestrator token, for the event's environment
    // (the pod name is a fact).
    let mut sa_uid = None;
    let mut token = None;
    let outcome = 'o: {
        let invalid = |message, reason: &str| Outcome {
            status: StatusCode::BAD_REQUEST,
            message,
            result: "Unauthorized",
            reason: Some(reason.to_string()),
            provider: None,
        };
        let (Some(client), Some(client_id)) = (client, client_id) else {
            break 'o invalid(INVALID_REQUEST, "InvalidRequest");
        };
        let Some(rs) = selected else {
            break 'o invalid(INVALID_REQUEST, "InvalidRequest");
        };
        let Some((kind, tp_id)) = named else {
            break 'o invalid(INVALID_CLIENT_ID, "InvalidClientId");
        };
        let tp = match st.idx.trust.get(&tp_id) {
            Some(tp) if tp.rs == rs && tp.active && tp.kind == kind => tp.clone(),
            _ => {
                break 'o Outcome {
                    status: StatusCode::UNAUTHORIZED,
                    message: UNAUTHORIZED,
                    result: "Unauthorized",
                    reason: Some("UnknownTrustProvider".into()),
                    provider: None,
                };
            }
        };
        // Evidence first, then the match rules: evidence that verified gives the event its facts
        // even when a rule fails (§4.11: the environment holds the verified facts).
        let is_id_token = |id| crate::credential::issued_jwt::is_id_token_provider(&**st, id);
        let verified = match trust::verify_evidence(&app.verify_cx_via(&app.upstream_for(tp.rs)), &tp, client)
            .await
            .and_then(|v| trust::check_own_issued(&tp, &v, app.cfg.issuer(), is_id_token).map(|()| v))
        {
            Ok(v) => match trust::rules::check(&tp.rules, &v) {
                Ok(()) => Ok(v),
                Err(e) => {
                    facts = v.facts;
                    sa_uid = v.service_account_uid;
                    Err(e)
                }
            },
            Err(e) => Err(e),
        };
        match verified {
            Ok(v) => {
                let (access_token, expires_in) =
                    crate::edge::token::issue(&app, client_id, tp.id, tp.kind, rs, &v.facts, v.claims.as_ref());
                token = Some(TokenDto {
                    access_token,
                    refresh_token: None,
                    token_type: "Bearer".into(),
                    expires_in,
                });
                facts = v.facts;
                sa_uid = v.service_account_uid;
                Outcome {
                    status: StatusCode::OK,
                    message: "",
                    result: "Authorized",
                    reason: None,
                    provider: Some(trust_result(&tp, None)),
                }
            }
            Err(e) => {
                let (status, message, result) = match &e {
                    TrustError::Upstream(_) => (StatusCode::INTERNAL_SERVER_ERROR, INTERNAL, "Error"),
                    _ => (StatusCode::UNAUTHORIZED, UNAUTHORIZED, "Unauthorized"),
                };
                tracing::info!(provider = %tp.id, reason = e.reason(), detail = %e.detail(), "edge authentication refused");
                Outcome {
                    status,
                    message,
                    result,
                    reason: Some(e.reason().to_string()),
                    provider: Some(trust_result(&tp, Some(&e))),
                }
            }
        }
    };

    let source_ip_text = source_ip.map(super::ip_text);
    let info = RequestInfo {
        ts: crate::clock::now_millis(),
        rs: selected.unwrap_or(DEFAULT_RESOURCE_SET),
        client_ip: source_ip_text,
        source_port: peer_port,
        target_host: None,
        target_port: 0,
        environment: crate::edge::environment::environment(&facts, (None, sa_uid), client, client_id),
    };
    let mut parts_ev = Parts::default();
    parts_ev.trust_providers.extend(outcome.provider);
    let mut rec = crate::events::Recorder::default();
    events::authorization(
        &mut rec,
        &info,
        "access.authentication",
        outcome.result,
        outcome.reason.as_deref(),
        events::severity_for(outcome.status.as_u16()),
        &parts_ev,
    );
    let response = match token {
        Some(t) => (StatusCode::OK, axum::Json(t)).into_response(),
        None => generic(outcome.status, outcome.message),
    };
    super::settle(&app, room, rec, response).await
}
