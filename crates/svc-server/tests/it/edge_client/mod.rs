//! End-to-end tests of the workload client `svc-edge` (docs/edge-client.md): the built binary
//! (`target/<profile>/svc-edge`, built by `cargo test --workspace` through the crate's own CLI
//! test) against a real `svc serve`, the real OIDC and STS peers, and loopback fakes of the
//! platforms' metadata endpoints written from their public formats.

mod agent;
mod commands;
mod kinds;
mod sdk;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::edge::*;
use crate::support::harness::TestApp;

/// The `svc-edge` binary next to this test binary (`target/<profile>/deps/it-*`).
pub fn edge_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    let bin = dir.join("svc-edge");
    assert!(
        bin.exists(),
        "{} is missing: build it first (cargo build -p svc-edge; cargo test --workspace does)",
        bin.display()
    );
    bin
}

pub fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// One run of `svc-edge`: a clean environment (PATH only) plus what the test sets.
pub struct Edge {
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }
    pub fn ok(&self) -> &Self {
        assert_eq!(self.code, 0, "stderr: {}", self.stderr);
        self
    }
}

impl Edge {
    /// `svc-edge --url <base> --client-id <cid>` (global flags before the command).
    pub fn new(t: &TestApp, cid: &str) -> Edge {
        Edge::bare().args(&["--url", &t.base, "--client-id", cid])
    }

    pub fn bare() -> Edge {
        let mut env = BTreeMap::new();
        env.insert("PATH".into(), std::env::var("PATH").unwrap_or_default());
        Edge { args: vec![], env }
    }

    pub fn args(mut self, a: &[&str]) -> Edge {
        self.args.extend(a.iter().map(|s| s.to_string()));
        self
    }

    pub fn env(mut self, k: &str, v: &str) -> Edge {
        self.env.insert(k.into(), v.into());
        self
    }

    pub fn command(&self) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(edge_bin());
        c.args(&self.args).env_clear().envs(&self.env).kill_on_drop(true);
        c
    }

    pub async fn run(self) -> Out {
        let o = tokio::time::timeout(Duration::from_secs(60), self.command().output())
            .await
            .expect("svc-edge timed out")
            .unwrap();
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// An ID token minted by the real oauth2-mock-server; claim values are JSON (objects allowed).
pub async fn mint(claims: &[(&str, Value)]) -> String {
    let url = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let mut form: Vec<(String, String)> = vec![
        ("grant_type".into(), "password".into()),
        ("username".into(), "job".into()),
        ("client_id".into(), "svc".into()),
    ];
    for (k, v) in claims {
        form.push((format!("claim_{k}"), v.to_string()));
    }
    let r = reqwest::Client::new()
        .post(format!("{url}/token"))
        .form(&form)
        .send()
        .await
        .expect("oauth2-mock-server");
    let v: Value = r.json().await.unwrap();
    v["id_token"].as_str().expect("id_token").to_string()
}

pub async fn trust_provider(t: &TestApp, body: Value) -> (String, String) {
    let mut b = json!({"name": format!("tp-{}", uuid_like()), "isActive": true});
    b.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
    let v = t.post("/api/v1/trust-providers", b).await.expect(200).clone();
    (
        v["externalId"].as_str().unwrap().to_string(),
        v["edgeSdkClientId"].as_str().unwrap().to_string(),
    )
}

pub fn uuid_like() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst))
}

/// A client workload with `identity`, a server workload `host:port`, the credential providers
/// (with their mappings) and a policy joining them; returns the providers' ids.
pub async fn grant(
    t: &TestApp,
    identity: Value,
    tp: &str,
    host: &str,
    port: u16,
    providers: Vec<(Value, Value)>,
) -> Vec<String> {
    grant_in(t, None, identity, tp, host, port, providers).await
}

/// A management POST, in resource set `rs` when given.
pub async fn post_in(t: &TestApp, rs: Option<&str>, path: &str, body: Value) -> crate::support::harness::Resp {
    let mut r = t.client.post(t.url(path)).bearer_auth(&t.token).json(&body);
    if let Some(rs) = rs {
        r = r.header("X-Svc-ResourceSet", rs);
    }
    t.send(r).await
}

/// As [`grant`], every entity in resource set `rs` when given.
pub async fn grant_in(
    t: &TestApp,
    rs: Option<&str>,
    identity: Value,
    tp: &str,
    host: &str,
    port: u16,
    providers: Vec<(Value, Value)>,
) -> Vec<String> {
    let n = uuid_like();
    let cw = post_in(
        t,
        rs,
        "/api/v1/client-workloads",
        json!({"name": format!("cw-{n}"), "isActive": true, "identities": [identity]}),
    )
    .await;
    assert_eq!(cw.status, 204, "{}", cw.text);
    let cw = cw.header("location").unwrap().rsplit('/').next().unwrap().to_string();
    let sw = post_in(
        t,
        rs,
        "/api/v1/server-workloads",
            json!({"name": format!("sw-{n}"), "isActive": true, "serviceEndpoint": {"host": host, "port": port,
                   "appProtocol": "HTTP", "transportProtocol": "TCP", "requestedPort": port, "requestedTls": true, "tls": true,
                   "tlsVerification": "full"}}),
        )
        .await;
    assert_eq!(sw.status, 204, "{}", sw.text);
    let sw = sw.header("location").unwrap().rsplit('/').next().unwrap().to_string();
    let (mut mappings, mut ids) = (vec![], vec![]);
    for (i, (body, mapping)) in providers.into_iter().enumerate() {
        let mut b = json!({"name": format!("cp-{n}-{i}"), "isActive": true});
        b.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
        let cp = post_in(t, rs, "/api/v2/credential-providers", b).await;
        let cp = cp.expect(201)["externalId"].as_str().unwrap().to_string();
        ids.push(cp.clone());
        let mut m = json!({"credentialProviderId": cp, "mappingType": "None"});
        m.as_object_mut().unwrap().extend(mapping.as_object().unwrap().clone());
        mappings.push(m);
    }
    let mut pol = json!({"name": format!("pol-{n}"), "isActive": true, "clientWorkload": cw, "serverWorkload": sw,
                         "trustProviders": [tp], "credentialProviders": mappings});
    if let Some(rs) = rs {
        // v2 policies name their resource set in the body.
        pol["resourceSet"] = json!(rs);
    }
    post_in(t, rs, "/api/v2/access-policies", pol).await.expect(200);
    ids
}

/// An OIDC trust provider on the mock peer, a job token for subject `sub` with the edge
/// audience, and an API key `key` granted for `api.partner.example:443`.
pub struct Oidc {
    pub cid: String,
    pub tp: String,
    pub token: String,
    pub sub: String,
    /// The API-key provider.
    pub cp: String,
}

pub async fn oidc_setup(t: &TestApp, key: &str) -> Oidc {
    let mock = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let (tp, cid) = trust_provider(t, json!({"provider": "OidcIdToken", "oidcUrl": mock})).await;
    let sub = format!("repo:acme/app:{}", uuid_like());
    let token = mint(&[("sub", json!(sub)), ("aud", json!(t.base))]).await;
    let cp = grant(
        t,
        json!({"type": "oidcIdTokenSubject", "value": sub}),
        &tp,
        "api.partner.example",
        443,
        vec![(json!({"type": "apikey", "apiKey": key}), json!({}))],
    )
    .await
    .remove(0);
    Oidc {
        cid,
        tp,
        token,
        sub,
        cp,
    }
}

/// `/edge/v1/credentials` requests the service received (one `access.request` event each).
pub async fn credential_calls(t: &TestApp) -> usize {
    authz_events(t, "&event-type=access.request").await.len()
}

/// `/edge/v1/auth` requests the service received.
pub async fn auth_calls(t: &TestApp) -> usize {
    authz_events(t, "&event-type=access.authentication").await.len()
}

/// Runs tests/peers/sign_pkcs7.py (next to sign_sts.py) on a batch of jobs.
pub fn sign_jobs(jobs: Vec<Value>) -> Vec<Value> {
    use std::io::Write;
    let sts = peer("SVC_TEST_SIGN_STS");
    let script = std::path::Path::new(&sts).with_file_name("sign_pkcs7.py");
    let mut child = std::process::Command::new(peer("SVC_TEST_PYTHON"))
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run sign_pkcs7.py");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(json!({ "jobs": jobs }).to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "sign_pkcs7.py failed");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["results"].as_array().unwrap().clone()
}

pub fn b64(data: &[u8]) -> String {
    svc_server::crypto::b64std(data)
}

/// A loopback fake of the platforms' metadata endpoints (cloudA IMDSv2, cloudB IMDS, cloudC
/// metadata server, ciA token-request URL), written from their public formats. Every request is
/// recorded as `METHOD path?query`; headers the real services require are checked.
#[derive(Clone)]
pub struct Platform {
    pub url: String,
    pub seen: Arc<Mutex<Vec<String>>>,
    /// cloudA: the instance identity document and its `/rsa2048` signature.
    pub clouda_doc: Arc<Mutex<(Vec<u8>, String)>>,
    /// cloudA: the instance role's credentials JSON.
    pub clouda_role: Arc<Mutex<Value>>,
}

pub const IMDS_SESSION: &str = "AQAEAimds-session-token==";
pub const CIA_REQUEST_TOKEN: &str = "cia-request-token";

impl Platform {
    pub async fn start() -> Platform {
        use axum::extract::{Query, Request};
        use axum::http::{HeaderMap, StatusCode};
        use axum::response::IntoResponse;
        use axum::routing::{get, put};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let p = Platform {
            url,
            seen: Arc::default(),
            clouda_doc: Arc::default(),
            clouda_role: Arc::new(Mutex::new(json!({}))),
        };
        let imds_ok =
            |h: &HeaderMap| h.get("x-aws-ec2-metadata-token").and_then(|v| v.to_str().ok()) == Some(IMDS_SESSION);
        let (d1, r1) = (p.clouda_doc.clone(), p.clouda_role.clone());
        let (d2, r2) = (p.clouda_doc.clone(), p.clouda_role.clone());
        let seen = p.seen.clone();
        let app = axum::Router::new()
            .route(
                "/latest/api/token",
                put(|h: HeaderMap| async move {
                    match h.get("x-aws-ec2-metadata-token-ttl-seconds") {
                        Some(_) => (StatusCode::OK, IMDS_SESSION).into_response(),
                        None => (StatusCode::BAD_REQUEST, "missing TTL").into_response(),
                    }
                }),
            )
            .route(
                "/latest/dynamic/instance-identity/document",
                get(move |h: HeaderMap| async move {
                    if !imds_ok(&h) {
                        return (StatusCode::UNAUTHORIZED, vec![]).into_response();
                    }
                    (StatusCode::OK, d1.lock().unwrap().0.clone()).into_response()
                }),
            )
            .route(
                "/latest/dynamic/instance-identity/rsa2048",
                get(move |h: HeaderMap| async move {
                    if !imds_ok(&h) {
                        return (StatusCode::UNAUTHORIZED, String::new()).into_response();
                    }
                    // Base64 in 64-character lines, as the platform prints it.
                    let s = d2.lock().unwrap().1.clone();
                    let lines: Vec<String> = s
                        .as_bytes()
                        .chunks(64)
                        .map(|c| String::from_utf8_lossy(c).into_owned())
                        .collect();
                    (StatusCode::OK, lines.join("\n")).into_response()
                }),
            )
            .route(
                "/latest/meta-data/iam/security-credentials/",
                get(move |h: HeaderMap| async move {
                    if !imds_ok(&h) {
                        return (StatusCode::UNAUTHORIZED, String::new()).into_response();
                    }
                    (StatusCode::OK, "svc-instance-role".to_string()).into_response()
                }),
            )
            .route(
                "/latest/meta-data/iam/security-credentials/svc-instance-role",
                get(move |h: HeaderMap| async move {
                    if !imds_ok(&h) {
                        return (StatusCode::UNAUTHORIZED, String::new()).into_response();
                    }
                    (StatusCode::OK, r1.lock().unwrap().to_string()).into_response()
                }),
            )
            .route(
                "/latest/meta-data/placement/region",
                get(move |h: HeaderMap| async move {
                    if !imds_ok(&h) {
                        return (StatusCode::UNAUTHORIZED, String::new()).into_response();
                    }
                    (StatusCode::OK, "us-east-1".to_string()).into_response()
                }),
            )
            .route(
                "/metadata/attested/document",
                get(|h: HeaderMap, Query(q): Query<BTreeMap<String, String>>| async move {
                    if h.get("metadata").and_then(|v| v.to_str().ok()) != Some("true") || !q.contains_key("api-version")
                    {
                        return (StatusCode::BAD_REQUEST, String::new()).into_response();
                    }
                    let nonce = q.get("nonce").cloned().unwrap_or_default();
                    let content = cloudb_content(&nonce);
                    let sig = tokio::task::spawn_blocking(move || {
                        sign_jobs(vec![cloudb_job(&content)])[0].as_str().unwrap().to_string()
                    })
                    .await
                    .unwrap();
                    (
                        StatusCode::OK,
                        json!({"encoding": "pkcs7", "signature": sig}).to_string(),
                    )
                        .into_response()
                }),
            )
            .route(
                "/computeMetadata/v1/instance/service-accounts/default/identity",
                get(|h: HeaderMap, Query(q): Query<BTreeMap<String, String>>| async move {
                    if h.get("metadata-flavor").and_then(|v| v.to_str().ok()) != Some("Google")
                        || q.get("format").map(String::as_str) != Some("full")
                    {
                        return (StatusCode::FORBIDDEN, String::new()).into_response();
                    }
                    let aud = q.get("audience").cloned().unwrap_or_default();
                    let t = mint(&[
                        ("aud", json!(aud)),
                        ("sub", json!("1234567890")),
                        ("email", json!(CLOUDC_EMAIL)),
                    ])
                    .await;
                    (StatusCode::OK, t).into_response()
                }),
            )
            .route(
                "/cia/token",
                get(|h: HeaderMap, Query(q): Query<BTreeMap<String, String>>| async move {
                    let bearer = format!("Bearer {CIA_REQUEST_TOKEN}");
                    if h.get("authorization").and_then(|v| v.to_str().ok()) != Some(bearer.as_str())
                        || !q.contains_key("api-version")
                    {
                        return (StatusCode::UNAUTHORIZED, String::new()).into_response();
                    }
                    let aud = q.get("audience").cloned().unwrap_or_default();
                    let t = mint(&[
                        ("aud", json!(aud)),
                        ("sub", json!("repo:acme/app:ref:refs/heads/main")),
                        ("repository", json!("acme/app")),
                        ("repository_id", json!("123456")),
                        ("actor", json!("octo")),
                        ("workflow", json!("deploy")),
                    ])
                    .await;
                    (StatusCode::OK, json!({"count": 1, "value": t}).to_string()).into_response()
                }),
            )
            .layer(axum::middleware::from_fn(
                move |req: Request, next: axum::middleware::Next| {
                    let seen = seen.clone();
                    async move {
                        let q = req.uri().query().map(|q| format!("?{q}")).unwrap_or_default();
                        seen.lock()
                            .unwrap()
                            .push(format!("{} {}{q}", req.method(), req.uri().path()));
                        next.run(req).await
                    }
                },
            ));
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let _ = r2;
        p
    }

    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

pub const CLOUDC_EMAIL: &str = "runner@proj.iam.example";
pub const CLOUDB_VM: &str = "dc18de58-292f-4794-9a5d-a4192bad0039";

fn cloudb_content(nonce: &str) -> Vec<u8> {
    json!({"licenseType": "", "nonce": nonce, "plan": {"name": "", "product": "", "publisher": ""},
           "sku": "22_04-lts-gen2", "subscriptionId": "0a1b2c3d-0000-4000-8000-000000000001",
           "timeStamp": {"createdOn": "01/01/26 00:00:00 -0000", "expiresOn": "01/01/26 06:00:00 -0000"},
           "vmId": CLOUDB_VM})
    .to_string()
    .into_bytes()
}

fn cloudb_job(content: &[u8]) -> Value {
    json!({"op": "pkcs7", "content_b64": b64(content),
        "key": fixture("cloudb/signer-key.pem"), "cert": fixture("cloudb/signer-cert.pem"),
        "certs": [fixture("cloudb/signer-cert.pem"), fixture("cloudb/intermediate-cert.pem")],
        "digest": "sha256WithRSAEncryption", "signed_attrs": false})
}

/// The service configured for the test clouds (as edge_cloud.rs): fixture cloudA signer and
/// cloudB root, the SigV4-verifying moto as STS, the mock peer's keys as cloudC's platform keys.
pub fn cloud_env(env: &mut BTreeMap<String, String>) {
    let mock = peer("SVC_TEST_OAUTH2_MOCK_URL");
    env.insert("SVC_CLOUDA_IID_CERTS".into(), fixture("clouda/signer-cert.pem"));
    env.insert("SVC_CLOUDB_ROOTS".into(), fixture("cloudb/root-cert.pem"));
    env.insert("SVC_CLOUDB_METADATA_DOMAINS".into(), "test-cloudb.example".into());
    env.insert("SVC_CLOUDB_AIA_HOSTS".into(), "aia.invalid".into());
    env.insert("SVC_CLOUDA_STS_URL_TEMPLATE".into(), moto_auth_url());
    env.insert("SVC_CLOUDA_REGIONS".into(), "us-east-1,eu-west-1".into());
    env.insert("SVC_CLOUDC_JWKS_URL".into(), format!("{mock}/jwks"));
    env.insert("SVC_CLOUDC_ISSUERS".into(), mock);
}

pub fn moto_auth_url() -> String {
    format!("{}/", peer("SVC_TEST_MOTO_AUTH_URL"))
}

/// The facts the service recorded in an edge token.
pub fn facts(token_json: &Value) -> Value {
    jwt_payload(token_json["accessToken"].as_str().unwrap())["svc"]["facts"].clone()
}

/// A running `svc-edge agent`, stopped on drop. Its stdout (JSON log lines) and stderr are
/// collected.
pub struct AgentProc {
    pub child: tokio::process::Child,
    pub base: String,
    pub logs: Arc<Mutex<Vec<String>>>,
    pub http: reqwest::Client,
}

impl AgentProc {
    pub async fn start(edge: Edge) -> AgentProc {
        Self::start_on(edge, "127.0.0.1:0").await
    }

    pub async fn start_on(edge: Edge, listen: &str) -> AgentProc {
        use tokio::io::AsyncBufReadExt;
        let edge = edge.args(&["agent", "--listen", listen]);
        let mut cmd = edge.command();
        cmd.stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut errs = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let logs: Arc<Mutex<Vec<String>>> = Arc::default();
        let l3 = logs.clone();
        tokio::spawn(async move {
            while let Ok(Some(l)) = errs.next_line().await {
                l3.lock().unwrap().push(format!("stderr: {l}"));
            }
        });
        let addr = tokio::time::timeout(Duration::from_secs(20), async {
            while let Some(l) = lines.next_line().await.unwrap() {
                logs.lock().unwrap().push(l.clone());
                let v: Value =
                    serde_json::from_str(&l).unwrap_or_else(|_| panic!("stdout line is not a JSON log line: {l}"));
                if v["msg"] == "listening" {
                    return v["addr"].as_str().unwrap().to_string();
                }
            }
            panic!("agent exited: {:?}", logs.lock().unwrap());
        })
        .await
        .expect("agent did not start listening");
        let l2 = logs.clone();
        tokio::spawn(async move {
            while let Ok(Some(l)) = lines.next_line().await {
                l2.lock().unwrap().push(l);
            }
        });
        AgentProc {
            child,
            base: if addr.starts_with("unix:") {
                addr
            } else {
                format!("http://{addr}")
            },
            logs,
            http: reqwest::Client::new(),
        }
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self.http.get(format!("{}{path}", self.base)).send().await.unwrap();
        let s = r.status().as_u16();
        let t = r.text().await.unwrap();
        (s, serde_json::from_str(&t).unwrap_or(Value::String(t)))
    }

    /// Waits (up to 20 s) until `/healthz` answers 200.
    pub async fn healthy(&self) {
        for _ in 0..200 {
            if self.get("/healthz").await.0 == 200 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("agent never became healthy: {:?}", self.logs());
    }

    pub fn logs(&self) -> Vec<String> {
        self.logs.lock().unwrap().clone()
    }
}
