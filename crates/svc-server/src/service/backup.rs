//! Backup and restore on the server host (issue 32; docs/OPERATIONS.md "Backup and restore"):
//! `svc admin backup --out` (SQLite: an online, consistent copy with a manifest), `svc admin
//! backup --verify` (a SQLite backup, or a PostgreSQL dump restored into a scratch database:
//! it restores, migrates to this version and every sealed value opens), `svc admin restore --in`
//! (SQLite, into a stopped service's data directory).
//!
//! The manifest (in the backup's `meta` table, `backup_manifest`, and printed) records the
//! format, the svc version and schema version, the time, the source, the id of the key the
//! secrets are sealed with (never the key) and the row counts of the copy, and authenticates
//! the copy: `mac` is an HMAC-SHA256, under a key derived from the at-rest key, of the rest of
//! the manifest and a digest of every row (issue 31: only the secrets are sealed, so without it
//! whoever could edit a backup file could give its own account SuperAdmin, and verify and
//! restore would take it).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::config::{Config, DatabaseUrl};
use crate::crypto::aead::{Cipher, key_id, kid_of};
use crate::store::backup::{MANIFEST_KEY, sqlite_in_use};
use crate::store::files::{create_private_file, data_dir};
use crate::store::sealed::{CHECK_KEY, SEALED, meta_label};
use crate::store::{Store, StoreError};

/// The manifest's `format`.
pub const FORMAT: &str = "svc-backup 1";

/// The manifest's MAC (see the module's doc): over the manifest without `mac` (its keys in
/// order, as serde_json writes them) and the copy's [`Store::content_digest`].
fn manifest_mac(key: &[u8; 32], manifest: &Value, digest: &[u8; 32]) -> String {
    use aws_lc_rs::{hkdf, hmac};
    let mut unsigned = manifest.clone();
    if let Some(m) = unsigned.as_object_mut() {
        m.remove("mac");
    }
    struct Len;
    impl hkdf::KeyType for Len {
        fn len(&self) -> usize {
            32
        }
    }
    let mut derived = [0u8; 32];
    hkdf::Salt::new(hkdf::HKDF_SHA256, b"svc backup")
        .extract(key)
        .expand(&[b"svc backup manifest mac v1"], Len)
        .and_then(|okm| okm.fill(&mut derived))
        .expect("HKDF-SHA256 of 32 bytes");
    let k = hmac::Key::new(hmac::HMAC_SHA256, &derived);
    let mut ctx = hmac::Context::with_key(&k);
    ctx.update(unsigned.to_string().as_bytes());
    ctx.update(b"\n");
    ctx.update(digest);
    crate::crypto::hex(ctx.sign().as_ref())
}

/// The at-rest key whose id is `kid`, among `keys`.
fn key_with_id<'k>(keys: &'k [[u8; 32]], kid: &str) -> Option<&'k [u8; 32]> {
    keys.iter().find(|k| key_id(k) == kid)
}

/// A failure: the message and whether the command line was wrong for this configuration (exit 2)
/// rather than the command failing (exit 1).
#[derive(Debug)]
pub struct Refusal {
    pub message: String,
    pub usage: bool,
}

impl Refusal {
    fn usage(m: impl Into<String>) -> Refusal {
        Refusal {
            message: m.into(),
            usage: true,
        }
    }
}

impl From<String> for Refusal {
    fn from(message: String) -> Refusal {
        Refusal { message, usage: false }
    }
}

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Refusal {
        Refusal::from(e.message)
    }
}

impl From<crate::app::StartError> for Refusal {
    fn from(e: crate::app::StartError) -> Refusal {
        Refusal::from(e.0)
    }
}

fn sqlite_path(cfg: &Config, what: &str) -> Result<PathBuf, Refusal> {
    match &cfg.database_url {
        DatabaseUrl::Sqlite(p) => Ok(p.clone()),
        DatabaseUrl::Postgres(_) => Err(Refusal::usage(format!(
            "{what} is SQLite's: on PostgreSQL use pg_dump -Fc / pg_restore (docs/OPERATIONS.md), and check a dump with \
             svc admin backup --verify DUMP"
        ))),
    }
}

/// Syncs a folder (a rename in it is durable).
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// `svc admin backup --out FILE`: a consistent copy of the running (or stopped) SQLite
/// database, mode 0600, with its manifest; returns the manifest.
pub async fn backup(cfg: &Config, out: &Path, force: bool) -> Result<Value, Refusal> {
    let db = sqlite_path(cfg, "svc admin backup --out")?;
    if out.exists() && !force {
        return Err(format!("{} exists: give another file, or --force to replace it", out.display()).into());
    }
    let keys = keys_for(cfg, None)?;
    let store = Store::open_existing(&cfg.database_url).await?;
    let dir = data_dir(out);
    let name = out.file_name().and_then(|n| n.to_str()).unwrap_or("backup");
    let partial = dir.join(format!(".{name}.partial-{}", std::process::id()));
    let _ = std::fs::remove_file(&partial);
    create_private_file(&partial).map_err(|e| format!("cannot create {}: {e}", partial.display()))?;
    let made = async {
        store.vacuum_into(&partial).await?;
        store.close().await;
        let copy = Store::open_file(&partial).await?;
        let check = copy.meta_get(CHECK_KEY).await?.unwrap_or_default();
        let (schema, _) = copy.schema_version().await?;
        let integrity = copy.integrity_check().await?;
        if integrity != "ok" {
            return Err(StoreError::other(format!(
                "the copy failed SQLite's integrity check: {integrity}"
            )));
        }
        let now = crate::clock::now_millis();
        let kid = kid_of(&check).unwrap_or_default().to_string();
        let key = key_with_id(&keys, &kid).ok_or_else(|| {
            StoreError::other(format!(
                "the database's secrets are sealed with key id {kid}, which the configuration does not hold"
            ))
        })?;
        let mut manifest = json!({
            "format": FORMAT,
            "svcVersion": env!("CARGO_PKG_VERSION"),
            "schemaVersion": schema,
            "createdAt": svc_api::Timestamp::from_millis(now).to_string(),
            "source": db.display().to_string(),
            "keyId": kid,
            "counts": copy.counts().await?,
        });
        let mac = manifest_mac(key, &manifest, &copy.content_digest().await?);
        manifest["mac"] = json!(mac);
        copy.meta_put(MANIFEST_KEY, &manifest.to_string()).await?;
        copy.close().await;
        Ok(manifest)
    }
    .await;
    let manifest = match made {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e.into());
        }
    };
    std::fs::File::open(&partial)
        .and_then(|f| f.sync_all())
        .map_err(|e| format!("{}: {e}", partial.display()))?;
    std::fs::rename(&partial, out).map_err(|e| format!("cannot move the backup to {}: {e}", out.display()))?;
    sync_dir(&dir);
    Ok(manifest)
}

/// What a verified backup holds.
#[derive(Debug)]
pub struct Verified {
    pub manifest: Option<Value>,
    pub key_id: String,
    /// The schema version of the backup as it was (before this binary migrated a copy).
    pub schema_version: i64,
    pub counts: BTreeMap<String, i64>,
    pub sealed: usize,
}

impl Verified {
    pub fn summary(&self) -> Value {
        json!({"schemaVersion": self.schema_version, "keyId": self.key_id, "sealedValues": self.sealed,
               "counts": self.counts, "manifest": self.manifest})
    }
}

/// The keys to open a backup with: a key file given, else the configuration's (environment, or
/// the key file beside the configured SQLite database when it exists).
pub fn keys_for(cfg: &Config, key_file: Option<&Path>) -> Result<Vec<[u8; 32]>, Refusal> {
    if let Some(f) = key_file {
        return Ok(crate::service::rekey::read_key_file(f)?);
    }
    if let Some(k) = cfg.encryption_key {
        let mut keys = vec![k];
        keys.extend(cfg.encryption_key_previous);
        return Ok(keys);
    }
    if let DatabaseUrl::Sqlite(db) = &cfg.database_url {
        let f = crate::service::rekey::key_file_path(db);
        if f.exists() {
            return Ok(crate::service::rekey::read_key_file(&f)?);
        }
    }
    Err(Refusal::usage(
        "no key to open the backup with: give its key file (--key-file FILE) or set SVC_ENCRYPTION_KEY",
    ))
}

/// Every sealed value of `store` opened with `keys`, and the state, the key ring and the CA
/// loaded as a start would: the number of sealed values.
async fn open_everything(cfg: &Config, store: &Store, keys: &[[u8; 32]]) -> Result<(String, usize), Refusal> {
    let cipher = Cipher::with_keys(keys);
    let check = store
        .meta_get(CHECK_KEY)
        .await?
        .ok_or_else(|| "no encryption check value: not an svc database".to_string())?;
    let kid = kid_of(&check).unwrap_or_default().to_string();
    if !cipher.holds(&kid) {
        return Err(format!(
            "the backup's secrets are sealed with key id {kid}; the keys given are key id {}: give its key file \
             (--key-file FILE) or SVC_ENCRYPTION_KEY",
            cipher.kids().join(", ")
        )
        .into());
    }
    cipher.set_active(&kid);
    cipher
        .open(&check, &meta_label(CHECK_KEY))
        .map_err(|e| format!("the check value does not open: {e}"))?;
    let mut n = 0;
    for c in SEALED {
        for v in store.all_sealed(c).await? {
            cipher
                .open(&v.value, &v.label())
                .map_err(|e| format!("{} does not open: {e}", v.place()))?;
            n += 1;
        }
    }
    crate::service::load::load_state(store, &cipher).await?;
    crate::issuer::KeyRing::from_rows(&store.load_keys().await?, &cipher)?;
    crate::issuer::ca::load(cfg, store, &cipher).await?;
    Ok((kid, n))
}

/// A folder under the system's temporary one, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, Refusal> {
        let p = std::env::temp_dir().join(format!(
            "svc-verify-{}",
            crate::crypto::hex(&crate::crypto::random_bytes::<8>())
        ));
        let mut b = std::fs::DirBuilder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            b.mode(0o700);
        }
        b.create(&p)
            .map_err(|e| format!("cannot create {}: {e}", p.display()))?;
        Ok(Scratch(p))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies `from` into a new file `to`, mode 0600.
fn copy_private(from: &Path, to: &Path) -> Result<(), Refusal> {
    create_private_file(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let mut src = std::fs::File::open(from).map_err(|e| format!("{}: {e}", from.display()))?;
    let mut dst = std::fs::OpenOptions::new()
        .write(true)
        .open(to)
        .map_err(|e| format!("{}: {e}", to.display()))?;
    std::io::copy(&mut src, &mut dst).map_err(|e| format!("copying {}: {e}", from.display()))?;
    dst.flush().ok();
    dst.sync_all().map_err(|e| format!("{}: {e}", to.display()))?;
    Ok(())
}

/// A SQLite backup: its manifest, SQLite's check, then a copy migrated to this version whose
/// every sealed value opens and whose counts match the manifest's.
async fn verify_sqlite(cfg: &Config, file: &Path, keys: &[[u8; 32]]) -> Result<Verified, Refusal> {
    let f = Store::open_file(file).await?;
    let manifest: Option<Value> = f
        .meta_get(MANIFEST_KEY)
        .await
        .ok()
        .flatten()
        .and_then(|m| serde_json::from_str(&m).ok());
    let Some(manifest) = manifest.filter(|m| m["format"] == FORMAT) else {
        return Err(format!(
            "{} has no backup manifest: it was not made by svc admin backup",
            file.display()
        )
        .into());
    };
    let (schema, latest) = f.schema_version().await?;
    let schema = schema.ok_or_else(|| format!("{} holds no svc schema", file.display()))?;
    if schema > latest {
        return Err(format!(
            "{} is a backup of a newer svc (schema version {schema}, svc {}): this svc {} knows schema version {latest}; \
             restore it with that version or a newer one",
            file.display(),
            manifest["svcVersion"].as_str().unwrap_or("?"),
            env!("CARGO_PKG_VERSION")
        )
        .into());
    }
    let integrity = f.integrity_check().await?;
    let digest = f.content_digest().await;
    f.close().await;
    if integrity != "ok" {
        return Err(format!("{} fails SQLite's integrity check: {integrity}", file.display()).into());
    }
    let kid = manifest["keyId"].as_str().unwrap_or_default();
    let key = key_with_id(keys, kid).ok_or_else(|| {
        format!("the backup was made under key id {kid}; the keys given are not it: give its key file (--key-file FILE) or SVC_ENCRYPTION_KEY")
    })?;
    if manifest["mac"].as_str() != Some(manifest_mac(key, &manifest, &digest?).as_str()) {
        return Err(format!(
            "{} does not match its manifest's MAC: it was changed after svc admin backup made it",
            file.display()
        )
        .into());
    }
    let scratch = Scratch::new()?;
    let copy = scratch.0.join("svc.db");
    copy_private(file, &copy)?;
    let url = DatabaseUrl::Sqlite(copy);
    let store = Store::open(&url).await?;
    let result = async {
        let (key_id, sealed) = open_everything(cfg, &store, keys).await?;
        let counts = store.counts().await?;
        if let Some(recorded) = manifest["counts"].as_object() {
            for (k, v) in recorded {
                let now = counts.get(k).copied().unwrap_or(0);
                if v.as_i64() != Some(now) {
                    return Err(Refusal::from(format!(
                        "the backup holds {now} {k}, its manifest says {v}: it is not the copy the manifest describes"
                    )));
                }
            }
        }
        Ok(Verified {
            manifest: Some(manifest.clone()),
            key_id,
            schema_version: schema,
            counts,
            sealed,
        })
    }
    .await;
    store.close().await;
    result
}

/// Which kind of file a backup is.
enum Kind {
    Sqlite,
    PgCustom,
    PgPlain,
}

fn kind_of(file: &Path) -> Result<Kind, Refusal> {
    use std::io::Read;
    let mut head = [0u8; 4096];
    let n = std::fs::File::open(file)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let head = &head[..n];
    if head.starts_with(b"SQLite format 3\0") {
        Ok(Kind::Sqlite)
    } else if head.starts_with(b"PGDMP") {
        Ok(Kind::PgCustom)
    } else if String::from_utf8_lossy(head).contains("PostgreSQL database dump") {
        Ok(Kind::PgPlain)
    } else {
        Err(format!(
            "{} is neither a backup of svc admin backup nor a PostgreSQL dump (pg_dump -Fc, or plain SQL)",
            file.display()
        )
        .into())
    }
}

/// `svc admin backup --verify FILE`.
pub async fn verify(cfg: &Config, file: &Path, key_file: Option<&Path>) -> Result<Verified, Refusal> {
    let keys = keys_for(cfg, key_file)?;
    match kind_of(file)? {
        Kind::Sqlite => verify_sqlite(cfg, file, &keys).await,
        k => verify_dump(cfg, file, matches!(k, Kind::PgCustom), &keys).await,
    }
}

/// A PostgreSQL dump restored (`pg_restore`, or `psql` for plain SQL) into a scratch database on
/// the server of `SVC_DATABASE_URL`, migrated to this version, every sealed value opened; the
/// scratch database is dropped.
async fn verify_dump(cfg: &Config, file: &Path, custom: bool, keys: &[[u8; 32]]) -> Result<Verified, Refusal> {
    let DatabaseUrl::Postgres(admin) = &cfg.database_url else {
        return Err(Refusal::usage(
            "a PostgreSQL dump is checked on a PostgreSQL server: set SVC_DATABASE_URL to one (a scratch database is \
             made there, and dropped)",
        ));
    };
    let (scratch, name) = crate::store::backup::create_scratch_database(admin).await?;
    let restored = restore_dump(file, custom, &scratch).await;
    let result = match restored {
        Err(e) => Err(e),
        Ok(()) => {
            let url = DatabaseUrl::Postgres(scratch.clone());
            let store = Store::open(&url).await;
            match store {
                Err(e) => Err(e.into()),
                Ok(store) => {
                    let r = async {
                        let (schema, _) = store.schema_version().await?;
                        let (key_id, sealed) = open_everything(cfg, &store, keys).await?;
                        Ok::<_, Refusal>(Verified {
                            manifest: None,
                            key_id,
                            schema_version: schema.unwrap_or(0),
                            counts: store.counts().await?,
                            sealed,
                        })
                    }
                    .await;
                    store.close().await;
                    r
                }
            }
        }
    };
    if let Err(e) = crate::store::backup::drop_scratch_database(admin, &name).await {
        tracing::warn!(database = %name, error = %e, "the scratch database was not dropped");
    }
    result
}

/// Runs `pg_restore` (custom format) or `psql` (plain SQL) into `url`.
async fn restore_dump(file: &Path, custom: bool, url: &str) -> Result<(), Refusal> {
    let (tool, args): (&str, Vec<String>) = if custom {
        (
            "pg_restore",
            vec![
                "--no-owner".into(),
                "--no-privileges".into(),
                "--exit-on-error".into(),
                "--dbname".into(),
                url.into(),
                file.display().to_string(),
            ],
        )
    } else {
        (
            "psql",
            vec![
                "--quiet".into(),
                "--no-psqlrc".into(),
                "--set".into(),
                "ON_ERROR_STOP=1".into(),
                "--dbname".into(),
                url.into(),
                "--file".into(),
                file.display().to_string(),
            ],
        )
    };
    let out = tokio::process::Command::new(tool)
        .args(&args)
        .output()
        .await
        .map_err(|e| format!("cannot run {tool} (install PostgreSQL's client tools): {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{tool} could not restore {}: {}", file.display(), err.trim()).into());
    }
    Ok(())
}

/// `svc admin restore --in FILE`: into the configured SQLite path, of a stopped service; the
/// database there (with `--force`) and a different key file are moved aside, not deleted.
/// Returns what was done, a line each.
pub async fn restore(cfg: &Config, input: &Path, force: bool, key_file: Option<&Path>) -> Result<Vec<String>, Refusal> {
    let db = sqlite_path(cfg, "svc admin restore")?;
    if !matches!(kind_of(input)?, Kind::Sqlite) {
        return Err(format!(
            "{} is a PostgreSQL dump: restore it with pg_restore into the PostgreSQL database (docs/OPERATIONS.md)",
            input.display()
        )
        .into());
    }
    let keys = keys_for(cfg, key_file)?;
    let verified = verify_sqlite(cfg, input, &keys).await?;
    let mut done = vec![format!(
        "verified {}: schema version {}, key id {}, {} sealed values open, {} entities",
        input.display(),
        verified.schema_version,
        verified.key_id,
        verified.sealed,
        verified
            .counts
            .iter()
            .filter(|(k, _)| k.starts_with("entities."))
            .map(|(_, n)| n)
            .sum::<i64>()
    )];
    // Every check before any change.
    let dir = data_dir(&db);
    if !dir.exists() && dir.parent().is_some_and(|p| !p.as_os_str().is_empty() && !p.exists()) {
        return Err(format!("data directory {} does not exist, nor does its parent", dir.display()).into());
    }
    if sqlite_in_use(&db).await? {
        return Err(format!(
            "{} is open in another process (a running server): stop the service before restoring",
            db.display()
        )
        .into());
    }
    if db.exists() && !force {
        return Err(format!(
            "a database exists at {}: restore replaces it only with --force (it is then kept beside, renamed)",
            db.display()
        )
        .into());
    }
    // The key file the restored service will start with (SQLite without SVC_ENCRYPTION_KEY).
    let install_key = match (key_file, cfg.encryption_key) {
        (Some(f), None) => {
            let target = crate::service::rekey::key_file_path(&db);
            let given = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
            match std::fs::read_to_string(&target) {
                Ok(existing) if existing.trim() == given.trim() => None,
                Ok(_) if !force => {
                    return Err(format!(
                        "{} holds another key than --key-file: restore replaces it only with --force (it is then kept beside, renamed)",
                        target.display()
                    )
                    .into());
                }
                _ => Some(target),
            }
        }
        _ => None,
    };
    let stamp = crate::clock::now_millis();
    if !dir.exists() {
        let mut b = std::fs::DirBuilder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            b.mode(0o700);
        }
        b.create(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    if db.exists() {
        let aside = PathBuf::from(format!("{}.before-restore-{stamp}", db.display()));
        for suffix in ["-wal", "-shm", ""] {
            let from = PathBuf::from(format!("{}{suffix}", db.display()));
            if from.exists() {
                let to = PathBuf::from(format!("{}{suffix}", aside.display()));
                std::fs::rename(&from, &to).map_err(|e| format!("cannot move {} aside: {e}", from.display()))?;
            }
        }
        done.push(format!("moved the database that was there to {}", aside.display()));
    }
    let partial = dir.join(format!(".svc.db.restoring-{}", std::process::id()));
    let _ = std::fs::remove_file(&partial);
    copy_private(input, &partial)?;
    std::fs::rename(&partial, &db)
        .map_err(|e| format!("cannot move the restored database to {}: {e}", db.display()))?;
    sync_dir(&dir);
    done.push(format!("restored {} to {}", input.display(), db.display()));
    if let Some(target) = install_key {
        if target.exists() {
            let aside = PathBuf::from(format!("{}.before-restore-{stamp}", target.display()));
            std::fs::rename(&target, &aside).map_err(|e| format!("cannot move {} aside: {e}", target.display()))?;
            done.push(format!("moved the key file that was there to {}", aside.display()));
        }
        crate::service::rekey::write_key_file(&target, &keys, false)?;
        done.push(format!("installed the backup's key file at {}", target.display()));
    }
    Ok(done)
}
