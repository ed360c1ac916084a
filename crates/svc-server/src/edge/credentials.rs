//! `POST /edge/v1/credentials` (contract §4.8): the 13-step decision procedure, each step's status
//! (§4.9) and events (§4.11). Reads only the in-memory state; the credential backend acts only after
//! the policy allowed the request.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use svc_api::edge::{ApiCredentialsRequest, ApiCredentialsResponse, ConnectionMetadata, CredentialType};
use uuid::Uuid;

use super::events::{self, AttestationResult, CpResult, EntityResult, Parts, RequestInfo, WorkloadEvent};
use super::identity::Subject;
use super::token::{self, Token};
use super::{generic, peer, select_rs, too_many};
use crate::app::App;
use crate::credential::{CompiledCredential, IssueCx, Issued};
use crate::domain::policy::{Mapping, MappingType, Policy};
use crate::domain::workload::{ClientWorkload, ServerWorkload};
use crate::domain::{DEFAULT_RESOURCE_SET, Label};
use crate::state::{HasMeta, State as Snapshot};
use crate::trust::{Facts, TrustError};

pub const INVALID: &str = "The credentials request is invalid.";
pub const UNAUTHORIZED: &str = "Unauthorized access.";
pub const NOT_APPLICABLE: &str = "Not applicable for this request.";
pub const SEVERAL_POLICIES: &str =
    "Several access policies match this request; set CLIENT_WORKLOAD_ID to select the client workload.";
pub const SELECTOR_REQUIRED: &str =
    "connectionMetadata is required: the access policy has several credential providers.";
pub const INTERNAL: &str = "Failed to retrieve credentials due to an internal error.";

/// A validated request body (step 3).
struct Valid<'a> {
    req: &'a ApiCredentialsRequest,
    host: &'a str,
    port: i32,
    credential_type: CredentialType,
}

fn validate_body(parsed: &Option<ApiCredentialsRequest>) -> Result<Valid<'_>, String> {
    let invalid = |field: &str, reason: &str| format!("{INVALID} {field}: {reason}");
    let Some(req) = parsed else {
        return Err(INVALID.to_string());
    };
    if req.client.is_none() {
        return Err(invalid("client", "is required"));
    }
    let Some(server) = &req.server else {
        return Err(invalid("server", "is required"));
    };
    let Some(ct) = req.credential_type.as_deref() else {
        return Err(invalid("credentialType", "is required"));
    };
    let host = server
        .host
        .as_deref()
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .ok_or_else(|| invalid("server.host", "is required"))?;
    let port = server.port.ok_or_else(|| invalid("server.port", "is required"))?;
    if !(1..=65535).contains(&port) {
        return Err(invalid("server.port", "must be 1..65535"));
    }
    if server.transport_protocol.as_deref().is_some_and(|t| t != "TCP") {
        return Err(invalid("server.transportProtocol", "must be TCP"));
    }
    // §4.8 step 3 checks the server before the credential type's value.
    let credential_type = match CredentialType::parse(ct) {
        Some(CredentialType::Unknown) => {
            return Err(invalid("credentialType", "must not be Unknown"));
        }
        Some(t) => t,
        None => {
            let names: Vec<&str> = CredentialType::ALL[1..].iter().map(|t| t.as_str()).collect();
            return Err(invalid(
                "credentialType",
                &format!("must be one of {}", names.join(", ")),
            ));
        }
    };
    if let Some(cm) = &req.connection_metadata {
        if let Some(k) = &cm.access_key_id
            && (k.is_empty() || !k.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()))
        {
            return Err(invalid("connectionMetadata.accessKeyId", "must match ^[A-Z0-9]+$"));
        }
        if cm.header_name.is_some() != cm.header_value.is_some() {
            return Err(invalid(
                "connectionMetadata.headerName",
                "headerName and headerValue must be given together",
            ));
        }
        if cm.http_body_field_path.is_some() != cm.http_body_field_value.is_some() {
            return Err(invalid(
                "connectionMetadata.httpBodyFieldPath",
                "httpBodyFieldPath and httpBodyFieldValue must be given together",
            ));
        }
    }
    if credential_type == CredentialType::X509Svid {
        let csr = req
            .cert_signing_request
            .as_deref()
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| invalid("certSigningRequest", "is required for X509Svid"))?;
        if let Err(reason) = crate::credential::check_csr(csr) {
            return Err(invalid("certSigningRequest", &reason));
        }
    }
    Ok(Valid {
        req,
        host,
        port: port as i32,
        credential_type,
    })
}

fn entity(id: Uuid, name: &str) -> EntityResult {
    EntityResult {
        id,
        name: name.to_string(),
        result: "Identified",
        matches: None,
    }
}

/// How an authorization event names a step's candidates (§3.24): the chosen one, with `matches`
/// when several matched, and the list of all of them only then.
fn chosen_among<T: HasMeta>(all: &[Arc<T>], pick: Uuid) -> (Option<EntityResult>, Vec<EntityResult>) {
    let several = (all.len() > 1).then(|| all.iter().map(|c| c.meta().id).collect::<Vec<_>>());
    let listed = match several {
        Some(_) => all.iter().map(|c| entity(c.meta().id, &c.meta().name)).collect(),
        None => Vec::new(),
    };
    let chosen = all.iter().find(|c| c.meta().id == pick).map(|c| EntityResult {
        matches: several,
        ..entity(c.meta().id, &c.meta().name)
    });
    (chosen, listed)
}

/// What a workload event records once a server workload was identified.
struct Identified {
    server: Uuid,
    app_protocol: Label,
    port: i32,
    policy: Option<Uuid>,
    client: Option<Uuid>,
}

/// The decision of steps 4–11 (or its failure).
struct Decision {
    status: StatusCode,
    message: &'static str,
    reason: Option<&'static str>,
    body_unknown: bool,
}

impl Decision {
    fn fail(status: StatusCode, message: &'static str, reason: &'static str) -> Decision {
        Decision {
            status,
            message,
            reason: Some(reason),
            body_unknown: false,
        }
    }
    fn not_found(reason: &'static str) -> Decision {
        Decision {
            status: StatusCode::NOT_FOUND,
            message: "",
            reason: Some(reason),
            body_unknown: true,
        }
    }
}

fn respond(d: &Decision) -> Response {
    if d.body_unknown {
        (d.status, axum::Json(ApiCredentialsResponse::unknown())).into_response()
    } else {
        generic(d.status, d.message)
    }
}

/// Step 6: exact host first, then the longest wildcard suffix (§4.8).
pub fn server_candidates(st: &Snapshot, rs: Uuid, host: &str, port: i32) -> Vec<Arc<ServerWorkload>> {
    let host = host.to_lowercase();
    let active = |ids: Option<&crate::state::index::IdSet>| -> Vec<Arc<ServerWorkload>> {
        ids.into_iter()
            .flatten()
            .filter_map(|id| st.server_workloads.get(id))
            .filter(|w| w.meta.active)
            .cloned()
            .collect()
    };
    static TCP: std::sync::LazyLock<Label> = std::sync::LazyLock::new(|| Label::new("TCP"));
    let exact = active(st.idx.servers_exact.get(&(rs, host.clone(), port, TCP.clone())));
    if !exact.is_empty() {
        return exact;
    }
    let labels: Vec<&str> = host.split('.').collect();
    for start in 1..labels.len().saturating_sub(1) {
        let suffix = labels[start..].join(".");
        let found = active(st.idx.servers_wildcard.get(&(rs, suffix, port, TCP.clone())));
        if !found.is_empty() {
            return found;
        }
    }
    vec![]
}

/// Step 5: active client workloads of the set whose identities all match.
pub fn client_candidates(st: &Snapshot, rs: Uuid, subject: &Subject<'_>) -> Vec<Arc<ClientWorkload>> {
    let mut ids: Vec<Uuid> = Vec::new();
    match subject.client_workload_id() {
        Some(cwid) => {
            ids.extend(
                st.idx
                    .clients_by_identity
                    .get(&(rs, "svcClientId", None, cwid.to_string()))
                    .into_iter()
                    .flatten(),
            );
        }
        None => {
            if let Some(groups) = st.idx.identity_groups.get(&rs) {
                for (ty_name, key) in groups.keys() {
                    let Some(ty) = crate::domain::identity::lookup(ty_name) else {
                        continue;
                    };
                    for v in subject.values(ty, key.as_deref()) {
                        let k = (rs, *ty_name, key.clone(), crate::state::index::normalise(ty, &v));
                        ids.extend(st.idx.clients_by_identity.get(&k).into_iter().flatten());
                    }
                }
            }
            ids.extend(st.idx.clients_scan.get(&rs).into_iter().flatten());
        }
    }
    ids.sort();
    ids.dedup();
    ids.iter()
        .filter_map(|id| st.client_workloads.get(id))
        .filter(|w| w.meta.active && subject.matches(w))
        .cloned()
        .collect()
}

/// Step 10's selector (§4.8): which mapping `connectionMetadata` names.
fn selected(m: &Mapping, cm: &ConnectionMetadata) -> bool {
    let s = m.selectors();
    match m.mapping_type {
        MappingType::AccessKeyId => cm.access_key_id.is_some() && cm.access_key_id == s.access_key_id,
        MappingType::AccountName => cm.account_name.is_some() && cm.account_name == s.account_name,
        MappingType::HttpHeader => {
            cm.header_name
                .as_deref()
                .zip(s.header_name.as_deref())
                .is_some_and(|(a, b)| a.eq_ignore_ascii_case(b))
                && cm.header_value.is_some()
                && cm.header_value == s.header_value
        }
        MappingType::HttpBody => {
            cm.http_body_field_path.is_some()
                && cm.http_body_field_path == s.body_field_path
                && cm.http_body_field_value.is_some()
                && cm.http_body_field_value == s.body_field_value
        }
        MappingType::None => false,
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

    // Step 1: rate limit by the (unverified) token id, else the peer.
    let now = crate::clock::now_millis();
    let limited = match bearer.and_then(token::peek_jti) {
        Some(jti) => app.limits.credentials.check(&jti, now),
        None => app.limits.credentials.check(&peer_ip, now),
    };
    if let Err(wait) = limited {
        return too_many(wait);
    }
    let _room = app.events.reserve(4).await;

    let bytes = super::read_body(body).await;
    let parsed: Option<ApiCredentialsRequest> = bytes.as_ref().and_then(|b| svc_api::edge::parse_body(b).ok());
    let st = app.state_full();
    let client = parsed.as_ref().and_then(|r| r.client.as_ref());
    let source_ip = super::effective_ip(&app, peer_ip, &parts.headers, client);
    let source_ip_text = source_ip.map(super::ip_text);
    let selected_rs = select_rs(&st, &parts.headers, client);

    // Step 2: the bearer token.
    let token: Option<Token> = bearer.and_then(|b| token::validate(&app, &st, b));
    let server = parsed.as_ref().and_then(|r| r.server.as_ref());
    let empty = Facts::new();
    // The subject's pod and service account, for every event of the request (`access.request`
    // included): from the token's facts and claims, and the request's reported pod name.
    // Built once: once step 3 has validated the body, `client` is the request's client and this
    // is the subject step 5 identifies (its claims are parsed at most once).
    let no_client = svc_api::edge::ClientWorkloadDetails::default();
    let subject = token.as_ref().map(|t| {
        Subject::new(
            &t.svc.facts,
            t.svc.tpk,
            t.svc.claims.as_deref().map(|r| r.get()),
            client.unwrap_or(&no_client),
            source_ip,
        )
    });
    let ids = subject.as_ref().map_or((None, None), events::subject_ids);
    let info = RequestInfo {
        context_id: crate::util::uuid_v4(),
        rs: selected_rs
            .or(token.as_ref().map(|t| t.svc.rs))
            .unwrap_or(DEFAULT_RESOURCE_SET),
        client_ip: source_ip_text,
        source_port: peer_port,
        target_host: server.and_then(|s| s.host.clone()),
        target_port: server
            .and_then(|s| s.port)
            .and_then(|p| i32::try_from(p).ok())
            .unwrap_or(0),
        environment: events::environment(
            token.as_ref().map(|t| &t.svc.facts).unwrap_or(&empty),
            ids,
            client,
            token.as_ref().map(|t| t.sub.as_str()),
        ),
    };
    let (Some(token), Some(subject)) = (token.as_ref(), subject) else {
        events::authorization(
            &app,
            &info,
            "access.request",
            "Unauthorized",
            Some("InvalidToken"),
            "Warning",
            &Parts::default(),
        );
        return generic(StatusCode::UNAUTHORIZED, UNAUTHORIZED);
    };

    // Step 3: the body.
    let valid = match validate_body(&parsed) {
        Ok(v) => v,
        Err(message) => {
            events::authorization(
                &app,
                &info,
                "access.request",
                "Unauthorized",
                Some("InvalidRequest"),
                "Warning",
                &Parts::default(),
            );
            return (
                StatusCode::BAD_REQUEST,
                axum::Json(svc_api::GenericResponse::error(message)),
            )
                .into_response();
        }
    };
    events::authorization(
        &app,
        &info,
        "access.request",
        "Received",
        None,
        "Info",
        &Parts::default(),
    );

    let client = valid.req.client.as_ref().expect("validated");

    let mut ev = Parts::default();
    let mut workload_event: Option<Identified> = None;
    let mut issued: Option<Result<Issued, String>> = None;
    let mut chosen_cp: Option<Arc<CompiledCredential>> = None;

    let decision = 'd: {
        // Step 4: resource set.
        let Some(rs) = selected_rs else {
            break 'd Decision::fail(StatusCode::BAD_REQUEST, INVALID, "InvalidRequest");
        };
        if rs != token.svc.rs {
            break 'd Decision::fail(StatusCode::FORBIDDEN, NOT_APPLICABLE, "ResourceSetMismatch");
        }
        // Step 5: client workloads.
        let clients = client_candidates(&st, rs, &subject);
        if clients.is_empty() {
            break 'd Decision::not_found("NoClientWorkload");
        }
        // Step 6: server workloads.
        let servers = server_candidates(&st, rs, valid.host, valid.port);
        if servers.is_empty() {
            // As at step 7 with no policy chosen: the first candidate.
            (ev.client_workload, ev.client_workloads) = chosen_among(&clients, clients[0].meta.id);
            break 'd Decision::not_found("NoServerWorkload");
        }
        // Step 7: the policy.
        let mut policies: Vec<Arc<Policy>> = Vec::new();
        for c in &clients {
            for s in &servers {
                if let Some(ids) = st.idx.policies_by_pair.get(&(c.meta.id, s.meta.id)) {
                    policies.extend(
                        ids.iter()
                            .filter_map(|id| st.policies.get(id))
                            .filter(|p| p.meta.active && p.meta.rs == Some(rs))
                            .cloned(),
                    );
                }
            }
        }
        let record_workloads = |ev: &mut Parts, p: Option<&Policy>| {
            let pick_c = p.map(|p| p.client_workload).unwrap_or(clients[0].meta.id);
            let pick_s = p.map(|p| p.server_workload).unwrap_or(servers[0].meta.id);
            (ev.client_workload, ev.client_workloads) = chosen_among(&clients, pick_c);
            (ev.server_workload, ev.server_workloads) = chosen_among(&servers, pick_s);
        };
        let server = if policies.len() == 1 {
            st.server_workloads
                .get(&policies[0].server_workload)
                .cloned()
                .unwrap_or_else(|| servers[0].clone())
        } else {
            servers[0].clone()
        };
        let client_id = if policies.len() == 1 {
            Some(policies[0].client_workload)
        } else if clients.len() == 1 {
            Some(clients[0].meta.id)
        } else {
            None
        };
        workload_event = Some(Identified {
            server: server.meta.id,
            app_protocol: server.endpoint.app_protocol.clone(),
            port: server.endpoint.requested_port,
            policy: policies.first().filter(|_| policies.len() == 1).map(|p| p.meta.id),
            client: client_id,
        });
        let policy = match policies.len() {
            0 => {
                record_workloads(&mut ev, None);
                break 'd Decision::not_found("NoAccessPolicy");
            }
            1 => policies[0].clone(),
            _ => {
                record_workloads(&mut ev, None);
                let ids: Vec<Uuid> = policies.iter().map(|p| p.meta.id).collect();
                ev.access_policies = policies.iter().map(|p| entity(p.meta.id, &p.meta.name)).collect();
                ev.access_policy = Some(EntityResult {
                    matches: Some(ids),
                    ..entity(policies[0].meta.id, &policies[0].meta.name)
                });
                break 'd Decision::fail(StatusCode::BAD_REQUEST, SEVERAL_POLICIES, "MultipleAccessPolicies");
            }
        };
        record_workloads(&mut ev, Some(&policy));
        ev.access_policy = Some(entity(policy.meta.id, &policy.meta.name));

        // Step 8: attestation by the policy's trust providers.
        if !policy.trust_providers.is_empty() {
            if policy.trust_providers.contains(&token.svc.tp) {
                if let Some(tp) = st.idx.trust.get(&token.svc.tp) {
                    ev.trust_providers.push(AttestationResult {
                        id: tp.id,
                        name: tp.name.clone(),
                        result: "Attested",
                        ..Default::default()
                    });
                }
            } else {
                let mut passed = false;
                for tp_id in &policy.trust_providers {
                    let Some(tp) = st.idx.trust.get(tp_id).filter(|t| t.active && t.rs == rs) else {
                        continue;
                    };
                    match crate::trust::verify(&app.verify_cx(), tp, client).await {
                        Ok(_) => {
                            ev.trust_providers.push(AttestationResult {
                                id: tp.id,
                                name: tp.name.clone(),
                                result: "Attested",
                                ..Default::default()
                            });
                            passed = true;
                            break;
                        }
                        Err(e) => {
                            let mut a = AttestationResult {
                                id: tp.id,
                                name: tp.name.clone(),
                                result: "Unauthorized",
                                reason: Some(e.reason().into()),
                                ..Default::default()
                            };
                            if let TrustError::MatchRuleFailed {
                                attribute,
                                expected,
                                actual,
                            } = e
                            {
                                a.attribute = Some(attribute);
                                a.expected_values = Some(expected);
                                a.actual_value = actual;
                            }
                            ev.trust_providers.push(a);
                        }
                    }
                }
                if !passed {
                    break 'd Decision::fail(StatusCode::FORBIDDEN, NOT_APPLICABLE, "AttestationFailed");
                }
            }
        }
        // Step 9: access conditions (none exist in this version: policies cannot reference one).

        // Step 10: the credential provider.
        let active: Vec<(&Mapping, Arc<CompiledCredential>)> = policy
            .mappings
            .iter()
            .filter_map(|m| {
                st.idx
                    .credentials
                    .get(&m.credential_provider)
                    .filter(|c| c.active)
                    .map(|c| (m, c.clone()))
            })
            .collect();
        let cp = match active.len() {
            0 => break 'd Decision::not_found("NoCredentialProvider"),
            1 => active[0].1.clone(),
            _ => {
                let cm = valid.req.connection_metadata.as_ref().filter(|cm| !cm.is_empty());
                let Some(cm) = cm else {
                    break 'd Decision::fail(StatusCode::BAD_REQUEST, SELECTOR_REQUIRED, "SelectorRequired");
                };
                let hits: Vec<&(&Mapping, Arc<CompiledCredential>)> =
                    active.iter().filter(|(m, _)| selected(m, cm)).collect();
                if hits.len() != 1 {
                    break 'd Decision::not_found("SelectorMismatch");
                }
                hits[0].1.clone()
            }
        };
        let mut cp_result = CpResult {
            id: cp.id,
            name: cp.name.clone(),
            result: "Identified",
            cp_type: cp.cp_type.clone(),
            ..Default::default()
        };
        // Step 11: the requested type.
        if cp.credential_type() != Some(valid.credential_type) {
            cp_result.reason = Some("CredentialTypeMismatch".into());
            ev.credential_provider = Some(cp_result);
            break 'd Decision::fail(StatusCode::FORBIDDEN, NOT_APPLICABLE, "CredentialTypeMismatch");
        }
        // Dynamic values resolve here (§3.5.3).
        let cw_name = st
            .client_workloads
            .get(&policy.client_workload)
            .map(|c| c.meta.name.clone())
            .unwrap_or_default();
        let values = crate::credential::dynamic::Values {
            kind: token.svc.tpk,
            facts: &token.svc.facts,
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
            trust_provider: token.svc.tp,
            values: Some(&values),
            csr: valid.req.cert_signing_request.as_deref(),
        };
        let prepared = match cp.prepare(&cx) {
            Ok(p) => p,
            Err(expr) => {
                cp_result.reason = Some(format!("UnresolvableClaim: {expr}"));
                ev.credential_provider = Some(cp_result);
                break 'd Decision::fail(StatusCode::FORBIDDEN, NOT_APPLICABLE, "UnresolvableClaim");
            }
        };
        ev.credential_provider = Some(cp_result);
        // Step 12: fetch.
        issued = Some(cp.issue(&prepared, &cx).await.map_err(|e| e.0));
        chosen_cp = Some(cp);
        Decision {
            status: StatusCode::OK,
            message: "",
            reason: None,
            body_unknown: false,
        }
    };

    let authorized = decision.status == StatusCode::OK;
    events::authorization(
        &app,
        &info,
        "access.authorization",
        if authorized { "Authorized" } else { "Unauthorized" },
        decision.reason,
        events::severity_for(decision.status.as_u16()),
        &ev,
    );

    let (status, response, action) = match (&issued, &chosen_cp) {
        (Some(result), Some(cp)) => {
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
                &app,
                &info,
                "access.credential",
                outcome,
                why,
                events::severity_for(status.as_u16()),
                &cev,
            );
            (status, response, action)
        }
        _ => (
            decision.status,
            respond(&decision),
            if decision.status.is_server_error() {
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
    }) = workload_event
    {
        events::workload(
            &app,
            &info,
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
