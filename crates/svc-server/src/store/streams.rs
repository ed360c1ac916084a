//! Log-stream delivery state (contract §3.14; migration 0003): one cursor row per stream (the
//! `seq` of the last record of its table a sink acknowledged, the transaction awaiting its answer
//! or a retry, the counters), written with the stream by its write unit and by the node that
//! delivers it; the records after a cursor, read from the event tables themselves (the stored
//! events are the outbox); and [`Deliverer`], which on PostgreSQL lets one node at a time deliver
//! a stream (a session advisory lock per stream, on one connection that also makes every cursor
//! update: a node that lost the lock cannot move a cursor).

use std::collections::HashSet;
use std::sync::Mutex;

use sqlx::{Any, AnyConnection, Row};
use uuid::Uuid;

use super::events::EventTable;
use super::{Columns, Dialect, Result, Store, StoreTx};

/// One stream's row.
#[derive(Clone, Debug, PartialEq)]
pub struct CursorRow {
    pub stream: Uuid,
    /// The `dataType` the cursor counts in (`AuditLogs`, …).
    pub data_type: String,
    /// `seq` of the last record delivered (acknowledged or dropped).
    pub delivered: i64,
    /// The transaction sent and not acknowledged: its last record and its first attempt (ms).
    pub pending_last: Option<i64>,
    pub pending_since: Option<i64>,
    pub in_progress: i64,
    pub completed: i64,
    pub errored: i64,
}

/// A change of a stream's row made by its write unit, in the unit's transaction.
#[derive(Clone, Debug, PartialEq)]
pub enum CursorOp {
    /// A new stream (or one whose `dataType` changed): delivery starts after the newest record
    /// of `table` committed now; the counters are kept.
    Start {
        stream: Uuid,
        data_type: &'static str,
        table: EventTable,
    },
    /// A deleted stream.
    Remove { stream: Uuid },
}

/// One record of an event table, as the event lists read it, with its place and time.
#[derive(Clone, Debug)]
pub struct StreamRecord {
    pub seq: i64,
    /// `createdAt` / `timestamp` in milliseconds.
    pub time: i64,
    /// The stored text the body is: the whole text, or with `index` its element (an edge
    /// request's bodies, one JSON array shared by its records, parsed once for all of them).
    pub text: std::sync::Arc<str>,
    pub index: Option<usize>,
    /// An authorization event's request's shared parts (a JSON object), merged under the body's
    /// own top-level members when it is written (as the view does).
    pub shared: Option<std::sync::Arc<str>>,
    pub columns: Columns,
}

impl StreamRecord {
    /// The stored body as JSON; `None`: stored text that is not JSON.
    pub fn body_json(&self) -> Option<serde_json::Value> {
        let v: serde_json::Value = serde_json::from_str(&self.text).ok()?;
        match self.index {
            None => Some(v),
            Some(i) => v.get(i).cloned(),
        }
    }
}

/// How a transaction ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The sink answered 2xx: the cursor moves past the transaction.
    Completed,
    /// The sink failed: the same records are sent again next cycle.
    Errored,
    /// The sink failed and the transaction's first attempt is 24 h old: the cursor moves past it.
    Dropped,
}

const COLUMNS: &str = "stream, data_type, delivered, pending_last, pending_since, in_progress, completed, errored";

fn cursor_row(r: &sqlx::any::AnyRow) -> Option<CursorRow> {
    Some(CursorRow {
        stream: Uuid::parse_str(&r.get::<String, _>(0)).ok()?,
        data_type: r.get(1),
        delivered: r.get(2),
        pending_last: r.get(3),
        pending_since: r.get(4),
        in_progress: r.get(5),
        completed: r.get(6),
        errored: r.get(7),
    })
}

impl StoreTx {
    /// Applies a stream's row change in the write unit's transaction.
    pub async fn cursor_op(&mut self, op: &CursorOp) -> Result<()> {
        let health = self.health.clone();
        super::live(&health, true, self.cursor_op_now(op)).await
    }

    async fn cursor_op_now(&mut self, op: &CursorOp) -> Result<()> {
        match op {
            CursorOp::Start {
                stream,
                data_type,
                table,
            } => {
                sqlx::query(sqlx::AssertSqlSafe(start_sql(*table, true)))
                    .bind(stream.to_string())
                    .bind(*data_type)
                    .bind(crate::clock::now_millis())
                    .execute(&mut *self.tx)
                    .await?;
            }
            CursorOp::Remove { stream } => {
                sqlx::query("DELETE FROM log_stream_cursors WHERE stream = $1")
                    .bind(stream.to_string())
                    .execute(&mut *self.tx)
                    .await?;
            }
        }
        Ok(())
    }
}

impl Store {
    /// Every stream's row (the counters every node shows, the retention floors).
    pub async fn stream_cursors(&self) -> Result<Vec<CursorRow>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM log_stream_cursors")))
            .fetch_all(self.pool())
            .await?;
        Ok(rows.iter().filter_map(cursor_row).collect())
    }

    pub async fn stream_cursor(&self, stream: Uuid) -> Result<Option<CursorRow>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM log_stream_cursors WHERE stream = $1"
        )))
        .bind(stream.to_string())
        .fetch_optional(self.pool())
        .await?;
        Ok(row.as_ref().and_then(cursor_row))
    }

    /// Up to `limit` records of `table` after `after` (through `through` when given), in `seq`
    /// order, from every resource set: a range read of the primary key. Edge events are read from
    /// their requests' rows directly ([`Store::edge_records_after`]), not through the views.
    pub async fn records_after(
        &self,
        table: EventTable,
        after: i64,
        through: Option<i64>,
        limit: i64,
    ) -> Result<Vec<StreamRecord>> {
        if table != EventTable::Audit {
            return self.edge_records_after(table, after, through, limit).await;
        }
        let rows = self
            .seq_range(
                "SELECT body, created_at, seq FROM audit_logs WHERE seq > $1",
                after,
                through,
                limit,
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| {
                let text: std::sync::Arc<str> = r.get::<&str, _>(0).into();
                StreamRecord {
                    seq: r.get(2),
                    time: r.get(1),
                    text,
                    index: None,
                    shared: None,
                    columns: Columns::new(),
                }
            })
            .collect())
    }

    /// The rows of `select` (a query ending in `WHERE seq > $1` or `>= $1`, bound to `from`) up to
    /// `through` when given, in `seq` order, at most `limit`.
    async fn seq_range(
        &self,
        select: &str,
        from: i64,
        through: Option<i64>,
        limit: i64,
    ) -> Result<Vec<sqlx::any::AnyRow>> {
        let bound = if through.is_some() { " AND seq <= $2" } else { "" };
        let sql = format!("{select}{bound} ORDER BY seq LIMIT {limit}");
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(from);
        if let Some(t) = through {
            q = q.bind(t);
        }
        Ok(q.fetch_all(self.pool()).await?)
    }

    /// [`Store::records_after`] for an edge event kind: the rows of `edge_requests` from the
    /// request holding `after` on, in chunks, each row's `meta` parsed once (the views would
    /// expand it per event, in SQL); its bodies and shared parts are handed over as stored text,
    /// which the stream writer parses once per request.
    async fn edge_records_after(
        &self,
        table: EventTable,
        after: i64,
        through: Option<i64>,
        limit: i64,
    ) -> Result<Vec<StreamRecord>> {
        const CHUNK: i64 = 256;
        let limit = usize::try_from(limit).unwrap_or(0);
        let mut out = Vec::with_capacity(limit.min(1024));
        let mut from = request_of(after);
        let last_request = through.map(request_of);
        while out.len() < limit {
            let rows = self
                .seq_range(
                    "SELECT r.seq, r.rs, r.ts, COALESCE(t.client_ip, r.client_ip), COALESCE(t.shared, r.shared), \
                     COALESCE(t.meta, r.meta), COALESCE(t.bodies, r.bodies), r.eid, r.ctx, r.port \
                     FROM edge_requests AS r LEFT JOIN edge_templates AS t ON t.id = r.tpl WHERE r.seq >= $1",
                    from,
                    last_request,
                    CHUNK,
                )
                .await?;
            for r in &rows {
                let request = super::events::StoredRequest {
                    seq: r.get(0),
                    rs: r.get(1),
                    ts: r.get(2),
                    client_ip: r.get(3),
                    shared: r.get(4),
                    meta: r.get(5),
                    bodies: r.get(6),
                    first_id: r.get(7),
                    ctx: r.get(8),
                    port: r.get(9),
                };
                for rec in request.records(table) {
                    if rec.seq <= after || through.is_some_and(|t| rec.seq > t) {
                        continue;
                    }
                    out.push(rec);
                    if out.len() == limit {
                        return Ok(out);
                    }
                }
            }
            match rows.last() {
                Some(r) if rows.len() as i64 == CHUNK => from = r.get::<i64, _>(0) + 1,
                _ => break,
            }
        }
        Ok(out)
    }

    /// The time (ms) of the first record of `table` after `after`, if any (a stream's lag).
    /// On an edge event's view the read starts at the request holding the cursor (`rseq`), which
    /// the primary key of `edge_requests` serves; `seq` alone is an expression there.
    pub async fn first_time_after(&self, table: EventTable, after: i64) -> Result<Option<i64>> {
        let q = match table {
            EventTable::Audit => {
                sqlx::query("SELECT created_at FROM audit_logs WHERE seq > $1 ORDER BY seq LIMIT 1").bind(after)
            }
            _ => sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT ts FROM {} WHERE rseq >= $2 AND seq > $1 ORDER BY rseq, n LIMIT 1",
                table.name()
            )))
            .bind(after)
            .bind(request_of(after)),
        };
        let row = q.fetch_optional(self.pool()).await?;
        Ok(row.map(|r| r.get(0)))
    }

    /// What this node needs to deliver streams (see [`Deliverer`]).
    pub fn deliverer(&self) -> Deliverer {
        Deliverer {
            store: self.clone(),
            conn: tokio::sync::Mutex::new(None),
            held: Mutex::new(HashSet::new()),
        }
    }
}

/// A node's right to deliver streams. On PostgreSQL: one connection of its own, on which the
/// node holds a session advisory lock per stream it delivers (taken with `pg_try_advisory_lock`,
/// so a stream has one deliverer; released when the node stops, crashes or loses the
/// connection, and then taken by another node's next cycle) and through which it makes every
/// change to those streams' rows: a node whose session ended (its lock gone with it, perhaps to
/// another node) cannot move a cursor. SQLite serves one node: every stream is its own, and rows
/// are written through the pool.
pub struct Deliverer {
    store: Store,
    conn: tokio::sync::Mutex<Option<AnyConnection>>,
    /// Streams whose lock the current connection holds.
    held: Mutex<HashSet<Uuid>>,
}

/// The advisory-lock key of a stream.
fn lock_key(stream: Uuid) -> i64 {
    let digest = crate::crypto::sha256(format!("svc-log-stream:{stream}").as_bytes());
    i64::from_be_bytes(digest[..8].try_into().expect("8 bytes"))
}

impl Deliverer {
    fn postgres(&self) -> bool {
        self.store.dialect() == Dialect::Postgres
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashSet<Uuid>> {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `f` on the lock connection (opened on first use). A failure ends the connection:
    /// its locks are gone, and the next claim opens a new one.
    async fn on_conn<T>(
        &self,
        f: impl for<'c> FnOnce(&'c mut AnyConnection) -> futures_util::future::BoxFuture<'c, sqlx::Result<T>>,
    ) -> Result<T> {
        let mut guard = self.conn.lock().await;
        if guard.is_none() {
            self.held().clear();
            let mut conn = self.store.pool().acquire().await?.detach();
            // A node that vanishes without closing its connection (a host gone, a cut network)
            // gives its streams up within ~25 s instead of the kernel's two hours.
            let _ = sqlx::raw_sql(
                "SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3",
            )
            .execute(&mut conn)
            .await;
            *guard = Some(conn);
        }
        let conn = guard.as_mut().expect("opened above");
        match f(conn).await {
            Ok(v) => Ok(v),
            Err(e) => {
                guard.take();
                self.held().clear();
                Err(e.into())
            }
        }
    }

    /// Whether this node delivers `stream` now: it holds the stream's lock, or has just taken it.
    pub async fn claim(&self, stream: Uuid) -> Result<bool> {
        if !self.postgres() {
            return Ok(true);
        }
        let held = self.held().contains(&stream);
        if held && self.conn.lock().await.is_some() {
            return Ok(true);
        }
        let got = self.advisory("SELECT pg_try_advisory_lock($1)", stream).await?;
        if got {
            self.held().insert(stream);
        }
        Ok(got)
    }

    /// One advisory-lock function of `stream`'s key on the lock connection; its answer.
    async fn advisory(&self, sql: &'static str, stream: Uuid) -> Result<bool> {
        let key = lock_key(stream);
        self.on_conn(move |c| {
            Box::pin(async move {
                let r = sqlx::query(sql).bind(key).fetch_one(c).await?;
                Ok(r.get::<bool, _>(0))
            })
        })
        .await
    }

    /// Gives up the streams this node no longer has a reason to hold (deleted ones).
    pub async fn release_except(&self, keep: &HashSet<Uuid>) {
        if !self.postgres() {
            return;
        }
        let gone: Vec<Uuid> = self.held().iter().filter(|s| !keep.contains(s)).copied().collect();
        for s in gone {
            if self.advisory("SELECT pg_advisory_unlock($1)", s).await.is_ok() {
                self.held().remove(&s);
            }
        }
    }

    /// Ends the lock connection (the node stops): every stream is free for the other nodes.
    pub async fn close(&self) {
        if let Some(c) = self.conn.lock().await.take() {
            let _ = sqlx::Connection::close(c).await;
        }
        self.held().clear();
    }

    /// One statement changing a stream's row, through the lock connection on PostgreSQL; the
    /// number of rows changed (0: the stream is gone).
    async fn update(&self, sql: String, binds: Vec<Bind>) -> Result<u64> {
        fn bound<'q>(
            mut q: sqlx::query::Query<'q, Any, sqlx::any::AnyArguments>,
            binds: &[Bind],
        ) -> sqlx::query::Query<'q, Any, sqlx::any::AnyArguments> {
            for b in binds {
                q = match b {
                    Bind::Text(s) => q.bind(s.clone()),
                    Bind::Int(i) => q.bind(*i),
                };
            }
            q
        }
        if !self.postgres() {
            let q = bound(sqlx::query(sqlx::AssertSqlSafe(sql)), &binds);
            return Ok(q.execute(self.store.pool()).await?.rows_affected());
        }
        self.on_conn(move |c| {
            Box::pin(async move {
                let q = bound(sqlx::query(sqlx::AssertSqlSafe(sql)), &binds);
                q.execute(c).await.map(|r| r.rows_affected())
            })
        })
        .await
    }

    /// A stream found without its row (one stored before its row could be, which this version
    /// never does): delivery starts after the newest record now.
    pub async fn start_missing(&self, stream: Uuid, data_type: &str, table: EventTable) -> Result<()> {
        let binds = vec![
            Bind::Text(stream.to_string()),
            Bind::Text(data_type.to_string()),
            Bind::Int(crate::clock::now_millis()),
        ];
        self.update(start_sql(table, false), binds).await.map(drop)
    }

    /// Counts a transaction of `stream` ending at record `last` in progress (its first attempt
    /// at `now` unless it is a retry). `false`: the stream's row is gone (deleted) or counts in
    /// another `dataType` now.
    pub async fn begin(&self, stream: Uuid, data_type: &str, last: i64, now: i64) -> Result<bool> {
        let sql = "UPDATE log_stream_cursors SET in_progress = 1, pending_last = $3, \
                   pending_since = COALESCE(pending_since, $4), updated_at = $4 WHERE stream = $1 AND data_type = $2";
        Ok(self.update(sql.into(), row_binds(stream, data_type, last, now)).await? == 1)
    }

    /// Records how the transaction ending at `last` ended: the cursor moves past it unless it
    /// is to be sent again. Nothing changes when the row counts in another `dataType` now (a PUT
    /// changed it while the transaction was in flight: the cursor starts over there).
    pub async fn finish(&self, stream: Uuid, data_type: &str, last: i64, outcome: Outcome, now: i64) -> Result<()> {
        let sql = match outcome {
            Outcome::Errored => {
                "UPDATE log_stream_cursors SET in_progress = 0, errored = errored + 1, updated_at = $4 \
                 WHERE stream = $1 AND data_type = $2 AND pending_last = $3"
            }
            Outcome::Completed => {
                "UPDATE log_stream_cursors SET delivered = $3, pending_last = NULL, pending_since = NULL, \
                 in_progress = 0, completed = completed + 1, updated_at = $4 WHERE stream = $1 AND data_type = $2"
            }
            Outcome::Dropped => {
                "UPDATE log_stream_cursors SET delivered = $3, pending_last = NULL, pending_since = NULL, \
                 in_progress = 0, errored = errored + 1, updated_at = $4 WHERE stream = $1 AND data_type = $2"
            }
        };
        self.update(sql.into(), row_binds(stream, data_type, last, now))
            .await
            .map(drop)
    }

    /// A pending transaction whose records are gone (deleted while the stream was inactive):
    /// the cursor moves past it.
    pub async fn skip_pending(&self, stream: Uuid, data_type: &str, last: i64, now: i64) -> Result<()> {
        let sql = "UPDATE log_stream_cursors SET delivered = $3, pending_last = NULL, pending_since = NULL, \
                   in_progress = 0, updated_at = $4 WHERE stream = $1 AND data_type = $2";
        self.update(sql.into(), row_binds(stream, data_type, last, now))
            .await
            .map(drop)
    }
}

/// `$1` stream, `$2` data type, `$3` a record's `seq`, `$4` the time.
fn row_binds(stream: Uuid, data_type: &str, seq: i64, now: i64) -> Vec<Bind> {
    vec![
        Bind::Text(stream.to_string()),
        Bind::Text(data_type.to_string()),
        Bind::Int(seq),
        Bind::Int(now),
    ]
}

enum Bind {
    Text(String),
    Int(i64),
}

/// A stream's row starting after the newest record of `table` committed now (`seq` is handed
/// out in commit order, see `Store::insert_audit_now`); `restart`: an existing row starts over
/// there (its counters kept), else it is left as it is.
fn start_sql(table: EventTable, restart: bool) -> String {
    let conflict = if restart {
        "UPDATE SET data_type = excluded.data_type, delivered = excluded.delivered, pending_last = NULL, \
         pending_since = NULL, updated_at = excluded.updated_at"
    } else {
        "NOTHING"
    };
    // An edge event's `seq` is its request's × 16 + its index (< 16): after every event of the
    // newest request (the views would expand every row for their MAX).
    let newest = match table {
        EventTable::Audit => "(SELECT COALESCE(MAX(seq), 0) FROM audit_logs)".to_string(),
        _ => format!(
            "(SELECT COALESCE(MAX(seq), 0) * {n} + {n} - 1 FROM edge_requests)",
            n = crate::store::EVENTS_PER_REQUEST
        ),
    };
    format!(
        "INSERT INTO log_stream_cursors (stream, data_type, delivered, updated_at) \
         VALUES ($1, $2, {newest}, $3) ON CONFLICT (stream) DO {conflict}"
    )
}

/// The request seq of an edge event's `seq` (see `RequestRow`).
fn request_of(seq: i64) -> i64 {
    seq.div_euclid(crate::store::EVENTS_PER_REQUEST as i64)
}
