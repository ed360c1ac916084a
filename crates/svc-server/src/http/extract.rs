//! Extractors whose every rejection is our error body: JSON bodies (size limit, content type,
//! syntax), UUID path parameters, query pairs, the caller context set by the guard, client info.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use serde_json::Value;
use uuid::Uuid;

use crate::app::App;
use crate::error::Error;
use crate::events::audit::ClientInfo;

pub const MANAGEMENT_BODY_LIMIT: usize = 1024 * 1024;
pub const EDGE_BODY_LIMIT: usize = 256 * 1024;
/// How long a request's body may take to arrive once its headers have, unless the server loop
/// says otherwise ([`BodyTimeout`]).
const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The body-read timeout the server loop sets on every request: `SVC_HTTP_HEADER_TIMEOUT_SECONDS`
/// (README: the time a client has to send its headers, and to send its body).
#[derive(Clone, Copy, Debug)]
pub struct BodyTimeout(pub std::time::Duration);

/// The body-read timeout of a request (its extensions).
pub fn body_timeout(ext: &axum::http::Extensions) -> std::time::Duration {
    ext.get::<BodyTimeout>().map_or(BODY_READ_TIMEOUT, |t| t.0)
}

/// Why a body could not be read.
pub enum BodyFault {
    TooLarge,
    /// Malformed (a bad chunk), incomplete, or not there within [`BODY_READ_TIMEOUT`].
    Unreadable,
}

/// A request body of at most `limit` bytes, for both APIs: one that stops arriving (fewer bytes
/// than its Content-Length) must not hold the request.
pub async fn body_bytes(
    body: axum::body::Body,
    limit: usize,
    timeout: std::time::Duration,
) -> Result<axum::body::Bytes, BodyFault> {
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(e)) if std::error::Error::source(&e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>()) => {
            Err(BodyFault::TooLarge)
        }
        _ => Err(BodyFault::Unreadable),
    }
}

/// Why a request's `Content-Type` does not announce JSON text in UTF-8 (§1.1; issue 22: a body
/// without one, or in another charset, is refused rather than guessed at).
pub enum ContentTypeFault {
    /// Absent, or not `application/json` / `*+json`.
    NotJson,
    /// A `charset` parameter other than UTF-8.
    Charset,
}

/// Checks a request's `Content-Type`: `application/json` (or `*+json`), with no charset or
/// `charset=utf-8` (case-insensitive, quoted or not).
pub fn json_content_type(headers: &HeaderMap) -> Result<(), ContentTypeFault> {
    let Some(ct) = headers.get(header::CONTENT_TYPE) else {
        return Err(ContentTypeFault::NotJson);
    };
    let ct = ct.to_str().unwrap_or("").to_ascii_lowercase();
    let mut params = ct.split(';');
    let mime = params.next().unwrap_or("").trim();
    if !(mime == "application/json" || mime.ends_with("+json")) {
        return Err(ContentTypeFault::NotJson);
    }
    for p in params {
        if let Some((k, v)) = p.split_once('=')
            && k.trim() == "charset"
            && v.trim().trim_matches('"') != "utf-8"
        {
            return Err(ContentTypeFault::Charset);
        }
    }
    Ok(())
}

/// Reads a request body of at most `limit` bytes, announced as JSON in UTF-8.
pub async fn read_body(req: Request, limit: usize) -> Result<axum::body::Bytes, Error> {
    let content_type = json_content_type(req.headers());
    let timeout = body_timeout(req.extensions());
    let bytes = body_bytes(req.into_body(), limit, timeout).await.map_err(|f| match f {
        BodyFault::TooLarge => Error::bad(format!("body: larger than the {} KiB limit", limit / 1024)),
        BodyFault::Unreadable => Error::bad("body: could not be read (malformed or incomplete)"),
    })?;
    match content_type {
        Ok(()) => Ok(bytes),
        // No body at all reads as a missing body, whatever the headers say.
        Err(_) if bytes.iter().all(u8::is_ascii_whitespace) => Err(Error::bad("body: is required")),
        Err(ContentTypeFault::NotJson) => Err(Error::bad("body: Content-Type must be application/json")),
        Err(ContentTypeFault::Charset) => Err(Error::bad("body: charset must be utf-8")),
    }
}

/// A management JSON body (≤ 1 MiB) parsed into a `Value`.
pub struct JsonBody(pub Value);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = Error;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Error> {
        let bytes = read_body(req, MANAGEMENT_BODY_LIMIT).await?;
        parse_json(&bytes).map(JsonBody)
    }
}

pub fn parse_json(bytes: &[u8]) -> Result<Value, Error> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::bad("body: is required"));
    }
    // Repeated keys and NUL characters are refused (issue 22), not silently resolved.
    svc_api::strict::parse(bytes).map_err(|e| match e {
        svc_api::strict::StrictError::Syntax(e) => Error::bad(format!("body: malformed JSON ({e})")),
        svc_api::strict::StrictError::Rule(m) => Error::bad(m),
    })
}

/// The path's UUID parameters, in order; a malformed one is a 400 naming it.
pub struct Ids(pub Vec<Uuid>);

impl<S: Send + Sync> FromRequestParts<S> for Ids {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Error> {
        let raw = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|e| Error::field(invalid_param(&e), "must be a UUID"))?;
        let mut out = Vec::new();
        for (name, value) in raw.iter() {
            match svc_api::reader::parse_uuid(value) {
                Some(u) => out.push(u),
                None => return Err(Error::field(name, "must be a UUID")),
            }
        }
        Ok(Ids(out))
    }
}

impl Ids {
    pub fn one(&self) -> Uuid {
        self.0[0]
    }
}

/// The raw path parameters as text (for the users route, whose id is a plain string).
pub struct RawIds(pub Vec<String>);

impl<S: Send + Sync> FromRequestParts<S> for RawIds {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Error> {
        // A value that is no UTF-8 is no id either: the handler treats it as unknown.
        let ids = match RawPathParams::from_request_parts(parts, state).await {
            Ok(raw) => raw.iter().map(|(_, v)| v.to_string()).collect(),
            Err(_) => vec![String::new()],
        };
        Ok(RawIds(ids))
    }
}

/// The name of the path parameter a rejection is about (`Invalid UTF-8 in `id``), else `path`.
fn invalid_param(e: &axum::extract::rejection::RawPathParamsRejection) -> String {
    let text = e.body_text();
    text.split('`')
        .nth(1)
        .filter(|k| !k.is_empty())
        .unwrap_or("path")
        .to_string()
}

/// Query parameters as ordered pairs (repeatable keys kept).
pub struct QueryPairs(pub Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for QueryPairs {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Error> {
        let q = parts.uri.query().unwrap_or("");
        let pairs = url::form_urlencoded::parse(q.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        Ok(QueryPairs(pairs))
    }
}

impl QueryPairs {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }
    pub fn all(&self, key: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// The TCP peer address.
pub fn peer_ip(parts_ext: &axum::http::Extensions) -> Option<IpAddr> {
    parts_ext
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| crate::net::canonical(c.0.ip()))
}

/// The effective source IP (§4.3) for management calls: the peer, or the left-most
/// `X-Forwarded-For` entry when the peer is a trusted proxy.
pub fn effective_ip(app: &App, ext: &axum::http::Extensions, headers: &HeaderMap) -> Option<IpAddr> {
    let peer = peer_ip(ext)?;
    if app.cfg.is_trusted_proxy(peer)
        && let Some(fwd) = headers.get("x-forwarded-for").and_then(|v| v.to_str().ok())
        && let Some(ip) = fwd.split(',').next().and_then(|s| s.trim().parse::<IpAddr>().ok())
    {
        return Some(crate::net::canonical(ip));
    }
    Some(peer)
}

/// The address a sign-in is throttled and locked out by (issue 31): the TCP peer or, when the
/// peer is a trusted proxy, the right-most `X-Forwarded-For` entry that is not a trusted proxy —
/// the last address a proxy of ours saw. The left-most entry (§4.3's effective source IP, which
/// audit entries show) is whatever the client wrote: keyed on it, an attacker rotating it would
/// fail without limit, and naming a victim's address would throttle the victim. An IPv6 address
/// counts by its /64 (a host's whole prefix is one source), an entry with a port by its address,
/// and an entry that is no address at all by its text (never as the proxy that wrote it, which
/// would put every client in one bucket).
pub fn sign_in_source(app: &App, ext: &axum::http::Extensions, headers: &HeaderMap) -> Option<String> {
    let peer = peer_ip(ext)?;
    if !app.cfg.is_trusted_proxy(peer) {
        return Some(source_key(peer));
    }
    let entries: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    let mut hop = peer;
    for entry in entries.iter().rev() {
        let Some(ip) = forwarded_ip(entry) else {
            let text: String = entry.chars().take(64).collect();
            return Some(format!("forwarded:{text}"));
        };
        hop = crate::net::canonical(ip);
        if !app.cfg.is_trusted_proxy(hop) {
            return Some(source_key(hop));
        }
    }
    Some(source_key(hop))
}

/// An `X-Forwarded-For` entry's address: `ip`, `ip:port`, `[v6]` or `[v6]:port`.
fn forwarded_ip(entry: &str) -> Option<IpAddr> {
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(rest) = entry.strip_prefix('[') {
        return rest.split(']').next()?.parse().ok();
    }
    entry.parse::<SocketAddr>().ok().map(|a| a.ip())
}

/// The throttle's key of an address: IPv4 as it is, IPv6 by its /64.
fn source_key(ip: IpAddr) -> String {
    match crate::net::canonical(ip) {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            let prefix = std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0);
            format!("{prefix}/64")
        }
    }
}

pub fn client_info(app: &App, ext: &axum::http::Extensions, headers: &HeaderMap) -> ClientInfo {
    ClientInfo {
        source: sign_in_source(app, ext, headers),
        ip: effective_ip(app, ext, headers).map(|i| i.to_string()),
        user_agent: headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(|s| s.chars().take(512).collect()),
    }
}

/// Client info as an extractor (public endpoints without the guard).
pub struct Client(pub ClientInfo);

impl FromRequestParts<App> for Client {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Error> {
        Ok(Client(client_info(app, &parts.extensions, &parts.headers)))
    }
}
