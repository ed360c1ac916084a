//! `GET /api/v1/root-ca` (contract §3.28): the CA certificate that signs X.509-SVIDs, as PEM.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::app::App;
use crate::domain::Perm;
use crate::http::api::{Api, Op};
use crate::http::guard::Scope;

pub fn register(api: &mut Api<'_>) {
    api.guarded("/api/v1/root-ca", Perm::StandaloneCertificateAuthorities, Scope::Global)
        .get(root_ca, Op::new("The X.509 CA certificate (§3.28)").pem());
}

async fn root_ca(State(app): State<App>) -> Response {
    let mut r = (StatusCode::OK, app.ca.cert_pem.clone()).into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/x-pem-file"));
    r
}
