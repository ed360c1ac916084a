//! The at-rest encryption keys (issue 32; docs/OPERATIONS.md "Rotating the encryption key"):
//! where a node's keys come from, which one seals, and `svc admin keys rotate-encryption`.
//!
//! Keys come from `SVC_ENCRYPTION_KEY` (and, during a rotation, `SVC_ENCRYPTION_KEY_PREVIOUS`), or
//! on SQLite without it from the key file beside the database (one base64 key a line, the newest
//! first). The database says which key seals: its check value (`meta.encryption_check`) is sealed
//! under it, and every node seals with the key the check value names, whatever key it was given
//! first, so nodes given a new key keep sealing with the old one until the rotation switches. A
//! node that does not hold the key of the check value does not start; one that learns of a key
//! it does not hold while running stops writing (`Cipher::stale`).
//!
//! A rotation: (1) every running node holds the new key (the key file is written first and every
//! node reads it again; with environment keys the operator restarts the nodes with both), checked
//! against the nodes' rows; (2) the check value is sealed under the new key, recorded with the
//! rotation, in one transaction with a change-log row: every node seals with the new key from
//! its next refresh, and the command waits until each says it does; (3) every sealed value not
//! under the new key is opened and sealed again, in batches of short transactions, each value
//! replaced only if unchanged since read; passes repeat until one finds none; (4) the rotation is
//! recorded as done, the old key leaves the key file and every node forgets it. Interrupted, the
//! command is run again and goes on where it stopped.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::app::{App, StartError};
use crate::config::{Config, DatabaseUrl, KeySource};
use crate::crypto::aead::{Cipher, key_id, kid_of};
use crate::crypto::{b64std, b64std_decode, random_bytes};
use crate::store::sealed::{CHECK_KEY, ROTATION_KEY, SEALED, meta_label};
use crate::store::{Store, StoreError};

/// What the check value seals.
const KEY_CHECK: &str = "svc-encryption-key-check";

pub fn key_file_path(db: &Path) -> PathBuf {
    crate::store::files::key_file(db)
}

/// The keys of the configuration, the newest first.
pub fn configured_keys(cfg: &Config) -> Result<(Vec<[u8; 32]>, KeySource), StartError> {
    if let Some(k) = cfg.encryption_key {
        let mut keys = vec![k];
        keys.extend(cfg.encryption_key_previous);
        return Ok((keys, KeySource::Environment));
    }
    let DatabaseUrl::Sqlite(db) = &cfg.database_url else {
        return Err(StartError("SVC_ENCRYPTION_KEY is required with PostgreSQL".into()));
    };
    let path = key_file_path(db);
    if path.exists() {
        return Ok((read_key_file(&path)?, KeySource::File(path)));
    }
    let key = random_bytes::<32>();
    write_key_file(&path, &[key], false)?;
    tracing::info!(path = %path.display(), "generated a new encryption key file");
    Ok((vec![key], KeySource::File(path)))
}

/// The keys of a key file: one standard-base64 key of 32 bytes a line, the newest first.
pub fn read_key_file(path: &Path) -> Result<Vec<[u8; 32]>, StartError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| StartError(format!("cannot read key file {}: {e}", path.display())))?;
    let mut keys = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let bytes = b64std_decode(line).filter(|b| b.len() == 32).ok_or_else(|| {
            StartError(format!(
                "key file {} does not hold base64 of 32 bytes a line",
                path.display()
            ))
        })?;
        let mut k = [0u8; 32];
        k.copy_from_slice(&bytes);
        keys.push(k);
    }
    if keys.is_empty() {
        return Err(StartError(format!("key file {} holds no key", path.display())));
    }
    Ok(keys)
}

/// Writes a key file, mode 0600: a new one (`replace` false: it must not exist) or in place of
/// the old, atomically (a temporary file renamed over it, then the folder synced).
pub fn write_key_file(path: &Path, keys: &[[u8; 32]], replace: bool) -> Result<(), StartError> {
    use std::io::Write;
    let text: String = keys.iter().map(|k| format!("{}\n", b64std(k))).collect();
    let target = if replace {
        path.with_extension(format!("key.tmp-{}", std::process::id()))
    } else {
        path.to_path_buf()
    };
    let _ = replace.then(|| std::fs::remove_file(&target));
    crate::store::files::create_private_file(&target)
        .map_err(|e| StartError(format!("cannot create key file {}: {e}", target.display())))?;
    let mut f = std::fs::OpenOptions::new().write(true).open(&target)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    if replace {
        std::fs::rename(&target, path)
            .map_err(|e| StartError(format!("cannot replace key file {}: {e}", path.display())))?;
    }
    if let Ok(dir) = std::fs::File::open(crate::store::files::data_dir(path)) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// The rotation on record (`meta.encryption_rotation`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rotation {
    pub from: String,
    pub to: String,
    pub done: bool,
    pub started_at: i64,
    pub finished_at: Option<i64>,
}

impl Rotation {
    fn parse(text: &str) -> Option<Rotation> {
        let v: Value = serde_json::from_str(text).ok()?;
        Some(Rotation {
            from: v["from"].as_str()?.to_string(),
            to: v["to"].as_str()?.to_string(),
            done: v["state"] == "done",
            started_at: v["startedAt"].as_i64().unwrap_or(0),
            finished_at: v["finishedAt"].as_i64(),
        })
    }

    fn json(&self) -> String {
        json!({"from": self.from, "to": self.to, "state": if self.done { "done" } else { "rewrapping" },
               "startedAt": self.started_at, "finishedAt": self.finished_at})
        .to_string()
    }
}

pub async fn rotation(store: &Store) -> Result<Option<Rotation>, StoreError> {
    Ok(store.meta_get(ROTATION_KEY).await?.as_deref().and_then(Rotation::parse))
}

fn when(ms: i64) -> String {
    svc_api::Timestamp::from_millis(ms).to_string()
}

/// Start-up: the cipher of the configured keys, sealing with the database's key (on first start
/// the newest configured key, recorded by the check value). Refuses a node that does not hold
/// the database's key, or that lacks the old key while a rotation is under way.
pub async fn open_cipher(cfg: &Config, store: &Store) -> Result<(Cipher, KeySource), StartError> {
    let (keys, source) = configured_keys(cfg)?;
    let cipher = Cipher::with_keys(&keys);
    let check = store
        .meta_init(CHECK_KEY, &cipher.seal(KEY_CHECK.as_bytes(), &meta_label(CHECK_KEY)))
        .await?;
    let rotation = rotation(store).await?;
    let kid = kid_of(&check).unwrap_or_default().to_string();
    if !cipher.holds(&kid) {
        let held = cipher.kids().join(", ");
        return Err(StartError(match &rotation {
            Some(r) if r.to == kid => format!(
                "the database's secrets were re-encrypted with key id {kid} (an at-rest key rotation from key id {} \
                 started {}); this node holds key id {held} only: set SVC_ENCRYPTION_KEY to the new key (docs/OPERATIONS.md)",
                r.from,
                when(r.started_at)
            ),
            _ => format!(
                "the encryption key (id {held}) is not the key this database was encrypted with (id {kid}); set \
                 SVC_ENCRYPTION_KEY to the original key"
            ),
        }));
    }
    match cipher.open(&check, &meta_label(CHECK_KEY)) {
        Ok(v) if v == KEY_CHECK.as_bytes() => {}
        _ => {
            return Err(StartError(format!(
                "the encryption key id {kid} does not open this database's check value; set SVC_ENCRYPTION_KEY to the original key"
            )));
        }
    }
    cipher.set_active(&kid);
    match &rotation {
        Some(r) if !r.done && !cipher.holds(&r.from) => {
            return Err(StartError(format!(
                "an at-rest key rotation from key id {} to key id {} is under way: this node needs both keys \
                 (SVC_ENCRYPTION_KEY the new, SVC_ENCRYPTION_KEY_PREVIOUS the old) until it is done",
                r.from, r.to
            )));
        }
        Some(r) if r.done && cipher.holds(&r.from) => {
            tracing::warn!(
                key_id = %r.from,
                "this encryption key was retired by a rotation: remove it (SVC_ENCRYPTION_KEY_PREVIOUS) from the configuration"
            );
            cipher.forget(&r.from);
        }
        _ => {}
    }
    let newest = key_id(&keys[0]);
    if newest != kid {
        tracing::warn!(
            new = %newest,
            sealing = %kid,
            "SVC_ENCRYPTION_KEY is not in use yet: secrets are sealed with the previous key until `svc admin keys rotate-encryption` runs"
        );
    }
    Ok((cipher, source))
}

/// A running node learns of a rotation's step (a change-log row `encryption`): reads its key file
/// again, seals with the database's key (or stops writing when it does not hold it), forgets a
/// retired key, and says so in its row of `nodes`.
pub async fn adopt(app: &App) -> Result<(), String> {
    if let KeySource::File(path) = &app.key_source {
        let keys = read_key_file(path).map_err(|e| e.0)?;
        app.cipher.replace(&keys, &app.cipher.kid());
    }
    let check = app
        .store
        .meta_get(CHECK_KEY)
        .await
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    let kid = kid_of(&check).unwrap_or_default();
    if app.cipher.set_active(kid) {
        if app.cipher.stale() {
            tracing::info!(key_id = %kid, "this node holds the database's encryption key again: writing");
        }
        app.cipher.set_stale(false);
    } else {
        tracing::error!(
            key_id = %kid,
            held = %app.cipher.kids().join(","),
            "the database's secrets are sealed with an encryption key this node does not hold: refusing writes until restarted with it"
        );
        app.cipher.set_stale(true);
    }
    if let Some(r) = rotation(&app.store).await.map_err(|e| e.to_string())?
        && r.done
    {
        app.cipher.forget(&r.from);
    }
    // On a task of its own: this may run inside a write unit's transaction (its catch-up), and on
    // SQLite the row's write would wait for that very transaction.
    let node = app.clone();
    tokio::spawn(async move { crate::service::nodes::announce(&node).await });
    Ok(())
}

/// How long the command waits, by default, for every running node to hold, then to seal with,
/// the new key.
pub const NODE_WAIT: Duration = Duration::from_secs(20);
/// Values re-sealed per transaction.
const BATCH: usize = 200;

/// What a rotation did.
#[derive(Debug, Default)]
pub struct Report {
    pub from: String,
    pub to: String,
    pub rewrapped: u64,
    pub passes: u32,
    pub took: Duration,
    pub already: bool,
}

/// `svc admin keys rotate-encryption` on an [`App`] opened by the command (not serving). `say`
/// gets a line per step.
pub async fn rotate(app: &App, wait: Duration, say: &dyn Fn(String)) -> Result<Report, String> {
    let started = Instant::now();
    let store = &app.store;
    let check = store
        .meta_get(CHECK_KEY)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the database has no encryption check value")?;
    let current = kid_of(&check).unwrap_or_default().to_string();
    let on_record = rotation(store).await.map_err(|e| e.to_string())?;
    // The key to rotate to.
    let target = match (&app.key_source, &on_record) {
        (_, Some(r)) if !r.done && r.to == current => {
            say(format!(
                "continuing the rotation from key id {} to key id {} started {}",
                r.from,
                r.to,
                when(r.started_at)
            ));
            r.to.clone()
        }
        (KeySource::Environment, _) => {
            let newest = app
                .cfg
                .encryption_key
                .map(|k| key_id(&k))
                .ok_or("SVC_ENCRYPTION_KEY is not set")?;
            if newest == current {
                let left = not_under(store, &current).await?;
                if left == 0 {
                    return Ok(Report {
                        from: current.clone(),
                        to: current,
                        already: true,
                        took: started.elapsed(),
                        ..Default::default()
                    });
                }
            }
            newest
        }
        (KeySource::File(path), _) => {
            // A new key, first in the file, the old ones kept until the rotation is done; a key
            // an earlier run put there and never switched to is used again.
            let mut keys = read_key_file(path).map_err(|e| e.0)?;
            if key_id(&keys[0]) != current {
                let pending = key_id(&keys[0]);
                app.cipher.replace(&keys, &current);
                store.note_encryption(None).await.map_err(|e| e.to_string())?;
                say(format!(
                    "using key id {pending}, which an earlier run put into {}",
                    path.display()
                ));
                pending
            } else {
                rotate_in_new_key(app, path, &mut keys, &current, say).await?
            }
        }
    };
    if !app.cipher.holds(&target) {
        return Err(format!("this command does not hold key id {target}"));
    }
    let mut from = on_record
        .as_ref()
        .filter(|r| !r.done && r.to == target)
        .map(|r| r.from.clone())
        .unwrap_or_else(|| current.clone());
    // (1) Every running node holds the new key.
    wait_for_nodes(store, wait, &format!("hold key id {target}"), |n| {
        n.key_ids.split(',').any(|k| k == target)
    })
    .await?;
    // (2) The switch.
    if current != target {
        from = current.clone();
        app.cipher.set_active(&target);
        let new_check = app.cipher.seal(KEY_CHECK.as_bytes(), &meta_label(CHECK_KEY));
        let r = Rotation {
            from: current.clone(),
            to: target.clone(),
            done: false,
            started_at: crate::clock::now_millis(),
            finished_at: None,
        };
        if !store
            .switch_encryption(&check, &new_check, &r.json())
            .await
            .map_err(|e| e.to_string())?
        {
            return Err("the check value changed meanwhile: another rotation is running".into());
        }
        say(format!("the database seals with key id {target} from now on"));
    }
    app.cipher.set_active(&target);
    wait_for_nodes(store, wait, &format!("seal with key id {target}"), |n| {
        n.active_key == target
    })
    .await?;
    // (3) Every value again under the new key, until a pass finds none.
    let mut rewrapped = 0u64;
    let mut passes = 0;
    loop {
        passes += 1;
        let mut found = 0u64;
        for c in SEALED {
            loop {
                let batch = store
                    .sealed_not_under(c, &target, BATCH)
                    .await
                    .map_err(|e| e.to_string())?;
                if batch.is_empty() {
                    break;
                }
                found += batch.len() as u64;
                let mut out = Vec::with_capacity(batch.len());
                for v in batch {
                    let plain = app
                        .cipher
                        .open(&v.value, &v.label())
                        .map_err(|e| format!("cannot re-encrypt {}: {e}", v.place()))?;
                    let sealed = app.cipher.seal(&plain, &v.label());
                    out.push((v, sealed));
                }
                rewrapped += store.replace_sealed(&out).await.map_err(|e| e.to_string())? as u64;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        if found == 0 {
            break;
        }
        say(format!(
            "pass {passes}: {found} values sealed again under key id {target}"
        ));
    }
    // (4) Done: the old key retires.
    let left = not_under(store, &target).await?;
    if left != 0 {
        return Err(format!(
            "{left} sealed values are still under another key: run the command again"
        ));
    }
    let r = Rotation {
        from: from.clone(),
        to: target.clone(),
        done: true,
        started_at: on_record
            .as_ref()
            .filter(|r| r.to == target)
            .map_or(crate::clock::now_millis(), |r| r.started_at),
        finished_at: Some(crate::clock::now_millis()),
    };
    if let KeySource::File(path) = &app.key_source {
        let keys = read_key_file(path).map_err(|e| e.0)?;
        let kept: Vec<[u8; 32]> = keys.into_iter().filter(|k| key_id(k) == target).collect();
        write_key_file(path, &kept, true).map_err(|e| e.0)?;
    }
    store
        .note_encryption(Some(&r.json()))
        .await
        .map_err(|e| e.to_string())?;
    Ok(Report {
        from,
        to: target,
        rewrapped,
        passes,
        took: started.elapsed(),
        already: false,
    })
}

/// Puts a new key first into the key file (the old ones kept) and has the nodes read it; its id.
async fn rotate_in_new_key(
    app: &App,
    path: &Path,
    keys: &mut Vec<[u8; 32]>,
    current: &str,
    say: &dyn Fn(String),
) -> Result<String, String> {
    let new = random_bytes::<32>();
    keys.insert(0, new);
    write_key_file(path, keys, true).map_err(|e| e.0)?;
    app.cipher.replace(keys, current);
    say(format!(
        "generated key id {} into {} (key id {current} kept until the rotation is done)",
        key_id(&new),
        path.display()
    ));
    app.store.note_encryption(None).await.map_err(|e| e.to_string())?;
    Ok(key_id(&new))
}

/// Sealed values under another key than `kid`.
async fn not_under(store: &Store, kid: &str) -> Result<u64, String> {
    let counts = store.sealed_counts().await.map_err(|e| e.to_string())?;
    Ok(counts.iter().filter(|(k, _)| *k != kid).map(|(_, n)| n).sum())
}

/// Waits until every node seen in the last 15 s satisfies `ok` (at most `wait`); the error names
/// the nodes that do not.
async fn wait_for_nodes(
    store: &Store,
    wait: Duration,
    what: &str,
    ok: impl Fn(&crate::store::NodeRow) -> bool,
) -> Result<(), String> {
    let until = Instant::now() + wait;
    loop {
        let now = crate::clock::now_millis();
        let nodes = store
            .nodes_seen_since(now - crate::service::nodes::LIVE_MS)
            .await
            .map_err(|e| e.to_string())?;
        let behind: Vec<_> = nodes.iter().filter(|n| !ok(n)).collect();
        if behind.is_empty() {
            return Ok(());
        }
        if Instant::now() >= until {
            let names: Vec<String> = behind
                .iter()
                .map(|n| format!("{} pid {} (seen {} s ago)", n.host, n.pid, (now - n.seen_at) / 1000))
                .collect();
            return Err(format!(
                "these running nodes do not {what}: {}; give every node the new key (SVC_ENCRYPTION_KEY the new, \
                 SVC_ENCRYPTION_KEY_PREVIOUS the old) and restart it, then run the command again",
                names.join(", ")
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
