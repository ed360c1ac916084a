//! The one HTTP client for upstream calls (OIDC discovery, JWKS, STS, token endpoints, vault):
//! server-chosen URLs only, 10 s connect+response timeout, no redirects, response bodies capped
//! at 1 MiB (contract §0.2, §4.5), plus `SVC_UPSTREAM_CA_BUNDLE` roots.

use std::time::Duration;

use crate::config::Config;

pub const MAX_BODY: usize = 1024 * 1024;
pub const TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone)]
pub struct Upstream {
    pub client: reqwest::Client,
    pub allow_insecure: bool,
}

/// An upstream failure, phrased for logs and events (never containing a secret).
#[derive(Debug, Clone, PartialEq)]
pub enum UpstreamError {
    /// Network error, timeout, TLS failure.
    Unreachable(String),
    /// Non-success status with a short, sanitised body excerpt.
    Status(u16, String),
    /// The answer could not be understood.
    Malformed(String),
    /// The URL is not acceptable (scheme not allowed, unparsable).
    BadUrl(String),
}

impl std::fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamError::Unreachable(m) => write!(f, "upstream unreachable: {m}"),
            UpstreamError::Status(s, b) if b.is_empty() => write!(f, "upstream answered {s}"),
            UpstreamError::Status(s, b) => write!(f, "upstream answered {s}: {b}"),
            UpstreamError::Malformed(m) => write!(f, "upstream answer malformed: {m}"),
            UpstreamError::BadUrl(m) => write!(f, "upstream URL rejected: {m}"),
        }
    }
}

/// A fetched answer: status, content type, body (≤ 1 MiB).
pub struct Fetched {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

impl Upstream {
    pub fn new(cfg: &Config) -> Result<Upstream, String> {
        let mut b = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("svc/", env!("CARGO_PKG_VERSION")))
            .no_proxy();
        if let Some(path) = &cfg.upstream_ca_bundle {
            let pem = std::fs::read(path).map_err(|e| format!("SVC_UPSTREAM_CA_BUNDLE: {e}"))?;
            let certs =
                reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| format!("SVC_UPSTREAM_CA_BUNDLE: {e}"))?;
            for c in certs {
                b = b.add_root_certificate(c);
            }
        }
        let client = b.build().map_err(|e| format!("HTTP client: {e}"))?;
        Ok(Upstream {
            client,
            allow_insecure: cfg.allow_insecure_upstream,
        })
    }

    /// Checks an entity-configured URL: `https`, or `http` only with `SVC_ALLOW_INSECURE_UPSTREAM`.
    pub fn check_url(&self, url: &str) -> Result<reqwest::Url, UpstreamError> {
        let u = reqwest::Url::parse(url).map_err(|e| UpstreamError::BadUrl(format!("{url}: {e}")))?;
        match u.scheme() {
            "https" => Ok(u),
            "http" if self.allow_insecure => Ok(u),
            s => Err(UpstreamError::BadUrl(format!("scheme {s} not allowed"))),
        }
    }

    /// Sends a request and reads at most 1 MiB of the answer.
    pub async fn send(&self, req: reqwest::RequestBuilder) -> Result<Fetched, UpstreamError> {
        let mut resp = req.send().await.map_err(|e| UpstreamError::Unreachable(describe(&e)))?;
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut body = Vec::new();
        loop {
            match tokio::time::timeout(TIMEOUT, resp.chunk()).await {
                Err(_) => {
                    return Err(UpstreamError::Unreachable("timed out reading the answer".into()));
                }
                Ok(Err(e)) => return Err(UpstreamError::Unreachable(describe(&e))),
                Ok(Ok(None)) => break,
                Ok(Ok(Some(c))) => {
                    if body.len() + c.len() > MAX_BODY {
                        return Err(UpstreamError::Malformed("answer larger than 1 MiB".into()));
                    }
                    body.extend_from_slice(&c);
                }
            }
        }
        Ok(Fetched {
            status,
            content_type,
            body,
        })
    }

    /// GET a JSON document; non-2xx is an error.
    pub async fn get_json(&self, url: &str) -> Result<serde_json::Value, UpstreamError> {
        let f = self
            .send(self.client.get(url).header("accept", "application/json"))
            .await?;
        if !(200..300).contains(&f.status) {
            return Err(UpstreamError::Status(f.status, excerpt(&f.body)));
        }
        serde_json::from_slice(&f.body).map_err(|e| UpstreamError::Malformed(format!("not JSON: {e}")))
    }
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "connection failed".into()
    } else {
        // reqwest errors may embed the URL; keep only the kind to avoid leaking query secrets.
        let mut s = e.to_string();
        if let Some(u) = e.url() {
            s = s.replace(u.as_str(), "<url>");
        }
        s
    }
}

/// A short printable excerpt of an error body (for events and logs; bodies of error answers do
/// not carry credentials, and the excerpt is cut to 200 characters).
pub fn excerpt(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(body);
    let s: String = s.chars().filter(|c| !c.is_control()).take(200).collect();
    s.trim().to_string()
}
