//! One module per API resource: routes, request parsing, rules, and the response DTO with its
//! JSON names.

pub mod audit_logs;
pub mod common;
pub mod compliance;
pub mod event_query;
pub mod health;
pub mod login;
pub mod me;
pub mod resource_sets;
pub mod roles;
pub mod signin;
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
        .merge(users::routes(app))
        .merge(audit_logs::routes(app))
}
