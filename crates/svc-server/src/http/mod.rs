//! HTTP: the router, the middleware every request passes (request id, access log, panic catcher),
//! the fallbacks, and one module per API resource. Only this module knows axum and status codes.

pub mod api;
pub mod conn;
pub mod console;
pub mod edge;
pub mod error;
pub mod extract;
pub mod guard;
pub mod list;
pub mod openapi;
pub mod resources;
pub mod scrape;
pub mod server;

use std::time::Instant;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tower_http::catch_panic::CatchPanicLayer;
use uuid::Uuid;

use crate::app::App;
use crate::error::Error;

pub const REQUEST_ID: &str = "x-request-id";

/// The request id of the current request (caller's UUID or a new one).
#[derive(Clone, Copy, Debug)]
pub struct RequestId(pub Uuid);

pub fn router(app: App) -> Router {
    let mut api = api::Api::new(&app);
    resources::register(&mut api);
    openapi::register(&mut api);
    let (routes, _) = api.finish();
    // The console is no part of the API (nor of its document): its own routes beside it.
    common_layers(routes.merge(console::routes())).with_state(app)
}

/// Fallbacks and the layers every route shares: the 404/405 bodies, the panic catcher (a panic
/// becomes the generic 500 body), and the request id.
fn common_layers<S: Clone + Send + Sync + 'static>(r: Router<S>) -> Router<S> {
    r.fallback(|| async { Error::NotFound })
        .method_not_allowed_fallback(|| async { Error::MethodNotAllowed })
        .layer(CatchPanicLayer::custom(|_panic: Box<dyn std::any::Any + Send>| {
            tracing::error!("request handler panicked");
            error::generic(StatusCode::INTERNAL_SERVER_ERROR, error::INTERNAL)
        }))
        .layer(middleware::from_fn(request_id))
}

/// Assigns `X-Request-Id` (the caller's value when it is a UUID) and logs one line per request.
/// The query string is never logged: OAuth callbacks carry codes there.
async fn request_id(mut req: Request, next: Next) -> Response {
    // The caller's UUID goes back exactly as sent (case included, surrounding spaces dropped).
    let callers = req.headers().get(REQUEST_ID).and_then(|v| {
        let s = v.to_str().ok()?.trim();
        let id = svc_api::reader::parse_uuid(s)?;
        Some((id, HeaderValue::from_str(s).ok()?))
    });
    let (id, echo) = match callers {
        Some((id, v)) => (id, Some(v)),
        None => (crate::util::uuid_v4(), None),
    };
    req.extensions_mut().insert(RequestId(id));
    let method = req.method().clone();
    // The URI's parts are shared bytes: keeping it for the log line copies no text.
    let uri = req.uri().clone();
    // The route template (not the raw path) labels the request's metrics.
    let matched = req.extensions().get::<axum::extract::MatchedPath>().cloned();
    let started = Instant::now();
    let mut resp = next.run(req).await;
    if let Some(v) = echo.or_else(|| HeaderValue::from_str(&id.to_string()).ok()) {
        resp.headers_mut().insert(REQUEST_ID, v);
    }
    // §1.1: JSON bodies are `application/json; charset=utf-8` (axum's `Json` says only
    // `application/json`); every handler's JSON passes here, so one place says it.
    let ct = axum::http::header::CONTENT_TYPE;
    if resp
        .headers()
        .get(&ct)
        .is_some_and(|v| v.as_bytes() == b"application/json")
    {
        resp.headers_mut()
            .insert(ct, HeaderValue::from_static("application/json; charset=utf-8"));
    }
    let status = resp.status().as_u16();
    let elapsed = started.elapsed();
    crate::metrics::http_request(matched.as_ref().map(|m| m.as_str()), method.as_str(), status, elapsed);
    let micros = elapsed.as_micros() as u64;
    if status >= 500 {
        tracing::warn!(request_id = %id, %method, path = uri.path(), status, micros, "request");
    } else {
        tracing::debug!(request_id = %id, %method, path = uri.path(), status, micros, "request");
    }
    resp
}

/// `201`/`200` with a JSON body and a `Location` header (§1.5).
pub fn created(status: StatusCode, location: String, body: serde_json::Value) -> Response {
    let mut r = (status, axum::Json(body)).into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        r.headers_mut().insert(axum::http::header::LOCATION, v);
    }
    r
}

/// The compliance settings (§3.22) a `Recommended` check failed for, named in this header.
pub const COMPLIANCE_HEADER: &str = "x-svc-compliance-warning";

/// Adds `X-Svc-Compliance-Warning` when a Recommended check failed.
pub fn with_warnings(mut r: Response, warnings: &[&str]) -> Response {
    if !warnings.is_empty()
        && let Ok(v) = HeaderValue::from_str(&warnings.join(", "))
    {
        r.headers_mut().insert(COMPLIANCE_HEADER, v);
    }
    r
}

/// `204` with no body.
pub fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

/// `200` with a JSON body.
pub fn ok(body: serde_json::Value) -> Response {
    (StatusCode::OK, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::routing::get;
    use tower::ServiceExt;

    use super::*;

    async fn boom() -> &'static str {
        panic!("boom")
    }

    #[tokio::test]
    async fn a_panic_becomes_the_generic_500_body() {
        let r: Router = common_layers(Router::new().route("/boom", get(boom)));
        let resp = r
            .oneshot(Request::builder().uri("/boom").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(resp.headers().contains_key(REQUEST_ID));
        let body = axum::body::to_bytes(resp.into_body(), 1024).await.unwrap();
        assert_eq!(
            &body[..],
            br#"{"success":false,"message":"Internal server error.","id":0}"#
        );
    }
}
