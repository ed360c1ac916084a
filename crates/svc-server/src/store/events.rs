//! Audit entries, authorization events and workload events: inserts (audit inside the entity
//! transaction, events in batches from the background writer) and the one query builder behind
//! the three event lists (contract §3.23–§3.26). Column names come from the callers' allow-lists.

use std::sync::Arc;

use sqlx::{Any, Row, Sqlite, Transaction};
use uuid::Uuid;

use super::{Dialect, Result, Store};

#[derive(Clone, Debug, PartialEq)]
pub struct AuditRow {
    pub id: String,
    pub rs: String,
    pub created_at: i64,
    pub category: String,
    pub activity: String,
    pub target: Option<String>,
    pub severity: String,
    pub actor_type: String,
    pub actor_email: Option<String>,
    pub actor_name: Option<String>,
    pub result: String,
    pub ip: Option<String>,
    pub search: String,
    pub body: String,
}

/// One authorization or workload event. Its values are held the way the request path has
/// them (ids, literals, shared strings), not as owned copies: the writer binds every text to a
/// native SQLite statement as a shared `Arc<str>` (sqlx copies a `&str` or `String` it is
/// given into a new allocation per bind), see [`Store::insert_events`].
#[derive(Clone, Debug, PartialEq)]
pub struct EventRow {
    pub table: EventTable,
    /// Time-ordered (v7), carrying `ts`: the single-event read finds the row through the
    /// `(rs, ts)` index (see [`Store::get_event_row`]); `EventSink::record` checks it in debug
    /// builds.
    pub id: Uuid,
    pub rs: Uuid,
    pub ts: i64,
    pub event_type: &'static str,
    pub severity: &'static str,
    /// Authorization events: outcome result. Workload events: action.
    pub result: Option<&'static str>,
    pub client_ip: Option<Arc<str>>,
    pub client_workload: Option<Uuid>,
    pub server_workload: Option<Uuid>,
    pub app_protocol: Option<Arc<str>>,
    pub user_id: Option<Arc<str>>,
    /// Lowercased text the list's `search` matches besides the columns it also searches
    /// (event type, client IP, action): an authorization event's entity names, a workload
    /// event's client IP. `None` when there is none.
    pub search: Option<Arc<str>>,
    pub body: Arc<str>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventTable {
    Audit,
    Authorization,
    Workload,
}

impl EventTable {
    pub(super) fn name(self) -> &'static str {
        match self {
            EventTable::Audit => "audit_logs",
            EventTable::Authorization => "authorization_events",
            EventTable::Workload => "workload_events",
        }
    }
    pub(super) fn time_col(self) -> &'static str {
        match self {
            EventTable::Audit => "created_at",
            _ => "ts",
        }
    }
    /// The text columns an edge event's body is stored without and `events::shape::expand` puts
    /// back (besides `ts`, read as a number).
    fn restored_columns(self) -> &'static [&'static str] {
        match self {
            EventTable::Audit => &[],
            EventTable::Authorization => &["id", "rs", "event_type", "severity", "result", "client_ip"],
            EventTable::Workload => &[
                "id",
                "rs",
                "event_type",
                "severity",
                "action",
                "client_workload",
                "server_workload",
                "app_protocol",
            ],
        }
    }
    /// The columns an event `INSERT` fills, in the order `bind_event!` binds them: `ts`, the
    /// restored columns, then those only the writer and the list's filters use.
    fn insert_columns(self) -> Vec<&'static str> {
        let rest: &[&str] = match self {
            EventTable::Workload => &["user_id", "search", "body"],
            _ => &["search", "body"],
        };
        std::iter::once("ts")
            .chain(self.restored_columns().iter().copied())
            .chain(rest.iter().copied())
            .collect()
    }
    /// `body` followed by the columns `row_columns` reads.
    pub(super) fn select_list(self) -> String {
        match self {
            EventTable::Audit => "body".into(),
            _ => format!("body, ts, {}", self.restored_columns().join(", ")),
        }
    }
    /// An edge event's columns by name (`ts` a number, the others text or null); empty for audit.
    pub(super) fn row_columns(self, row: &sqlx::any::AnyRow) -> Columns {
        let mut cols = Columns::new();
        if self != EventTable::Audit {
            cols.insert("ts".into(), row.get::<i64, _>(1).into());
            for (i, name) in self.restored_columns().iter().enumerate() {
                let v: Option<String> = row.get(i + 2);
                cols.insert(
                    (*name).into(),
                    v.map_or(serde_json::Value::Null, serde_json::Value::String),
                );
            }
        }
        cols
    }
}

/// The columns of one stored event (see [`EventTable::row_columns`]).
pub type Columns = serde_json::Map<String, serde_json::Value>;

pub(super) async fn insert_audit(tx: &mut Transaction<'static, Any>, a: &AuditRow) -> Result<()> {
    sqlx::query(
        "INSERT INTO audit_logs (id, rs, created_at, category, activity, target, severity, actor_type, actor_email, actor_name, result, ip, search, body) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
    )
    .bind(&a.id)
    .bind(&a.rs)
    .bind(a.created_at)
    .bind(&a.category)
    .bind(&a.activity)
    .bind(&a.target)
    .bind(&a.severity)
    .bind(&a.actor_type)
    .bind(&a.actor_email)
    .bind(&a.actor_name)
    .bind(&a.result)
    .bind(&a.ip)
    .bind(&a.search)
    .bind(&a.body)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A filtered, ordered page of one event table.
#[derive(Clone, Debug, Default)]
pub struct EventQuery {
    pub rs: Vec<String>,
    pub from: Option<i64>,
    pub to: Option<i64>,
    /// `LOWER(column) = LOWER(value)`
    pub eq: Vec<(&'static str, String)>,
    /// `column IN (values)` (exact)
    pub any_of: Vec<(&'static str, Vec<String>)>,
    /// Case-insensitive substring of the `search` column.
    pub search: Option<String>,
    pub order_col: &'static str,
    /// When set, order by this key path of the JSON body instead of `order_col` (§3.26: any
    /// scalar field). The names come from a static shape, never from the request.
    pub order_json: Option<Vec<&'static str>>,
    pub desc: bool,
    pub limit: i64,
    pub offset: i64,
}

pub struct QueryPage {
    pub bodies: Vec<String>,
    /// Each body's columns (edge events; empty maps for audit entries).
    pub columns: Vec<Columns>,
    pub total: i64,
}

fn escape_like(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('%');
    for c in s.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// Rows per multi-row `INSERT` of events: one statement (one round trip to the database driver)
/// instead of one per event; 64 × 12 parameters stays far below both dialects' limits.
const EVENT_ROWS_PER_INSERT: usize = 64;

/// Rows in the next `INSERT` when `left` remain: 64, else the largest power of two that fits.
/// Every row count is its own SQL text, and each connection keeps its prepared statements (up to
/// 100, tens of KB each at this size), so allowing any count from 1 to 64 filled every pooled
/// connection's cache with ~100 large statements (~30 MB in all, seen as RSS growth during the
/// benchmark's credential points); powers of two allow only seven per table.
fn insert_size(left: usize) -> usize {
    if left >= EVENT_ROWS_PER_INSERT {
        EVENT_ROWS_PER_INSERT
    } else {
        1 << left.ilog2()
    }
}

/// `INSERT INTO <table> (<columns>) VALUES ($1, …), ($n, …)` for `rows` rows. SQLite gets
/// anonymous `?` placeholders: its driver resolves every `$n` by name, a linear search per
/// parameter, which made binding quadratic in the number of rows.
fn multi_insert_sql(dialect: Dialect, table: &str, columns: &[&str], rows: usize) -> String {
    let mut sql = format!("INSERT INTO {table} ({}) VALUES ", columns.join(", "));
    let mut n = 0;
    for r in 0..rows {
        if r > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for c in 0..columns.len() {
            if c > 0 {
                sql.push_str(", ");
            }
            n += 1;
            match dialect {
                Dialect::Sqlite => sql.push('?'),
                Dialect::Postgres => {
                    sql.push('$');
                    sql.push_str(&n.to_string());
                }
            }
        }
        sql.push(')');
    }
    sql
}

/// Binds one event's values in the order of [`EventTable::insert_columns`]; `$text` turns each
/// text, a shared `Arc<str>`, into what the statement's driver takes.
macro_rules! bind_event {
    ($q:expr, $table:expr, $e:expr, $text:expr) => {{
        let e: &EventRow = $e;
        let text = $text;
        let q = $q
            .bind(e.ts)
            .bind(text(uuid_text(e.id)))
            .bind(text(rs_text(e.rs)))
            .bind(text(static_text(e.event_type)))
            .bind(text(static_text(e.severity)))
            // A workload event's action.
            .bind(e.result.map(|r| text(static_text(r))));
        let q = match $table {
            EventTable::Workload => q
                .bind(e.client_workload.map(|u| text(uuid_text(u))))
                .bind(e.server_workload.map(|u| text(uuid_text(u))))
                .bind(e.app_protocol.clone().map(&text))
                .bind(e.user_id.clone().map(&text)),
            _ => q.bind(e.client_ip.clone().map(&text)),
        };
        q.bind(e.search.clone().map(&text)).bind(text(e.body.clone()))
    }};
}

/// A UUID's hyphenated text, shared.
fn uuid_text(id: Uuid) -> Arc<str> {
    Arc::from(&*id.hyphenated().encode_lower(&mut Uuid::encode_buffer()))
}

/// A resource set id's text: nearly every event of a batch has the same one, kept per thread.
fn rs_text(rs: Uuid) -> Arc<str> {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(Uuid, Arc<str>)>> = const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        match &*last {
            Some((id, text)) if *id == rs => text.clone(),
            _ => {
                let text = uuid_text(rs);
                *last = Some((rs, text.clone()));
                text
            }
        }
    })
}

/// A literal (event type, severity, result, action) as a shared string, made once per thread:
/// they come from a few dozen literals.
fn static_text(s: &'static str) -> Arc<str> {
    thread_local! {
        static MADE: std::cell::RefCell<Vec<(&'static str, Arc<str>)>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    MADE.with(|made| {
        let mut made = made.borrow_mut();
        // Address and length: the same literal, not merely equal text.
        if let Some((_, text)) = made.iter().find(|(k, _)| std::ptr::eq(*k, s)) {
            return text.clone();
        }
        let text: Arc<str> = s.into();
        if made.len() < 64 {
            made.push((s, text.clone()));
        }
        text
    })
}

/// A table's rows in the slices one `INSERT` each takes (see [`insert_size`]).
fn insert_chunks<'r, 'e>(mut rest: &'r [&'e EventRow]) -> impl Iterator<Item = &'r [&'e EventRow]> {
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (chunk, tail) = rest.split_at(insert_size(rest.len()));
        rest = tail;
        Some(chunk)
    })
}

fn event_insert_sql(dialect: Dialect, table: EventTable, rows: usize) -> String {
    multi_insert_sql(dialect, table.name(), &table.insert_columns(), rows)
}

async fn insert_event_rows(
    tx: &mut Transaction<'static, Any>,
    dialect: Dialect,
    table: EventTable,
    rows: &[&EventRow],
) -> Result<()> {
    let mut q = sqlx::query(sqlx::AssertSqlSafe(event_insert_sql(dialect, table, rows.len())));
    for e in rows {
        q = bind_event!(q, table, e, |s: Arc<str>| s.to_string());
    }
    q.execute(&mut **tx).await?;
    Ok(())
}

/// The same through a native SQLite connection: the `Any` driver copies every bound string
/// twice before SQLite sees it (its own argument value, then the SQLite mapping's), a few
/// thousand copies and allocations per batch on the request thread's core; bound natively,
/// every text is a shared `Arc<str>`, not copied.
async fn insert_event_rows_sqlite(
    tx: &mut Transaction<'static, Sqlite>,
    table: EventTable,
    rows: &[&EventRow],
) -> Result<()> {
    let mut q = sqlx::query(sqlx::AssertSqlSafe(event_insert_sql(
        Dialect::Sqlite,
        table,
        rows.len(),
    )));
    for e in rows {
        q = bind_event!(q, table, e, |s: Arc<str>| s);
    }
    q.execute(&mut **tx).await?;
    Ok(())
}

impl Store {
    /// Inserts a batch of events in one transaction.
    pub async fn insert_events(&self, batch: &[EventRow]) -> Result<()> {
        if batch.iter().any(|e| e.table == EventTable::Audit) {
            return Err(super::StoreError("audit rows are written with their entity".into()));
        }
        // A batch is written again after an error; an error reported for a commit that did
        // happen (a lost connection) stores those events twice: the tables have no unique `id`.
        let tables = [EventTable::Authorization, EventTable::Workload].map(|table| {
            (
                table,
                batch.iter().filter(|e| e.table == table).collect::<Vec<&EventRow>>(),
            )
        });
        if let Some(pool) = &self.events {
            let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
            for (table, rows) in &tables {
                for chunk in insert_chunks(rows) {
                    insert_event_rows_sqlite(&mut tx, *table, chunk).await?;
                }
            }
            tx.commit().await?;
            return Ok(());
        }
        let mut tx = self.begin_write().await?;
        if self.dialect() == Dialect::Postgres {
            // One event transaction at a time across nodes: `seq` (a sequence, handed out at
            // insert) then grows in commit order, so a reader that follows `seq` (a log
            // stream's cursor) never passes a row that commits later.
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(super::EVENTS_LOCK)
                .execute(&mut *tx)
                .await?;
        }
        for (table, rows) in &tables {
            for chunk in insert_chunks(rows) {
                insert_event_rows(&mut tx, self.dialect(), *table, chunk).await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    /// Audit entries written outside an entity change (logins). On PostgreSQL under the
    /// cluster's write lock, as the write units' entries are: `seq` is then handed out in commit
    /// order, so a log stream's cursor over `seq` never passes an entry that commits later.
    pub async fn insert_audit_now(&self, rows: &[AuditRow]) -> Result<()> {
        let mut tx = self.begin_write().await?;
        self.lock_writes(&mut tx).await?;
        for a in rows {
            insert_audit(&mut tx, a).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub async fn query_events(&self, table: EventTable, q: &EventQuery) -> Result<QueryPage> {
        let mut conds: Vec<String> = Vec::new();
        let mut binds: Vec<BindValue> = Vec::new();
        let mut n = 0;
        let mut next = |binds: &mut Vec<BindValue>, v: BindValue| {
            binds.push(v);
            n += 1;
            format!("${n}")
        };
        if q.rs.is_empty() {
            return Ok(QueryPage {
                bodies: vec![],
                columns: vec![],
                total: 0,
            });
        }
        let list: Vec<String> =
            q.rs.iter()
                .map(|r| next(&mut binds, BindValue::Text(r.clone())))
                .collect();
        conds.push(format!("rs IN ({})", list.join(", ")));
        if let Some(from) = q.from {
            let p = next(&mut binds, BindValue::Int(from));
            conds.push(format!("{} >= {p}", table.time_col()));
        }
        if let Some(to) = q.to {
            let p = next(&mut binds, BindValue::Int(to));
            conds.push(format!("{} < {p}", table.time_col()));
        }
        for (col, v) in &q.eq {
            let p = next(&mut binds, BindValue::Text(v.to_lowercase()));
            conds.push(format!("LOWER({col}) = {p}"));
        }
        for (col, vs) in &q.any_of {
            if vs.is_empty() {
                conds.push("1 = 0".into());
                continue;
            }
            let ps: Vec<String> = vs
                .iter()
                .map(|v| next(&mut binds, BindValue::Text(v.clone())))
                .collect();
            conds.push(format!("{col} IN ({})", ps.join(", ")));
        }
        if let Some(s) = q.search.as_ref().filter(|s| !s.is_empty()) {
            let p = next(&mut binds, BindValue::Text(escape_like(s)));
            // An edge event's `search` holds only what its columns do not (see
            // `EventRow::search`); rows stored before hold everything and match as before.
            let like = |col: &str| format!("{col} LIKE {p} ESCAPE '\\'");
            conds.push(match table {
                EventTable::Audit => like("search"),
                EventTable::Authorization => format!(
                    "({} OR {} OR {})",
                    like("LOWER(event_type)"),
                    like("LOWER(client_ip)"),
                    like("search")
                ),
                EventTable::Workload => format!(
                    "({} OR {} OR {})",
                    like("LOWER(event_type)"),
                    like("LOWER(action)"),
                    like("search")
                ),
            });
        }
        let where_ = conds.join(" AND ");
        let name = table.name();
        let count_sql = format!("SELECT COUNT(*) FROM {name} WHERE {where_}");
        let dir = if q.desc { "DESC" } else { "ASC" };
        // Ties: audit entries on `externalId` ascending (§1.6); events have no `externalId`, so
        // they keep the order they were written in, newest first when descending
        // (docs/API-CONVENTIONS.md): the three events of one request share a millisecond.
        let tie = match table {
            EventTable::Audit => "id ASC".to_string(),
            _ => format!("seq {dir}"),
        };
        // Nulls first ascending, last descending (docs/API-CONVENTIONS.md: null sorts lowest), as
        // SQLite does by itself; PostgreSQL puts them the other way round unless told.
        let nulls = match (self.dialect(), q.desc) {
            (Dialect::Sqlite, _) => "",
            (Dialect::Postgres, false) => " NULLS FIRST",
            (Dialect::Postgres, true) => " NULLS LAST",
        };
        // The order keys (docs/API-CONVENTIONS.md, Lists: null < booleans < numbers < strings,
        // strings case-insensitively first, then exactly). The time column (never null) is
        // ordered as it is: anything more would keep the databases from reading the default
        // order (`ts DESC`) straight off the `(rs, ts)` index.
        let keys = match (&q.order_json, self.dialect()) {
            (None, _) if q.order_col == table.time_col() => format!("{} {dir}", q.order_col),
            // Every other column is text.
            (None, Dialect::Sqlite) => format!("{c} COLLATE NOCASE {dir}, {c} {dir}", c = q.order_col),
            // "Exactly" is byte order, as SQLite's: not the database's locale.
            (None, Dialect::Postgres) => {
                format!(
                    "LOWER({c}) {dir}{nulls}, {c} COLLATE \"C\" {dir}{nulls}",
                    c = q.order_col
                )
            }
            (Some(path), Dialect::Sqlite) => {
                // json_extract gives SQL NULL, integers (booleans as 0/1), reals or text, which
                // SQLite orders NULL < numbers < text; the collation applies to text only.
                let p: Vec<String> = path.iter().map(|k| format!("\"{k}\"")).collect();
                let v = format!("json_extract(body, '$.{}')", p.join("."));
                format!("{v} COLLATE NOCASE {dir}, {v} {dir}")
            }
            (Some(path), Dialect::Postgres) => {
                let v = format!("(body::jsonb #> '{{{}}}')", path.join(","));
                format!(
                    "CASE jsonb_typeof({v}) WHEN 'boolean' THEN 1 WHEN 'number' THEN 2 WHEN 'string' THEN 3 ELSE 0 END {dir}, \
                     CASE WHEN jsonb_typeof({v}) = 'string' THEN LOWER({v} #>> '{{}}') END {dir}{nulls}, \
                     CASE WHEN jsonb_typeof({v}) = 'string' THEN ({v} #>> '{{}}') END COLLATE \"C\" {dir}{nulls}, \
                     {v} {dir}{nulls}"
                )
            }
        };
        let page_sql = format!(
            "SELECT {} FROM {name} WHERE {where_} ORDER BY {keys}, {tie} LIMIT {} OFFSET {}",
            table.select_list(),
            q.limit,
            q.offset
        );
        let mut count = sqlx::query(sqlx::AssertSqlSafe(count_sql));
        let mut page = sqlx::query(sqlx::AssertSqlSafe(page_sql));
        for b in &binds {
            count = b.bind(count);
            page = b.bind(page);
        }
        let total: i64 = count.fetch_one(self.pool()).await?.get(0);
        let rows = page.fetch_all(self.pool()).await?;
        let bodies = rows.iter().map(|r| r.get::<String, _>(0)).collect();
        let columns = rows.iter().map(|r| table.row_columns(r)).collect();
        Ok(QueryPage { bodies, columns, total })
    }

    /// One record by id within the given resource sets.
    pub async fn get_event(&self, table: EventTable, id: &str, rs: &[String]) -> Result<Option<String>> {
        Ok(self.get_event_row(table, id, rs).await?.map(|(body, _)| body))
    }

    /// One record by id within the given resource sets, with its columns. An edge event's id is
    /// time-ordered (v7) and carries the row's `ts` (see `EventSink::record`), so the row is
    /// found through the `(rs, ts)` index; the event tables have no index on `id` (one B-tree
    /// insert less per event). An id of another version names no edge event: it is not looked
    /// for, since without the index that would scan the whole table.
    pub async fn get_event_row(&self, table: EventTable, id: &str, rs: &[String]) -> Result<Option<(String, Columns)>> {
        let sql = match table {
            EventTable::Audit => format!("SELECT {}, rs FROM {} WHERE id = $1", table.select_list(), table.name()),
            _ => {
                let Some(ts) = Uuid::try_parse(id).ok().and_then(|u| v7_millis(&u)) else {
                    return Ok(None);
                };
                if rs.is_empty() {
                    return Ok(None);
                }
                let list: Vec<String> = (0..rs.len()).map(|i| format!("${}", i + 3)).collect();
                let sql = format!(
                    "SELECT {}, rs FROM {} WHERE id = $1 AND ts = $2 AND rs IN ({})",
                    table.select_list(),
                    table.name(),
                    list.join(", ")
                );
                let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id).bind(ts);
                for r in rs {
                    q = q.bind(r.as_str());
                }
                let row = q.fetch_optional(self.pool()).await?;
                return Ok(row.map(|r| (r.get(0), table.row_columns(&r))));
            }
        };
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.and_then(|r| {
            let r_rs: String = r.get(r.len() - 1);
            rs.contains(&r_rs).then(|| (r.get(0), table.row_columns(&r)))
        }))
    }

    /// Deletes records older than `before` (ms) from every event table (retention). Rows are
    /// appended in time order, so the old ones are the head of each table by `seq`: the purge
    /// deletes them from the head in chunks of [`PURGE_CHUNK`], each its own short statement,
    /// and stops at the first chunk with nothing old in it. It never scans a table (there is no
    /// index on the time column) and never holds the write lock long enough to stall the event
    /// writer. A row written out of order (another node's clock, seconds at most) waits for a
    /// later purge.
    pub async fn purge_events(&self, before: i64) -> Result<u64> {
        self.purge_events_through(before, &[]).await
    }

    /// [`Store::purge_events`], deleting no row of a table in `floors` past that table's floor
    /// (`seq` ≤ floor): what the log streams have not delivered yet stays (§3.14).
    pub async fn purge_events_through(&self, before: i64, floors: &[(EventTable, i64)]) -> Result<u64> {
        let mut total = 0;
        for t in [EventTable::Audit, EventTable::Authorization, EventTable::Workload] {
            let (name, time) = (t.name(), t.time_col());
            let floor = floors.iter().filter(|(f, _)| *f == t).map(|(_, s)| *s).min();
            let bound = if floor.is_some() { " AND seq <= $2" } else { "" };
            let sql = format!(
                "DELETE FROM {name} WHERE seq IN (SELECT seq FROM \
                 (SELECT seq, {time} FROM {name} ORDER BY seq LIMIT {PURGE_CHUNK}) AS head WHERE {time} < $1{bound})"
            );
            loop {
                let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.clone())).bind(before);
                if let Some(f) = floor {
                    q = q.bind(f);
                }
                let n = q.execute(self.pool()).await?.rows_affected();
                total += n;
                if n == 0 {
                    break;
                }
                tokio::task::yield_now().await;
            }
        }
        Ok(total)
    }
}

/// The Unix time in milliseconds a version-7 UUID starts with (RFC 9562 §5.7).
pub(crate) fn v7_millis(id: &Uuid) -> Option<i64> {
    if id.get_version_num() != 7 {
        return None;
    }
    let b = id.as_bytes();
    Some(i64::from_be_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]]))
}

/// Rows per retention `DELETE` (see [`Store::purge_events`]).
pub const PURGE_CHUNK: usize = 2000;

enum BindValue {
    Text(String),
    Int(i64),
}

type AnyQuery<'q> = sqlx::query::Query<'q, Any, sqlx::any::AnyArguments>;

impl BindValue {
    fn bind<'q>(&self, q: AnyQuery<'q>) -> AnyQuery<'q> {
        match self {
            BindValue::Text(s) => q.bind(s.clone()),
            BindValue::Int(i) => q.bind(*i),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn event_inserts_use_a_few_statement_sizes() {
        let mut sizes = std::collections::BTreeSet::new();
        for total in 1..=1000 {
            let (mut left, mut rows) = (total, 0);
            while left > 0 {
                let n = super::insert_size(left);
                assert!(n >= 1 && n <= left);
                sizes.insert(n);
                rows += n;
                left -= n;
            }
            assert_eq!(rows, total);
        }
        assert_eq!(sizes.into_iter().collect::<Vec<_>>(), [1, 2, 4, 8, 16, 32, 64]);
    }
}
