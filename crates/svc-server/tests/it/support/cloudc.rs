//! A loopback fake of cloudC's public APIs, written from their formats (contract §5.3, §5.4): the
//! STS token exchange, IAM credentials' `generateAccessToken` and the storage media upload. Used
//! by the `cloudC-identity-federation` credential tests and the objectStorageC log-stream tests;
//! mount it under the paths of [`env`].

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::support::cred::Seen;

/// The federated token the STS hands out and `generateAccessToken` requires as bearer.
pub const FEDERATED_TOKEN: &str = "federated-token";
/// The access token `generateAccessToken` hands out and the upload requires as bearer.
pub const ACCESS_TOKEN: &str = "ya29.cloud-c-token";
/// Its `expireTime` (1893553445 in seconds).
pub const EXPIRE_TIME: &str = "2030-01-02T03:04:05Z";
pub const SCOPE: &str = "https://cloud-c.test/auth/cloud-platform";
/// An STS exchange with this audience is refused with a 403 that echoes the subject token.
pub const ECHOING_AUDIENCE: &str = "//iam.cloud-c.test/echo";
/// Uploads to this bucket are refused with a 403 that echoes the request's `Authorization`.
pub const FORBIDDEN_BUCKET: &str = "forbidden-bucket";
/// Uploads to this bucket fail with a 500.
pub const BROKEN_BUCKET: &str = "broken-bucket";

/// The `SVC_*` keys that point the service's cloudC upstreams at the fake at `url`.
pub fn env(url: &str, env: &mut BTreeMap<String, String>) {
    env.insert("SVC_CLOUDC_STS_URL".into(), format!("{url}/sts/v1/token"));
    env.insert("SVC_CLOUDC_IAMCREDENTIALS_URL".into(), format!("{url}/iam"));
    env.insert("SVC_CLOUDC_SCOPE".into(), SCOPE.into());
    env.insert("SVC_OBJECTSTORAGEC_UPLOAD_URL".into(), format!("{url}/upload"));
}

/// The fake's answer to a request for one of its routes, `None` for any other path.
pub fn route(s: &Seen) -> Option<(u16, Value)> {
    let path = s.uri.split('?').next().unwrap_or_default();
    let bearer = |token: &str| s.header("authorization") == Some(&format!("Bearer {token}"));
    Some(match (s.method.as_str(), path) {
        ("POST", "/sts/v1/token") => {
            let body: Value = serde_json::from_slice(&s.body).unwrap_or_default();
            if body["audience"] == ECHOING_AUDIENCE {
                let echo = format!(
                    "token {} is not trusted",
                    body["subjectToken"].as_str().unwrap_or_default()
                );
                return Some((403, json!({"error": "access_denied", "error_description": echo})));
            }
            (
                200,
                json!({"access_token": FEDERATED_TOKEN, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                       "token_type": "Bearer", "expires_in": 3600}),
            )
        }
        ("POST", p) if p.starts_with("/iam/v1/projects/-/serviceAccounts/") && p.ends_with(":generateAccessToken") => {
            if !bearer(FEDERATED_TOKEN) {
                return Some((401, json!({"error": {"code": 401, "message": "bad bearer"}})));
            }
            (200, json!({"accessToken": ACCESS_TOKEN, "expireTime": EXPIRE_TIME}))
        }
        ("POST", p) if p.starts_with("/upload/b/") && p.ends_with("/o") => {
            let bucket = p.trim_start_matches("/upload/b/").trim_end_matches("/o");
            if !bearer(ACCESS_TOKEN) {
                return Some((401, json!({"error": {"code": 401, "message": "Invalid Credentials"}})));
            }
            match bucket {
                FORBIDDEN_BUCKET => {
                    let echo = format!(
                        "the caller does not have storage.objects.create access (request had {})",
                        s.header("authorization").unwrap_or_default()
                    );
                    (403, json!({"error": {"code": 403, "message": echo}}))
                }
                BROKEN_BUCKET => (500, json!({"error": {"code": 500, "message": "Backend Error"}})),
                _ => {
                    let name = query(s, "name").unwrap_or_default();
                    (
                        200,
                        json!({"kind": "storage#object", "bucket": bucket, "name": name, "size": s.body.len().to_string()}),
                    )
                }
            }
        }
        _ => return None,
    })
}

/// A query parameter of the request, decoded.
pub fn query(s: &Seen, key: &str) -> Option<String> {
    let q = s.uri.split_once('?')?.1;
    url::form_urlencoded::parse(q.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// [`route`], and 404 elsewhere.
pub fn answer(s: &Seen) -> (u16, Value) {
    route(s).unwrap_or((404, json!({"error": "no such route"})))
}
