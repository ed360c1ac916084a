//! What backups need of the database (issue 32, docs/OPERATIONS.md "Backup and restore"): an
//! online, consistent copy of a SQLite database (`VACUUM INTO`: one read transaction, so writers
//! go on and the copy is the database as of one commit), a backup file opened as a plain
//! database (rollback journal, no WAL beside it), the counts a manifest records, and whether a
//! server has a SQLite database open.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use sqlx::Row;

use super::{Dialect, Result, Store, StoreError};

/// The `meta` row of a backup file that holds its manifest (JSON).
pub const MANIFEST_KEY: &str = "backup_manifest";

impl Store {
    /// Writes a consistent copy of this SQLite database to `path`, which must not exist or be
    /// empty (SQLite's rule for `VACUUM INTO`; the caller creates it empty, mode 0600).
    pub async fn vacuum_into(&self, path: &Path) -> Result<()> {
        if self.dialect() != Dialect::Sqlite {
            return Err(StoreError::other("a copy with VACUUM INTO is SQLite's"));
        }
        sqlx::query("VACUUM INTO $1")
            .bind(path.display().to_string())
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Opens a backup file (or any SQLite file) as it is: rollback journal, no WAL, no
    /// migration. Its schema version may be older than this binary's.
    pub async fn open_file(path: &Path) -> Result<Store> {
        if !path.is_file() {
            return Err(StoreError::other(format!("{} is not a file", path.display())));
        }
        sqlx::any::install_default_drivers();
        let dsn = format!("sqlite://{}", path.display());
        // A plain file: rollback journal (persistent in the file), set once on a connection of
        // its own so that its failure is reported as it is.
        {
            use sqlx::Connection;
            let mut c = sqlx::AnyConnection::connect(&format!("{dsn}?mode=rw")).await?;
            sqlx::raw_sql("PRAGMA busy_timeout=10000; PRAGMA journal_mode=DELETE;")
                .execute(&mut c)
                .await?;
            c.close().await?;
        }
        let pool = sqlx::any::AnyPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(Duration::from_secs(10))
            .after_connect(|conn, _| {
                Box::pin(async move {
                    sqlx::raw_sql("PRAGMA busy_timeout=10000;").execute(conn).await?;
                    Ok(())
                })
            })
            .connect(&format!("{dsn}?mode=rw"))
            .await?;
        Ok(Store {
            pool,
            dialect: Dialect::Sqlite,
            events: None,
            templates: Default::default(),
            template_orders: Default::default(),
            ports: Default::default(),
            request_days: Default::default(),
            health: Default::default(),
            probe_dsn: None,
            data_dir: None,
        })
    }

    /// Row counts for a manifest: entities by kind, signing keys, audit entries, edge requests
    /// and their authorization and workload events.
    pub async fn counts(&self) -> Result<BTreeMap<String, i64>> {
        let mut out = BTreeMap::new();
        for r in sqlx::query("SELECT kind, COUNT(*) FROM entities GROUP BY kind ORDER BY kind")
            .fetch_all(self.pool())
            .await?
        {
            out.insert(format!("entities.{}", r.get::<String, _>(0)), r.get::<i64, _>(1));
        }
        for (name, sql) in [
            ("signingKeys", "SELECT COUNT(*) FROM signing_keys"),
            ("auditLogs", "SELECT COUNT(*) FROM audit_logs"),
            ("edgeRequests", "SELECT COUNT(*) FROM edge_requests"),
            ("authorizationEvents", "SELECT COALESCE(SUM(na), 0) FROM edge_requests"),
            ("workloadEvents", "SELECT COALESCE(SUM(nw), 0) FROM edge_requests"),
        ] {
            let n: i64 = sqlx::query(sql).fetch_one(self.pool()).await?.get(0);
            out.insert(name.to_string(), n);
        }
        Ok(out)
    }

    /// Sets a `meta` value (no change-log row: a backup file's manifest).
    pub async fn meta_put(&self, key: &str, value: &str) -> Result<()> {
        sqlx::query(
            "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .bind(key)
        .bind(value)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// A SHA-256 over every row of every table of a SQLite database file, in rowid order, but
    /// the manifest's own row (`MANIFEST_KEY`): what a backup's manifest authenticates
    /// (`service::backup`, issue 31: a backup changed after it was made is refused).
    pub async fn content_digest(&self) -> Result<[u8; 32]> {
        let mut h = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
        // A virtual table (the audit search index, migration 0009) holds nothing of its own: its
        // shadow tables are hashed, those without a rowid in the order of all their columns.
        let tables: Vec<(String, String)> = sqlx::query(
            "SELECT name, COALESCE(sql, '') FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(|r| (r.get::<String, _>(0), r.get::<String, _>(1)))
        .filter(|(_, sql)| !sql.to_ascii_uppercase().starts_with("CREATE VIRTUAL TABLE"))
        .collect();
        for (t, create) in tables {
            let quoted = format!("\"{}\"", t.replace('"', "\"\""));
            let names: Vec<String> = sqlx::query(sqlx::AssertSqlSafe(format!("PRAGMA table_info({quoted})")))
                .fetch_all(self.pool())
                .await?
                .iter()
                .map(|r| format!("\"{}\"", r.get::<String, _>(1).replace('"', "\"\"")))
                .collect();
            let cols: Vec<String> = names.iter().map(|n| format!("quote({n})")).collect();
            let skip = if t == "meta" {
                format!(" WHERE key <> '{MANIFEST_KEY}'")
            } else {
                String::new()
            };
            let order = if create.to_ascii_uppercase().contains("WITHOUT ROWID") {
                names.join(", ")
            } else {
                "rowid".to_string()
            };
            let sql = format!(
                "SELECT {} FROM {quoted}{skip} ORDER BY {order}",
                cols.join(" || char(31) || ")
            );
            h.update(t.as_bytes());
            h.update(b"\n");
            for r in sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_all(self.pool()).await? {
                h.update(r.get::<String, _>(0).as_bytes());
                h.update(b"\n");
            }
        }
        let mut out = [0u8; 32];
        out.copy_from_slice(h.finish().as_ref());
        Ok(out)
    }

    /// SQLite's own consistency check (`ok` when sound).
    pub async fn integrity_check(&self) -> Result<String> {
        let rows = sqlx::query("PRAGMA integrity_check").fetch_all(self.pool()).await?;
        Ok(rows
            .iter()
            .map(|r| r.get::<String, _>(0))
            .collect::<Vec<_>>()
            .join("; "))
    }
}

/// Whether another process has the SQLite database at `path` open (a running server): an
/// exclusive lock is refused at once while any other connection holds it.
pub async fn sqlite_in_use(path: &Path) -> Result<bool> {
    use sqlx::Connection;
    use sqlx::sqlite::{SqliteConnectOptions, SqliteLockingMode};
    if !path.exists() {
        return Ok(false);
    }
    let opts = <SqliteConnectOptions as std::str::FromStr>::from_str(&format!("sqlite://{}", path.display()))?
        .locking_mode(SqliteLockingMode::Exclusive)
        .busy_timeout(Duration::ZERO);
    let mut conn = match sqlx::SqliteConnection::connect_with(&opts).await {
        Ok(c) => c,
        Err(_) => return Ok(true),
    };
    let free = sqlx::raw_sql("BEGIN EXCLUSIVE; ROLLBACK;")
        .execute(&mut conn)
        .await
        .is_ok();
    let _ = conn.close().await;
    Ok(!free)
}

/// A scratch database `svc_verify_<random>` on the PostgreSQL server of `admin` (the role needs
/// `CREATEDB`): its URL and name, for [`drop_scratch_database`].
pub async fn create_scratch_database(admin: &str) -> Result<(String, String)> {
    sqlx::any::install_default_drivers();
    let mut url = url::Url::parse(admin).map_err(|e| StoreError::other(format!("SVC_DATABASE_URL: {e}")))?;
    let name = format!("svc_verify_{}", crate::crypto::hex(&crate::crypto::random_bytes::<6>()));
    let server = sqlx::AnyPool::connect(admin).await?;
    let made = sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&server)
        .await;
    server.close().await;
    made.map_err(|e| {
        StoreError::other(format!(
            "cannot create a scratch database (the role needs CREATEDB): {e}"
        ))
    })?;
    url.set_path(&format!("/{name}"));
    Ok((url.to_string(), name))
}

/// Drops a database of [`create_scratch_database`], whoever is still connected to it.
pub async fn drop_scratch_database(admin: &str, name: &str) -> Result<()> {
    if !name.starts_with("svc_verify_") || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(StoreError::other("not a scratch database"));
    }
    let server = sqlx::AnyPool::connect(admin).await?;
    let r = sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(&server)
    .await;
    server.close().await;
    r?;
    Ok(())
}
