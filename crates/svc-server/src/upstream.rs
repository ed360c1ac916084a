//! The one HTTP client for upstream calls (OIDC discovery, JWKS, STS, token endpoints, vault):
//! server-chosen URLs only, 10 s connect+response timeout, no redirects, response bodies capped
//! at 1 MiB (contract §0.2, §4.5), plus `SVC_UPSTREAM_CA_BUNDLE` roots. Certificates are always
//! verified, except by [`Upstream::unverified`], used only for a log stream's collector whose
//! operator chose `tlsVerification: none` (§3.14).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::net::IpNet;

pub const MAX_BODY: usize = 1024 * 1024;
pub const TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone)]
pub struct Upstream {
    pub client: reqwest::Client,
    /// The routing proxy every call goes through (§3.17); `None`: direct. What one proxy
    /// answered is never taken for another's, or for a direct call's (`trust::keycache`).
    pub proxy: Option<String>,
    pub allow_insecure: bool,
    /// The upstream URLs the configuration names with `http` (trailing `/` trimmed) and their
    /// origins: the operator chose them, so calls to them need no `SVC_ALLOW_INSECURE_UPSTREAM`,
    /// which is about entity URLs (contract §5.5). See [`Upstream::check_configured`].
    config_http: Vec<(String, String)>,
    /// The hosts of the configured upstream URLs: the only hosts that label upstream metrics
    /// (any other host is an entity's, `entity`).
    hosts: Vec<&'static str>,
    /// `SVC_UPSTREAM_ALLOWED_NETWORKS`: link-local or metadata networks entity URLs may reach.
    allowed_networks: Arc<Vec<IpNet>>,
    /// A routing's client that may not carry plain-`http` calls ([`Upstream::via`]).
    refuse_plaintext: bool,
}

/// Networks an entity's URL may not reach unless `SVC_UPSTREAM_ALLOWED_NETWORKS` names them
/// (issue 31): link-local addresses, where the platforms serve instance metadata and its
/// credentials (`169.254.169.254`, the container endpoint `169.254.170.2`, IPv6 `fd00:ec2::254`),
/// and the other platforms' metadata addresses outside link-local.
const METADATA_NETWORKS: &[&str] = &[
    "169.254.0.0/16",
    "fe80::/10",
    "fd00:ec2::/32",
    "168.63.129.16/32",
    "100.100.100.200/32",
];

/// Whether an entity's URL may not reach `ip` ([`METADATA_NETWORKS`] less the allowed ones).
fn forbidden(ip: IpAddr, allowed: &[IpNet]) -> bool {
    let ip = crate::net::canonical(ip);
    METADATA_NETWORKS
        .iter()
        .filter_map(|n| IpNet::parse(n))
        .any(|n| n.contains(ip))
        && !allowed.iter().any(|n| n.contains(ip))
}

/// The client's name resolution: a name an entity's URL gives that resolves only to forbidden
/// addresses ([`forbidden`]) is not reached (a DNS name for `169.254.169.254` would otherwise
/// pass the URL check); the hosts of configured URLs (`SVC_*` keys, the cloudA credential
/// chain's endpoints) are resolved as they are.
struct GuardedResolver {
    configured: Vec<String>,
    allowed: Arc<Vec<IpNet>>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_ascii_lowercase();
        let configured = self.configured.contains(&host);
        let allowed = self.allowed.clone();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|a| configured || !forbidden(a.ip(), &allowed))
                .collect();
            if kept.is_empty() && !found.is_empty() {
                return Err("the name resolves only to link-local or metadata addresses".into());
            }
            Ok(Box::new(kept.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// An upstream failure, phrased for logs and events (never containing a secret).
#[derive(Debug, Clone, PartialEq)]
pub enum UpstreamError {
    /// Network error, timeout, TLS failure.
    Unreachable(String),
    /// Non-success status: [`Fetched::refusal`] (never the body: issue 31), and the protocol
    /// error code it names ([`Fetched::code`]).
    Status(String, Option<String>),
    /// The answer could not be understood.
    Malformed(String),
    /// The URL is not acceptable (scheme not allowed, unparsable).
    BadUrl(String),
}

impl std::fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamError::Unreachable(m) => write!(f, "upstream unreachable: {m}"),
            UpstreamError::Status(s, _) => write!(f, "upstream answered {s}"),
            UpstreamError::Malformed(m) => write!(f, "upstream answer malformed: {m}"),
            UpstreamError::BadUrl(m) => write!(f, "upstream URL rejected: {m}"),
        }
    }
}

/// Where an upstream URL comes from, which decides whether plain `http` is allowed: a plain
/// string is an entity's URL (or one an entity's upstream named); [`Configured`] one built from
/// an `SVC_*` key.
pub trait UpstreamUrl {
    fn checked(&self, up: &Upstream) -> Result<reqwest::Url, UpstreamError>;
}

impl<T: AsRef<str> + ?Sized> UpstreamUrl for T {
    fn checked(&self, up: &Upstream) -> Result<reqwest::Url, UpstreamError> {
        up.check_url(self.as_ref())
    }
}

/// A URL built from a configured upstream URL (see [`Upstream::check_configured`]).
pub struct Configured<'a>(pub &'a str);

impl UpstreamUrl for Configured<'_> {
    fn checked(&self, up: &Upstream) -> Result<reqwest::Url, UpstreamError> {
        up.check_configured(self.0)
    }
}

/// The origin of a configured `http` URL, else `None`; also `None` when a `{placeholder}` sits
/// in its scheme, host or port (the origin is not known before the placeholder is filled).
fn http_origin(url: &str) -> Option<String> {
    let rest = url.strip_prefix("http://")?;
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    if authority.contains('{') {
        return None;
    }
    let u = reqwest::Url::parse(url.split('{').next()?).ok()?;
    Some(u.origin().ascii_serialization())
}

/// A fetched answer: status, content type, body (≤ 1 MiB).
pub struct Fetched {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    /// The secrets the request carried (credential headers, secret form and JSON fields): an
    /// upstream may echo its request in an error answer, and no text taken from the answer for a
    /// log line, an event or an error message may carry them ([`Fetched::scrub`]).
    pub sent: Vec<String>,
}

impl Fetched {
    /// `text` with every secret the request carried replaced by `***` (also in its URL-encoded
    /// form).
    pub fn scrub(&self, text: &str) -> String {
        scrub(text, &self.sent)
    }

    /// A short printable excerpt of the answer's body, scrubbed, for the server's log only: an
    /// entity's URL may point at a service inside the network, and what it answers must not
    /// reach whoever configured the URL (SSRF read-back, issue 31). The whole body is scrubbed
    /// before it is cut: a secret across the cut would otherwise keep its first part.
    pub fn log_excerpt(&self) -> String {
        excerpt(self.scrub(&String::from_utf8_lossy(&self.body)).as_bytes())
    }

    /// What a caller, an event or an entity's status may be told of an answer the request did
    /// not want: its status and, when the answer carries one, the protocol's error code (OAuth2
    /// `error`, a JSON `error.status`, an XML `Code`) if it is one the protocols define
    /// (`KNOWN_CODES`). Never the body's text: an entity's URL may point at a service inside
    /// the network, and what it answers must not reach whoever configured the URL (SSRF
    /// read-back, issue 31). The body goes to the server's log at debug level.
    pub fn refusal(&self) -> String {
        tracing::debug!(status = self.status, body = %self.log_excerpt(), "upstream refused");
        match self.code() {
            Some(code) => format!("{}: {code}", self.status),
            None => self.status.to_string(),
        }
    }

    /// The protocol's error code this refusal carries, when it is one the protocols define.
    pub fn code(&self) -> Option<String> {
        let json = || -> Option<String> {
            let v: serde_json::Value = serde_json::from_slice(&self.body).ok()?;
            let e = v.get("error")?;
            e.as_str()
                .or_else(|| e.get("status").and_then(serde_json::Value::as_str))
                .map(str::to_string)
        };
        let xml = || -> Option<String> {
            let body = std::str::from_utf8(&self.body).ok()?;
            let start = body.find("<Code>")? + "<Code>".len();
            let end = start + body[start..].find("</Code>")?;
            Some(body[start..end].trim().to_string())
        };
        let code = json().or_else(xml)?;
        KNOWN_CODES.contains(&code.as_str()).then_some(code)
    }
}

/// The error codes the upstream protocols define, which a refusal may name (everything else an
/// answer carries there is the answer's text: issue 31). OAuth 2.0 and its extensions (RFC 6749,
/// 6750, 8628, 8693, 9449, OIDC Core), cloudA's S3 and STS, cloudC's canonical statuses.
const KNOWN_CODES: &[&str] = &[
    // OAuth 2.0 and OIDC
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unauthorized_client",
    "unsupported_grant_type",
    "unsupported_response_type",
    "invalid_scope",
    "access_denied",
    "server_error",
    "temporarily_unavailable",
    "invalid_token",
    "insufficient_scope",
    "invalid_target",
    "expired_token",
    "authorization_pending",
    "slow_down",
    "invalid_dpop_proof",
    "use_dpop_nonce",
    "interaction_required",
    "login_required",
    "consent_required",
    "account_selection_required",
    "invalid_request_uri",
    "invalid_request_object",
    // cloudA S3 and STS
    "AccessDenied",
    "AccountProblem",
    "AllAccessDisabled",
    "BadDigest",
    "EntityTooLarge",
    "ExpiredToken",
    "IDPCommunicationError",
    "IDPRejectedClaim",
    "IncompleteSignature",
    "InternalError",
    "InvalidAccessKeyId",
    "InvalidArgument",
    "InvalidBucketName",
    "InvalidClientTokenId",
    "InvalidIdentityToken",
    "InvalidParameterValue",
    "InvalidRequest",
    "InvalidToken",
    "MalformedPolicyDocument",
    "MissingAuthenticationToken",
    "NoSuchBucket",
    "NoSuchKey",
    "PackedPolicyTooLarge",
    "RegionDisabledException",
    "RequestExpired",
    "RequestTimeTooSkewed",
    "ServiceUnavailable",
    "SignatureDoesNotMatch",
    "SlowDown",
    "Throttling",
    "ValidationError",
    // cloudC canonical statuses
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// Form and JSON fields whose values are secrets (OAuth2, RFC 8693, STS, vault, SSO).
const SECRET_FIELDS: &[&str] = &[
    "client_secret",
    "client_assertion",
    "assertion",
    "subject_token",
    "actor_token",
    "refresh_token",
    "access_token",
    "code",
    "code_verifier",
    "password",
    "jwt",
    "token",
    "subjectToken",
    "WebIdentityToken",
    "apiKey",
];

/// Headers whose values are credentials.
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "private-token",
    "x-vault-token",
    "x-api-key",
    "cookie",
    // cloudA: a session token beside a SigV4 signature, and the instance-metadata session token.
    "x-amz-security-token",
    "x-aws-ec2-metadata-token",
];

/// The largest request body searched for secret fields (see [`secrets_of`]).
const SECRET_BODY_MAX: usize = 64 * 1024;

/// The secrets a request carries, each also decoded where a header encodes it (HTTP Basic).
fn secrets_of(req: &reqwest::Request) -> Vec<String> {
    let mut out = Vec::new();
    for h in SECRET_HEADERS {
        for v in req.headers().get_all(*h) {
            let Ok(v) = v.to_str() else { continue };
            out.push(v.to_string());
            if let Some((_, cred)) = v.split_once(' ') {
                out.push(cred.trim().to_string());
                if v[..v.len() - cred.len()].trim().eq_ignore_ascii_case("basic")
                    && let Some(raw) = crate::crypto::b64std_decode(cred.trim())
                    && let Ok(raw) = String::from_utf8(raw)
                {
                    // RFC 6749 §2.3.1: urlenc(id):urlenc(secret).
                    if let Some((_, secret)) = raw.split_once(':') {
                        out.push(secret.to_string());
                        let decoded: String = url::form_urlencoded::parse(format!("s={secret}").as_bytes())
                            .map(|(_, v)| v.into_owned())
                            .collect();
                        out.push(decoded);
                    }
                    out.push(raw);
                }
            }
        }
    }
    // A credential a request carries in its body is a field of a small form or JSON document (a
    // token request); a large body is a payload (a log stream's transaction, an upload: megabytes
    // of records), which was parsed here as a form for nothing, on every send.
    if let Some(body) = req
        .body()
        .and_then(|b| b.as_bytes())
        .filter(|b| b.len() <= SECRET_BODY_MAX)
    {
        if let Ok(serde_json::Value::Object(m)) = serde_json::from_slice::<serde_json::Value>(body) {
            json_secrets(&serde_json::Value::Object(m), &mut out);
        } else {
            for (k, v) in url::form_urlencoded::parse(body) {
                if SECRET_FIELDS.contains(&k.as_ref()) {
                    out.push(v.into_owned());
                }
            }
        }
    }
    // Short values (a one-letter code) would blank out ordinary words of an error text.
    out.retain(|s| s.len() >= 6);
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out.dedup();
    out
}

fn json_secrets(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                match v {
                    serde_json::Value::String(s) if SECRET_FIELDS.contains(&k.as_str()) => out.push(s.clone()),
                    other => json_secrets(other, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| json_secrets(v, out)),
        _ => {}
    }
}

/// `text` with every one of `secrets` (longest first), and its URL-encoded forms, replaced by `***`.
fn scrub(text: &str, secrets: &[String]) -> String {
    let mut t = text.to_string();
    for s in secrets {
        let form: String = url::form_urlencoded::byte_serialize(s.as_bytes()).collect();
        let pct = form.replace('+', "%20");
        // As a JSON string would carry it (an echo inside a JSON error answer), `/` escaped too.
        let json = serde_json::to_string(s).unwrap_or_default();
        let json = json
            .get(1..json.len().saturating_sub(1))
            .unwrap_or_default()
            .to_string();
        let json_slash = json.replace('/', "\\/");
        for v in [
            s.as_str(),
            form.as_str(),
            pct.as_str(),
            json.as_str(),
            json_slash.as_str(),
        ] {
            if v.is_empty() {
                continue;
            }
            if t.contains(v) {
                t = t.replace(v, "***");
            }
        }
    }
    t
}

impl Upstream {
    pub fn new(cfg: &Config) -> Result<Upstream, String> {
        Self::build(cfg, None, true)
    }

    /// The client of a routing (§3.17): every call through the HTTP(S) proxy `proxy`
    /// (absolute-form requests for `http`, CONNECT for `https`). Unless `plaintext`, a call to
    /// an `http` URL is refused: through an absolute-form request the proxy reads what the call
    /// carries (stored secrets) and may answer it itself (a trust provider's keys), which only a
    /// routing a caller holding everything wrote may do (issue 31).
    pub fn via(cfg: &Config, proxy: &str, plaintext: bool) -> Result<Upstream, String> {
        let mut u = Self::build(cfg, Some(proxy), true)?;
        u.refuse_plaintext = !plaintext;
        Ok(u)
    }

    /// A client that does not verify the server's certificate: only for a log stream whose
    /// operator chose `tlsVerification: none` (§5.4). Every other call goes through the strict
    /// [`Upstream::new`].
    pub fn unverified(cfg: &Config) -> Result<Upstream, String> {
        Self::build(cfg, None, false)
    }

    fn build(cfg: &Config, proxy: Option<&str>, verify: bool) -> Result<Upstream, String> {
        let mut b = reqwest::Client::builder()
            .tls_danger_accept_invalid_certs(!verify)
            .timeout(TIMEOUT)
            .connect_timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("svc/", env!("CARGO_PKG_VERSION")));
        b = match proxy {
            None => b.no_proxy(),
            Some(p) => b.proxy(reqwest::Proxy::all(p).map_err(|e| format!("proxy {p}: {e}"))?),
        };
        if let Some(path) = &cfg.upstream_ca_bundle {
            // Each certificate parsed here, so a bad one is named by its key and position (the
            // TLS library only fails the client's build, with "builder error").
            let key = "SVC_UPSTREAM_CA_BUNDLE";
            for (i, der) in crate::crypto::x509::bundle(key, Some(path), "")?.iter().enumerate() {
                crate::crypto::chain::Cert::parse(der).map_err(|e| format!("{key}: certificate {}: {e}", i + 1))?;
                let c =
                    reqwest::Certificate::from_der(der).map_err(|e| format!("{key}: certificate {}: {e}", i + 1))?;
                b = b.add_root_certificate(c);
            }
        }
        let allowed_networks = Arc::new(cfg.upstream_allowed_networks.clone());
        b = b.dns_resolver(GuardedResolver {
            configured: configured_hosts(cfg),
            allowed: allowed_networks.clone(),
        });
        let client = b.build().map_err(|e| format!("HTTP client: {e}"))?;
        let configured = configured_urls(cfg);
        let hosts = configured
            .iter()
            .filter_map(|u| crate::metrics::configured_host(u))
            .collect();
        let config_http = configured
            .into_iter()
            .filter_map(|u| Some((u.trim_end_matches('/').to_string(), http_origin(u)?)))
            .collect();
        Ok(Upstream {
            client,
            proxy: proxy.map(str::to_string),
            allow_insecure: cfg.allow_insecure_upstream,
            config_http,
            hosts,
            allowed_networks,
            refuse_plaintext: false,
        })
    }

    /// Checks an entity-configured URL (or one an entity's upstream named): `https`, or `http`
    /// only with `SVC_ALLOW_INSECURE_UPSTREAM`.
    pub fn check_url(&self, url: &str) -> Result<reqwest::Url, UpstreamError> {
        self.check(url, false)
    }

    /// Checks a URL built from a configured upstream URL (an `SVC_*` key): as
    /// [`Upstream::check_url`], and `http` also when it has the origin of a configured `http`
    /// URL.
    pub fn check_configured(&self, url: &str) -> Result<reqwest::Url, UpstreamError> {
        self.check(url, true)
    }

    /// [`join`], checked as [`Upstream::check_url`].
    pub fn check_joined(&self, base: &str, path: &str) -> Result<reqwest::Url, UpstreamError> {
        self.check_url(&join(base, path)?)
    }

    fn check(&self, url: &str, configured: bool) -> Result<reqwest::Url, UpstreamError> {
        let u = reqwest::Url::parse(url).map_err(|e| UpstreamError::BadUrl(format!("{url}: {e}")))?;
        if !configured
            && let Some(ip) = host_ip(&u)
            && forbidden(ip, &self.allowed_networks)
        {
            return Err(UpstreamError::BadUrl(format!(
                "{ip} is a link-local or metadata address (SVC_UPSTREAM_ALLOWED_NETWORKS)"
            )));
        }
        let configured_origin = || {
            let origin = u.origin().ascii_serialization();
            self.config_http.iter().any(|(_, o)| *o == origin)
        };
        match u.scheme() {
            "https" => Ok(u),
            "http" if self.allow_insecure || (configured && configured_origin()) => Ok(u),
            s => Err(UpstreamError::BadUrl(format!("scheme {s} not allowed"))),
        }
    }

    /// Whether `base` is itself a configured `http` upstream URL (a platform issuer whose
    /// discovery document and keys a test peer or private endpoint serves).
    pub fn is_configured_http(&self, base: &str) -> bool {
        let base = base.trim_end_matches('/');
        self.config_http.iter().any(|(u, _)| u == base)
    }

    /// Sends a request and reads at most 1 MiB of the answer.
    pub async fn send(&self, req: reqwest::RequestBuilder) -> Result<Fetched, UpstreamError> {
        let (client, req) = req.build_split();
        let req = req.map_err(|e| UpstreamError::BadUrl(describe(&e)))?;
        if self.refuse_plaintext && req.url().scheme() == "http" {
            return Err(UpstreamError::BadUrl(PLAINTEXT_REFUSED.into()));
        }
        if !crate::metrics::enabled() {
            return Self::execute(client, req).await;
        }
        let host = crate::metrics::upstream_host(&self.hosts, req.url().host_str().unwrap_or_default());
        let started = std::time::Instant::now();
        let r = Self::execute(client, req).await;
        let result = match &r {
            Ok(f) if (200..300).contains(&f.status) => "2xx",
            Ok(f) if (300..400).contains(&f.status) => "3xx",
            Ok(f) if (400..500).contains(&f.status) => "4xx",
            Ok(_) => "5xx",
            Err(UpstreamError::Unreachable(_)) => "unreachable",
            Err(UpstreamError::Malformed(_)) => "malformed",
            Err(_) => "error",
        };
        crate::metrics::upstream_call(host, result, started.elapsed());
        r
    }

    async fn execute(client: reqwest::Client, req: reqwest::Request) -> Result<Fetched, UpstreamError> {
        let sent = secrets_of(&req);
        let mut resp = client
            .execute(req)
            .await
            .map_err(|e| UpstreamError::Unreachable(describe(&e)))?;
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
            sent,
        })
    }

    /// GET a JSON document; non-2xx is an error.
    pub async fn get_json(&self, url: &str) -> Result<serde_json::Value, UpstreamError> {
        let f = self
            .send(self.client.get(url).header("accept", "application/json"))
            .await?;
        if !(200..300).contains(&f.status) {
            return Err(UpstreamError::Status(f.refusal(), f.code()));
        }
        serde_json::from_slice(&f.body).map_err(|e| UpstreamError::Malformed(format!("not JSON: {e}")))
    }
}

/// `base` with `path` (starting with `/`) added to its path. A base with a query or a fragment
/// is refused: the path would land in it (`https://idp.example/?x=` + `/.well-known/…` asks `/`
/// with a query, issue 31).
pub fn join(base: &str, path: &str) -> Result<String, UpstreamError> {
    let mut u = reqwest::Url::parse(base).map_err(|e| UpstreamError::BadUrl(format!("{base}: {e}")))?;
    if u.query().is_some() || u.fragment().is_some() {
        return Err(UpstreamError::BadUrl(
            "a base URL must not have a query or a fragment".into(),
        ));
    }
    let joined = format!("{}{path}", u.path().trim_end_matches('/'));
    u.set_path(&joined);
    Ok(u.into())
}

/// Write-time check of an entity's upstream URL field (the rules [`Upstream::check_url`] applies
/// when it is called): absolute `https` with a host (`http` with
/// `SVC_ALLOW_INSECURE_UPSTREAM`), not a link-local or metadata address (issue 31).
pub fn check_url_field(field: &str, url: &str, cfg: &Config) -> Result<(), crate::error::Error> {
    let bad = |why: &str| Err(crate::error::Error::field(field, why));
    let Ok(u) = reqwest::Url::parse(url) else {
        return bad("must be an https URL");
    };
    let scheme_ok = u.scheme() == "https" || (u.scheme() == "http" && cfg.allow_insecure_upstream);
    if !scheme_ok || u.host_str().is_none_or(str::is_empty) {
        return bad("must be an https URL");
    }
    if let Some(ip) = host_ip(&u)
        && forbidden(ip, &cfg.upstream_allowed_networks)
    {
        return bad("must not be a link-local or metadata address");
    }
    Ok(())
}

/// An address an entity names outside a URL (a routing's proxy, a collector's `host:port`):
/// not a link-local or metadata IP address (issue 31), as [`check_url_field`] says of URLs. A
/// name is resolved when it is called, through the guarded resolver.
pub fn check_address_field(field: &str, host: &str, cfg: &Config) -> Result<(), crate::error::Error> {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    match h.parse::<IpAddr>() {
        Ok(ip) if forbidden(ip, &cfg.upstream_allowed_networks) => Err(crate::error::Error::field(
            field,
            "must not be a link-local or metadata address",
        )),
        _ => Ok(()),
    }
}

/// [`check_url_field`] for a base URL, which paths are added to ([`join`]): it has no query and
/// no fragment either.
pub fn check_base_url_field(field: &str, url: &str, cfg: &Config) -> Result<(), crate::error::Error> {
    check_url_field(field, url, cfg)?;
    if url.contains(['?', '#']) {
        return Err(crate::error::Error::field(field, "must not have a query or a fragment"));
    }
    Ok(())
}

/// The address a URL names when its host is an IP literal.
fn host_ip(u: &reqwest::Url) -> Option<IpAddr> {
    match u.host()? {
        url::Host::Ipv4(a) => Some(IpAddr::V4(a)),
        url::Host::Ipv6(a) => Some(IpAddr::V6(a)),
        url::Host::Domain(_) => None,
    }
}

/// The upstream URLs the configuration names (`SVC_*` keys with the platforms' defaults).
fn configured_urls(cfg: &Config) -> [&String; 14] {
    [
        &cfg.clouda_sts_url_template,
        &cfg.cloudc_jwks_url,
        &cfg.cia_issuer,
        &cfg.cib_issuer,
        &cfg.cic_issuer,
        &cfg.clouda_sts_federation_url,
        &cfg.cloudc_sts_url,
        &cfg.cloudc_iamcredentials_url,
        &cfg.cloudb_login_url,
        &cfg.cloudb_keyvault_url_template,
        &cfg.aia_token_url,
        &cfg.aib_token_url,
        &cfg.objectstoragea_url_template,
        &cfg.objectstoragec_upload_url,
    ]
}

/// The host names of every upstream URL the configuration names (lowercase), which
/// [`GuardedResolver`] resolves unfiltered: the operator chose them.
fn configured_hosts(cfg: &Config) -> Vec<String> {
    configured_urls(cfg)
        .into_iter()
        .map(String::as_str)
        .chain(cfg.clouda_chain_env.values())
        .filter_map(|u| url::Url::parse(&u.replace(['{', '}'], "")).ok())
        .filter_map(|u| u.host_str().map(str::to_ascii_lowercase))
        .collect()
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

/// A short printable excerpt of an error body (for the server's log), cut to 200 characters. Use
/// [`Fetched::log_excerpt`], which also removes what the request sent: an upstream may echo it.
fn excerpt(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(body);
    let s: String = s.chars().filter(|c| !c.is_control()).take(200).collect();
    s.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> Fetched {
        Fetched {
            status,
            content_type: Some("application/json".into()),
            body: body.as_bytes().to_vec(),
            sent: vec!["SECRET-CANARY-1".into()],
        }
    }

    /// SSRF read-back (issue 31): an entity's URL may name a service inside the network; what
    /// it answers never reaches a caller, an event or an entity's status, only its status and a
    /// protocol error code that is a short token.
    #[test]
    fn an_upstream_refusal_names_its_status_and_code_never_its_body() {
        let s3 = "<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>bad SECRET-CANARY-1</Message></Error>";
        assert_eq!(answer(403, s3).refusal(), "403: SignatureDoesNotMatch");
        let oauth = r#"{"error": "invalid_client", "error_description": "client SECRET-CANARY-1 unknown"}"#;
        assert_eq!(answer(401, oauth).refusal(), "401: invalid_client");
        let google = r#"{"error": {"code": 403, "message": "internal text", "status": "PERMISSION_DENIED"}}"#;
        assert_eq!(answer(403, google).refusal(), "403: PERMISSION_DENIED");
        assert_eq!(answer(403, "<html>admin console of 10.0.0.7</html>").refusal(), "403");
        assert_eq!(
            answer(400, r#"{"error": "the db password is hunter2"}"#).refusal(),
            "400"
        );
        assert_eq!(answer(400, r#"{"error": "SECRET-CANARY-1"}"#).refusal(), "400");
        assert_eq!(
            answer(400, r#"{"error": "vault-root-token:s.AbC123"}"#).refusal(),
            "400"
        );
        assert_eq!(
            UpstreamError::Status(answer(500, "internal detail").refusal(), None).to_string(),
            "upstream answered 500"
        );
    }

    /// A CA bundle without a certificate stops the start, as every other PEM key does.
    #[test]
    fn an_upstream_ca_bundle_without_a_certificate_is_refused() {
        let dir = std::env::temp_dir().join(format!("svc-bundle-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("not-a-bundle.pem");
        std::fs::write(&file, "just a host name\n").unwrap();
        let mut env = std::collections::BTreeMap::new();
        env.insert("SVC_DATABASE_URL".to_string(), "sqlite://./unused/svc.db".to_string());
        env.insert("SVC_UPSTREAM_CA_BUNDLE".to_string(), file.display().to_string());
        let e = Upstream::new(&Config::from_map(&env).unwrap()).err().unwrap();
        assert!(e.starts_with("SVC_UPSTREAM_CA_BUNDLE:"), "{e}");
        // A PEM block that is no certificate is named by its key and position, not "builder error".
        std::fs::write(
            &file,
            "-----BEGIN CERTIFICATE-----\nAAECAwQFBgcICQ==\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let e = Upstream::new(&Config::from_map(&env).unwrap()).err().unwrap();
        assert!(e.starts_with("SVC_UPSTREAM_CA_BUNDLE: certificate 1:"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// §1.9: an upstream that echoes its request in an error answer does not bring the request's
    /// secrets into a log line, an event or an error message.
    #[test]
    fn echoed_request_secrets_never_reach_error_texts() {
        let client = reqwest::Client::new();
        let basic = crate::credential::upstream_call::basic("my client", "CANARY-SECRET-123/+");
        let req = client
            .post("http://127.0.0.1:1/token")
            .header("authorization", &basic)
            .form(&[
                ("grant_type", "client_credentials"),
                ("client_secret", "CANARY-SECRET-123/+"),
            ])
            .build()
            .unwrap();
        let sent = secrets_of(&req);
        let body = String::from_utf8(req.body().unwrap().as_bytes().unwrap().to_vec()).unwrap();
        let echo = format!("bad request: {body} with {basic}, raw CANARY-SECRET-123/+");
        let f = Fetched {
            status: 400,
            content_type: None,
            body: echo.into_bytes(),
            sent,
        };
        let text = f.log_excerpt();
        assert!(!text.contains("CANARY"), "{text}");
        assert!(!text.contains(basic.trim_start_matches("Basic ")), "{text}");
        assert!(text.contains("grant_type=client_credentials"), "{text}");
        let json = client
            .post("http://127.0.0.1:1/login")
            .json(&serde_json::json!({"jwt": "eyJhbGciOi.CANARY.sig", "role": "r"}))
            .build()
            .unwrap();
        assert_eq!(scrub("echo eyJhbGciOi.CANARY.sig", &secrets_of(&json)), "echo ***");
        // A payload (a log stream's records) is not searched for fields: its headers still are.
        let payload = client
            .post("http://127.0.0.1:1/services/collector/event")
            .header("authorization", "Splunk CANARY-HEC-TOKEN")
            .body(format!(
                "{{\"event\":{{\"token\":\"CANARY-IN-RECORD\"}}}}{}",
                " ".repeat(SECRET_BODY_MAX)
            ))
            .build()
            .unwrap();
        let found = secrets_of(&payload);
        assert!(found.iter().any(|s| s == "CANARY-HEC-TOKEN"), "{found:?}");
        assert!(!found.iter().any(|s| s.contains("CANARY-IN-RECORD")), "{found:?}");
        // Echoed inside a JSON string, with `/` escaped as some encoders do.
        assert_eq!(
            scrub(r#"{"echo":"CANARY-SECRET-123\/+"}"#, &f.sent),
            r#"{"echo":"***"}"#
        );
        // A secret the 200-character cut would split loses its first part too.
        for pad in 180..200 {
            let f = Fetched {
                status: 400,
                content_type: None,
                body: format!("{}client_secret=CANARY-SECRET-123/+", "x".repeat(pad)).into_bytes(),
                sent: f.sent.clone(),
            };
            let text = f.log_excerpt();
            assert!(!text.contains("CANARY") && !text.contains("CANA"), "{pad}: {text}");
        }
    }

    fn upstream(extra: &[(&str, &str)]) -> Upstream {
        let mut env: std::collections::BTreeMap<String, String> =
            extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        env.insert("SVC_DATABASE_URL".into(), "sqlite://./unused/svc.db".into());
        Upstream::new(&Config::from_map(&env).unwrap()).unwrap()
    }

    /// Contract §5.5: `SVC_ALLOW_INSECURE_UPSTREAM` is about entity URLs; an `http` URL the
    /// configuration names (a test peer, a private endpoint) is the operator's choice.
    #[test]
    fn configured_http_upstreams_need_no_insecure_switch() {
        let up = upstream(&[
            ("SVC_CLOUDA_STS_FEDERATION_URL", "http://127.0.0.1:5000/"),
            ("SVC_CLOUDB_KEYVAULT_URL_TEMPLATE", "http://127.0.0.1:5001/{vault}"),
            ("SVC_CIA_ISSUER", "http://localhost:5002"),
        ]);
        for ok in [
            "http://127.0.0.1:5000/",
            "http://127.0.0.1:5000/other?x=1",
            "http://127.0.0.1:5001/myvault/secrets/a",
            "http://localhost:5002/.well-known/jwks.json",
            "https://anything.example/",
        ] {
            assert!(up.check_configured(ok).is_ok(), "{ok}");
        }
        for refused in [
            "http://127.0.0.1:5003/",
            "http://127.0.0.2:5000/",
            "http://localhost:5000/",
            "ftp://127.0.0.1:5000/",
            "http://x.vault.azure.net/",
        ] {
            assert!(up.check_configured(refused).is_err(), "{refused}");
        }
        // Entity URLs (and what an entity's upstream names) are not exempt, even at a
        // configured origin.
        assert!(up.check_url("http://127.0.0.1:5000/").is_err());
        assert!(up.is_configured_http("http://localhost:5002/"));
        assert!(!up.is_configured_http("http://localhost:5002/other"));
        // A placeholder in the host: no origin is trusted (not a literal host named "x").
        let tpl = upstream(&[("SVC_CLOUDB_KEYVAULT_URL_TEMPLATE", "http://{vault}.kv.local:80")]);
        assert!(tpl.check_configured("http://x.kv.local/").is_err());
        // Defaults are https: no http origin is trusted without the switch.
        assert!(upstream(&[]).config_http.is_empty());
        let open = upstream(&[("SVC_ALLOW_INSECURE_UPSTREAM", "true")]);
        assert!(open.check_url("http://127.0.0.1:5003/").is_ok());
    }
}

/// Why a routing's client refused a plain-`http` call ([`Upstream::via`]).
pub const PLAINTEXT_REFUSED: &str =
    "a plain-http call goes through a routing's proxy only when a caller holding every role wrote the routing";

/// The upstream clients of the routings' proxies (§3.17), built once per proxy URL and
/// whether they carry plain-`http` calls.
#[derive(Default)]
#[allow(clippy::type_complexity)]
pub struct Routes(std::sync::Mutex<std::collections::HashMap<(String, bool), std::sync::Arc<Upstream>>>);

impl Routes {
    /// The client for `proxy`, built on first use.
    pub fn client(&self, cfg: &Config, proxy: &str, plaintext: bool) -> Result<std::sync::Arc<Upstream>, String> {
        let mut m = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = (proxy.to_string(), plaintext);
        if let Some(u) = m.get(&key) {
            return Ok(u.clone());
        }
        let u = std::sync::Arc::new(Upstream::via(cfg, proxy, plaintext)?);
        m.insert(key, u.clone());
        Ok(u)
    }
}
