//! The test harness: starts the real service (router, storage, background jobs) in-process on
//! `127.0.0.1:0`, on a temporary SQLite file or, with `SVC_TEST_DATABASE=postgres`, on a fresh
//! database of the PostgreSQL server named by `SVC_TEST_POSTGRES_URL` (scripts/peers.sh).
//! Every log line of the process is captured so tests can assert that no secret reaches one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};
use svc_server::{App, Config};
use tokio::sync::oneshot;

pub const ADMIN_EMAIL: &str = "admin@acme.test";
pub const ADMIN_PASSWORD: &str = "correct-horse-battery-staple";
pub const DEFAULT_RS: &str = "ffffffff-ffff-ffff-ffff-ffffffffffff";

// ---- log capture ---------------------------------------------------------------------------

static LOGS: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct LogWriter;

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOGS.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn init_logs() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let _ = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(|| LogWriter)
            .try_init();
    });
}

/// Everything logged so far by every test of this process.
pub fn logs() -> String {
    String::from_utf8_lossy(&LOGS.lock().unwrap()).into_owned()
}

// ---- databases ---------------------------------------------------------------------------------

pub fn use_postgres() -> bool {
    std::env::var("SVC_TEST_DATABASE").is_ok_and(|v| v == "postgres")
}

/// A fresh database URL: a temp SQLite file, or a new PostgreSQL database.
pub async fn fresh_database(dir: &std::path::Path) -> String {
    if use_postgres() {
        let admin = std::env::var("SVC_TEST_POSTGRES_URL")
            .expect("SVC_TEST_POSTGRES_URL (run scripts/test.sh or scripts/peers.sh start)");
        let name = format!("svc_t_{}", uuid::Uuid::new_v4().simple());
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&admin).await.expect("connect to PostgreSQL");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&pool)
            .await
            .expect("create database");
        pool.close().await;
        let base = admin.rsplit_once('/').map(|(b, _)| b.to_string()).unwrap();
        format!("{base}/{name}")
    } else {
        format!("sqlite://{}", dir.join("svc.db").display())
    }
}

/// A fresh folder under the system temp dir, removed with everything in it when dropped (the
/// suite runs twice per CI run; folders left behind piled up by the hundred).
pub struct TempDir(PathBuf);

impl TempDir {
    /// The path, no longer removed on drop (its owner cleans up).
    pub fn keep(self) -> PathBuf {
        let me = std::mem::ManuallyDrop::new(self);
        me.0.clone()
    }
}

impl std::ops::Deref for TempDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for TempDir {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn temp_dir() -> TempDir {
    let d = std::env::temp_dir().join(format!("svc-it-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}

// ---- responses ---------------------------------------------------------------------------------

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
    pub body: Value,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts the status and, for errors, the GenericResponseDTO shape; returns the body.
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Value {
        assert_eq!(self.status, status, "unexpected status; body: {}", self.text);
        &self.body
    }

    /// Asserts a GenericResponseDTO error with exactly this message.
    #[track_caller]
    pub fn expect_error(&self, status: u16, message: &str) {
        assert_eq!(self.status, status, "unexpected status; body: {}", self.text);
        assert_eq!(
            self.body,
            json!({"success": false, "message": message, "id": 0}),
            "body: {}",
            self.text
        );
    }

    /// Asserts a GenericResponseDTO error whose message starts with `prefix`.
    #[track_caller]
    pub fn expect_error_prefix(&self, status: u16, prefix: &str) {
        assert_eq!(self.status, status, "unexpected status; body: {}", self.text);
        assert_eq!(self.body["success"], false, "body: {}", self.text);
        assert_eq!(self.body["id"], 0, "body: {}", self.text);
        let m = self.body["message"].as_str().unwrap_or_default();
        assert!(m.starts_with(prefix), "message {m:?} does not start with {prefix:?}");
    }
}

// ---- the service under test ------------------------------------------------------------------------

pub struct TestApp {
    pub app: App,
    pub base: String,
    pub client: reqwest::Client,
    pub token: String,
    pub dir: PathBuf,
    pub db_url: String,
    pub env: BTreeMap<String, String>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

pub fn base_env() -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.insert("SVC_BOOTSTRAP_ADMIN_EMAIL".into(), ADMIN_EMAIL.into());
    env.insert("SVC_BOOTSTRAP_ADMIN_PASSWORD".into(), ADMIN_PASSWORD.into());
    env.insert("SVC_ALLOW_INSECURE_UPSTREAM".into(), "true".into());
    env.insert("SVC_EDGE_AUTH_RATE".into(), "100000".into());
    env.insert("SVC_EDGE_AUTH_BURST".into(), "100000".into());
    env.insert("SVC_EDGE_CREDENTIALS_RATE".into(), "100000".into());
    env.insert("SVC_EDGE_CREDENTIALS_BURST".into(), "100000".into());
    // The host credential chain of objectStorageA log streams never reaches for the platform's
    // instance-metadata address from a test (only loopback is a target here); a test of that
    // source points it at a loopback fake and turns this off.
    env.insert("AWS_EC2_METADATA_DISABLED".into(), "true".into());
    env
}

impl TestApp {
    pub async fn start() -> TestApp {
        Self::start_with(|_| {}).await
    }

    /// Starts with the base environment adjusted by `f` (after `SVC_PUBLIC_URL` is known).
    pub async fn start_with(f: impl FnOnce(&mut BTreeMap<String, String>)) -> TestApp {
        init_logs();
        let dir = temp_dir().keep();
        let db_url = fresh_database(&dir).await;
        let mut env = base_env();
        env.insert("SVC_DATABASE_URL".into(), db_url.clone());
        if use_postgres() {
            env.insert(
                "SVC_ENCRYPTION_KEY".into(),
                svc_server::crypto::b64std(&svc_server::crypto::random_bytes::<32>()),
            );
        }
        Self::launch(dir, db_url, env, None, f).await
    }

    /// Binds a port and starts the service; `public_url` defaults to the bound address.
    async fn launch(
        dir: PathBuf,
        db_url: String,
        mut env: BTreeMap<String, String>,
        public_url: Option<String>,
        f: impl FnOnce(&mut BTreeMap<String, String>),
    ) -> TestApp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let base = format!("http://127.0.0.1:{port}");
        env.insert("SVC_PUBLIC_URL".into(), public_url.unwrap_or_else(|| base.clone()));
        env.insert("SVC_LISTEN_ADDR".into(), format!("127.0.0.1:{port}"));
        f(&mut env);
        let cfg = Config::from_map(&env).unwrap_or_else(|e| panic!("test config invalid: {e:?}"));
        let app = App::open(cfg).await.unwrap_or_else(|e| panic!("app start failed: {e}"));
        svc_server::service::jobs::spawn(&app);
        let (stop, rx) = oneshot::channel::<()>();
        let serving = app.clone();
        let task = tokio::spawn(async move {
            svc_server::http::server::serve(serving, listener, async {
                let _ = rx.await;
            })
            .await
            .unwrap();
        });
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        let mut t = TestApp {
            app,
            base,
            client,
            token: String::new(),
            dir,
            db_url,
            env,
            stop: Some(stop),
            task: Some(task),
        };
        let login = t
            .post_anon(
                "/api/v1/login",
                json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}),
            )
            .await;
        t.token = login.expect(200)["accessToken"].as_str().unwrap().to_string();
        t
    }

    /// Stops the server (graceful) and starts a new one on the same database and key file, with
    /// the same public URL (the issuer that tokens name), listening on a new port.
    pub async fn restart(self) -> TestApp {
        self.restart_with(|_| {}).await
    }

    /// [`TestApp::restart`] with the configuration changed by `f` (new keys, say).
    pub async fn restart_with(mut self, f: impl FnOnce(&mut BTreeMap<String, String>)) -> TestApp {
        self.shutdown().await;
        let mut env = self.env.clone();
        f(&mut env);
        let public = env.get("SVC_PUBLIC_URL").cloned();
        let (dir, db) = (self.dir.clone(), self.db_url.clone());
        // The directory must outlive this handle: disarm its cleanup.
        self.dir = PathBuf::new();
        Self::launch(dir, db, env, public, |_| {}).await
    }

    /// A second node on the same database and keys (PostgreSQL multi-node), with the same public
    /// URL, on its own port. The first node keeps ownership of the directory.
    #[allow(dead_code)]
    pub async fn join(&self) -> TestApp {
        let env = self.env.clone();
        let public = env.get("SVC_PUBLIC_URL").cloned();
        let mut node = Self::launch(self.dir.clone(), self.db_url.clone(), env, public, |_| {}).await;
        node.dir = PathBuf::new();
        node
    }

    pub async fn shutdown(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), t).await;
        }
        // As `svc serve` does once stopped.
        svc_server::service::nodes::leave(&self.app).await;
        self.app.store.close().await;
    }

    /// Moves this server's clock forward (instead of sleeping until a second has passed).
    pub fn advance_clock(&self, ms: i64) {
        self.app.clock.advance(ms);
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn send(&self, req: reqwest::RequestBuilder) -> Resp {
        let r = req.send().await.expect("request");
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let text = r.text().await.unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Resp {
            status,
            headers,
            text,
            body,
        }
    }

    pub async fn call(&self, method: reqwest::Method, path: &str, token: Option<&str>, body: Option<Value>) -> Resp {
        let mut req = self.client.request(method, self.url(path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        self.send(req).await
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.call(reqwest::Method::GET, path, Some(&self.token), None).await
    }
    pub async fn post(&self, path: &str, body: Value) -> Resp {
        self.call(reqwest::Method::POST, path, Some(&self.token), Some(body))
            .await
    }
    pub async fn put(&self, path: &str, body: Value) -> Resp {
        self.call(reqwest::Method::PUT, path, Some(&self.token), Some(body))
            .await
    }
    pub async fn patch(&self, path: &str, body: Value) -> Resp {
        self.call(reqwest::Method::PATCH, path, Some(&self.token), Some(body))
            .await
    }
    pub async fn delete(&self, path: &str) -> Resp {
        self.call(reqwest::Method::DELETE, path, Some(&self.token), None).await
    }
    pub async fn post_anon(&self, path: &str, body: Value) -> Resp {
        self.call(reqwest::Method::POST, path, None, Some(body)).await
    }

    /// Same calls with another bearer token.
    pub async fn get_as(&self, token: &str, path: &str) -> Resp {
        self.call(reqwest::Method::GET, path, Some(token), None).await
    }
    pub async fn post_as(&self, token: &str, path: &str, body: Value) -> Resp {
        self.call(reqwest::Method::POST, path, Some(token), Some(body)).await
    }
    #[allow(dead_code)]
    pub async fn put_as(&self, token: &str, path: &str, body: Value) -> Resp {
        self.call(reqwest::Method::PUT, path, Some(token), Some(body)).await
    }
    #[allow(dead_code)]
    pub async fn patch_as(&self, token: &str, path: &str, body: Value) -> Resp {
        self.call(reqwest::Method::PATCH, path, Some(token), Some(body)).await
    }

    /// Logs in and returns the access token.
    pub async fn login(&self, email: &str, password: &str) -> String {
        let r = self
            .post_anon("/api/v1/login", json!({"email": email, "password": password}))
            .await;
        r.expect(200)["accessToken"].as_str().unwrap().to_string()
    }

    /// Creates a user with a password and roles; returns its id.
    pub async fn create_user(&self, email: &str, password: &str, roles: &[&str]) -> String {
        let r = self
            .post(
                "/api/v1/users",
                json!({"email": email, "firstName": "Test", "lastName": "User", "password": password, "roles": roles}),
            )
            .await;
        r.expect(201)["externalId"].as_str().unwrap().to_string()
    }

    /// A user holding one new role with `permissions` (the default resource set), signed in;
    /// returns its token.
    #[allow(dead_code)]
    pub async fn user_with_role(&self, email: &str, permissions: Value) -> String {
        const PW: &str = "a-long-enough-password";
        let role = self
            .post(
                "/api/v1/roles",
                json!({"name": format!("role of {email}"), "isActive": true, "permissions": permissions}),
            )
            .await;
        let role = r_id(role.expect(201));
        self.create_user(email, PW, &[&role]).await;
        self.login(email, PW).await
    }

    /// A raw TCP connection to the server that has sent `bytes` (requests reqwest cannot make).
    #[allow(dead_code)]
    pub async fn raw_connection(&self, bytes: &[u8]) -> tokio::net::TcpStream {
        use tokio::io::AsyncWriteExt;
        let addr = self.base.trim_start_matches("http://").trim_end_matches('/');
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(bytes).await.unwrap();
        s
    }

    /// Waits for queued events to reach the database.
    #[allow(dead_code)]
    pub async fn flush_events(&self) {
        self.app.events.flush().await;
    }

    /// Audit entries (newest first) of the default resource set.
    pub async fn audit(&self, query: &str) -> Vec<Value> {
        let r = self.get(&format!("/api/v1/audit-logs?per-page=1000{query}")).await;
        r.expect(200)["auditLogs"].as_array().unwrap().clone()
    }

    /// The raw bytes of the SQLite database files (db + WAL), for at-rest checks.
    pub fn sqlite_bytes(&self) -> Option<Vec<u8>> {
        if use_postgres() {
            return None;
        }
        let mut out = Vec::new();
        for suffix in ["svc.db", "svc.db-wal"] {
            if let Ok(b) = std::fs::read(self.dir.join(suffix)) {
                out.extend(b);
            }
        }
        Some(out)
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Runs the built `svc` with exactly `env` as its environment (a host command on a test server's
/// database and keys: `svc admin backup`, `keys rotate-encryption`, …).
#[allow(dead_code)]
pub async fn host_command(env: &BTreeMap<String, String>, args: &[&str]) -> std::process::Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .args(args)
        .env_clear()
        .envs(env)
        .env("SVC_LOG", std::env::var("SVC_TEST_HOST_LOG").unwrap_or("error".into()))
        .output()
        .await
        .expect("run svc")
}

pub fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// An independent RFC 6238 implementation (HMAC-SHA-1, 6 digits, 30 s), for computing real codes.
pub fn totp_now(base32_secret: &str) -> String {
    totp_step_offset(base32_secret, 0)
}

/// The code of the time-step `offset` steps from now (the service accepts ±1 step; a code is
/// accepted once, so a sign-in right after the enrolment's verification uses the next step's).
pub fn totp_step_offset(base32_secret: &str, offset: i64) -> String {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut bits: u64 = 0;
    let mut n = 0;
    let mut key = Vec::new();
    for c in base32_secret.bytes() {
        let v = alphabet.iter().position(|a| *a == c).unwrap() as u64;
        bits = (bits << 5) | v;
        n += 5;
        if n >= 8 {
            key.push((bits >> (n - 8)) as u8);
            n -= 8;
        }
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        / 30
        + offset;
    let k = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, &key);
    let h = aws_lc_rs::hmac::sign(&k, &t.to_be_bytes());
    let h = h.as_ref();
    let o = (h[19] & 15) as usize;
    let code = (u32::from_be_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]) & 0x7fff_ffff) % 1_000_000;
    format!("{code:06}")
}

fn r_id(v: &Value) -> String {
    v["externalId"].as_str().unwrap().to_string()
}
