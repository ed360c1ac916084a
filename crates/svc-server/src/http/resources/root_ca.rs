//! `GET /api/v1/root-ca` (contract §3.28): the CA certificate that signs X.509-SVIDs, as PEM.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::app::App;
use crate::domain::Perm;
use crate::http::guard::{Scope, guarded};

pub fn routes(app: &App) -> Router<App> {
    Router::new().route(
        "/api/v1/root-ca",
        guarded(app, Perm::StandaloneCertificateAuthorities, Scope::Global, get(root_ca)),
    )
}

async fn root_ca(State(app): State<App>) -> Response {
    let mut r = (StatusCode::OK, app.ca.cert_pem.clone()).into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/x-pem-file"));
    r
}
