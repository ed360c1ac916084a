//! The Edge API's HTTP side (contract §4): the handlers of `POST /edge/v1/auth` and
//! `POST /edge/v1/credentials`, their routes, bodies, resource-set selection and answers. Both
//! read only the in-memory state and its indexes (architecture invariant 2); events leave through
//! the bounded event sink. The decision they drive is `crate::edge` (`edge::pipeline`).

pub mod auth;
pub mod credentials;

use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, post};
use svc_api::GenericResponse;
use svc_api::edge::ClientWorkloadDetails;
use uuid::Uuid;

use crate::app::App;
use crate::domain::DEFAULT_RESOURCE_SET;
use crate::state::State;

pub const TOO_MANY: &str = "Too many requests. Please try again later.";

/// `POST /edge/v1/auth`'s handler (registered, with its document entry, by `http::resources`).
pub fn auth_route() -> MethodRouter<App> {
    post(auth::auth).layer(on_panic(auth::INTERNAL))
}

/// `POST /edge/v1/credentials`'s handler.
pub fn credentials_route() -> MethodRouter<App> {
    post(credentials::credentials).layer(on_panic(credentials::INTERNAL))
}

/// A panic in an edge handler answers the operation's own 500 message (§4.9), not the management
/// API's generic one (the router-wide catcher never sees it).
fn on_panic(message: &'static str) -> tower_http::catch_panic::CatchPanicLayer<EdgePanic> {
    tower_http::catch_panic::CatchPanicLayer::custom(EdgePanic(message))
}

#[derive(Clone, Copy)]
struct EdgePanic(&'static str);

impl tower_http::catch_panic::ResponseForPanic for EdgePanic {
    type ResponseBody = axum::body::Body;
    fn response_for_panic(&mut self, _panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
        tracing::error!("edge request handler panicked");
        generic(StatusCode::INTERNAL_SERVER_ERROR, self.0)
    }
}

pub fn generic(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(GenericResponse::error(message))).into_response()
}

/// The answer of a request whose events could not be stored (issue 19: fail closed).
pub const UNAVAILABLE: &str = "Service temporarily unavailable. Please try again later.";

/// Sends `response` once the request's events are committed, or 503 instead (and so hands out
/// nothing) when they cannot be stored in time (`events::EventSink::commit`).
pub async fn settle(
    app: &App,
    room: crate::events::Room<'_>,
    rec: crate::events::Recorder,
    response: Response,
) -> Response {
    if app.events.commit(room, rec).await {
        return response;
    }
    unavailable()
}

/// 503 with `Retry-After: 1`: the request's events cannot be stored (nothing is handed out).
pub fn unavailable() -> Response {
    crate::metrics::edge_unavailable();
    let mut r = generic(StatusCode::SERVICE_UNAVAILABLE, UNAVAILABLE);
    r.headers_mut()
        .insert(axum::http::header::RETRY_AFTER, HeaderValue::from(1u32));
    r
}

pub fn too_many(retry_after: u64) -> Response {
    let mut r = generic(StatusCode::TOO_MANY_REQUESTS, TOO_MANY);
    r.headers_mut()
        .insert(axum::http::header::RETRY_AFTER, HeaderValue::from(retry_after.max(1)));
    r
}

pub fn peer(ext: &axum::http::Extensions) -> (Option<IpAddr>, u16) {
    match ext.get::<ConnectInfo<SocketAddr>>() {
        Some(c) => (Some(crate::net::canonical(c.0.ip())), c.0.port()),
        None => (None, 0),
    }
}

/// An IP's text for a request's events: made once and shared by them, written on the stack and
/// copied out once (`to_string` and then an `Arc<str>` allocated twice).
pub fn ip_text(ip: IpAddr) -> std::sync::Arc<str> {
    use std::io::Write;
    // The longest text of an address: eight groups of four, or six and a dotted IPv4.
    let mut buf = [0u8; 45];
    let n = {
        let mut rest = &mut buf[..];
        write!(rest, "{ip}").expect("an IP's text fits in 45 bytes");
        45 - rest.len()
    };
    std::str::from_utf8(&buf[..n]).expect("an IP's text is ASCII").into()
}

/// The effective source IP (§4.3): the peer, unless it is a trusted proxy, in which case
/// `client.sourceIP`, else the left-most `X-Forwarded-For` entry, else the peer.
pub fn effective_ip(
    app: &App,
    peer: Option<IpAddr>,
    headers: &HeaderMap,
    client: Option<&ClientWorkloadDetails>,
) -> Option<IpAddr> {
    let p = peer?;
    if !app.cfg.is_trusted_proxy(p) {
        return Some(p);
    }
    if let Some(ip) = client
        .and_then(|c| c.source_ip.as_deref())
        .and_then(|s| s.trim().parse::<IpAddr>().ok())
    {
        return Some(crate::net::canonical(ip));
    }
    if let Some(ip) = headers
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .and_then(|s| s.trim().parse::<IpAddr>().ok())
    {
        return Some(crate::net::canonical(ip));
    }
    Some(p)
}

/// The selected resource set (§4.3): header, else `SVC_RESOURCE_SET_ID`, else the default.
/// `None` when malformed, unknown, or the two disagree.
pub fn select_rs(st: &State, headers: &HeaderMap, client: Option<&ClientWorkloadDetails>) -> Option<Uuid> {
    let header = match headers.get(crate::http::guard::RS_HEADER) {
        None => None,
        Some(v) => Some(v.to_str().ok().and_then(|s| svc_api::reader::parse_uuid(s.trim()))?),
    };
    let env = client
        .and_then(|c| c.os.as_ref())
        .and_then(|o| o.environment.as_ref())
        .and_then(|e| e.svc_resource_set_id.as_deref())
        .filter(|s| !s.trim().is_empty());
    let env = match env {
        None => None,
        Some(s) => Some(svc_api::reader::parse_uuid(s.trim())?),
    };
    let rs = match (header, env) {
        (Some(h), Some(e)) if h != e => return None,
        (Some(h), _) => h,
        (None, Some(e)) => e,
        (None, None) => DEFAULT_RESOURCE_SET,
    };
    st.resource_set_exists(&rs).then_some(rs)
}

/// Reads an edge body (≤ 256 KiB); `None` when too large, not readable or not there in time,
/// when it is not announced as JSON in UTF-8, or when an object repeats a key (issue 22): the
/// handler then answers its malformed-body 400 and records it as such.
pub async fn read_body(parts: &axum::http::request::Parts, body: axum::body::Body) -> Option<axum::body::Bytes> {
    use crate::http::extract::{EDGE_BODY_LIMIT, body_bytes, body_timeout, json_content_type};
    let bytes = body_bytes(body, EDGE_BODY_LIMIT, body_timeout(&parts.extensions))
        .await
        .ok()?;
    if json_content_type(&parts.headers).is_err() || svc_api::strict::unique_keys(&bytes).is_err() {
        return None;
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn a_panicking_edge_handler_answers_its_operations_500_message() {
        use tower::ServiceExt;
        for message in [super::auth::INTERNAL, super::credentials::INTERNAL] {
            let app: axum::Router = axum::Router::new().route(
                "/x",
                axum::routing::post(|| async {
                    panic!("boom");
                    #[allow(unreachable_code)]
                    ""
                })
                .layer(super::on_panic(message)),
            );
            let req = axum::http::Request::post("/x").body(axum::body::Body::empty()).unwrap();
            let resp = app.oneshot(req).await.unwrap();
            assert_eq!(resp.status(), 500);
            let body = axum::body::to_bytes(resp.into_body(), 1 << 16).await.unwrap();
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(v, serde_json::json!({"success": false, "message": message, "id": 0}));
        }
    }

    #[test]
    fn ip_text_is_the_address_display() {
        for ip in [
            "127.0.0.1",
            "255.255.255.255",
            "::1",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "::ffff:10.0.0.1",
        ] {
            let ip: std::net::IpAddr = ip.parse().unwrap();
            assert_eq!(&*super::ip_text(ip), ip.to_string());
        }
    }
}
