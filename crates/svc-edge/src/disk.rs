//! `--cache-dir`: the edge access token kept between invocations (never credentials, never
//! evidence). One file per (URL, clientId, resource set), mode 0600, written atomically (a
//! private temporary file renamed over the old one); the directory is created 0700, and one
//! that exists must be the caller's own and writable by nobody else (issue 31), or the cache is
//! not used.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use svc_api::edge::TokenDto;

use crate::client::Session;
use crate::config::Config;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    url: String,
    client_id: String,
    resource_set: Option<String>,
    token: TokenDto,
    obtained_at_ms: i64,
    expires_at_ms: i64,
}

pub fn token_path(dir: &Path, cfg: &Config) -> PathBuf {
    let key = format!(
        "{}\n{}\n{}",
        cfg.url,
        cfg.client_id,
        cfg.resource_set.as_deref().unwrap_or("")
    );
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, key.as_bytes());
    let hex: String = d.as_ref()[..12].iter().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("token-{hex}.json"))
}

/// A cache directory must be the caller's own and writable by no other user: another local user
/// who owns it, or may write it, could read the token or hand us one of theirs (issue 31). The
/// owner is compared with `/proc/self`'s (the process's effective user) where that exists.
pub fn check_dir(dir: &Path) -> std::io::Result<()> {
    let m = std::fs::symlink_metadata(dir)?;
    let refuse = |why: &str| Err(std::io::Error::other(format!("{}: {why}", dir.display())));
    if !m.is_dir() {
        return refuse("is not a directory");
    }
    if let Ok(me) = std::fs::metadata("/proc/self").map(|p| p.uid())
        && m.uid() != me
    {
        return refuse("is owned by another user");
    }
    if m.mode() & 0o022 != 0 {
        return refuse("is writable by other users");
    }
    Ok(())
}

/// The stored token for this configuration, if any and readable (and the directory the
/// caller's own: [`check_dir`]).
pub fn load(dir: &Path, cfg: &Config) -> Option<Session> {
    if let Err(e) = check_dir(dir) {
        if e.kind() != std::io::ErrorKind::NotFound {
            crate::log::warn("the token cache is not used", &[("error", e.to_string().into())]);
        }
        return None;
    }
    let bytes = std::fs::read(token_path(dir, cfg)).ok()?;
    let s: Stored = serde_json::from_slice(&bytes).ok()?;
    if s.url != cfg.url || s.client_id != cfg.client_id || s.resource_set != cfg.resource_set {
        return None;
    }
    Some(Session {
        raw: serde_json::to_vec(&s.token).ok()?,
        token: s.token,
        obtained_ms: s.obtained_at_ms,
        expires_ms: s.expires_at_ms,
    })
}

pub fn store(dir: &Path, cfg: &Config, session: &Session) -> std::io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    check_dir(dir)?;
    let stored = Stored {
        url: cfg.url.clone(),
        client_id: cfg.client_id.clone(),
        resource_set: cfg.resource_set.clone(),
        token: session.token.clone(),
        obtained_at_ms: session.obtained_ms,
        expires_at_ms: session.expires_ms,
    };
    let path = token_path(dir, cfg);
    let mut rnd = [0u8; 8];
    let _ = aws_lc_rs::rand::fill(&mut rnd);
    let tmp = dir.join(format!(
        ".tmp-{}-{}",
        std::process::id(),
        rnd.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(&serde_json::to_vec(&stored).map_err(std::io::Error::other)?)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    };
    let r = write();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

/// Drops the stored token (after the service refused it).
pub fn forget(dir: &Path, cfg: &Config) {
    let _ = std::fs::remove_file(token_path(dir, cfg));
}
