//! The local agent: `GET /v1/credentials`, `/v1/token`, `/healthz` on a loopback TCP address or
//! a unix socket (0600), answered from the cache of [`crate::cache`]: one upstream call per
//! missing entry however many requests wait for it, background refresh ahead of expiry with
//! per-entry backoff, token renewal when 20 % of its lifetime remains, JSON logs on stderr.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{Value, json};
use svc_api::GenericResponse;

use crate::cache::Cache;
use crate::client::{Client, Credential, CredentialRequest};
use crate::error::Error;
use crate::log;

/// Where the agent listens.
#[derive(Clone, Debug)]
pub enum Listen {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl Listen {
    /// `127.0.0.1:PORT` (any loopback address) or `unix:PATH`. Other addresses are refused:
    /// credentials must not leave the host.
    pub fn parse(s: &str) -> Result<Listen, Error> {
        if let Some(p) = s.strip_prefix("unix:") {
            if p.is_empty() {
                return Err(Error::Config("--listen: unix: needs a path".into()));
            }
            return Ok(Listen::Unix(PathBuf::from(p)));
        }
        let s2 = s.strip_prefix("localhost:").map(|p| format!("127.0.0.1:{p}"));
        let a: SocketAddr = s2
            .as_deref()
            .unwrap_or(s)
            .parse()
            .map_err(|_| Error::Config(format!("--listen: expected 127.0.0.1:PORT or unix:PATH, got {s:?}")))?;
        if !a.ip().is_loopback() {
            return Err(Error::Config(format!(
                "--listen: {s} is not a loopback address; use 127.0.0.1:PORT or unix:PATH (credentials must not leave the host)"
            )));
        }
        Ok(Listen::Tcp(a))
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// `SVC_EDGE_CACHE_MAX` (default 1,000).
    pub max_entries: usize,
    /// `SVC_EDGE_STATIC_REFRESH_SECONDS` (default 300), in ms.
    pub static_refresh_ms: i64,
}

/// An HTTP answer: status and body.
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Bytes,
}

impl Answer {
    fn json(status: u16, v: &impl serde::Serialize) -> Answer {
        Answer {
            status,
            body: Bytes::from(serde_json::to_vec(v).unwrap_or_default()),
        }
    }

    fn error(status: u16, message: impl Into<String>) -> Answer {
        Answer::json(status, &GenericResponse::error(message))
    }

    /// What the agent answers for a failure: the service's own status and body for its 4xx
    /// answers (401/403/404 `Unknown`/429/400) and for a 200 `Unknown`; 502 naming the cause when
    /// the service could not be reached, answered 5xx or something malformed.
    fn from_error(e: &Error) -> Answer {
        match e {
            Error::Service { status, body } if (400..500).contains(status) => Answer {
                status: *status,
                body: Bytes::from(body.clone()),
            },
            Error::NoCredential { body } => Answer {
                status: 200,
                body: Bytes::from(body.clone()),
            },
            other => Answer::error(502, other.describe()),
        }
    }
}

/// Count of upstream calls, for logs and tests.
#[derive(Default)]
pub struct Stats {
    pub fetches: AtomicU64,
    pub hits: AtomicU64,
}

pub struct Agent {
    client: Arc<Client>,
    cache: Mutex<Cache<CredentialRequest, Answer>>,
    inflight: Mutex<HashMap<CredentialRequest, Arc<tokio::sync::OnceCell<Answer>>>>,
    healthy: AtomicBool,
    pub stats: Stats,
}

fn jitter() -> f64 {
    let mut b = [0u8; 4];
    let _ = aws_lc_rs::rand::fill(&mut b);
    f64::from(u32::from_le_bytes(b)) / (f64::from(u32::MAX) + 1.0)
}

/// Log fields naming an entry: host, port, type and the metadata keys (not their values).
fn entry_fields(k: &CredentialRequest) -> Vec<(&'static str, Value)> {
    vec![
        ("host", k.host.clone().into()),
        ("port", k.port.into()),
        ("type", k.credential_type.clone().into()),
        (
            "metaKeys",
            k.meta.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>().into(),
        ),
    ]
}

impl Agent {
    pub fn new(client: Arc<Client>, s: Settings) -> Arc<Agent> {
        Arc::new(Agent {
            client,
            cache: Mutex::new(Cache::new(s.max_entries, s.static_refresh_ms)),
            inflight: Mutex::new(HashMap::new()),
            healthy: AtomicBool::new(false),
            stats: Stats::default(),
        })
    }

    fn now(&self) -> i64 {
        self.client.now_ms()
    }

    fn served(c: &Credential) -> Answer {
        Answer {
            status: 200,
            body: Bytes::from(c.body()),
        }
    }

    async fn fetch(&self, k: &CredentialRequest) -> Result<Credential, Error> {
        self.stats.fetches.fetch_add(1, Ordering::Relaxed);
        self.client.credentials(k).await
    }

    /// A cached credential, or one upstream call shared by every request waiting for this entry.
    pub async fn credentials(&self, k: &CredentialRequest) -> Answer {
        if let Some(a) = self.cache.lock().unwrap().get(k, self.now()) {
            self.stats.hits.fetch_add(1, Ordering::Relaxed);
            return a;
        }
        let cell = self.inflight.lock().unwrap().entry(k.clone()).or_default().clone();
        let answer = cell
            .get_or_init(|| async {
                if let Some(a) = self.cache.lock().unwrap().get(k, self.now()) {
                    return a;
                }
                let started = std::time::Instant::now();
                match self.fetch(k).await {
                    Ok(c) => {
                        let a = Self::served(&c);
                        let evicted =
                            self.cache
                                .lock()
                                .unwrap()
                                .insert(k.clone(), a.clone(), self.now(), c.expires_ms());
                        let mut f = entry_fields(k);
                        f.push(("ms", (started.elapsed().as_millis() as u64).into()));
                        f.push(("expiresAt", c.response.expires_at.map(|t| t.to_rfc3339()).into()));
                        log::info("credential fetched", &f);
                        for e in evicted {
                            log::info("entry evicted (least recently used)", &entry_fields(&e));
                        }
                        a
                    }
                    Err(e) => {
                        let mut f = entry_fields(k);
                        f.push(("error", e.describe().into()));
                        log::warn("credential fetch failed", &f);
                        Answer::from_error(&e)
                    }
                }
            })
            .await
            .clone();
        let mut m = self.inflight.lock().unwrap();
        if m.get(k).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
            m.remove(k);
        }
        answer
    }

    /// One background refresh of an entry.
    async fn refresh(self: Arc<Self>, k: CredentialRequest) {
        match self.fetch(&k).await {
            Ok(c) => {
                let a = Self::served(&c);
                self.cache.lock().unwrap().refreshed(&k, a, self.now(), c.expires_ms());
                let mut f = entry_fields(&k);
                f.push(("expiresAt", c.response.expires_at.map(|t| t.to_rfc3339()).into()));
                log::info("credential refreshed", &f);
            }
            // Whatever the failure, a service refusal (401, 403, 404, `Unknown`) included: the
            // entry is served until it expires and retried (edge-client contract, agent cache
            // rules).
            Err(e) => {
                let r = self.cache.lock().unwrap().refresh_failed(&k, self.now(), jitter());
                let mut f = entry_fields(&k);
                f.push(("error", e.describe().into()));
                if let Some((wait, n)) = r {
                    f.push(("failures", n.into()));
                    f.push(("retryInMs", wait.into()));
                }
                log::warn(
                    "credential refresh failed; serving the cached value until it expires",
                    &f,
                );
            }
        }
    }

    /// Background work: refresh due entries, drop expired ones; keep the edge token renewed.
    pub fn spawn_background(self: &Arc<Self>) {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                let due = {
                    let mut c = me.cache.lock().unwrap();
                    c.purge_expired(me.now());
                    c.due(me.now())
                };
                for k in due {
                    tokio::spawn(me.clone().refresh(k));
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        let me = self.clone();
        tokio::spawn(async move {
            let mut failures = 0u32;
            let mut last: Option<i64> = None;
            loop {
                match me.client.session().await {
                    Ok(s) => {
                        failures = 0;
                        if last != Some(s.obtained_ms) {
                            last = Some(s.obtained_ms);
                            log::info(
                                "authenticated",
                                &[
                                    ("expiresIn", s.token.expires_in.into()),
                                    ("evidence", me.client.config().evidence.as_str().into()),
                                ],
                            );
                        }
                        me.healthy.store(true, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    Err(e) => {
                        failures += 1;
                        let wait = crate::cache::backoff_ms(failures, jitter());
                        log::warn(
                            "authentication failed",
                            &[
                                ("error", e.describe().into()),
                                ("failures", failures.into()),
                                ("retryInMs", wait.into()),
                            ],
                        );
                        tokio::time::sleep(Duration::from_millis(wait as u64)).await;
                    }
                }
            }
        });
    }

    /// Answers one request; `tcp`: it came over the loopback TCP listener (a unix socket, which
    /// no browser reaches, takes any `Host`: its clients often send a placeholder).
    pub async fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
        tcp: bool,
    ) -> Result<Response<Full<Bytes>>, Infallible> {
        let a = if tcp && !local_host(req.headers().get(hyper::header::HOST).and_then(|h| h.to_str().ok())) {
            // DNS rebinding: a page in a browser on this host that made evil.example resolve to
            // 127.0.0.1 sends `Host: evil.example:PORT`; only loopback names are answered.
            Answer::error(403, "Host must be 127.0.0.1, [::1] or localhost")
        } else if req.method() != hyper::Method::GET {
            Answer::error(405, "only GET is supported")
        } else {
            match req.uri().path() {
                "/healthz" => {
                    if self.healthy.load(Ordering::SeqCst) {
                        Answer::json(200, &json!({"status": "ok"}))
                    } else {
                        Answer::json(503, &json!({"status": "starting"}))
                    }
                }
                "/v1/token" => match self.client.session().await {
                    Ok(s) => Answer {
                        status: 200,
                        body: Bytes::from(s.raw),
                    },
                    Err(e) => Answer::from_error(&e),
                },
                "/v1/credentials" => match parse_query(req.uri().query().unwrap_or("")) {
                    Ok(k) => self.credentials(&k).await,
                    Err(m) => Answer::error(400, m),
                },
                _ => Answer::error(404, "not found: GET /v1/credentials, /v1/token or /healthz"),
            }
        };
        let mut r = Response::new(Full::new(a.body));
        *r.status_mut() = StatusCode::from_u16(a.status).unwrap_or(StatusCode::BAD_GATEWAY);
        r.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("application/json"),
        );
        r.headers_mut().insert(
            hyper::header::CACHE_CONTROL,
            hyper::header::HeaderValue::from_static("no-store"),
        );
        Ok(r)
    }
}

/// `host=H&port=P&type=T[&meta.KEY=VALUE]...`
pub fn parse_query(q: &str) -> Result<CredentialRequest, String> {
    let (mut host, mut port, mut ty, mut meta) = (None, None, None, vec![]);
    for (k, v) in url::form_urlencoded::parse(q.as_bytes()) {
        match k.as_ref() {
            "host" => host = Some(v.into_owned()),
            "port" => port = Some(v.into_owned()),
            "type" => ty = Some(v.into_owned()),
            m if m.starts_with("meta.") => meta.push((m["meta.".len()..].to_string(), v.into_owned())),
            _ => {}
        }
    }
    let (Some(host), Some(port), Some(ty)) = (host, port, ty) else {
        return Err("host, port and type are required: /v1/credentials?host=H&port=P&type=T[&meta.KEY=VALUE]".into());
    };
    let port: u16 = port.parse().map_err(|_| "port: must be 1..65535".to_string())?;
    CredentialRequest::new(&host, port, &ty, meta).map_err(|e| e.describe().replace("--", ""))
}

/// Serves until SIGTERM or SIGINT; a unix socket is created 0600 and removed at exit.
/// Binds the agent's unix socket so that no other user can ever connect to it (issue 31): the
/// socket is made inside a new private directory (0700) beside `path`, set to 0600 there, then
/// renamed into place. Bound at `path` directly, it would exist with the umask's mode until the
/// chmod after it.
fn bind_private(path: &std::path::Path) -> std::io::Result<tokio::net::UnixListener> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let mut rnd = [0u8; 8];
    let _ = aws_lc_rs::rand::fill(&mut rnd);
    let hex: String = rnd.iter().map(|b| format!("{b:02x}")).collect();
    let private = parent.join(format!(".svc-edge-{}-{hex}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&private)?;
    let staged = private.join("sock");
    let bound = (|| {
        let l = tokio::net::UnixListener::bind(&staged)?;
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600))?;
        std::fs::rename(&staged, path)?;
        Ok(l)
    })();
    let _ = std::fs::remove_file(&staged);
    let _ = std::fs::remove_dir(&private);
    bound
}

pub async fn serve(agent: Arc<Agent>, listen: Listen) -> Result<(), Error> {
    use hyper_util::rt::TokioIo;
    let conn = |agent: Arc<Agent>, tcp: bool| {
        hyper::service::service_fn(move |req| {
            let agent = agent.clone();
            async move { agent.handle(req, tcp).await }
        })
    };
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| Error::Failure(format!("signal handler: {e}")))?;
    let stop = async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    };
    agent.spawn_background();
    match listen {
        Listen::Tcp(addr) => {
            let l = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| Error::Failure(format!("--listen {addr}: {e}")))?;
            let bound = l.local_addr().map(|a| a.to_string()).unwrap_or_default();
            log::info("listening", &[("addr", bound.into())]);
            let accept = async {
                loop {
                    let Ok((s, _)) = l.accept().await else { continue };
                    let svc = conn(agent.clone(), true);
                    tokio::spawn(async move {
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(s), svc)
                            .await;
                    });
                }
            };
            tokio::select! {
                _ = accept => {}
                _ = stop => {}
            }
        }
        Listen::Unix(path) => {
            use std::os::unix::fs::FileTypeExt;
            if let Ok(m) = std::fs::symlink_metadata(&path)
                && m.file_type().is_socket()
            {
                let _ = std::fs::remove_file(&path);
            }
            let l =
                bind_private(&path).map_err(|e| Error::Failure(format!("--listen unix:{}: {e}", path.display())))?;
            log::info("listening", &[("addr", format!("unix:{}", path.display()).into())]);
            let accept = async {
                loop {
                    let Ok((s, _)) = l.accept().await else { continue };
                    let svc = conn(agent.clone(), false);
                    tokio::spawn(async move {
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(s), svc)
                            .await;
                    });
                }
            };
            tokio::select! {
                _ = accept => {}
                _ = stop => {}
            }
            let _ = std::fs::remove_file(&path);
        }
    }
    log::info("stopped", &[]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses() {
        assert!(matches!(Listen::parse("127.0.0.1:0"), Ok(Listen::Tcp(_))));
        assert!(matches!(Listen::parse("[::1]:8080"), Ok(Listen::Tcp(_))));
        assert!(matches!(Listen::parse("localhost:8080"), Ok(Listen::Tcp(_))));
        assert!(matches!(Listen::parse("unix:/run/svc.sock"), Ok(Listen::Unix(_))));
        for bad in ["0.0.0.0:80", "10.0.0.1:80", "unix:", "nope"] {
            assert_eq!(Listen::parse(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn queries() {
        let k = parse_query("host=a.example&port=443&type=ApiKey&meta.accountName=x%20y").unwrap();
        assert_eq!(
            (k.host.as_str(), k.port, k.credential_type.as_str()),
            ("a.example", 443, "ApiKey")
        );
        assert_eq!(k.meta, vec![("accountName".to_string(), "x y".to_string())]);
        assert!(parse_query("host=a&port=x&type=ApiKey").is_err());
        assert!(parse_query("host=a&type=ApiKey").is_err());
        let e = parse_query("host=a&port=1&type=Nope").unwrap_err();
        assert!(e.starts_with("type:"), "{e}");
        assert!(parse_query("host=a&port=1&type=ApiKey&meta.bogus=1").is_err());
    }

    #[test]
    fn failures_map_to_the_service_answer_or_502() {
        let a = Answer::from_error(&Error::Service {
            status: 404,
            body: b"{\"credentialType\":\"Unknown\"}".to_vec(),
        });
        assert_eq!(a.status, 404);
        assert_eq!(
            Answer::from_error(&Error::Service {
                status: 429,
                body: vec![]
            })
            .status,
            429
        );
        assert_eq!(
            Answer::from_error(&Error::Service {
                status: 500,
                body: vec![]
            })
            .status,
            502
        );
        let a = Answer::from_error(&Error::Failure("cannot reach x".into()));
        assert_eq!(a.status, 502);
        let g: GenericResponse = serde_json::from_slice(&a.body).unwrap();
        assert_eq!(g.message.as_deref(), Some("cannot reach x"));
    }
}

/// Whether a request's `Host` names this machine's loopback (any port): `127.0.0.1`, `[::1]`,
/// `localhost`. A request without `Host` (HTTP/1.0, a unix-socket client) is local by its transport.
fn local_host(host: Option<&str>) -> bool {
    let Some(h) = host else {
        return true;
    };
    let name = match h.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => h.rsplit_once(':').map_or(h, |(n, _)| n),
    };
    matches!(name.to_ascii_lowercase().as_str(), "127.0.0.1" | "::1" | "localhost")
}

#[cfg(test)]
mod host_tests {
    use super::local_host;

    #[test]
    fn only_loopback_hosts_are_answered_dns_rebinding() {
        for ok in [
            None,
            Some("127.0.0.1:8100"),
            Some("localhost:8100"),
            Some("[::1]:8100"),
            Some("LOCALHOST"),
        ] {
            assert!(local_host(ok), "{ok:?}");
        }
        for bad in [
            "evil.example:8100",
            "127.0.0.1.evil.example",
            "10.0.0.1:8100",
            "[::2]:8100",
            "",
        ] {
            assert!(!local_host(Some(bad)), "{bad}");
        }
    }
}
