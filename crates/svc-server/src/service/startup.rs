//! Start-up: the configuration's files, storage and its migrations, the encryption key (given,
//! or generated beside the SQLite database on first start) proven against the stored check
//! value, the key ring, the state, the X.509 CA, and the first-start bootstrap.

use std::sync::Arc;
use std::sync::atomic::AtomicI64;

use arc_swap::ArcSwap;

use crate::app::{App, Inner, StartError};
use crate::config::Config;
use crate::crypto::random_bytes;
use crate::events::EventSink;
use crate::issuer::{KeyRing, keys};
use crate::store::Store;

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

/// `App`'s constructors live with start-up, so `app` (the container) needs nothing of `service`.
impl App {
    /// Opens storage and loads everything; does not start background jobs or listen
    /// ([`crate::service::startup`]).
    pub async fn open(cfg: Config) -> Result<App, StartError> {
        open(cfg, false).await
    }

    /// A host command's open (`svc admin …`): the database must exist and hold this binary's
    /// schema; nothing is created or migrated.
    pub async fn open_existing(cfg: Config) -> Result<App, StartError> {
        open(cfg, true).await
    }
}

/// Opens storage and loads everything; does not start background jobs or listen. `existing`:
/// a host command's open (the database must exist at this binary's schema: nothing is created
/// or migrated); otherwise `serve`'s (created on first start, migrated).
pub async fn open(cfg: Config, existing: bool) -> Result<App, StartError> {
    // Configuration first: an unusable trust bundle stops the start before storage is touched.
    let platform = crate::trust::anchors::PlatformTrust::load(&cfg)?;
    let store = if existing {
        Store::open_existing(&cfg.database_url).await
    } else {
        Store::open(&cfg.database_url).await
    }
    .map_err(|e| StartError(format!("database: {e}")))?;
    // The first start records a check value; later starts prove they hold its key, and seal
    // with it (issue 32: at-rest key rotation).
    let (cipher, key_source) = crate::service::rekey::open_cipher(&cfg, &store).await?;
    let now = crate::clock::now_millis();
    keys::ensure(&store, &cipher, now).await?;
    let ring = KeyRing::from_rows(&store.load_keys().await?, &cipher)?;
    let last_change = store.last_change().await?;
    let state = crate::service::load::load_state(&store, &cipher).await?;
    let ca = crate::issuer::ca::load(&cfg, &store, &cipher)
        .await
        .map_err(StartError)?;
    let events = EventSink::new(
        store.clone(),
        crate::events::Durability {
            fail_open: cfg.events_fail_open,
            commit_timeout: std::time::Duration::from_millis(cfg.events_commit_timeout_ms.into()),
        },
    );
    let streams = crate::events::streams::Streams::new(&store, store.stream_cursors().await?);
    let upstream = Arc::new(crate::upstream::Upstream::new(&cfg)?);
    let limits = crate::limits::ratelimit::Limiters::new(&cfg);
    let login_throttle = crate::limits::throttle::Throttle::new(cfg.login_failures_per_minute);
    let sso_throttle = crate::limits::throttle::Throttle::new(cfg.login_failures_per_minute);
    let geoip_db = cfg.geoip_db.clone();
    let app = App(Arc::new(Inner {
        cfg,
        clock: Default::default(),
        store,
        cipher,
        key_source,
        started_at: now,
        node_left: tokio::sync::Mutex::new(false),
        state: ArcSwap::from_pointee(state),
        keys: ArcSwap::from_pointee(ring),
        write_lock: tokio::sync::Mutex::new(()),
        write_queue: tokio::sync::Mutex::new(()),
        events,
        streams,
        last_change: AtomicI64::new(last_change),
        node_id: crate::crypto::hex(&random_bytes::<8>()),
        upstream,
        routes: Default::default(),
        key_cache: Default::default(),
        credential_cache: Default::default(),
        refresh_lock: tokio::sync::Mutex::new(()),
        ca,
        limits,
        login_throttle,
        sso_throttle,
        platform,
        geoip: crate::geoip::GeoDb::new(geoip_db),
        vendor_cache: Default::default(),
        edge_tokens: Default::default(),
    }));
    crate::service::bootstrap::first_start(&app)
        .await
        .map_err(|e| StartError(format!("first start: {e}")))?;
    Ok(app)
}
