//! Shared shapes of upstream token calls (§5.3): form POSTs with optional HTTP Basic client
//! authentication, and the parsing of OAuth2-style token answers. Error texts carry the status and
//! the upstream's own error code/description — never a request secret.

use base64::Engine as _;
use serde_json::Value;

use super::IssueError;
use super::Services;
use crate::upstream::{Fetched, UpstreamUrl};

fn form_urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// `Authorization: Basic base64(urlenc(id):urlenc(secret))` (RFC 6749 §2.3.1).
pub fn basic(id: &str, secret: &str) -> String {
    let raw = format!("{}:{}", form_urlencode(id), form_urlencode(secret));
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(raw))
}

/// POSTs a form to a server-chosen URL, asking for JSON.
pub async fn post_form(
    svc: &Services<'_>,
    url: &(impl UpstreamUrl + ?Sized),
    form: &[(&str, &str)],
    authorization: Option<&str>,
) -> Result<Fetched, IssueError> {
    post_form_accepting(svc, url, form, authorization, "application/json").await
}

/// POSTs a form to a server-chosen URL, asking for the media type `accept`.
pub async fn post_form_accepting(
    svc: &Services<'_>,
    url: &(impl UpstreamUrl + ?Sized),
    form: &[(&str, &str)],
    authorization: Option<&str>,
    accept: &str,
) -> Result<Fetched, IssueError> {
    let u = url.checked(svc.upstream)?;
    let mut req = svc.upstream.client.post(u).form(form).header("accept", accept);
    if let Some(a) = authorization {
        req = req.header("authorization", a);
    }
    Ok(svc.upstream.send(req).await?)
}

/// POSTs JSON to a server-chosen URL.
pub async fn post_json(
    svc: &Services<'_>,
    url: &(impl UpstreamUrl + ?Sized),
    body: &Value,
    authorization: Option<&str>,
    extra: &[(&str, &str)],
) -> Result<Fetched, IssueError> {
    let u = url.checked(svc.upstream)?;
    let mut req = svc
        .upstream
        .client
        .post(u)
        .json(body)
        .header("accept", "application/json");
    if let Some(a) = authorization {
        req = req.header("authorization", a);
    }
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    Ok(svc.upstream.send(req).await?)
}

/// A non-success answer as an error naming the status and the upstream's error code (never its
/// body's text: [`Fetched::refusal`]).
pub fn status_error(what: &str, f: &Fetched) -> IssueError {
    IssueError::upstream(format!("{what} answered {}", f.refusal()), f.code())
}

/// The JSON body of a 2xx answer.
pub fn json_body(what: &str, f: &Fetched) -> Result<Value, IssueError> {
    if !(200..300).contains(&f.status) {
        return Err(status_error(what, f));
    }
    serde_json::from_slice(&f.body).map_err(|_| IssueError::upstream(format!("{what} answer is not JSON"), None))
}

/// `{access_token, expires_in?}` of an OAuth2 token answer.
pub fn access_token(what: &str, f: &Fetched) -> Result<(String, Option<i64>, Value), IssueError> {
    let v = json_body(what, f)?;
    let token = v
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| IssueError::upstream(format!("{what} answer has no access_token"), None))?;
    let expires_in = match v.get("expires_in") {
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(s)) => s.parse().ok(),
        _ => None,
    };
    Ok((token.to_string(), expires_in, v.clone()))
}

/// GETs a server-chosen URL with a bearer token (and optional extra headers).
pub async fn get_bearer(
    svc: &Services<'_>,
    url: &(impl UpstreamUrl + ?Sized),
    bearer: &str,
) -> Result<Fetched, IssueError> {
    let u = url.checked(svc.upstream)?;
    let req = svc
        .upstream
        .client
        .get(u)
        .bearer_auth(bearer)
        .header("accept", "application/json");
    Ok(svc.upstream.send(req).await?)
}

/// An OAuth2 token answer as an `OAuthToken` credential expiring at now + `expires_in` (or never
/// stated).
pub fn oauth_credential(what: &str, f: &Fetched) -> Result<super::Issued, IssueError> {
    let (token, expires_in, _) = access_token(what, f)?;
    Ok(super::Issued::Credential {
        credential_type: svc_api::edge::CredentialType::OAuthToken,
        data: svc_api::edge::EdgeCredentials(vec![("token", Some(token))]),
        expires_at: expires_in.map(|s| crate::clock::now().plus_secs(s)),
    })
}
