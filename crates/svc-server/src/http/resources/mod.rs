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

use axum::Router;

use crate::app::App;

pub fn routes(app: &App) -> Router<App> {
    Router::new()
        .merge(health::routes())
        .merge(login::routes())
        .merge(me::routes(app))
        .merge(signin::routes(app))
        .merge(compliance::routes(app))
        .merge(resource_sets::routes(app))
        .merge(roles::routes(app))
        .merge(routings::routes(app))
        .merge(agent_controllers::routes(app))
        .merge(sso_idps::routes(app))
        .merge(log_streams::routes(app))
        .merge(sso_login::routes())
        .merge(users::routes(app))
        .merge(audit_logs::routes(app))
        .merge(events::routes(app))
        .merge(issuer::routes())
        .merge(trust_providers::routes(app))
        .merge(client_workloads::routes(app))
        .merge(server_workloads::routes(app))
        .merge(credential_providers::routes(app))
        .merge(credential_integrations::routes(app))
        .merge(access_policies::routes(app))
        .merge(evaluate::routes(app))
        .merge(integrations::routes(app))
        .merge(access_conditions::routes(app))
        .merge(content_security::routes(app))
        .merge(discovery::routes(app))
        .merge(root_ca::routes(app))
        .merge(crate::edge::routes())
}

/// `204` + `Location` with no body: the answer to POST of client and server workloads (§1.5).
pub fn located(location: String) -> axum::response::Response {
    let mut r = crate::http::no_content();
    if let Ok(v) = axum::http::HeaderValue::from_str(&location) {
        r.headers_mut().insert(axum::http::header::LOCATION, v);
    }
    r
}
