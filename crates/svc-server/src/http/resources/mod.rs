//! One module per API resource: routes, request parsing, rules, and the response DTO with its
//! JSON names.

pub mod access_conditions;
pub mod access_policies;
pub mod access_policies_v1;
pub mod agent_controllers;
pub mod audit_logs;
pub mod client_workloads;
pub mod common;
pub mod compliance;
pub mod content_security;
pub mod credential_integrations;
pub mod credential_providers;
pub mod crud;
pub mod discovery;
pub mod evaluate;
pub mod event_query;
pub mod events;
pub mod health;
pub mod integrations;
pub mod issuer;
pub mod log_streams;
pub mod login;
pub mod me;
pub mod resource_sets;
pub mod roles;
pub mod root_ca;
pub mod routings;
pub mod scoped;
pub mod server_workloads;
pub mod signin;
pub mod sso_idps;
pub mod sso_login;
pub mod trust_providers;
pub mod users;

use crate::http::api::{Api, Op};

/// Registers every management route with its document entry, then the Edge API's.
pub fn register(api: &mut Api<'_>) {
    health::register(api);
    login::register(api);
    me::register(api);
    signin::register(api);
    compliance::register(api);
    resource_sets::register(api);
    roles::register(api);
    routings::register(api);
    agent_controllers::register(api);
    sso_idps::register(api);
    log_streams::register(api);
    sso_login::register(api);
    users::register(api);
    audit_logs::register(api);
    events::register(api);
    issuer::register(api);
    trust_providers::register(api);
    client_workloads::register(api);
    server_workloads::register(api);
    credential_providers::register(api);
    credential_integrations::register(api);
    access_policies::register(api);
    evaluate::register(api);
    integrations::register(api);
    access_conditions::register(api);
    content_security::register(api);
    discovery::register(api);
    root_ca::register(api);
    api.public("/edge/v1/auth").methods(
        crate::http::edge::auth_route(),
        "post",
        Op::new("Authenticate a workload (§4.4)")
            .body::<svc_api::edge::AuthRequest>()
            .ok::<svc_api::edge::TokenDto>(200)
            .errors(&[401, 429, 503]),
    );
    api.edge("/edge/v1/credentials").methods(
        crate::http::edge::credentials_route(),
        "post",
        Op::new("A credential for a workload (§4.8)")
            .body::<svc_api::edge::ApiCredentialsRequest>()
            .ok::<svc_api::edge::ApiCredentialsResponse>(200)
            .ok::<svc_api::edge::ApiCredentialsResponse>(404)
            .errors(&[401, 403, 429, 503]),
    );
}

/// `204` + `Location` with no body: the answer to POST of client and server workloads (§1.5).
pub fn located(location: String) -> axum::response::Response {
    let mut r = crate::http::no_content();
    if let Ok(v) = axum::http::HeaderValue::from_str(&location) {
        r.headers_mut().insert(axum::http::header::LOCATION, v);
    }
    r
}
