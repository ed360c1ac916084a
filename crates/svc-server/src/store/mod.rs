//! Storage: SQLite (embedded default, WAL) or PostgreSQL (several nodes), through sqlx's `Any`
//! driver so one set of portable queries serves both; where the dialects differ the branch sits
//! inside this module. Only this module knows SQL.
//!
//! Tables (see `migrations/<dialect>/`): `entities` (configuration documents), `sequences`,
//! `changes` (cross-node refresh), `signing_keys`, `meta`, `audit_logs`, `authorization_events`,
//! `workload_events`, `pending_states`, `log_stream_cursors` (`streams.rs`).

mod audit;
pub mod backup;
mod event_pages;
mod events;
pub mod files;
pub mod health;
mod migrate;
mod port_sketch;
mod ports;
mod request_days;
pub mod sealed;
mod streams;

pub(crate) use events::v7_millis;
pub use events::{
    AuditRow, Columns, EVENTS_PER_REQUEST, EXACT_TOTAL, EventQuery, EventRow, EventTable, PURGE_CHUNK, QueryPage,
    RequestContext, RequestRow, context_of, nth_event_id,
};
pub use streams::{CursorOp, CursorRow, Deliverer, Outcome, StreamRecord};

use std::sync::Arc;
use std::time::Duration;

use sqlx::any::AnyPoolOptions;
use sqlx::{Any, AnyPool, Row, Transaction};

use crate::config::DatabaseUrl;
pub use health::{Condition, Health};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// A storage failure, kept free of sqlx types (architecture invariant 3).
#[derive(Debug)]
pub struct StoreError {
    pub message: String,
    pub fault: Fault,
}

/// What a failure says about the database (issue 32): the request that met it answers 503 with
/// `Retry-After` rather than 500 when the database is unreachable or cannot grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The query's own problem (a constraint, a bug): 500.
    Other,
    /// No connection could be had or kept: the database is down or cut off.
    Unreachable,
    /// A write failed for want of space (SQLite's `SQLITE_FULL`, an I/O error while writing).
    Unwritable,
}

impl StoreError {
    /// A failure of ours (not the database's).
    pub fn other(message: impl Into<String>) -> StoreError {
        StoreError {
            message: message.into(),
            fault: Fault::Other,
        }
    }

    /// The database cannot be used now: the request answers 503.
    pub fn unavailable(&self) -> bool {
        self.fault != Fault::Other
    }

    fn unreachable() -> StoreError {
        StoreError {
            message: "the database is unreachable".into(),
            fault: Fault::Unreachable,
        }
    }

    fn unwritable() -> StoreError {
        StoreError {
            message: "the database cannot be written (disk full?)".into(),
            fault: Fault::Unwritable,
        }
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        StoreError {
            fault: fault_of(&e),
            message: e.to_string(),
        }
    }
}

/// How a sqlx failure reflects on the database: lost connections and PostgreSQL's connection
/// and shutdown classes (`08…`, `57P…`, `53300` too many connections) are `Unreachable`;
/// SQLite's `SQLITE_FULL` (13) and `SQLITE_IOERR` (10, with their extended codes) and
/// PostgreSQL's `53100` disk full `Unwritable`.
fn fault_of(e: &sqlx::Error) -> Fault {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => Fault::Unreachable,
        sqlx::Error::Database(d) => {
            if let Some(s) = d.try_downcast_ref::<sqlx::sqlite::SqliteError>() {
                let code = sqlx::error::DatabaseError::code(s)
                    .and_then(|c| c.parse::<i32>().ok())
                    .unwrap_or(0);
                return match code & 0xff {
                    10 | 13 => Fault::Unwritable,
                    _ => Fault::Other,
                };
            }
            match d.code().as_deref() {
                Some(c) if c.starts_with("08") || c.starts_with("57P") || c == "53300" => Fault::Unreachable,
                // PostgreSQL's disk_full: this request answers 503 (the probe, which only reads,
                // finds the server well at its next look).
                Some("53100") => Fault::Unwritable,
                _ => Fault::Other,
            }
        }
        _ => Fault::Other,
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// One stored configuration entity.
#[derive(Clone, Debug, PartialEq)]
pub struct EntityRow {
    pub kind: String,
    pub id: String,
    pub seq: i64,
    pub rs: Option<String>,
    pub body: String,
    pub secrets: Option<String>,
    pub updated_at: i64,
}

/// One signing or token key (material sealed by the application).
#[derive(Clone, Debug, PartialEq)]
pub struct KeyRow {
    pub kid: String,
    pub alg: String,
    pub created_at: i64,
    pub active_at: i64,
    pub retire_at: Option<i64>,
    pub material: String,
}

#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    dialect: Dialect,
    /// SQLite only: one native connection for the event writer's inserts (see
    /// `events::insert_event_rows_sqlite`).
    events: Option<sqlx::SqlitePool>,
    /// The event writer's recent request templates (migration 0007, `events::TemplateCache`).
    templates: std::sync::Arc<std::sync::Mutex<events::TemplateCache>>,
    /// The templates of some days in the order of an event list's `order` (`event_pages`).
    template_orders: std::sync::Arc<std::sync::Mutex<event_pages::OrderCache>>,
    /// SQLite: each day's lowest and highest request rows by client port (`ports`).
    ports: ports::Sketch,
    /// PostgreSQL: the days whose partition of `edge_requests` this node knows (`request_days`).
    request_days: request_days::KnownDays,
    /// Whether the database can be used now (the probe's finding), shared by the clones.
    health: Arc<Health>,
    /// PostgreSQL: where the probe connects (its own connection, not the pool's).
    probe_dsn: Option<String>,
    /// SQLite: the folder of the database, whose free space the full-disk probe reads.
    data_dir: Option<std::path::PathBuf>,
}

/// Whether a connection given back to the pool may be used again. One given back inside a
/// transaction (dropped unfinished: its rollback is queued) has the rollback run now, and is kept
/// only if that ended the transaction: after `SQLITE_FULL` or an I/O error SQLite may roll the
/// transaction back itself, the queued `ROLLBACK` then fails, and sqlx would count the connection
/// as inside a transaction for ever (every later `BEGIN IMMEDIATE` on it refused: a full disk
/// that never recovered, issue 32). A committed transaction costs nothing here.
async fn keep_after_release<C: sqlx::Connection>(conn: &mut C) -> std::result::Result<bool, sqlx::Error> {
    if !conn.is_in_transaction() {
        return Ok(true);
    }
    conn.ping().await?;
    Ok(!conn.is_in_transaction())
}

/// What one look of the probe found: the database's condition, or no answer in time.
enum Look {
    Is(Condition),
    Slow,
}

/// Runs `f` unless `health` knows the database cannot serve it (unreachable; for a write, also
/// unable to grow), and stops waiting for it the moment the probe finds the database gone: a
/// request answers 503 at once instead of after the pool's acquire timeout (issue 32). A failure
/// that looks like a dead database has the probe look now.
async fn live<T>(health: &Health, write: bool, f: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    if health.unreachable() {
        return Err(StoreError::unreachable());
    }
    if write && health.refuses_writes() {
        return Err(StoreError::unwritable());
    }
    let r = tokio::select! {
        biased;
        r = f => r,
        () = health.gone() => Err(StoreError::unreachable()),
    };
    if let Err(e) = &r {
        health.saw(e.fault);
    }
    r
}

impl Store {
    /// `svc serve` and `svc migrate`: connects (on first start creating the SQLite file, mode
    /// 0600, and its data directory, mode 0700, when the directory's parent exists) and runs the
    /// migrations.
    pub async fn open(url: &DatabaseUrl) -> Result<Store> {
        let store = Self::open_through(url, migrate::LATEST).await?;
        // PostgreSQL: the next days' partitions of the request rows, for `svc migrate` too (the
        // nodes still running the release before make none: they write into these).
        store.prepare_request_days_ahead(crate::clock::now_millis()).await;
        Ok(store)
    }

    /// [`Store::open`] with the migrations up to `version` only: a database as an older binary
    /// left it (tests of a migration).
    #[doc(hidden)]
    pub async fn open_through(url: &DatabaseUrl, version: i64) -> Result<Store> {
        let store = Self::connect(url, true).await?;
        migrate::run_through(&store, version).await?;
        store.with_native(url).await
    }

    /// The host commands (`svc admin token`, `keys`, `backup`, …): the database must exist and
    /// hold this binary's schema; nothing is created or migrated (issue 32: run from another
    /// directory, `admin token` made an empty `svc-data/` and printed a token for it).
    pub async fn open_existing(url: &DatabaseUrl) -> Result<Store> {
        let store = Self::connect(url, false).await?;
        migrate::check_current(&store).await?;
        store.with_native(url).await
    }

    /// The schema version this binary writes.
    pub const LATEST_SCHEMA: i64 = migrate::LATEST;
    /// Every schema version this binary's migrations record, in order.
    pub fn schema_versions() -> Vec<i64> {
        migrate::versions()
    }

    /// The database's schema version (`None`: no svc schema) and the newest this binary knows.
    pub async fn schema_version(&self) -> Result<(Option<i64>, i64)> {
        Ok((migrate::version(self).await?, migrate::LATEST))
    }

    async fn connect(url: &DatabaseUrl, create: bool) -> Result<Store> {
        sqlx::any::install_default_drivers();
        let (dsn, dialect, max) = match url {
            DatabaseUrl::Sqlite(path) => {
                files::prepare(path, create)?;
                (format!("sqlite://{}?mode=rw", path.display()), Dialect::Sqlite, 8)
            }
            DatabaseUrl::Postgres(u) => (u.clone(), Dialect::Postgres, 16),
        };
        let pool = AnyPoolOptions::new()
            .max_connections(max)
            .min_connections(1)
            .acquire_timeout(Duration::from_secs(10))
            .after_connect(move |conn, _meta| {
                Box::pin(async move {
                    if dialect == Dialect::Sqlite {
                        sqlx::raw_sql(
                            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=10000; PRAGMA foreign_keys=ON;",
                        )
                        .execute(conn)
                        .await?;
                    } else {
                        // A node that stops in the middle of a transaction (paused, cut off)
                        // releases its locks, the cluster's write lock among them, within a minute.
                        // No JIT: the queries are short, and compiling one took longer than
                        // running it (13 ms of 17 for a template read of an event list, issue 34).
                        sqlx::raw_sql("SET idle_in_transaction_session_timeout = '60s'; SET jit = off")
                            .execute(conn)
                            .await?;
                    }
                    Ok(())
                })
            })
            .after_release(|conn, _meta| Box::pin(keep_after_release(conn)))
            .connect(&dsn)
            .await?;
        Ok(Store {
            pool,
            dialect,
            events: None,
            templates: Default::default(),
            template_orders: Default::default(),
            ports: Default::default(),
            request_days: Default::default(),
            health: Arc::new(Health::default()),
            probe_dsn: (dialect == Dialect::Postgres).then(|| dsn.clone()),
            data_dir: match url {
                DatabaseUrl::Sqlite(path) => Some(files::data_dir(path)),
                DatabaseUrl::Postgres(_) => None,
            },
        })
    }

    /// SQLite: adds the event writer's native connection (after the migrations).
    async fn with_native(mut self, url: &DatabaseUrl) -> Result<Store> {
        if let DatabaseUrl::Sqlite(path) = url {
            use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
            // From the same URL as the main pool, so that both open the same file.
            let dsn = format!("sqlite://{}", path.display());
            let options = <SqliteConnectOptions as std::str::FromStr>::from_str(&dsn)?
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(Duration::from_secs(10))
                .foreign_keys(true)
                // The writer's commits run the WAL checkpoints; one of 1,000 pages (SQLite's
                // default) held CPU 0 for milliseconds while requests waited: p99 of `/auth` at
                // c=10 2.6-2.8 ms, 1.5-1.7 with 250-page checkpoints, and no more CPU per event;
                // 50 and 100 pages cost more CPU (docs/PERFORMANCE.md).
                .pragma("wal_autocheckpoint", "250")
                // Start-up reads the entities through this connection ([`Store::each_entity`]).
                .row_buffer_size(LOAD_CHUNK);
            self.events = Some(
                SqlitePoolOptions::new()
                    .max_connections(1)
                    .min_connections(1)
                    .acquire_timeout(Duration::from_secs(10))
                    .after_release(|conn, _meta| Box::pin(keep_after_release(conn)))
                    .connect_with(options)
                    .await?,
            );
            files::tighten(path);
        }
        Ok(self)
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    pub async fn close(&self) {
        if let Some(events) = &self.events {
            events.close().await;
        }
        self.pool.close().await;
    }

    /// What the database can do now, as the probe last found it (no wait).
    pub fn health(&self) -> &Health {
        &self.health
    }

    /// [`live`] over this store's health.
    pub(crate) async fn live<T>(&self, write: bool, f: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        live(&self.health, write, f).await
    }

    /// The probe of [`Health`], for ever (a job of the node): every [`health::PROBE_EVERY`], at
    /// once when a query failed as a dead database makes it fail, and every
    /// [`health::PROBE_EVERY_DEGRADED`] while the database is unusable, so service resumes within
    /// that of its return.
    pub async fn probe_forever(&self) {
        let mut conn: Option<sqlx::AnyConnection> = None;
        // Looks in a row that took too long: a busy server or machine is not a dead one, so one
        // slow look does not stop service; two do (a silent network cut, about a second).
        let mut slow = 0;
        loop {
            self.health.next_probe().await;
            let c = match self.probe(&mut conn).await {
                Look::Is(c) => {
                    slow = 0;
                    c
                }
                Look::Slow => {
                    slow += 1;
                    if slow >= 2 {
                        Condition::Unreachable
                    } else {
                        self.health.condition()
                    }
                }
            };
            self.health.set(c);
        }
    }

    /// One look: PostgreSQL through a connection of the probe's own (connected again when it
    /// fails, once, so a restarted server is not taken for a dead one); SQLite, while writes
    /// failed for space, by the filesystem's free space ([`health::HEADROOM`]) and a small write.
    async fn probe(&self, conn: &mut Option<sqlx::AnyConnection>) -> Look {
        use health::{PROBE_CONNECT_TIMEOUT, PROBE_TIMEOUT};
        use sqlx::Connection;
        let Some(dsn) = &self.probe_dsn else {
            if self.health.condition() != Condition::Unwritable {
                return Look::Is(Condition::Ok);
            }
            // Room for a checkpoint's pages first: a small write can fit in the WAL's own space
            // on a full disk, and taking that for "space returned" made the condition flap.
            let room = self.data_dir.as_deref().and_then(files::free_bytes);
            if room.is_some_and(|free| free < health::HEADROOM) {
                return Look::Is(Condition::Unwritable);
            }
            let write = async {
                let mut tx = self.begin_write().await?;
                sqlx::query("INSERT INTO meta (key, value) VALUES ('health_probe', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
                    .bind(crate::clock::now_millis().to_string())
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok::<_, StoreError>(())
            };
            return Look::Is(match tokio::time::timeout(Duration::from_secs(2), write).await {
                Ok(Ok(())) => Condition::Ok,
                _ => Condition::Unwritable,
            });
        };
        for _ in 0..2 {
            if conn.is_none() {
                match tokio::time::timeout(PROBE_CONNECT_TIMEOUT, sqlx::AnyConnection::connect(dsn)).await {
                    Ok(Ok(c)) => *conn = Some(c),
                    // Refused, reset, a server shutting down: gone.
                    Ok(Err(_)) => return Look::Is(Condition::Unreachable),
                    Err(_) => return Look::Slow,
                }
            }
            let c = conn.as_mut().expect("connected above");
            match tokio::time::timeout(PROBE_TIMEOUT, sqlx::query("SELECT 1").execute(&mut *c)).await {
                Ok(Ok(_)) => return Look::Is(Condition::Ok),
                // The connection failed: once more on a new one.
                Ok(Err(_)) => *conn = None,
                Err(_) => {
                    *conn = None;
                    return Look::Slow;
                }
            }
        }
        Look::Is(Condition::Unreachable)
    }

    pub async fn meta_get(&self, key: &str) -> Result<Option<String>> {
        self.live(false, async {
            let row = sqlx::query("SELECT value FROM meta WHERE key = $1")
                .bind(key)
                .fetch_optional(&self.pool)
                .await?;
            Ok(row.map(|r| r.get::<String, _>(0)))
        })
        .await
    }

    /// Stores `value` unless the key exists; returns the value now stored (first writer wins).
    pub async fn meta_init(&self, key: &str, value: &str) -> Result<String> {
        sqlx::query("INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING")
            .bind(key)
            .bind(value)
            .execute(&self.pool)
            .await?;
        Ok(self.meta_get(key).await?.unwrap_or_default())
    }

    /// Hands every stored entity to `f`, one row at a time, in the table's own order: start-up
    /// reads hundreds of thousands of rows, and holding them all at once tripled its peak memory.
    /// One pass over the table, not one read per kind through the `(kind, id)` index, which
    /// visited the table's pages in key order, each many times (100,000 policies: ~3x the time;
    /// docs/PERFORMANCE.md). The first error of `f` stops the read.
    pub async fn each_entity(&self, mut f: impl FnMut(EntityRow) -> std::result::Result<(), String>) -> Result<()> {
        use futures_util::TryStreamExt;
        if let Some(native) = &self.events {
            // sqlx hands SQLite's rows from its worker thread through a channel (50 rows by
            // default); streamed, the two threads took turns at every row (~300,000 context
            // switches for 100,000 policies, a third of the start-up). Chunks of rowids, each
            // collected at once through the native connection (its row channel holds a whole
            // chunk; at start-up the event writer does not use it yet), let the worker run
            // through a chunk before the parser starts: ~10x fewer switches.
            let mut after = i64::MIN;
            loop {
                let rows = sqlx::query(
                    "SELECT kind, id, seq, rs, body, secrets, updated_at, rowid FROM entities \
                     WHERE rowid > $1 ORDER BY rowid LIMIT $2",
                )
                .bind(after)
                .bind(LOAD_CHUNK as i64)
                .fetch_all(native)
                .await?;
                let Some(last) = rows.last() else { return Ok(()) };
                after = last.get(7);
                for r in &rows {
                    f(entity_row(r)).map_err(StoreError::other)?;
                }
            }
        }
        let mut rows =
            sqlx::query("SELECT kind, id, seq, rs, body, secrets, updated_at FROM entities").fetch(&self.pool);
        while let Some(r) = rows.try_next().await? {
            f(entity_row(&r)).map_err(StoreError::other)?;
        }
        Ok(())
    }

    pub async fn load_entity(&self, kind: &str, id: &str) -> Result<Option<EntityRow>> {
        self.live(false, async {
            let row = sqlx::query(
                "SELECT kind, id, seq, rs, body, secrets, updated_at FROM entities WHERE kind = $1 AND id = $2",
            )
            .bind(kind)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
            Ok(row.as_ref().map(entity_row))
        })
        .await
    }

    /// The newest change sequence number (0 when none).
    pub async fn last_change(&self) -> Result<i64> {
        self.live(false, async {
            let row = sqlx::query("SELECT COALESCE(MAX(seq), 0) FROM changes")
                .fetch_one(&self.pool)
                .await?;
            Ok(row.get::<i64, _>(0))
        })
        .await
    }

    /// `(seq, kind, id)` of changes after `seq`, oldest first, at most [`CHANGES_PAGE`].
    pub async fn changes_since(&self, seq: i64) -> Result<Vec<(i64, String, String)>> {
        self.live(false, async {
            let rows = sqlx::query("SELECT seq, kind, id FROM changes WHERE seq > $1 ORDER BY seq LIMIT $2")
                .bind(seq)
                .bind(CHANGES_PAGE as i64)
                .fetch_all(&self.pool)
                .await?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect())
        })
        .await
    }

    /// The newest change after `seq` (`seq` itself when none), whether a change after `seq` is
    /// to the signing keys, and whether one is to the encryption keys (`encryption`, an at-rest
    /// key rotation): a range read of the new rows only.
    pub async fn key_changes_since(&self, seq: i64) -> Result<(i64, bool, bool)> {
        let row = sqlx::query(
            "SELECT MAX(seq), COALESCE(MAX(CASE WHEN kind = 'signing_keys' THEN 1 ELSE 0 END), 0), \
             COALESCE(MAX(CASE WHEN kind = 'encryption' THEN 1 ELSE 0 END), 0) FROM changes WHERE seq > $1",
        )
        .bind(seq)
        .fetch_one(&self.pool)
        .await?;
        let last: Option<i64> = row.get(0);
        let keys: i64 = row.get(1);
        let encryption: i64 = row.get(2);
        Ok((last.unwrap_or(seq), keys == 1, encryption == 1))
    }

    /// A lock shared by every node (PostgreSQL advisory transaction lock on a hash of `name`),
    /// held until the guard is dropped. SQLite serves one node: no lock, `None`.
    pub async fn cluster_lock(&self, name: &str) -> Result<Option<ClusterLock>> {
        if self.dialect != Dialect::Postgres {
            return Ok(None);
        }
        let digest = crate::crypto::sha256(name.as_bytes());
        let key = i64::from_be_bytes(digest[..8].try_into().expect("8 bytes"));
        let mut tx = self.pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(key)
            .execute(&mut *tx)
            .await?;
        Ok(Some(ClusterLock { _tx: tx }))
    }

    /// A configuration write: on PostgreSQL it first takes the cluster-wide write lock
    /// ([`Store::lock_writes`]), so the nodes' writes run one at a time.
    pub async fn begin(&self) -> Result<StoreTx> {
        self.live(true, async {
            let mut tx = self.begin_write().await?;
            self.lock_writes(&mut tx).await?;
            Ok(StoreTx {
                tx,
                health: self.health.clone(),
            })
        })
        .await
    }

    /// Takes the lock every write to the configuration and the change log holds until its
    /// transaction ends (PostgreSQL advisory transaction lock; SQLite's `BEGIN IMMEDIATE` is
    /// already one). Two things rest on it: a node that catches up with the change log under it
    /// validates a write against every committed write of every node (no duplicate `externalId`
    /// or e-mail, no reference to an entity deleted elsewhere, no lost update), and the change log's
    /// sequence numbers are handed out in commit order, so a node's cursor never passes a change
    /// that commits later.
    async fn lock_writes(&self, tx: &mut Transaction<'static, Any>) -> Result<()> {
        if self.dialect == Dialect::Postgres {
            // Bounded: a write that cannot have its turn within 30 s fails (500) instead of
            // queueing for ever behind a stuck holder, whom `idle_in_transaction_session_timeout`
            // (set per connection) ends.
            sqlx::query("SET LOCAL lock_timeout = '30s'").execute(&mut **tx).await?;
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(WRITES_LOCK)
                .execute(&mut **tx)
                .await?;
        }
        Ok(())
    }

    /// A transaction that will write. On SQLite it starts with `BEGIN IMMEDIATE`: a deferred
    /// transaction that reads first and then writes cannot wait for the write lock — when another
    /// connection (the event writer, every few milliseconds under load) commits in between, the
    /// upgrade fails at once with "database is locked" whatever the busy timeout. Taking the
    /// lock up front makes it wait like any other writer.
    pub(crate) async fn begin_write(&self) -> Result<Transaction<'static, Any>> {
        Ok(match self.dialect {
            Dialect::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await?,
            Dialect::Postgres => self.pool.begin().await?,
        })
    }

    pub async fn load_keys(&self) -> Result<Vec<KeyRow>> {
        let rows = sqlx::query(
            "SELECT kid, alg, created_at, active_at, retire_at, material FROM signing_keys ORDER BY created_at",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .map(|r| KeyRow {
                kid: r.get(0),
                alg: r.get(1),
                created_at: r.get(2),
                active_at: r.get(3),
                retire_at: r.get(4),
                material: r.get(5),
            })
            .collect())
    }

    /// First start: inserts those of `candidates` whose algorithm has no key yet, under the
    /// cluster's write lock, so nodes starting together keep exactly one key per algorithm (the
    /// first to get the lock) and none of them reads a ring another is still writing.
    pub async fn save_first_keys(&self, candidates: &[KeyRow]) -> Result<()> {
        let mut tx = self.begin_write().await?;
        self.lock_writes(&mut tx).await?;
        let present: Vec<String> = sqlx::query("SELECT DISTINCT alg FROM signing_keys")
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let missing: Vec<&KeyRow> = candidates.iter().filter(|k| !present.contains(&k.alg)).collect();
        if missing.is_empty() {
            return Ok(());
        }
        for k in missing {
            insert_key(&mut tx, k).await?;
        }
        note_key_change(&mut tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Inserts keys and updates retirement times in one transaction.
    pub async fn save_keys(&self, insert: &[KeyRow], retire: &[(String, i64)], delete: &[String]) -> Result<()> {
        let mut tx = self.begin_write().await?;
        self.lock_writes(&mut tx).await?;
        for k in insert {
            insert_key(&mut tx, k).await?;
        }
        for (kid, at) in retire {
            sqlx::query("UPDATE signing_keys SET retire_at = $1 WHERE kid = $2 AND retire_at IS NULL")
                .bind(*at)
                .bind(kid)
                .execute(&mut *tx)
                .await?;
        }
        for kid in delete {
            sqlx::query("DELETE FROM signing_keys WHERE kid = $1")
                .bind(kid)
                .execute(&mut *tx)
                .await?;
        }
        note_key_change(&mut tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Stores a single-use value (OAuth state) until `expires_at` (ms).
    pub async fn put_pending(&self, state: &str, purpose: &str, data: &str, expires_at: i64) -> Result<()> {
        self.live(true, async {
            sqlx::query("INSERT INTO pending_states (state, purpose, data, expires_at) VALUES ($1, $2, $3, $4)")
                .bind(state)
                .bind(purpose)
                .bind(data)
                .bind(expires_at)
                .execute(&self.pool)
                .await?;
            Ok(())
        })
        .await
    }

    /// Deletes the pending values that expired before `now` (a job, so that a flood of unfinished
    /// sign-ins or consents cannot grow the table).
    pub async fn purge_pending(&self, now: i64) -> Result<u64> {
        let mut tx = self.begin_write().await?;
        let n = sqlx::query("DELETE FROM pending_states WHERE expires_at < $1")
            .bind(now)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        Ok(n)
    }

    /// Takes (deletes and returns) a pending value if it exists, matches `purpose` and is unexpired.
    pub async fn take_pending(&self, state: &str, purpose: &str, now: i64) -> Result<Option<String>> {
        self.live(true, self.take_pending_now(state, purpose, now)).await
    }

    async fn take_pending_now(&self, state: &str, purpose: &str, now: i64) -> Result<Option<String>> {
        let mut tx = self.begin_write().await?;
        let row = sqlx::query("SELECT data, expires_at, purpose FROM pending_states WHERE state = $1")
            .bind(state)
            .fetch_optional(&mut *tx)
            .await?;
        // Spent only by its own purpose: an SSO callback presented with a consent state leaves it.
        sqlx::query("DELETE FROM pending_states WHERE (state = $1 AND purpose = $3) OR expires_at < $2")
            .bind(state)
            .bind(now)
            .bind(purpose)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(row.and_then(|r| {
            let (data, exp, p): (String, i64, String) = (r.get(0), r.get(1), r.get(2));
            (exp >= now && p == purpose).then_some(data)
        }))
    }
}

/// A running node's row (`nodes`, migration 0006): what it holds, as it said last.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRow {
    pub node_id: String,
    pub host: String,
    pub pid: i64,
    pub version: String,
    pub public_url: String,
    /// The ids of the encryption keys the node holds (comma-separated).
    pub key_ids: String,
    /// The id of the key it seals with.
    pub active_key: String,
    pub started_at: i64,
    pub seen_at: i64,
}

impl Store {
    /// Writes a node's row (its start, its heartbeat) and deletes the rows of nodes not seen
    /// since `forget_before`.
    pub async fn node_seen(&self, n: &NodeRow, forget_before: i64) -> Result<()> {
        self.live(true, async {
            sqlx::query(
                "INSERT INTO nodes (node_id, host, pid, version, public_url, key_ids, active_key, started_at, seen_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (node_id) DO UPDATE SET \
                 public_url = excluded.public_url, key_ids = excluded.key_ids, active_key = excluded.active_key, \
                 seen_at = excluded.seen_at",
            )
            .bind(&n.node_id)
            .bind(&n.host)
            .bind(n.pid)
            .bind(&n.version)
            .bind(&n.public_url)
            .bind(&n.key_ids)
            .bind(&n.active_key)
            .bind(n.started_at)
            .bind(n.seen_at)
            .execute(&self.pool)
            .await?;
            sqlx::query("DELETE FROM nodes WHERE seen_at < $1")
                .bind(forget_before)
                .execute(&self.pool)
                .await?;
            Ok(())
        })
        .await
    }

    /// Nodes seen since `since` (ms), the most recently seen first.
    pub async fn nodes_seen_since(&self, since: i64) -> Result<Vec<NodeRow>> {
        let rows = sqlx::query(
            "SELECT node_id, host, pid, version, public_url, key_ids, active_key, started_at, seen_at FROM nodes \
             WHERE seen_at >= $1 ORDER BY seen_at DESC",
        )
        .bind(since)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .map(|r| NodeRow {
                node_id: r.get(0),
                host: r.get(1),
                pid: r.get(2),
                version: r.get(3),
                public_url: r.get(4),
                key_ids: r.get(5),
                active_key: r.get(6),
                started_at: r.get(7),
                seen_at: r.get(8),
            })
            .collect())
    }

    /// A stopping node's row goes at once (a rotation does not wait for it).
    pub async fn node_gone(&self, node_id: &str) -> Result<()> {
        sqlx::query("DELETE FROM nodes WHERE node_id = $1")
            .bind(node_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

/// Rows per chunk of the SQLite start-up read (and the native connection's row channel).
const LOAD_CHUNK: usize = 1000;

fn entity_row<'r, R>(r: &'r R) -> EntityRow
where
    R: Row,
    usize: sqlx::ColumnIndex<R>,
    String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    EntityRow {
        kind: r.get(0),
        id: r.get(1),
        seq: r.get(2),
        rs: r.get(3),
        body: r.get(4),
        secrets: r.get(5),
        updated_at: r.get(6),
    }
}

/// Stores one signing key (a key id already stored is left as it is).
async fn insert_key(tx: &mut Transaction<'static, Any>, k: &KeyRow) -> Result<()> {
    sqlx::query(
        "INSERT INTO signing_keys (kid, alg, created_at, active_at, retire_at, material) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (kid) DO NOTHING",
    )
    .bind(&k.kid)
    .bind(&k.alg)
    .bind(k.created_at)
    .bind(k.active_at)
    .bind(k.retire_at)
    .bind(&k.material)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Records a change of the signing keys in the change log (every node reloads its key ring).
async fn note_key_change(tx: &mut Transaction<'static, Any>) -> Result<()> {
    sqlx::query("INSERT INTO changes (kind, id, at) VALUES ('signing_keys', '', $1)")
        .bind(crate::clock::now_millis())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Changes read per page by [`Store::changes_since`].
pub const CHANGES_PAGE: usize = 10_000;

/// The key of [`Store::lock_writes`] ("svcwrite").
const WRITES_LOCK: i64 = 0x7376_6377_7269_7465;

/// The key of the PostgreSQL lock every event batch's transaction holds ("svcevent").
const EVENTS_LOCK: i64 = 0x7376_6365_7665_6e74;

/// A held [`Store::cluster_lock`]; dropping it ends its transaction, which releases the lock.
pub struct ClusterLock {
    _tx: Transaction<'static, Any>,
}

/// A write transaction over configuration entities and their audit entries. Each step stops
/// waiting the moment the database is seen gone ([`live`]).
pub struct StoreTx {
    tx: Transaction<'static, Any>,
    health: Arc<Health>,
}

impl StoreTx {
    /// The next internal sequence number (`id` int32 fields) of a kind.
    pub async fn next_seq(&mut self, kind: &str) -> Result<i64> {
        let health = self.health.clone();
        live(&health, true, async {
            let row = sqlx::query(
                "INSERT INTO sequences (kind, next) VALUES ($1, 1) ON CONFLICT (kind) DO UPDATE SET next = sequences.next + 1 RETURNING next",
            )
            .bind(kind)
            .fetch_one(&mut *self.tx)
            .await?;
            Ok(row.get::<i64, _>(0))
        })
        .await
    }

    pub async fn upsert_entity(&mut self, e: &EntityRow) -> Result<()> {
        let health = self.health.clone();
        live(&health, true, self.upsert_entity_now(e)).await
    }

    async fn upsert_entity_now(&mut self, e: &EntityRow) -> Result<()> {
        sqlx::query(
            "INSERT INTO entities (kind, id, seq, rs, body, secrets, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (kind, id) DO UPDATE SET seq = excluded.seq, rs = excluded.rs, body = excluded.body, \
             secrets = excluded.secrets, updated_at = excluded.updated_at",
        )
        .bind(&e.kind)
        .bind(&e.id)
        .bind(e.seq)
        .bind(&e.rs)
        .bind(&e.body)
        .bind(&e.secrets)
        .bind(e.updated_at)
        .execute(&mut *self.tx)
        .await?;
        self.change(&e.kind, &e.id, e.updated_at).await
    }

    pub async fn delete_entity(&mut self, kind: &str, id: &str, at: i64) -> Result<()> {
        let health = self.health.clone();
        live(&health, true, self.delete_entity_now(kind, id, at)).await
    }

    async fn delete_entity_now(&mut self, kind: &str, id: &str, at: i64) -> Result<()> {
        sqlx::query("DELETE FROM entities WHERE kind = $1 AND id = $2")
            .bind(kind)
            .bind(id)
            .execute(&mut *self.tx)
            .await?;
        self.change(kind, id, at).await
    }

    async fn change(&mut self, kind: &str, id: &str, at: i64) -> Result<()> {
        sqlx::query("INSERT INTO changes (kind, id, at) VALUES ($1, $2, $3)")
            .bind(kind)
            .bind(id)
            .bind(at)
            .execute(&mut *self.tx)
            .await?;
        Ok(())
    }

    pub async fn insert_audit(&mut self, a: &AuditRow) -> Result<()> {
        let health = self.health.clone();
        live(&health, true, events::insert_audit(&mut self.tx, a)).await
    }

    pub async fn commit(self) -> Result<()> {
        let health = self.health.clone();
        live(&health, true, async {
            self.tx.commit().await?;
            Ok(())
        })
        .await
    }
}
