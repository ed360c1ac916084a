//! `GET /api/v1/health` (contract §3.27): public; reports the user of a valid bearer token, and
//! (ours, issue 32) in `degraded` what does not work while the database is unusable.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use svc_api::mgmt::{HealthDto, HealthStatus};

use crate::app::App;
use crate::http::api::{Api, Op};
use crate::service::auth::{Principal, authenticate, bearer};

pub fn register(api: &mut Api<'_>) {
    api.public("/api/v1/health").get(
        health,
        Op::new("Health, and the caller of a valid token (§3.27)").ok::<HealthDto>(200),
    );
}

async fn health(State(app): State<App>, headers: HeaderMap) -> Response {
    let degraded = app.store.health().condition().degraded();
    let status = if degraded.is_none() {
        HealthStatus::Healthy
    } else {
        HealthStatus::Unhealthy
    };
    let host = headers.get(axum::http::header::HOST).and_then(|v| v.to_str().ok());
    let caller = bearer(
        headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok()),
    )
    .and_then(|t| authenticate(&app, &app.state(), t).ok());
    let (user, full_name, exp) = match &caller {
        Some(c) => match &c.principal {
            Principal::User(u) => (Some(u.email.clone()), Some(u.display_name()), Some(c.exp)),
            _ => (None, None, Some(c.exp)),
        },
        None => (None, None, None),
    };
    let dto = HealthDto {
        status,
        version: env!("CARGO_PKG_VERSION").to_string(),
        git_sha: option_env!("SVC_GIT_SHA").unwrap_or("unknown").to_string(),
        host: host.map(str::to_string),
        user,
        user_full_name: full_name,
        tenant: app.cfg.tenant.clone(),
        session_expires_at: exp.map(svc_api::Timestamp::from_secs),
        degraded: degraded.map(str::to_string),
    };
    super::super::ok(super::crud::to_json(&dto))
}
