//! Start-up: the configuration's files, storage and its migrations, the encryption key (given,
//! or generated beside the SQLite database on first start) proven against the stored check
//! value, the key ring, the state, the X.509 CA, and the first-start bootstrap.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicI64;

use arc_swap::ArcSwap;

use crate::app::{App, Inner, StartError};
use crate::config::{Config, DatabaseUrl};
use crate::crypto::aead::Cipher;
use crate::crypto::{b64std, b64std_decode, random_bytes};
use crate::events::EventSink;
use crate::issuer::{KeyRing, keys};
use crate::store::Store;

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
    let events = EventSink::new(
        store.clone(),
        crate::events::Durability {
            fail_open: cfg.events_fail_open,
            commit_timeout: std::time::Duration::from_millis(cfg.events_commit_timeout_ms.into()),
        },
    );
    let streams = crate::events::streams::Streams::new(&store, store.stream_cursors().await?);
    let upstream = Arc::new(crate::upstream::Upstream::new(&cfg)?);
    let limits = crate::edge::ratelimit::Limiters::new(&cfg);
    let login_throttle = crate::service::throttle::Throttle::new(cfg.login_failures_per_minute);
    let geoip_db = cfg.geoip_db.clone();
    let app = App(Arc::new(Inner {
        cfg,
        clock: Default::default(),
        store,
        cipher,
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
