//! The SQLite database's files (issue 32): the data directory is created on first start only
//! when its parent exists (a missing parent is a wrong path or a volume not mounted, not a place
//! to start an empty service), mode 0700; the database is created mode 0600 before SQLite opens
//! it, so its WAL and shared-memory files, which SQLite creates with the database's mode, are
//! 0600 too; files left more open by an older version are tightened. A directory or database the
//! service cannot write is refused with a message naming it, before SQLite's "unable to open
//! database file".

use std::path::{Path, PathBuf};

use super::{Result, StoreError};

/// The folder that holds the database (`.` for a bare file name).
pub fn data_dir(db: &Path) -> PathBuf {
    match db.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The bytes an unprivileged writer may still use on the filesystem that holds `path`, if it
/// can be asked.
#[allow(unsafe_code)]
pub fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `statvfs` is plain data (all-zero is a valid value), and the call only writes the
    // struct it is given, reading the NUL-terminated path.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::statvfs(c.as_ptr(), &mut s) } == 0;
    #[allow(clippy::unnecessary_cast)] // the fields' widths differ between platforms
    ok.then(|| s.f_bavail as u64 * s.f_frsize as u64)
}

/// Checks (and with `create`, on first start makes) the data directory and the database file.
pub fn prepare(db: &Path, create: bool) -> Result<()> {
    let dir = data_dir(db);
    if !db.exists() {
        if !create {
            return Err(StoreError::other(format!(
                "no database at {} (SVC_DATABASE_URL): this command works on the server's existing database; run it \
                 with the server's configuration (--config FILE, or from the directory the server runs in), or start \
                 the server once (svc serve)",
                db.display()
            )));
        }
        if !dir.exists() {
            match dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                Some(parent) if !parent.exists() => {
                    return Err(StoreError::other(format!(
                        "data directory {} does not exist, nor does {}: create it (mkdir -p) or fix SVC_DATABASE_URL",
                        dir.display(),
                        parent.display()
                    )));
                }
                _ => create_private_dir(&dir)?,
            }
        }
        if !dir.is_dir() {
            return Err(StoreError::other(format!(
                "data directory {} is not a directory",
                dir.display()
            )));
        }
        create_private_file(db).map_err(|e| unwritable(&dir, &e))?;
        tracing::info!(path = %db.display(), "created a new database");
        return Ok(());
    }
    // An existing database: the file and its folder (where SQLite makes the WAL) must be writable.
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(db)
        .map_err(|e| StoreError::other(format!("database file {} is not writable: {e}", db.display())))?;
    let probe = dir.join(format!(".svc-write-check-{}", std::process::id()));
    match create_private_file(&probe) {
        Ok(()) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(unwritable(&dir, &e)),
    }
}

fn unwritable(dir: &Path, e: &std::io::Error) -> StoreError {
    StoreError::other(format!(
        "data directory {} is not writable ({e}): svc keeps the database, its WAL and the key file there",
        dir.display()
    ))
}

fn create_private_dir(dir: &Path) -> Result<()> {
    let mut b = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
        .map_err(|e| StoreError::other(format!("cannot create data directory {}: {e}", dir.display())))?;
    tracing::info!(path = %dir.display(), "created the data directory");
    Ok(())
}

/// Creates an empty file readable by its owner only (fails if it exists).
pub fn create_private_file(path: &Path) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path).map(|_| ())
}

/// The at-rest key file of the SQLite database `db` (when no `SVC_ENCRYPTION_KEY` is set).
pub fn key_file(db: &Path) -> PathBuf {
    data_dir(db).join("svc-encryption.key")
}

/// Sets the database, its WAL and shared-memory files and the key file beside it to 0600 where
/// an older version left them more open (they hold the sealed secrets, every event, the key).
pub fn tighten(db: &Path) {
    #[cfg(unix)]
    for path in ["", "-wal", "-shm"]
        .iter()
        .map(|suffix| PathBuf::from(format!("{}{suffix}", db.display())))
        .chain([key_file(db)])
    {
        use std::os::unix::fs::PermissionsExt;
        let Ok(meta) = std::fs::metadata(&path) else { continue };
        if meta.permissions().mode() & 0o077 != 0 {
            match std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)) {
                Ok(()) => tracing::info!(path = %path.display(), "database file was readable by others: now mode 0600"),
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "cannot make the database file private"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn free_bytes_reads_the_filesystem_and_none_for_a_missing_path() {
        let here = super::free_bytes(std::path::Path::new(".")).expect("the current folder's filesystem");
        assert!(here > 0);
        assert_eq!(
            super::free_bytes(std::path::Path::new("/no/such/folder/anywhere")),
            None
        );
    }
}
