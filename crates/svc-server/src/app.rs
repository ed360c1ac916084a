//! The application object and its life cycle: start-up (store, encryption key, key ring, state,
//! first-start bootstrap), background jobs, the HTTP server and graceful shutdown.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::net::TcpListener;

use crate::config::{Config, DatabaseUrl};
use crate::crypto::aead::Cipher;
use crate::crypto::{b64std, b64std_decode, random_bytes};
use crate::events::EventSink;
use crate::issuer::{KeyRing, keys};
use crate::state::State;
use crate::store::Store;

/// How long after start the first event-retention purge waits.
const RETENTION_FIRST_DELAY: Duration = Duration::from_secs(15 * 60);

/// Shared application state; cheap to clone.
#[derive(Clone)]
pub struct App(Arc<Inner>);

pub struct Inner {
    pub cfg: Config,
    pub store: Store,
    pub cipher: Cipher,
    state: ArcSwap<State>,
    keys: ArcSwap<KeyRing>,
    /// Serialises management writes on this node.
    pub write_lock: tokio::sync::Mutex<()>,
    /// The node's write units one at a time (held for a whole `Write`), so that one at most
    /// waits for the cluster's write lock with a database connection; `write_lock` itself is
    /// taken only once that lock is held, and the refresh from other nodes never waits for it.
    pub write_queue: tokio::sync::Mutex<()>,
    pub events: EventSink,
    pub healthy: AtomicBool,
    /// Newest row of `changes` this node has applied.
    pub last_change: AtomicI64,
    /// Random id of this process (rotation lock owner).
    pub node_id: String,
    pub upstream: crate::upstream::Upstream,
    /// Issuer keys fetched for JWT evidence (discovery / JWKS), shared by all requests.
    pub key_cache: crate::trust::keycache::KeyCache,
    /// Upstream credentials reused until shortly before their expiry.
    pub credential_cache: crate::credential::cache::CredentialCache,
    /// Serialises OAuth refresh-token use (a rotated refresh token must not be spent twice).
    pub refresh_lock: tokio::sync::Mutex<()>,
    /// The CA that signs X.509-SVIDs.
    pub ca: crate::issuer::ca::Ca,
    pub limits: crate::edge::ratelimit::Limiters,
    /// The platforms' trust anchors (cloudA signers, cloudB roots) and the AIA cache.
    pub platform: crate::trust::anchors::PlatformTrust,
}

impl std::ops::Deref for App {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// Why the service could not start (printed, then exit code 1).
#[derive(Debug)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for StartError {
    fn from(e: String) -> Self {
        StartError(e)
    }
}

impl From<crate::store::StoreError> for StartError {
    fn from(e: crate::store::StoreError) -> Self {
        StartError(e.0)
    }
}

impl From<std::io::Error> for StartError {
    fn from(e: std::io::Error) -> Self {
        StartError(e.to_string())
    }
}

const KEY_CHECK: &str = "svc-encryption-key-check";

/// The encryption key: `SVC_ENCRYPTION_KEY`, or (SQLite only) a key file beside the database,
/// generated with mode 0600 on first start.
fn resolve_encryption_key(cfg: &Config) -> Result<[u8; 32], StartError> {
    if let Some(k) = cfg.encryption_key {
        return Ok(k);
    }
    let DatabaseUrl::Sqlite(db) = &cfg.database_url else {
        return Err(StartError("SVC_ENCRYPTION_KEY is required with PostgreSQL".into()));
    };
    let path = key_file_path(db);
    if path.exists() {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| StartError(format!("cannot read key file {}: {e}", path.display())))?;
        let bytes = b64std_decode(text.trim())
            .filter(|b| b.len() == 32)
            .ok_or_else(|| StartError(format!("key file {} does not hold base64 of 32 bytes", path.display())))?;
        let mut k = [0u8; 32];
        k.copy_from_slice(&bytes);
        return Ok(k);
    }
    let key = random_bytes::<32>();
    write_private_file(&path, &b64std(&key))?;
    tracing::info!(path = %path.display(), "generated a new encryption key file");
    Ok(key)
}

pub fn key_file_path(db: &std::path::Path) -> PathBuf {
    db.parent()
        .unwrap_or(std::path::Path::new("."))
        .join("svc-encryption.key")
}

fn write_private_file(path: &std::path::Path, text: &str) -> Result<(), StartError> {
    use std::io::Write;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts
        .open(path)
        .map_err(|e| StartError(format!("cannot create key file {}: {e}", path.display())))?;
    f.write_all(text.as_bytes())?;
    f.write_all(b"\n")?;
    f.sync_all()?;
    Ok(())
}

/// What is wrong with the files the configuration names (trust bundles, the upstream CA bundle,
/// the X.509 CA), every one; `serve` and `svc config check` load the configuration with it
/// ([`Config::load_checked`]), so a bad file is reported with the bad values, before storage is
/// touched.
pub fn key_file_errors(cfg: &Config) -> Vec<String> {
    let mut errors = crate::trust::anchors::PlatformTrust::load_each(cfg)
        .err()
        .unwrap_or_default();
    errors.extend(crate::upstream::Upstream::new(cfg).err());
    errors.extend(crate::issuer::ca::check_configured(cfg).err());
    errors
}

impl App {
    /// Opens storage and loads everything; does not start background jobs or listen.
    pub async fn open(cfg: Config) -> Result<App, StartError> {
        // Configuration first: an unusable trust bundle stops the start before storage is touched.
        let platform = crate::trust::anchors::PlatformTrust::load(&cfg)?;
        let store = Store::open(&cfg.database_url)
            .await
            .map_err(|e| StartError(format!("database: {e}")))?;
        let key = resolve_encryption_key(&cfg)?;
        let cipher = Cipher::new(&key);
        // The first start records a check value; later starts prove they hold the same key.
        let check = store
            .meta_init("encryption_check", &cipher.seal(KEY_CHECK.as_bytes(), "meta:check"))
            .await?;
        match cipher.open(&check, "meta:check") {
            Ok(v) if v == KEY_CHECK.as_bytes() => {}
            Ok(_) | Err(_) => {
                return Err(StartError(format!(
                    "the encryption key (id {}) is not the key this database was encrypted with; set SVC_ENCRYPTION_KEY to the original key",
                    cipher.kid()
                )));
            }
        }
        let now = crate::clock::now_millis();
        keys::ensure(&store, &cipher, now).await?;
        let ring = KeyRing::from_rows(&store.load_keys().await?, &cipher)?;
        let last_change = store.last_change().await?;
        let state = crate::service::load::load_state(&store, &cipher).await?;
        let ca = crate::issuer::ca::load(&cfg, &store, &cipher)
            .await
            .map_err(StartError)?;
        let events = EventSink::new(store.clone());
        let upstream = crate::upstream::Upstream::new(&cfg)?;
        let limits = crate::edge::ratelimit::Limiters::new(&cfg);
        let app = App(Arc::new(Inner {
            cfg,
            store,
            cipher,
            state: ArcSwap::from_pointee(state),
            keys: ArcSwap::from_pointee(ring),
            write_lock: tokio::sync::Mutex::new(()),
            write_queue: tokio::sync::Mutex::new(()),
            events,
            healthy: AtomicBool::new(true),
            last_change: AtomicI64::new(last_change),
            node_id: crate::crypto::hex(&random_bytes::<8>()),
            upstream,
            key_cache: Default::default(),
            credential_cache: Default::default(),
            refresh_lock: tokio::sync::Mutex::new(()),
            ca,
            limits,
            platform,
        }));
        crate::service::bootstrap::first_start(&app)
            .await
            .map_err(|e| StartError(format!("first start: {e}")))?;
        Ok(app)
    }

    /// The current configuration snapshot (lock-free).
    pub fn state(&self) -> arc_swap::Guard<Arc<State>> {
        self.state.load()
    }

    pub fn state_full(&self) -> Arc<State> {
        self.state.load_full()
    }

    pub(crate) fn swap_state(&self, st: State) -> Arc<State> {
        let st = Arc::new(st);
        self.state.store(st.clone());
        st
    }

    /// What trust verifiers may use (narrower than the application: no storage).
    pub fn verify_cx(&self) -> crate::trust::VerifyCx<'_> {
        crate::trust::VerifyCx {
            cfg: &self.cfg,
            upstream: &self.upstream,
            key_cache: &self.key_cache,
            platform: &self.platform,
            keys: &self.keys,
        }
    }

    /// The key ring's cell, for the narrow contexts that sign or verify at their own time.
    pub fn key_ring(&self) -> &ArcSwap<KeyRing> {
        &self.keys
    }

    pub fn keys(&self) -> arc_swap::Guard<Arc<KeyRing>> {
        self.keys.load()
    }

    pub async fn reload_keys(&self) -> Result<(), String> {
        let rows = self.store.load_keys().await.map_err(|e| e.to_string())?;
        let ring = KeyRing::from_rows(&rows, &self.cipher)?;
        self.keys.store(Arc::new(ring));
        Ok(())
    }

    /// Starts the background jobs: event writer, health probe, cross-node refresh, key rotation,
    /// retention.
    pub fn spawn_background(&self) {
        self.events.start();
        let app = self.clone();
        tokio::spawn(async move {
            loop {
                let ok = app.store.ping().await;
                if ok != app.healthy.swap(ok, Ordering::Relaxed) {
                    if ok {
                        tracing::info!("database reachable again");
                    } else {
                        tracing::error!("database unreachable");
                    }
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        });
        // Changes committed elsewhere, every second. PostgreSQL: other nodes' writes. SQLite
        // serves one node, but `svc admin keys rotate` writes to the same file from a process of
        // its own, and its new keys must be published at once (§5.1): only key changes are
        // looked for there.
        let app = self.clone();
        if self.store.dialect() == crate::store::Dialect::Postgres {
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    let _g = app.write_lock.lock().await;
                    if let Err(e) = crate::service::load::sync_changes(&app).await {
                        tracing::warn!(error = %e, "refresh from the database failed");
                    }
                }
            });
        } else {
            tokio::spawn(async move {
                let mut seen = app.last_change.load(Ordering::Acquire);
                loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    match app.store.key_changes_since(seen).await {
                        // The cursor moves past a key change only once its keys are loaded: a failed
                        // reload is tried again the next second.
                        Ok((last, false)) => seen = last,
                        Ok((last, true)) => match app.reload_keys().await {
                            Ok(()) => seen = last,
                            Err(e) => tracing::warn!(error = %e, "key reload failed"),
                        },
                        Err(e) => tracing::warn!(error = %e, "reading the change log failed"),
                    }
                }
            });
        }
        let app = self.clone();
        tokio::spawn(async move {
            loop {
                let now = crate::clock::now_millis();
                let ring = app.keys.load_full();
                match keys::rotate_if_due(
                    &app.store,
                    &app.cipher,
                    &ring,
                    app.cfg.signing_key_rotation_days,
                    now,
                    &app.node_id,
                )
                .await
                {
                    Ok(true) => tracing::info!("rotated signing keys"),
                    Ok(false) => {}
                    Err(e) => tracing::warn!(error = %e, "key rotation failed"),
                }
                if let Err(e) = app.reload_keys().await {
                    tracing::warn!(error = %e, "key reload failed");
                }
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
        });
        // Event retention, hourly: old rows are deleted from the head of each table in short
        // chunks (`Store::purge_events`). The first purge still waits: a node that has just
        // (re)started is taking over traffic (docs/PERFORMANCE.md).
        let app = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(RETENTION_FIRST_DELAY).await;
            loop {
                let cutoff = crate::clock::now_millis() - 90 * 86_400_000;
                if let Err(e) = app.store.purge_events(cutoff).await {
                    tracing::warn!(error = %e, "event retention purge failed");
                }
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
        });
    }

    /// Serves HTTP on `listener` until `shutdown` resolves, then lets the open connections finish
    /// their requests and flushes events. The loop is axum::serve's with a header-read timeout:
    /// without one, a client that never finishes its request headers (or a keep-alive connection
    /// that never sends another request) held its connection and task for ever.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        use axum::extract::ConnectInfo;
        use hyper_util::rt::{TokioIo, TokioTimer};
        use tower::ServiceExt as _;

        let router = crate::http::router(self.clone());
        let mut http = hyper::server::conn::http1::Builder::new();
        // `SVC_HTTP_HEADER_TIMEOUT_SECONDS`: also the idle limit of a keep-alive connection
        // (hyper starts the timer when it waits for a request).
        http.timer(TokioTimer::new())
            .header_read_timeout(Duration::from_secs(self.cfg.http_header_timeout_seconds.into()));
        // Connections hold a receiver; shutdown waits until every one is gone.
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let (open_tx, open_rx) = tokio::sync::watch::channel(());
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Per-connection errors (reset before accept) are not the listener's;
                        // others (too many open files) are retried after a pause, as axum does.
                        if !matches!(
                            e.kind(),
                            std::io::ErrorKind::ConnectionRefused
                                | std::io::ErrorKind::ConnectionAborted
                                | std::io::ErrorKind::ConnectionReset
                        ) {
                            tracing::error!(error = %e, "accept failed");
                            tokio::time::sleep(Duration::from_secs(1)).await;
                        }
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            let router = router.clone();
            let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let mut req = req.map(axum::body::Body::new);
                req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
                router.clone().oneshot(req)
            });
            let conn = http.serve_connection(TokioIo::new(stream), svc);
            let mut stop = stop_rx.clone();
            let open = open_rx.clone();
            tokio::spawn(async move {
                let mut conn = std::pin::pin!(conn);
                tokio::select! {
                    _ = conn.as_mut() => {}
                    () = async { drop(stop.wait_for(|s| *s).await) } => {
                        conn.as_mut().graceful_shutdown();
                        let _ = conn.await;
                    }
                }
                drop(open);
            });
        }
        drop(listener);
        let _ = stop_tx.send(true);
        drop(open_rx);
        open_tx.closed().await;
        self.events.flush().await;
        Ok(())
    }
}

/// A future that resolves on SIGTERM or SIGINT. The handlers are installed when this is called,
/// not when the future is first polled (axum polls it from a task of its own, possibly after the
/// first requests were served): a signal that arrives once the server answers is never fatal.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let (term, int) = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::terminate()).ok(),
            signal(SignalKind::interrupt()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        {
            let wait = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = wait(term) => {},
                _ = wait(int) => {},
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        tracing::info!("shutdown requested; draining connections");
    }
}
