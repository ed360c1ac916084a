//! The application object: a plain container of what the node shares (configuration, storage,
//! the state and key ring cells, caches, locks, the event sink), with the narrow views handed to
//! verifiers and backends. Start-up is `service::startup`, the background jobs `service::jobs`,
//! the HTTP server loop `http::server`.

use std::sync::Arc;
use std::sync::atomic::AtomicI64;

use arc_swap::ArcSwap;
use uuid::Uuid;

use crate::config::Config;
use crate::crypto::aead::Cipher;
use crate::events::EventSink;
use crate::issuer::KeyRing;
use crate::state::State;
use crate::store::Store;

/// Shared application state; cheap to clone.
#[derive(Clone)]
pub struct App(pub(crate) Arc<Inner>);

pub struct Inner {
    pub cfg: Config,
    /// This node's clock (`clock::scope` runs its tasks on it; tests advance it).
    pub clock: Arc<crate::clock::Clock>,
    pub store: Store,
    pub cipher: Cipher,
    /// Where the encryption keys come from (the key file is read again during a rotation).
    pub key_source: crate::config::KeySource,
    /// When this node started (ms).
    pub started_at: i64,
    /// The node has stopped and removed its row of `nodes` (`service::nodes::leave`).
    pub node_left: tokio::sync::Mutex<bool>,
    pub(crate) state: ArcSwap<State>,
    pub(crate) keys: ArcSwap<KeyRing>,
    /// Serialises management writes on this node.
    pub write_lock: tokio::sync::Mutex<()>,
    /// The node's write units one at a time (held for a whole `Write`), so that one at most
    /// waits for the cluster's write lock with a database connection; `write_lock` itself is
    /// taken only once that lock is held, and the refresh from other nodes never waits for it.
    pub write_queue: tokio::sync::Mutex<()>,
    pub events: EventSink,
    /// Log-stream delivery: the counters every node shows, this node's right to deliver.
    pub streams: crate::events::streams::Streams,
    /// Newest row of `changes` this node has applied.
    pub last_change: AtomicI64,
    /// Random id of this process (rotation lock owner).
    pub node_id: String,
    pub upstream: Arc<crate::upstream::Upstream>,
    /// The clients of the routings' proxies (§3.17).
    pub routes: crate::upstream::Routes,
    /// Issuer keys fetched for JWT evidence (discovery / JWKS), shared by all requests.
    pub key_cache: crate::trust::keycache::KeyCache,
    /// Upstream credentials reused until shortly before their expiry.
    pub credential_cache: crate::credential::cache::CredentialCache,
    /// Serialises OAuth refresh-token use (a rotated refresh token must not be spent twice).
    pub refresh_lock: tokio::sync::Mutex<()>,
    /// The CA that signs X.509-SVIDs.
    pub ca: crate::issuer::ca::Ca,
    pub limits: crate::limits::ratelimit::Limiters,
    /// Failed sign-ins per source address (issue 22).
    pub login_throttle: crate::limits::throttle::Throttle,
    /// SSO sign-in starts per source address (issue 31: each stores a state and fetches the
    /// IdP's discovery document), at the sign-in throttle's rate.
    pub sso_throttle: crate::limits::throttle::Throttle,
    /// The platforms' trust anchors (cloudA signers, cloudB roots) and the AIA cache.
    pub platform: crate::trust::anchors::PlatformTrust,
    /// The GeoIP database of `SVC_GEOIP_DB` (§3.10), reopened when the file changes.
    pub geoip: crate::geoip::GeoDb,
    /// Step 9's vendor token and lookup caches (§5.4).
    pub vendor_cache: crate::caches::vendor::VendorCache,
    /// Edge access tokens verified on this node (`caches::edge_tokens::Verified`).
    pub edge_tokens: crate::caches::edge_tokens::Verified,
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
        StartError(e.message)
    }
}

impl From<std::io::Error> for StartError {
    fn from(e: std::io::Error) -> Self {
        StartError(e.to_string())
    }
}

impl App {
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

    /// The upstream client for calls made for an entity of `rs`: through the proxy of the set's
    /// active routing (§3.17), else direct. A routing whose proxy cannot be used gives a client
    /// that fails every call (the call must not bypass the proxy). A routing not written by a
    /// caller holding everything refuses plain-`http` calls ([`crate::domain::Routing::trusted`]).
    pub fn upstream_for(&self, rs: Uuid) -> Arc<crate::upstream::Upstream> {
        let st = self.state();
        let Some(r) = st.routings.values().find(|r| r.meta.active && r.meta.rs == Some(rs)) else {
            return self.upstream.clone();
        };
        match self.routes.client(&self.cfg, &r.proxy_url, r.trusted) {
            Ok(u) => u,
            Err(e) => {
                tracing::warn!(routing = %r.meta.id, error = %e, "routing proxy unusable");
                self.routes
                    .client(&self.cfg, "http://127.0.0.1:0", false)
                    .unwrap_or_else(|_| self.upstream.clone())
            }
        }
    }

    /// What trust verifiers may use (narrower than the application: no storage).
    pub fn verify_cx(&self) -> crate::trust::VerifyCx<'_> {
        self.verify_cx_via(&self.upstream)
    }

    /// [`App::verify_cx`] with the upstream client of a routing ([`App::upstream_for`]).
    pub fn verify_cx_via<'a>(&'a self, upstream: &'a crate::upstream::Upstream) -> crate::trust::VerifyCx<'a> {
        crate::trust::VerifyCx {
            cfg: &self.cfg,
            upstream,
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
        // Kept edge tokens refer to the old ring's key objects: verified again under the new.
        self.edge_tokens.clear();
        Ok(())
    }
}
