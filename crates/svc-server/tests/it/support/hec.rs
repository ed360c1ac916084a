//! A loopback HTTP event collector written from the public HEC format (`POST
//! /services/collector/event`, `Authorization: <scheme> <token>`, a body of concatenated JSON
//! objects each with an `event`; answers `{"text": "Success", "code": 0}`, or the documented
//! errors: 401 code 2 without a token, 403 code 4 for a wrong one, 400 codes 5 and 6 for no data or
//! data that is not such objects), over plain TCP or TLS with a self-signed certificate. It records
//! every request and can be told to fail, to answer slowly, or to be down (nothing listens, open
//! connections cut).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio_rustls::rustls;

/// What the collector answers to a well-formed, authorised request.
#[derive(Clone, Debug)]
pub enum Answer {
    /// 200 `{"text": "Success", "code": 0}`.
    Accept,
    /// This status with `{"text": "Server is busy", "code": 9}`.
    Status(u16),
    /// Accepts after this delay.
    Delay(Duration),
}

/// One request the collector received, with the status it answered.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub status: u16,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body's concatenated JSON objects (panics on anything else).
    pub fn objects(&self) -> Vec<Value> {
        serde_json::Deserializer::from_slice(&self.body)
            .into_iter::<Value>()
            .map(|v| v.expect("concatenated JSON objects"))
            .collect()
    }
}

struct Inner {
    /// The whole `Authorization` value a request must carry.
    auth: String,
    answer: Answer,
    requests: Vec<Request>,
}

pub struct Collector {
    pub addr: SocketAddr,
    inner: Arc<Mutex<Inner>>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    server: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Collector {
    /// A plain-HTTP collector accepting requests that carry `Authorization: <auth>`.
    pub async fn start(auth: &str) -> Collector {
        Self::launch(auth, None).await
    }

    /// The same over TLS, with a self-signed certificate for `localhost` and `127.0.0.1`.
    pub async fn start_tls(auth: &str) -> Collector {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
            ck.signing_key.serialize_der(),
        ));
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![ck.cert.der().clone()], key)
            .unwrap();
        Self::launch(auth, Some(tokio_rustls::TlsAcceptor::from(Arc::new(config)))).await
    }

    async fn launch(auth: &str, tls: Option<tokio_rustls::TlsAcceptor>) -> Collector {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let inner = Arc::new(Mutex::new(Inner {
            auth: auth.to_string(),
            answer: Answer::Accept,
            requests: Vec::new(),
        }));
        let c = Collector {
            addr,
            inner,
            tls,
            server: Mutex::new(None),
        };
        c.serve(listener);
        c
    }

    fn serve(&self, listener: tokio::net::TcpListener) {
        let (inner, tls) = (self.inner.clone(), self.tls.clone());
        let task = tokio::spawn(async move {
            // Owned by this task: aborting it (`down`) cuts every open connection too.
            let mut conns = tokio::task::JoinSet::new();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                while conns.try_join_next().is_some() {}
                let (inner, tls) = (inner.clone(), tls.clone());
                conns.spawn(async move {
                    let svc = hyper::service::service_fn(move |req| handle(inner.clone(), req));
                    let http = hyper::server::conn::http1::Builder::new();
                    match tls {
                        Some(acceptor) => {
                            if let Ok(s) = acceptor.accept(tcp).await {
                                let _ = http.serve_connection(TokioIo::new(s), svc).await;
                            }
                        }
                        None => {
                            let _ = http.serve_connection(TokioIo::new(tcp), svc).await;
                        }
                    }
                });
            }
        });
        *self.server.lock().unwrap() = Some(task);
    }

    /// `host:port`, as a stream's `hecHostPort`.
    pub fn host_port(&self) -> String {
        format!("127.0.0.1:{}", self.addr.port())
    }

    pub fn set(&self, a: Answer) {
        self.inner.lock().unwrap().answer = a;
    }

    /// Nothing listens any more; open connections are cut.
    pub fn down(&self) {
        if let Some(t) = self.server.lock().unwrap().take() {
            t.abort();
        }
    }

    /// Listens again on the same address.
    pub async fn up(&self) {
        let mut tries = 0;
        let listener = loop {
            match tokio::net::TcpListener::bind(self.addr).await {
                Ok(l) => break l,
                Err(e) if tries < 50 => {
                    tries += 1;
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("rebinding {}: {e}", self.addr),
            }
        };
        self.serve(listener);
    }

    pub fn requests(&self) -> Vec<Request> {
        self.inner.lock().unwrap().requests.clone()
    }

    /// The requests answered 200, in order.
    pub fn accepted(&self) -> Vec<Request> {
        self.requests().into_iter().filter(|r| r.status == 200).collect()
    }

    /// The `event` of every object of every accepted request, in order.
    pub fn events(&self) -> Vec<Value> {
        self.accepted()
            .iter()
            .flat_map(|r| r.objects())
            .map(|o| o["event"].clone())
            .collect()
    }

    /// Waits (up to `limit`) until at least `n` events were accepted; returns them all.
    pub async fn wait_events(&self, n: usize, limit: Duration) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let events = self.events();
            if events.len() >= n || tokio::time::Instant::now() >= deadline {
                return events;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits (up to `limit`) until at least `n` requests arrived, whatever the answer.
    pub async fn wait_requests(&self, n: usize, limit: Duration) -> Vec<Request> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let requests = self.requests();
            if requests.len() >= n || tokio::time::Instant::now() >= deadline {
                return requests;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.down();
    }
}

fn answer(status: u16, body: Value) -> hyper::Response<Full<Bytes>> {
    hyper::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

/// The collector's checks, in the order a real one makes them.
fn check(inner: &Inner, method: &str, path: &str, auth: Option<&str>, body: &[u8]) -> (u16, Value) {
    if method != "POST" || path != "/services/collector/event" {
        return (
            404,
            json!({"text": "The requested URL was not found on this server.", "code": 404}),
        );
    }
    match auth {
        None => return (401, json!({"text": "Token is required", "code": 2})),
        Some(a) if a != inner.auth => return (403, json!({"text": "Invalid token", "code": 4})),
        _ => {}
    }
    if body.is_empty() {
        return (400, json!({"text": "No data", "code": 5}));
    }
    let well_formed = serde_json::Deserializer::from_slice(body)
        .into_iter::<Value>()
        .all(|v| v.is_ok_and(|v| v.get("event").is_some()));
    if !well_formed {
        return (400, json!({"text": "Invalid data format", "code": 6}));
    }
    match &inner.answer {
        Answer::Status(s) => (*s, json!({"text": "Server is busy", "code": 9})),
        Answer::Accept | Answer::Delay(_) => (200, json!({"text": "Success", "code": 0})),
    }
}

async fn handle(
    inner: Arc<Mutex<Inner>>,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, std::convert::Infallible> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map(|b| b.to_bytes().to_vec()).unwrap_or_default();
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let auth = parts.headers.get("authorization").and_then(|v| v.to_str().ok());
    let delay = match inner.lock().unwrap().answer {
        Answer::Delay(d) => d,
        _ => Duration::ZERO,
    };
    tokio::time::sleep(delay).await;
    let mut g = inner.lock().unwrap();
    let (status, reply) = check(&g, parts.method.as_str(), parts.uri.path(), auth, &body);
    g.requests.push(Request {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        headers,
        body,
        status,
    });
    Ok(answer(status, reply))
}
