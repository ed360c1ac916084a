//! Audit entries, authorization events and workload events: inserts (audit inside the entity
//! transaction, edge requests in batches from the background writer, one row per request holding
//! its events, [`RequestRow`]) and the one query builder behind the three event lists (contract
//! §3.23–§3.26), which reads the edge events through the views that expand those rows. Column
//! names come from the callers' allow-lists.

use std::borrow::Cow;
use std::sync::Arc;

use sqlx::{Any, Row, Sqlite, Transaction};
use uuid::Uuid;

use super::event_pages::RowOrder;
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
/// given into a new allocation per bind), see [`Store::insert_requests`].
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
    /// event's client IP. `None` when there is none, or when the view derives it: an
    /// authorization event's names all printable ASCII without `"` or `\` (from its body), a
    /// workload event's the row's client IP (migration 0005).
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
            EventTable::Authorization => &[
                "id",
                "rs",
                "event_type",
                "severity",
                "result",
                "client_ip",
                "context_id",
                "source_port",
            ],
            EventTable::Workload => &[
                "id",
                "rs",
                "event_type",
                "severity",
                "action",
                "client_workload",
                "server_workload",
                "app_protocol",
                "client_ip",
                "context_id",
                "source_port",
            ],
        }
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
            cols.insert("ts", row.get::<i64, _>(1).into());
            for (i, name) in self.restored_columns().iter().enumerate() {
                if NUMERIC_COLUMNS.contains(name) {
                    let v: Option<i64> = row.try_get(i + 2).ok().flatten();
                    cols.insert(name, v.map_or(serde_json::Value::Null, Into::into));
                    continue;
                }
                // Text or null; anything else (a number where the body held one) shows as null.
                let v: Option<String> = row.try_get(i + 2).ok().flatten();
                cols.insert(name, v.map_or(serde_json::Value::Null, serde_json::Value::String));
            }
        }
        cols
    }
}

/// The event views' columns that hold numbers (the client port, migration 0007); the others
/// hold text.
pub(super) const NUMERIC_COLUMNS: &[&str] = &["source_port"];

/// The columns of one stored event by name (see [`EventTable::row_columns`]): a handful, looked
/// up by a scan (no hashing, no key allocated; the log streams build one per record).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Columns(Vec<(&'static str, serde_json::Value)>);

impl Columns {
    pub fn new() -> Columns {
        Columns(Vec::with_capacity(12))
    }
    /// Sets `name` (replacing an earlier value).
    pub fn insert(&mut self, name: &'static str, value: serde_json::Value) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => *v = value,
            None => self.0.push((name, value)),
        }
    }
    pub fn get(&self, name: &str) -> Option<&serde_json::Value> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

impl std::ops::Index<&str> for Columns {
    type Output = serde_json::Value;
    /// `null` for a column that is not there, as `serde_json::Value` indexes.
    fn index(&self, name: &str) -> &serde_json::Value {
        static NULL: serde_json::Value = serde_json::Value::Null;
        self.get(name).unwrap_or(&NULL)
    }
}

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
    /// Read the page with one statement over the event views, never through the request
    /// templates (`store::event_pages`): slow at scale; the reference the conformance tests
    /// hold the template reads to.
    pub one_statement: bool,
    /// A template read's group of rows is read through the template index and sorted when it
    /// has this many rows at most, else in time order (default `store::event_pages::FEW_ROWS`);
    /// the tests set it to take either read.
    pub few_rows: Option<i64>,
}

pub struct QueryPage {
    pub bodies: Vec<String>,
    /// Each body's columns (edge events; empty maps for audit entries).
    pub columns: Vec<Columns>,
    /// The number of matching records: exact up to [`EXACT_TOTAL`], else an estimate (`estimated`).
    pub total: i64,
    /// `total` is an estimate: more than [`EXACT_TOTAL`] records match (docs/API-CONVENTIONS.md,
    /// `recordsTotalEstimated`).
    pub estimated: bool,
}

/// A list's total is counted exactly up to this many records; beyond, it is estimated (issue 34:
/// counting millions of events took longer than reading the page).
pub const EXACT_TOTAL: i64 = 10_000;

pub(super) fn escape_like(s: &str) -> String {
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

/// Request rows per multi-row `INSERT`: one statement (one round trip to the database driver)
/// instead of one per request.
const ROWS_PER_INSERT: usize = 64;

/// Rows in the next `INSERT` when `left` remain: 64, else the largest power of two that fits.
/// Every row count is its own SQL text, and each connection keeps its prepared statements (up to
/// 100), so allowing any count from 1 to 64 filled every pooled connection's cache with ~100
/// statements (~30 MB in all with the per-event rows of before, seen as RSS growth during the
/// benchmark's credential points); powers of two allow only seven.
fn insert_size(left: usize) -> usize {
    if left >= ROWS_PER_INSERT {
        ROWS_PER_INSERT
    } else {
        1 << left.ilog2()
    }
}

/// `INSERT INTO <table> (<columns>) VALUES ($1, …), ($n, …)` for `rows` rows. SQLite gets
/// anonymous `?` placeholders: its driver resolves every `$n` by name, a linear search per
/// parameter, which made binding quadratic in the number of rows. And `OR FAIL`: a failing row
/// stops the statement without undoing its rows before (the writer's transaction is rolled back
/// then anyway), so SQLite keeps no statement journal for it, which a statement of several rows,
/// or with migration 0013's trigger, would otherwise copy each page it changes into.
fn multi_insert_sql(dialect: Dialect, table: &str, columns: &[&str], rows: usize) -> String {
    let verb = match dialect {
        Dialect::Sqlite => "INSERT OR FAIL INTO",
        Dialect::Postgres => "INSERT INTO",
    };
    let mut sql = format!("{verb} {table} ({}) VALUES ", columns.join(", "));
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

/// Events of one request at most in one `edge_requests` row: the views number an event
/// `request seq × 16 + its index` (migration 0004).
pub const EVENTS_PER_REQUEST: usize = 16;

/// One stored edge request (`edge_requests`, migration 0004): its events, and what they share
/// stored once. The authorization and workload event views expand it.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestRow {
    pub rs: Uuid,
    pub ts: i64,
    pub client_ip: Option<Arc<str>>,
    /// A JSON object merged into each authorization event's body when it is read (its
    /// `meta.contextId`, `clientRequest`, `environment`): the bodies are stored without it.
    pub shared: Option<Arc<str>>,
    /// The events' fields the lists filter on, one JSON array (see migration 0004 for an
    /// element's keys).
    pub meta: Arc<str>,
    /// The events' bodies, one JSON array in the same order.
    pub bodies: Arc<str>,
    /// How many authorization and workload events the row holds.
    pub authorization: i64,
    pub workload: i64,
    /// The first event's id: `meta` leaves it out (the others are derived from it,
    /// [`nth_event_id`], or stored when they are not).
    pub first_id: Uuid,
    /// What the request's events carry per request besides their ids and time, left out of
    /// `shared` and `bodies` (migration 0007): its `meta.contextId` and client port.
    pub context: Option<RequestContext>,
}

/// The values of one request that its stored template leaves out (migration 0007).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestContext {
    pub context_id: Uuid,
    pub source_port: u16,
}

impl RequestRow {
    /// The `contextId` the row stores: none when it is the one its first event's id gives
    /// ([`context_of`]; the views derive it, migration 0010), as for every edge request's row
    /// but a second row of one request.
    fn stored_context(&self) -> Option<Uuid> {
        self.context
            .map(|c| c.context_id)
            .filter(|c| *c != context_of(self.first_id))
    }
}

/// An element's kind and severity when its `meta` leaves them out (migration 0005's views say
/// the same).
const DEFAULT_KIND: &str = "a";
const DEFAULT_SEVERITY: &str = "Info";

/// An element's kind (`k`): `w` for a workload event, `a` for an authorization event.
fn kind_of(table: EventTable) -> &'static str {
    if table == EventTable::Workload {
        "w"
    } else {
        DEFAULT_KIND
    }
}

/// One element of a request row's `meta`. What the views can derive is left out (migration
/// 0005): `k` when `a`, `s` when `Info`, the `id` of every event but the first when it is
/// [`nth_event_id`] of the first's, a workload event's `q` when it is the row's client IP.
#[derive(serde::Serialize)]
struct Element<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    k: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<Uuid>,
    t: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    r: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    q: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cw: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sw: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    u: Option<&'a str>,
}

impl RequestRow {
    /// The rows that store `events` in order: consecutive events of the same resource set, time
    /// and client IP share one row (an edge request's events all do), up to
    /// [`EVENTS_PER_REQUEST`]. `shared`: what the authorization events' bodies were written
    /// without (see [`RequestRow::shared`]).
    pub fn group(events: &[EventRow], shared: Option<&Arc<str>>, context: Option<RequestContext>) -> Vec<RequestRow> {
        let mut out = Vec::with_capacity(1);
        let mut rest = events;
        while let Some(first) = rest.first() {
            let n = rest
                .iter()
                .take(EVENTS_PER_REQUEST)
                .take_while(|e| e.rs == first.rs && e.ts == first.ts && e.client_ip == first.client_ip)
                .count();
            let (these, tail) = rest.split_at(n);
            rest = tail;
            let (meta, bodies) = elements(these);
            let workload = these.iter().filter(|e| e.table == EventTable::Workload).count() as i64;
            out.push(RequestRow {
                rs: first.rs,
                ts: first.ts,
                client_ip: first.client_ip.clone(),
                shared: shared.cloned(),
                meta,
                bodies,
                authorization: n as i64 - workload,
                workload,
                first_id: first.id,
                context,
            });
        }
        out
    }
}

/// A request row's `meta` and `bodies` arrays.
fn elements(events: &[EventRow]) -> (Arc<str>, Arc<str>) {
    let mut meta = Vec::with_capacity(events.len() * 160 + 2);
    let mut bodies = Vec::with_capacity(events.iter().map(|e| e.body.len() + 1).sum::<usize>() + 2);
    meta.push(b'[');
    bodies.push(b'[');
    for (i, e) in events.iter().enumerate() {
        if i > 0 {
            meta.push(b',');
            bodies.push(b',');
        }
        let workload = e.table == EventTable::Workload;
        // The first id is the row's (`RequestRow::first_id`), the others derived from it.
        let derived = i == 0 || e.id == nth_event_id(events[0].id, i);
        let el = Element {
            k: Some(kind_of(e.table)).filter(|k| *k != DEFAULT_KIND),
            id: (!derived).then_some(e.id),
            t: e.event_type,
            s: Some(e.severity).filter(|s| *s != DEFAULT_SEVERITY),
            r: e.result,
            q: e.search
                .as_deref()
                .filter(|q| !(workload && Some(*q) == e.client_ip.as_deref())),
            cw: e.client_workload,
            sw: e.server_workload,
            p: e.app_protocol.as_deref(),
            u: e.user_id.as_deref(),
        };
        serde_json::to_writer(&mut meta, &el).expect("an event element serialises");
        bodies.extend_from_slice(e.body.as_bytes());
    }
    meta.push(b']');
    bodies.push(b']');
    let text = |v: Vec<u8>| -> Arc<str> { String::from_utf8(v).expect("JSON is UTF-8").into() };
    (text(meta), text(bodies))
}

/// One stored edge request as read back (see [`StoredRequest::records`]).
pub(super) struct StoredRequest<'a> {
    pub seq: i64,
    pub rs: &'a str,
    pub ts: i64,
    pub client_ip: Option<&'a str>,
    pub shared: Option<&'a str>,
    pub meta: &'a str,
    pub bodies: &'a str,
    /// Migration 0007's row columns: the first event's id, `meta.contextId`, the client port.
    pub first_id: Option<&'a str>,
    pub ctx: Option<&'a str>,
    pub port: Option<i64>,
}

/// An element of a stored request's `meta`, as read (see migration 0004 for its keys; the
/// search text `q` is for the lists' filter only).
#[derive(serde::Deserialize)]
struct StoredElement<'a> {
    #[serde(default, borrow)]
    k: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    t: Cow<'a, str>,
    #[serde(default, borrow)]
    s: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    r: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    cw: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    sw: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    p: Option<Cow<'a, str>>,
}

impl StoredRequest<'_> {
    /// The request's events of `table`, as the event views show them: each with its `seq`, the
    /// request's time, its body (an authorization event's with the request's shared parts, to be
    /// merged in as the views do) and its columns. Text that is not a stored request's JSON gives none.
    pub(super) fn records(&self, table: EventTable) -> Vec<super::StreamRecord> {
        use serde_json::Value;
        /// The part of the shared parts a column is read from.
        #[derive(serde::Deserialize)]
        struct Shared<'a> {
            #[serde(default, borrow)]
            meta: Option<SharedMeta<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct SharedMeta<'a> {
            #[serde(default, borrow, rename = "contextId")]
            context_id: Option<Cow<'a, str>>,
        }
        let kind = kind_of(table);
        // The bodies' text (a JSON array), shared by the request's records.
        let all: Arc<str> = self.bodies.into();
        let Ok(elements) = serde_json::from_str::<Vec<StoredElement>>(self.meta) else {
            tracing::error!(seq = self.seq, "a stored edge request's events are not JSON; skipped");
            return vec![];
        };
        let shared_meta = self
            .shared
            .and_then(|s| serde_json::from_str::<Shared>(s).ok())
            .and_then(|s| s.meta);
        // Stored, derived from the first event's id (a row with a client port, migration 0010),
        // or in the shared parts (rows before migration 0007): the views' order.
        let derived = self
            .port
            .and(self.first_id)
            .and_then(|id| Uuid::try_parse(id).ok())
            .map(|id| uuid_text(context_of(id)));
        let context_id = self
            .ctx
            .map(Cow::Borrowed)
            .or_else(|| derived.as_deref().map(|c| Cow::Owned(c.to_string())))
            .or_else(|| shared_meta.as_ref().and_then(|m| m.context_id.clone()));
        let shared: Option<Arc<str>> = self
            .shared
            .filter(|_| table == EventTable::Authorization)
            .map(Arc::from);
        // The first event's id, from which the others' are derived when not stored.
        let first = elements
            .first()
            .and_then(|e| e.id.as_deref())
            .or(self.first_id)
            .and_then(|id| Uuid::try_parse(id).ok());
        let mut out = Vec::new();
        let text = |s: Option<&str>| s.map_or(Value::Null, |s| Value::String(s.to_string()));
        for (i, e) in elements.iter().enumerate() {
            if e.k.as_deref().unwrap_or(DEFAULT_KIND) != kind {
                continue;
            }
            let derived_id;
            let id = match (&e.id, first) {
                (Some(id), _) => Some(&**id),
                (None, Some(first)) if i < EVENTS_PER_REQUEST => {
                    derived_id = uuid_text(nth_event_id(first, i));
                    Some(&*derived_id)
                }
                _ => None,
            };
            let port = self.port.map_or(Value::Null, Value::from);
            // The columns the view gives this table (`row_columns`), from the element and row.
            let mut cols = Columns::new();
            cols.insert("ts", self.ts.into());
            for name in table.restored_columns() {
                let v = match *name {
                    "id" => id,
                    "rs" => Some(self.rs),
                    "event_type" => Some(&*e.t),
                    "severity" => Some(e.s.as_deref().unwrap_or(DEFAULT_SEVERITY)),
                    "context_id" => context_id.as_deref(),
                    "result" | "action" => e.r.as_deref(),
                    "client_ip" => self.client_ip,
                    "client_workload" => e.cw.as_deref(),
                    "server_workload" => e.sw.as_deref(),
                    "app_protocol" => e.p.as_deref(),
                    "source_port" => {
                        cols.insert(name, port.clone());
                        continue;
                    }
                    _ => None,
                };
                cols.insert(name, text(v));
            }
            out.push(super::StreamRecord {
                seq: self.seq * EVENTS_PER_REQUEST as i64 + i as i64,
                time: self.ts,
                text: all.clone(),
                index: Some(i),
                shared: shared.clone(),
                columns: cols,
            });
        }
        out
    }
}

const REQUEST_COLUMNS: &[&str] = &["rs", "ts", "na", "nw", "tpl", "eid", "ctx", "port", "meta", "bodies"];

/// What a request row stores of its events when they are in its template (migration 0007).
const NO_ELEMENTS: &str = "[]";

/// Binds one request row's values in the order of [`REQUEST_COLUMNS`], with its template's id;
/// `$text` turns each text, a shared `Arc<str>`, into what the statement's driver takes.
macro_rules! bind_request {
    ($q:expr, $r:expr, $tpl:expr, $text:expr) => {{
        let r: &RequestRow = $r;
        let text = $text;
        let none: Arc<str> = Arc::from(NO_ELEMENTS);
        $q.bind(text(rs_text(r.rs)))
            .bind(r.ts)
            .bind(r.authorization)
            .bind(r.workload)
            .bind($tpl)
            .bind(text(uuid_text(r.first_id)))
            .bind(r.stored_context().map(|c| text(uuid_text(c))))
            .bind(r.context.map(|c| i64::from(c.source_port)))
            .bind(text(none.clone()))
            .bind(text(none))
    }};
}

/// A UUID's hyphenated text, shared.
fn uuid_text(id: Uuid) -> Arc<str> {
    Arc::from(&*id.hyphenated().encode_lower(&mut Uuid::encode_buffer()))
}

/// A resource set id's text: nearly every request of a batch has the same one, kept per thread.
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

/// The index ranges of `rows` rows that one `INSERT` each takes (see [`insert_size`]).
fn insert_chunks(rows: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at == rows {
            return None;
        }
        let n = insert_size(rows - at);
        at += n;
        Some(at - n..at)
    })
}

fn request_insert_sql(dialect: Dialect, rows: usize) -> String {
    multi_insert_sql(dialect, "edge_requests", REQUEST_COLUMNS, rows)
}

// ------------------------------------------------------------------------------------------------
// Templates (migration 0007): what a request's events say besides their ids, time and client port,
// stored once and referred to by id.

/// A template's content: the texts a request row held before migration 0007, but its first id,
/// `meta.contextId` and client port.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) struct TemplateKey {
    client_ip: Option<Arc<str>>,
    meta: Arc<str>,
    shared: Option<Arc<str>>,
    bodies: Arc<str>,
}

impl TemplateKey {
    fn of(r: &RequestRow) -> TemplateKey {
        TemplateKey {
            client_ip: r.client_ip.clone(),
            meta: r.meta.clone(),
            shared: r.shared.clone(),
            bodies: r.bodies.clone(),
        }
    }

    /// Its key in `edge_templates` for `day`: a SHA-256 of the day and every part (with its
    /// length), so every node names the same template alike and no chosen content (a client
    /// reports its own environment) can take another's place.
    fn digest(&self, day: i64) -> String {
        let mut buf = Vec::with_capacity(self.meta.len() + self.bodies.len() + 1024);
        buf.extend_from_slice(format!("svc-template-1\n{day}\n").as_bytes());
        for part in [
            self.client_ip.as_deref(),
            Some(&*self.meta),
            self.shared.as_deref(),
            Some(&*self.bodies),
        ] {
            match part {
                Some(p) => {
                    buf.extend_from_slice(format!("{}:", p.len()).as_bytes());
                    buf.extend_from_slice(p.as_bytes());
                }
                None => buf.push(b'-'),
            }
        }
        crate::crypto::hex(&crate::crypto::sha256(&buf))
    }
}

/// The ids of the templates the event writer used lately, for one day: a request whose template
/// is here stores its id without a database read; a template the writer stores is added once its
/// batch committed (a rolled-back id is never handed out).
///
/// Hashed with foldhash (seeded per process): a lookup hashes the whole template, ~1.5 KB per
/// `/credentials` request, and SipHash took ~2.5 instructions a byte of it (issue 34's
/// instruction budget, docs/PERFORMANCE.md); a hit is then compared byte for byte.
#[derive(Default)]
pub(super) struct TemplateCache {
    day: i64,
    ids: std::collections::HashMap<TemplateKey, i64, foldhash::fast::RandomState>,
}

/// Templates the cache holds at most (it starts over when full).
const TEMPLATE_CACHE: usize = 65_536;

/// The UTC day of a time in milliseconds.
/// A day in milliseconds.
pub(super) const DAY_MS: i64 = 86_400_000;

/// The UTC day of a time (ms): what templates (migration 0007) and the rows kept by port
/// (`port_sketch`) are kept per.
pub(super) fn day_of(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS)
}

/// The first millisecond of `day` (saturating).
pub(super) fn day_start(day: i64) -> i64 {
    day.saturating_mul(DAY_MS)
}

const TEMPLATE_INSERT: &str = "INSERT INTO edge_templates (digest, day, client_ip, meta, shared, bodies) \
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (digest) DO UPDATE SET day = excluded.day RETURNING id";

/// The template ids of `batch`'s rows, storing the templates not known yet in the batch's
/// transaction `$tx`; `$text` as in [`bind_request`]. Evaluates to `Result<(Vec<i64>, Vec<(i64,
/// TemplateKey, i64)>)>`: the ids, and the templates stored (day, content, id) for the cache.
macro_rules! resolve_templates {
    ($store:expr, $tx:expr, $batch:expr, $text:expr) => {{
        let store: &Store = $store;
        let batch: &[RequestRow] = $batch;
        let text = $text;
        let mut ids: Vec<Option<i64>> = Vec::with_capacity(batch.len());
        {
            let cache = store
                .templates
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for r in batch {
                let known = (day_of(r.ts) == cache.day)
                    .then(|| cache.ids.get(&TemplateKey::of(r)).copied())
                    .flatten();
                ids.push(known);
            }
        }
        let mut stored: Vec<(i64, TemplateKey, i64)> = Vec::new();
        let mut failed = None;
        for (i, r) in batch.iter().enumerate() {
            if ids[i].is_some() {
                continue;
            }
            let (day, key) = (day_of(r.ts), TemplateKey::of(r));
            if let Some((_, _, id)) = stored.iter().find(|(d, k, _)| *d == day && *k == key) {
                ids[i] = Some(*id);
                continue;
            }
            let row = sqlx::query(TEMPLATE_INSERT)
                .bind(key.digest(day))
                .bind(day)
                .bind(key.client_ip.clone().map(&text))
                .bind(text(key.meta.clone()))
                .bind(key.shared.clone().map(&text))
                .bind(text(key.bodies.clone()))
                .fetch_one(&mut **$tx)
                .await;
            match row {
                Ok(row) => {
                    let id: i64 = row.get(0);
                    ids[i] = Some(id);
                    stored.push((day, key, id));
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        match failed {
            Some(e) => Err(super::StoreError::from(e)),
            None => Ok((
                ids.into_iter().map(|i| i.unwrap_or_default()).collect::<Vec<i64>>(),
                stored,
            )),
        }
    }};
}

impl Store {
    /// Adds the templates a committed batch stored to the cache.
    fn remember_templates(&self, stored: Vec<(i64, TemplateKey, i64)>) {
        let mut cache = self.templates.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for (day, key, id) in stored {
            if day > cache.day {
                cache.day = day;
                cache.ids.clear();
            }
            if day == cache.day {
                if cache.ids.len() >= TEMPLATE_CACHE {
                    cache.ids.clear();
                }
                cache.ids.insert(key, id);
            }
        }
    }
}

async fn insert_request_rows(
    tx: &mut Transaction<'static, Any>,
    dialect: Dialect,
    rows: &[RequestRow],
    tpls: &[i64],
) -> Result<()> {
    let mut q = sqlx::query(sqlx::AssertSqlSafe(request_insert_sql(dialect, rows.len())));
    for (r, t) in rows.iter().zip(tpls) {
        q = bind_request!(q, r, *t, |s: Arc<str>| s.to_string());
    }
    q.execute(&mut **tx).await?;
    Ok(())
}

/// The same through a native SQLite connection: the `Any` driver copies every bound string
/// twice before SQLite sees it (its own argument value, then the SQLite mapping's); bound
/// natively, every text is a shared `Arc<str>`, not copied.
/// Returns the last row's id (the others are those before it: one writer, `AUTOINCREMENT`).
async fn insert_request_rows_sqlite(
    tx: &mut Transaction<'static, Sqlite>,
    rows: &[RequestRow],
    tpls: &[i64],
) -> Result<i64> {
    let mut q = sqlx::query(sqlx::AssertSqlSafe(request_insert_sql(Dialect::Sqlite, rows.len())));
    for (r, t) in rows.iter().zip(tpls) {
        q = bind_request!(q, r, *t, |s: Arc<str>| s);
    }
    Ok(q.execute(&mut **tx).await?.last_insert_rowid())
}

impl Store {
    /// Stores events, each consecutive run of one request's events as one row (see
    /// [`RequestRow::group`]), in one transaction.
    pub async fn insert_events(&self, events: &[EventRow]) -> Result<()> {
        if events.iter().any(|e| e.table == EventTable::Audit) {
            return Err(super::StoreError::other("audit rows are written with their entity"));
        }
        self.insert_requests(&RequestRow::group(events, None, None)).await
    }

    /// Stores a batch of edge requests in one transaction, each row referring to its template
    /// (stored in the same transaction when new); fails at once while the database is unusable
    /// (`Store::live`).
    pub async fn insert_requests(&self, batch: &[RequestRow]) -> Result<()> {
        self.live(true, self.insert_requests_now(batch)).await
    }

    async fn insert_requests_now(&self, batch: &[RequestRow]) -> Result<()> {
        // A batch is written again after an error; an error reported for a commit that did
        // happen (a lost connection) stores those events twice: there is no unique `id`.
        if let Some(pool) = &self.events {
            let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
            let (tpls, stored) = resolve_templates!(self, &mut tx, batch, |s: Arc<str>| s)?;
            for range in insert_chunks(batch.len()) {
                let last = insert_request_rows_sqlite(&mut tx, &batch[range.clone()], &tpls[range.clone()]).await?;
                // Before the commit: a list then never misses a row it can read.
                self.feed_port_sketch(&batch[range.clone()], &tpls[range], last);
            }
            tx.commit().await?;
            self.remember_templates(stored);
            return Ok(());
        }
        // PostgreSQL: each row's day has its partition (`request_days`); after a failure the
        // days are asked of the catalog again.
        self.ensure_request_days(batch).await?;
        let written = self.insert_requests_any(batch).await;
        if written.is_err() {
            self.forget_request_days();
        }
        written
    }

    /// [`Store::insert_requests_now`] through the shared pool (PostgreSQL, and SQLite without
    /// the event writer's connection).
    async fn insert_requests_any(&self, batch: &[RequestRow]) -> Result<()> {
        let mut tx = self.begin_write().await?;
        if self.dialect() == Dialect::Postgres {
            // One event transaction at a time across nodes: `seq` (a sequence, handed out at
            // insert) then grows in commit order, so a reader that follows `seq` (a log
            // stream's cursor) never passes a row that commits later. Templates are stored
            // under the same lock, so a template's id never shows before its rows can.
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(super::EVENTS_LOCK)
                .execute(&mut *tx)
                .await?;
        }
        let (tpls, stored) = resolve_templates!(self, &mut tx, batch, |s: Arc<str>| s.to_string())?;
        for range in insert_chunks(batch.len()) {
            insert_request_rows(&mut tx, self.dialect(), &batch[range.clone()], &tpls[range]).await?;
        }
        tx.commit().await?;
        self.remember_templates(stored);
        Ok(())
    }

    /// Audit entries written outside an entity change (logins). On PostgreSQL under the
    /// cluster's write lock, as the write units' entries are: `seq` is then handed out in commit
    /// order, so a log stream's cursor over `seq` never passes an entry that commits later.
    pub async fn insert_audit_now(&self, rows: &[AuditRow]) -> Result<()> {
        self.live(true, self.insert_audit_rows(rows)).await
    }

    async fn insert_audit_rows(&self, rows: &[AuditRow]) -> Result<()> {
        let mut tx = self.begin_write().await?;
        self.lock_writes(&mut tx).await?;
        for a in rows {
            insert_audit(&mut tx, a).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The conditions of `q` on the events' own fields (equality, `any_of`, `search`), their
    /// values appended to `binds` (numbered after what `binds` holds).
    pub(super) fn event_conds(&self, table: EventTable, q: &EventQuery, binds: &mut Vec<BindValue>) -> Vec<String> {
        let mut conds = Vec::new();
        let next = |binds: &mut Vec<BindValue>, v: BindValue| {
            binds.push(v);
            format!("${}", binds.len())
        };
        for (col, v) in &q.eq {
            let p = next(binds, BindValue::Text(v.to_lowercase()));
            conds.push(format!("LOWER({col}) = {p}"));
        }
        for (col, vs) in &q.any_of {
            if vs.is_empty() {
                conds.push("1 = 0".into());
                continue;
            }
            let ps: Vec<String> = vs.iter().map(|v| next(binds, BindValue::Text(v.clone()))).collect();
            conds.push(format!("{col} IN ({})", ps.join(", ")));
        }
        if let Some(s) = q.search.as_ref().filter(|s| !s.is_empty()) {
            let p = next(binds, BindValue::Text(escape_like(s)));
            // An edge event's `search` holds only what its columns do not (see
            // `EventRow::search`); rows stored before hold everything and match as before.
            let like = |col: &str| format!("{col} LIKE {p} ESCAPE '\\'");
            conds.push(match table {
                EventTable::Audit => like("search"),
                // The names: the stored text (`q`), else the body's (migration 0005), read only
                // for the rows whose bodies match at all (`raw`, compared without case: those
                // names are stored as they are, printable ASCII).
                EventTable::Authorization => format!(
                    "({} OR {} OR {} OR (q IS NULL AND {} AND {}))",
                    like("LOWER(event_type)"),
                    like("LOWER(client_ip)"),
                    like("q"),
                    match self.dialect() {
                        Dialect::Sqlite => like("raw"),
                        Dialect::Postgres => format!("(raw COLLATE \"C\") ILIKE {p} ESCAPE '\\'"),
                    },
                    like("names")
                ),
                EventTable::Workload => format!(
                    "({} OR {} OR {})",
                    like("LOWER(event_type)"),
                    like("LOWER(action)"),
                    like("search")
                ),
            });
        }
        conds
    }

    /// Issue 34: an edge list filtered on its events' own fields first runs the filter over the
    /// request templates (migration 0007, a few thousand rows where the requests are millions),
    /// then counts the matches from the window's rows and their templates, without reading a
    /// row's events (see [`TemplateFilter`]). Rows that predate templates are not covered by them:
    /// with any in the window, `Any`.
    async fn template_filter(
        &self,
        table: EventTable,
        q: &EventQuery,
        w: &super::event_pages::Window<'_>,
    ) -> Result<TemplateFilter> {
        let mut binds = Vec::new();
        let conds = self.event_conds(table, q, &mut binds);
        // Only the templates of the window's days.
        let sql = format!(
            "SELECT tpl, n FROM {} WHERE tpl IN (SELECT id FROM edge_templates WHERE {}) AND {}",
            super::event_pages::template_view(table),
            super::event_pages::template_days(q.from, q.to),
            conds.join(" AND ")
        );
        // The matching template events, and each matching template with how many of its events match.
        let pairs: Vec<(i64, i64)> = bound(&sql, &binds)
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(|r| (r.get::<i64, _>(0), r.get::<i64, _>(1)))
            .collect();
        let mut per: std::collections::HashMap<i64, i64> = std::collections::HashMap::new();
        for (tpl, _) in &pairs {
            *per.entry(*tpl).or_default() += 1;
        }
        if self.window_has_untemplated_rows(w).await? {
            return Ok(TemplateFilter::Any);
        }
        if per.is_empty() {
            return Ok(TemplateFilter::Empty);
        }
        let mut ids: Vec<i64> = per.keys().copied().collect();
        ids.sort_unstable();
        // The first `EXACT_TOTAL + 1` matching rows, in the templates' rows' order
        // (a few rows: read through it); when there are more, the oldest (in one resource set),
        // as the count of `query_events` samples them for its estimate.
        let cap = EXACT_TOTAL + 1;
        // Summed per template in the database: a template's sampled rows, their least and
        // greatest sequence numbers (not 10,001 rows through the driver).
        let per_template = |sample: String| {
            bound(
                &format!("SELECT tpl, COUNT(*), MIN(seq), MAX(seq) FROM ({sample}) AS s GROUP BY tpl"),
                w.binds,
            )
        };
        let mut rows = per_template(self.rows_of_templates(w.conds, &ids, "tpl, seq", None, cap))
            .fetch_all(self.pool())
            .await?;
        let sampled = |rows: &[sqlx::any::AnyRow]| rows.iter().map(|r| r.get::<i64, _>(1)).sum::<i64>();
        if sampled(&rows) >= cap && q.rs.len() == 1 {
            let list = super::event_pages::id_list(ids.iter().copied());
            rows = per_template(format!(
                "SELECT tpl, seq FROM edge_requests WHERE {} AND tpl IN ({list}) ORDER BY ts LIMIT {cap}",
                w.conds
            ))
            .fetch_all(self.pool())
            .await?;
        }
        let counted: i64 = rows
            .iter()
            .map(|r| per.get(&r.get::<i64, _>(0)).copied().unwrap_or(0) * r.get::<i64, _>(1))
            .sum();
        let span = (
            rows.iter().map(|r| r.get::<i64, _>(2)).min(),
            rows.iter().map(|r| r.get::<i64, _>(3)).max(),
        );
        let few = sampled(&rows) < cap;
        let (total, estimated) = if few {
            (counted, false)
        } else {
            (
                self.estimate_total(table, q, counted, span).await?.max(EXACT_TOTAL + 1),
                true,
            )
        };
        Ok(TemplateFilter::Some {
            pairs,
            few,
            total,
            estimated,
        })
    }

    pub async fn query_events(&self, table: EventTable, q: &EventQuery) -> Result<QueryPage> {
        self.live(false, self.query_events_now(table, q)).await
    }

    async fn query_events_now(&self, table: EventTable, q: &EventQuery) -> Result<QueryPage> {
        // Audit entries have their own indexes (migration 0009) and query (`store::audit`).
        if table == EventTable::Audit {
            return self.query_audit_now(q).await;
        }
        // In one resource set every event ties on `resourceSetId`: its order is the ties' order,
        // which is the time's.
        let rs_only;
        let q = if q.order_col == "rs" && q.order_json.is_none() && q.rs.len() == 1 {
            rs_only = EventQuery {
                order_col: table.time_col(),
                ..q.clone()
            };
            &rs_only
        } else {
            q
        };
        let mut conds: Vec<String> = Vec::new();
        let mut binds: Vec<BindValue> = Vec::new();
        let empty = || QueryPage {
            bodies: vec![],
            columns: vec![],
            total: 0,
            estimated: false,
        };
        if q.rs.is_empty() {
            return Ok(empty());
        }
        let next = |binds: &mut Vec<BindValue>, v: BindValue| {
            binds.push(v);
            format!("${}", binds.len())
        };
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
        // The rows' window (resource sets and time), before any condition on the events.
        let window_sql = conds.join(" AND ");
        let times = match &conds[1..] {
            [] => "1 = 1".to_string(),
            times => times.join(" AND "),
        };
        let window_binds = binds.clone();
        let window = super::event_pages::Window {
            conds: &window_sql,
            binds: &window_binds,
            rs: &list,
            times: &times,
            days: super::event_pages::template_days(q.from, q.to),
        };
        let event_filters =
            !q.eq.is_empty() || !q.any_of.is_empty() || q.search.as_ref().is_some_and(|s| !s.is_empty());
        // An edge list ordered on a field its templates decide sorts the templates (below).
        let template_order = !q.one_statement
            && (q.order_json.is_some() || super::event_pages::TEMPLATE_COLUMNS.contains(&q.order_col))
            && !self.window_has_untemplated_rows(&window).await?;
        // The total when the templates gave it; the matching template events, and whether their
        // rows are dense in the window (more than `EXACT_TOTAL`).
        let mut counted = None;
        let mut matching = None;
        if event_filters && !q.one_statement {
            match self.template_filter(table, q, &window).await? {
                TemplateFilter::Empty => return Ok(empty()),
                TemplateFilter::Some {
                    pairs,
                    few,
                    total,
                    estimated,
                } => {
                    // Few rows: only theirs are read (`Store::template_rows`), the window's
                    // conditions with them.
                    if few {
                        let mut tpls: Vec<i64> = pairs.iter().map(|(t, _)| *t).collect();
                        tpls.sort_unstable();
                        tpls.dedup();
                        let list = super::event_pages::id_list(tpls.into_iter());
                        conds = vec![self.rows_of_templates_cond(&window, &list)];
                    }
                    matching = Some((pairs, !few));
                    counted = Some((total, estimated));
                }
                TemplateFilter::Any => {}
            }
        }
        conds.extend(self.event_conds(table, q, &mut binds));
        let where_ = conds.join(" AND ");
        let name = table.name();
        // The total, counted over the first `EXACT_TOTAL + 1` matching rows at most (the index's
        // order), with the span of their sequence numbers for an estimate beyond. Without a
        // filter on the events' own fields, an edge list counts its requests' events (the
        // conditions are then on `rs` and `ts` only): no JSON is read.
        let cap = EXACT_TOTAL + 1;
        // In one resource set the sample is the oldest matches, read off the `(rs, time)` index
        // in order (a contiguous stretch of rows, as the estimate assumes; PostgreSQL's plan
        // would otherwise be free to sample anywhere).
        let time = table.time_col();
        let oldest = if q.rs.len() == 1 {
            format!(" ORDER BY {time}")
        } else {
            String::new()
        };
        let count_sql = match table {
            EventTable::Authorization | EventTable::Workload if !event_filters => {
                let n = if table == EventTable::Authorization { "na" } else { "nw" };
                format!(
                    "SELECT COUNT(*), COALESCE(SUM(n), 0), MIN(seq), MAX(seq) FROM \
                     (SELECT {n} AS n, seq FROM edge_requests WHERE {where_} AND {n} > 0{oldest} LIMIT {cap}) AS sample"
                )
            }
            _ => format!(
                "SELECT COUNT(*), COUNT(*), MIN(rseq), MAX(rseq) FROM \
                 (SELECT rseq FROM {name} WHERE {where_}{oldest} LIMIT {cap}) AS sample"
            ),
        };
        let (total, estimated) = match counted {
            Some(c) => c,
            None => {
                let sample = bound(&count_sql, &binds).fetch_one(self.pool()).await?;
                let (rows_seen, counted): (i64, i64) = (sample.get(0), sample.get(1));
                if rows_seen >= cap {
                    let span = (sample.get::<Option<i64>, _>(2), sample.get::<Option<i64>, _>(3));
                    (
                        self.estimate_total(table, q, counted, span).await?.max(EXACT_TOTAL + 1),
                        true,
                    )
                } else {
                    (counted, false)
                }
            }
        };
        if total == 0 {
            return Ok(empty());
        }
        let page = |rows: Vec<sqlx::any::AnyRow>| QueryPage {
            bodies: rows.iter().map(|r| r.get::<String, _>(0)).collect(),
            columns: rows.iter().map(|r| table.row_columns(r)).collect(),
            total,
            estimated,
        };
        let dir = if q.desc { "DESC" } else { "ASC" };
        let by_time = q.order_json.is_none() && q.order_col == table.time_col();
        let keys = self.order_keys(table, q);
        // Issue 34: the page read in two steps (`store::event_pages`): the rows first, by index,
        // then their events. An order on a template-level field walks the window's templates in
        // that order; a filter matching a few templates' rows reads only those, in time order.
        if template_order {
            let identity = self.order_identity(q.order_col, q.order_json.as_deref());
            let groups = self.template_order_groups(table, &window, q, &keys, &identity).await?;
            let rows = self
                .page_of_groups(table, &window, groups, q, RowOrder::Time, None)
                .await?;
            return Ok(page(rows));
        }
        // An order on a request's own value reads its rows in that order: an edge event's id is
        // time-ordered (its row's `ts` first), and so is a `contextId` derived from it (migration
        // 0010, where the window's rows all derive theirs); the client port's rows are sorted.
        let request_order = match (&q.order_json, q.order_col) {
            _ if q.one_statement => None,
            (None, "id") => Some(RowOrder::TimeThen("id")),
            (None, "context_id") if !self.window_has_stored_contexts(&window).await? => {
                Some(RowOrder::TimeThen("context_id"))
            }
            (None, "source_port") if !self.window_has_stored_contexts(&window).await? => Some(RowOrder::Port),
            _ => None,
        };
        // A filtered list in time order reads the matching templates' rows, then only the page's
        // events: the filter is not evaluated again on the window's events (their JSON).
        if let Some((pairs, dense)) = matching.filter(|_| by_time || request_order.is_some()) {
            let order = request_order.unwrap_or(RowOrder::Time);
            let rows = self
                .page_of_groups(table, &window, [pairs], q, order, Some(dense))
                .await?;
            return Ok(page(rows));
        }
        if let Some(order) = request_order
            && !self.window_has_untemplated_rows(&window).await?
        {
            let all = self.template_order_groups(table, &window, q, "1", "1").await?;
            let rows = self.page_of_groups(table, &window, all, q, order, None).await?;
            return Ok(page(rows));
        }
        // An edge list in time order within one resource set is read straight off the
        // `(rs, ts)` index of `edge_requests` (rowid order within a time) and each request's
        // events in the order they were written (the views' `json_each` order), with no sort:
        // ordering on the event index `n` too would sort every event in range (seconds on a large
        // table). Descending, each request's run of events is reversed after the read
        // ([`newest_first`]). Several resource sets (and PostgreSQL, which sorts the rows of one
        // time incrementally) order on all three.
        let straight = by_time && q.rs.len() == 1 && self.dialect() == Dialect::Sqlite;
        // Ties: events have no `externalId`, so they keep the time's order, then the order they
        // were written in, newest first when descending (docs/API-CONVENTIONS.md): the events of
        // one request share its time. (`rseq`, `n`: an event's `seq` in parts the primary key's
        // order can give.)
        let tie = if straight {
            format!("rseq {dir}")
        } else if by_time {
            format!("rseq {dir}, n {dir}")
        } else {
            format!("ts {dir}, rseq {dir}, n {dir}")
        };
        // Reversing runs needs the whole run of every request the page touches: up to
        // `EVENTS_PER_REQUEST - 1` rows more on each side.
        let margin = (EVENTS_PER_REQUEST - 1) as i64;
        let before = if straight && q.desc { q.offset.min(margin) } else { 0 };
        let after = if straight && q.desc { margin } else { 0 };
        let page_sql = format!(
            "SELECT {}{} FROM {name} WHERE {where_} ORDER BY {keys}, {tie} LIMIT {} OFFSET {}",
            table.select_list(),
            ", rseq",
            q.limit + before + after,
            q.offset - before
        );
        let mut rows = bound(&page_sql, &binds).fetch_all(self.pool()).await?;
        if straight && q.desc {
            rows = newest_first(rows, |r| r.get::<i64, _>(r.len() - 1));
            rows = rows
                .into_iter()
                .skip(before as usize)
                .take(q.limit.max(0) as usize)
                .collect();
        }
        Ok(page(rows))
    }

    /// The order keys of `q` (docs/API-CONVENTIONS.md, Lists: null < booleans < numbers <
    /// strings, strings case-insensitively first, then exactly), without the ties. The time
    /// column (never null) is ordered as it is: anything more would keep the databases from
    /// reading the default order (`ts DESC`) straight off the `(rs, ts)` index. An edge event's
    /// id is time-ordered (v7, its row's `ts` first): ordered by the time, then by itself.
    fn order_keys(&self, table: EventTable, q: &EventQuery) -> String {
        let dir = if q.desc { "DESC" } else { "ASC" };
        // Nulls first ascending, last descending (docs/API-CONVENTIONS.md: null sorts lowest), as
        // SQLite does by itself; PostgreSQL puts them the other way round unless told.
        let nulls = self.nulls_lowest(q.desc);
        match (&q.order_json, self.dialect()) {
            (None, _) if q.order_col == table.time_col() => format!("{} {dir}", q.order_col),
            (None, _) if q.order_col == "id" => format!("ts {dir}, id {dir}"),
            (None, _) if NUMERIC_COLUMNS.contains(&q.order_col) => format!("{} {dir}{nulls}", q.order_col),
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
                let v = self.body_value(path);
                format!("{v} COLLATE NOCASE {dir}, {v} {dir}")
            }
            (Some(path), Dialect::Postgres) => {
                let v = self.body_value(path);
                format!(
                    "CASE jsonb_typeof({v}) WHEN 'boolean' THEN 1 WHEN 'number' THEN 2 WHEN 'string' THEN 3 ELSE 0 END {dir}, \
                     CASE WHEN jsonb_typeof({v}) = 'string' THEN LOWER({v} #>> '{{}}') END {dir}{nulls}, \
                     CASE WHEN jsonb_typeof({v}) = 'string' THEN ({v} #>> '{{}}') END COLLATE \"C\" {dir}{nulls}, \
                     {v} {dir}{nulls}"
                )
            }
        }
    }

    /// An estimate of a list's total when more than [`EXACT_TOTAL`] records match: the `counted`
    /// records of the sample (the first matches in the index's order, spanning the sequence
    /// numbers `span` of their rows) scaled by how many rows the window holds, from the sequence
    /// numbers of its first and last row in time (two index reads per resource set). Assumes the
    /// matches are spread over the window as in the sample; rows of other resource sets between
    /// these numbers count too, so it errs high when sets interleave.
    pub(super) async fn estimate_total(
        &self,
        table: EventTable,
        q: &EventQuery,
        counted: i64,
        span: (Option<i64>, Option<i64>),
    ) -> Result<i64> {
        let (Some(lo), Some(hi)) = span else { return Ok(counted) };
        let (name, time) = match table {
            EventTable::Audit => ("audit_logs", "created_at"),
            _ => ("edge_requests", "ts"),
        };
        let mut window = 0i64;
        for rs in &q.rs {
            let mut ends = [None, None];
            for (i, dir) in ["ASC", "DESC"].into_iter().enumerate() {
                let sql = format!(
                    "SELECT seq FROM {name} WHERE rs = $1 AND {time} >= $2 AND {time} < $3 \
                     ORDER BY {time} {dir} LIMIT 1"
                );
                let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(rs.as_str())
                    .bind(q.from.unwrap_or(i64::MIN))
                    .bind(q.to.unwrap_or(i64::MAX))
                    .fetch_optional(self.pool())
                    .await?;
                ends[i] = row.map(|r| r.get::<i64, _>(0));
            }
            if let [Some(a), Some(b)] = ends {
                window += (a - b).abs() + 1;
            }
        }
        let sampled = (hi - lo + 1).max(1);
        Ok(((counted as f64) * (window.max(sampled) as f64) / (sampled as f64)).round() as i64)
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
        self.live(false, self.get_event_row_now(table, id, rs)).await
    }

    async fn get_event_row_now(&self, table: EventTable, id: &str, rs: &[String]) -> Result<Option<(String, Columns)>> {
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

    /// Deletes records older than `before` (ms) (retention): audit entries and edge requests.
    /// On PostgreSQL a day of edge requests wholly before `before` is dropped whole
    /// (`request_days`). Rows are appended in time order, so the old ones are the head of each
    /// table by `seq`: the purge deletes them from the head in chunks (`Store::purge_chunk`),
    /// each its own short statement, and stops at the first chunk with nothing old in it. It
    /// never scans a table (there is no index on the time column) and never holds the write lock
    /// long enough to stall the event writer. A row written out of order (another node's clock,
    /// seconds at most) waits for a later purge.
    pub async fn purge_events(&self, before: i64) -> Result<u64> {
        self.purge_events_through(before, &[]).await
    }

    /// [`Store::purge_events`], deleting no record of a table in `floors` past that table's
    /// floor (its `seq` ≤ floor): what the log streams have not delivered yet stays (§3.14). An
    /// edge request goes only once each of its events is at or below the floor of its table.
    pub async fn purge_events_through(&self, before: i64, floors: &[(EventTable, i64)]) -> Result<u64> {
        let floor = |t: EventTable| floors.iter().filter(|(f, _)| *f == t).map(|(_, s)| *s).min();
        // A request's events are numbered `seq × 16 + i` (i < 16): all of request R are at or
        // below `f` when R ≤ (f + 1) / 16 − 1.
        let edge_floor = [EventTable::Authorization, EventTable::Workload]
            .into_iter()
            .filter_map(floor)
            .min()
            .map(|f| (f + 1).div_euclid(EVENTS_PER_REQUEST as i64) - 1);
        // PostgreSQL: the days wholly before the cutoff go whole (`request_days`); the rows
        // left before it (stored before migration 0014, held back by a stream, a cutoff inside
        // a day) are deleted below, unless another node is dropping days now (its days' rows
        // are not deleted one by one meanwhile).
        let dropped = self.drop_request_days(before, edge_floor).await;
        let mut total = dropped.unwrap_or(0);
        // SQLite's audit chunks are the slowest for their size (~400 µs an entry under load):
        // after each the writer gets as long again (`paced`; a fleet's day holds few).
        let sqlite = self.dialect() == Dialect::Sqlite;
        for (name, time, floor, chunk, paced) in [
            (
                "audit_logs",
                "created_at",
                floor(EventTable::Audit),
                self.purge_chunk(true),
                sqlite,
            ),
            ("edge_requests", "ts", edge_floor, self.purge_chunk(false), false),
        ] {
            if name == "edge_requests" && dropped.is_none() {
                continue;
            }
            let bound = if floor.is_some() { " AND seq <= $2" } else { "" };
            // The head's old rows, as one range of `seq` (a range delete reads each page once;
            // a list of `seq`s was a lookup each, run 40).
            let sql = format!(
                "DELETE FROM {name} WHERE seq <= (SELECT MAX(seq) FROM \
                 (SELECT seq FROM {name} ORDER BY seq LIMIT {chunk}) AS head) AND {time} < $1{bound}"
            );
            loop {
                // On SQLite through the event writer's connection: a chunk and an event batch
                // take turns in its queue. From a connection of its own the purge raced the
                // writer for the write lock, and SQLite's busy wait (1 to 100 ms a try) left a
                // writer that kept losing to back-to-back chunks waiting up to 1.3 s (run 40).
                let started = std::time::Instant::now();
                macro_rules! run {
                    ($db:ty, $pool:expr) => {{
                        let mut q = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql.clone())).bind(before);
                        if let Some(f) = floor {
                            q = q.bind(f);
                        }
                        q.execute($pool).await?.rows_affected()
                    }};
                }
                let n = match &self.events {
                    Some(writer) => run!(Sqlite, writer),
                    None => run!(Any, self.pool()),
                };
                total += n;
                if n == 0 {
                    break;
                }
                if paced {
                    tokio::time::sleep(started.elapsed()).await;
                }
                tokio::task::yield_now().await;
            }
        }
        if let Some(writer) = &self.events {
            self.purge_template_rows(writer, before, edge_floor).await?;
            self.forget_port_sketch_before(before);
        }
        // The templates no request row can refer to any more (migration 0007): a row refers to a
        // template of its own day, and the rows left start at the head; a day more is kept for a
        // row written out of order.
        let head: Option<i64> = sqlx::query("SELECT ts FROM edge_requests ORDER BY seq LIMIT 1")
            .fetch_optional(self.pool())
            .await?
            .map(|r| r.get(0));
        let keep_from = day_of(head.map_or(before, |h| h.min(before))) - 1;
        sqlx::query("DELETE FROM edge_templates WHERE day < $1")
            .bind(keep_from)
            .execute(self.pool())
            .await?;
        Ok(total)
    }
}

impl Store {
    /// Rows of `audit_logs` (`audit`) or `edge_requests` per retention `DELETE` here.
    fn purge_chunk(&self, audit: bool) -> usize {
        match (self.dialect(), audit) {
            (Dialect::Sqlite, true) => SQLITE_AUDIT_PURGE_CHUNK,
            (Dialect::Sqlite, false) => SQLITE_PURGE_CHUNK,
            (Dialect::Postgres, _) => PURGE_CHUNK,
        }
    }

    /// SQLite's retention of `edge_request_tpls` (migration 0013), after `edge_requests`'
    /// (deleting `ts < before` from its head, at most to `floor`): the entries of the rows
    /// deleted. An entry goes when its row's `ts < before` and `seq ≤ last`, `last` the greatest
    /// `seq` of the first chunk of the rows left (or `floor`, if lower): such a row was in the
    /// purge's last chunk and would have been deleted; every row deleted, now or by a purge cut
    /// short before, is at or below it. (Between the two passes, seconds, and after a purge cut
    /// short until the next, an entry can outlive its row: a list then counts it and skips it.)
    ///
    /// Template by template (those with such an entry, found by reading), each one's old entries
    /// a range of its key (`tpl`, `ts`), deleted through the event writer's connection `writer`
    /// in chunks of about [`SQLITE_PURGE_CHUNK`]: the entries kept (the rest of the cutoff's
    /// day, a stream's floor) are never read on that connection. Returns the entries deleted.
    async fn purge_template_rows(&self, writer: &sqlx::SqlitePool, before: i64, floor: Option<i64>) -> Result<u64> {
        // No row left: the highest `seq` handed out (a row stored after has a greater one).
        let head: i64 = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT COALESCE((SELECT MAX(seq) FROM (SELECT seq FROM edge_requests ORDER BY seq LIMIT {SQLITE_PURGE_CHUNK})), \
             (SELECT seq FROM sqlite_sequence WHERE name = 'edge_requests'), 0)"
        )))
        .fetch_one(self.pool())
        .await?
        .get(0);
        let last = floor.map_or(head, |f| f.min(head));
        // A row's template is of its own day.
        let templates: Vec<i64> = sqlx::query(
            "SELECT id FROM edge_templates AS t WHERE day <= $1 AND EXISTS \
             (SELECT 1 FROM edge_request_tpls WHERE tpl = t.id AND ts < $2 AND seq <= $3) ORDER BY id",
        )
        .bind(day_of(before))
        .bind(before)
        .bind(last)
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
        // The time of a template's chunk's last old entry (read), then its old entries up to
        // that time (written; ties with it too).
        let find = format!(
            "SELECT ts FROM edge_request_tpls WHERE tpl = $1 AND ts < $2 AND seq <= $3 ORDER BY ts LIMIT 1 OFFSET {}",
            SQLITE_PURGE_CHUNK - 1
        );
        let mut total = 0;
        for tpl in templates {
            loop {
                let to: Option<i64> = sqlx::query(sqlx::AssertSqlSafe(find.clone()))
                    .bind(tpl)
                    .bind(before)
                    .bind(last)
                    .fetch_optional(self.pool())
                    .await?
                    .map(|r| r.get(0));
                total +=
                    sqlx::query::<Sqlite>("DELETE FROM edge_request_tpls WHERE tpl = $1 AND ts <= $2 AND seq <= $3")
                        .bind(tpl)
                        .bind(to.unwrap_or(before - 1))
                        .bind(last)
                        .execute(writer)
                        .await?
                        .rows_affected();
                tokio::task::yield_now().await;
                if to.is_none() {
                    break;
                }
            }
        }
        Ok(total)
    }
}

/// `rows` with every run of consecutive rows of one request (`request`) reversed: events read
/// newest request first but each request's events in the order written become newest first
/// throughout.
fn newest_first<T>(rows: Vec<T>, request: impl Fn(&T) -> i64) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(rows.len());
    let mut run_start = 0;
    let mut run_key = None;
    for r in rows {
        let k = request(&r);
        if run_key != Some(k) {
            out[run_start..].reverse();
            run_start = out.len();
            run_key = Some(k);
        }
        out.push(r);
    }
    out[run_start..].reverse();
    out
}

/// The Unix time in milliseconds a version-7 UUID starts with (RFC 9562 §5.7).
pub(crate) fn v7_millis(id: &Uuid) -> Option<i64> {
    if id.get_version_num() != 7 {
        return None;
    }
    let b = id.as_bytes();
    Some(i64::from_be_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]]))
}

/// The id of event `n` (< [`EVENTS_PER_REQUEST`]) of a request row whose first event has id
/// `first`: `first` with `n` xor-ed into its last hex digit (random bits of a v7 UUID, so the
/// time it carries stays). A request row stores its first event's id only; the views derive the
/// others the same way (migration 0005).
pub fn nth_event_id(first: Uuid, n: usize) -> Uuid {
    debug_assert!(n < EVENTS_PER_REQUEST);
    let mut b = *first.as_bytes();
    b[15] ^= (n & 0x0f) as u8;
    Uuid::from_bytes(b)
}

/// The `contextId` of a request whose first event has id `first`: `first` with 8 xor-ed into
/// the 34th character of its text (the 30th hex digit: random bits of a v7 UUID, never one the
/// event ids use: [`nth_event_id`] changes the last). A version 7 UUID of the request's time,
/// so a list ordered on it is in time order first, as by `eventId`; a request row stores it
/// only when it differs (migration 0010).
pub fn context_of(first: Uuid) -> Uuid {
    let mut b = *first.as_bytes();
    b[14] ^= 0x08;
    Uuid::from_bytes(b)
}

/// Rows per retention `DELETE` (see [`Store::purge_events`]), at most: PostgreSQL's chunks
/// (each statement locks only its rows; 394,000 request rows a second, run 36).
pub const PURGE_CHUNK: usize = 2000;

/// SQLite's request rows (and `edge_request_tpls` entries) per retention `DELETE`: a chunk holds
/// the event writer's connection under a millisecond under load. Against 1,000 (run 41, a day of
/// ten million events under 2,000 `/credentials` a second, three rounds each): 8.1-9.4 s instead
/// of 6.7-7.4, the edge's p99 1.6-1.8x instead of 1.7-2.5x; with the cutoff inside the day
/// 1.6-1.8x instead of 1.7-2.1x.
const SQLITE_PURGE_CHUNK: usize = 500;

/// SQLite's audit entries per retention `DELETE`: each takes its 33 order indexes and its search
/// index's trigrams with it (~120 µs idle, ~400 under load), so a chunk of 2,000 held the event
/// writer for 242 ms, one of 100 for ~40 ms and one of 16 for ~6 ms (run 40); 4 hold it ~2 ms.
const SQLITE_AUDIT_PURGE_CHUNK: usize = 4;

#[derive(Clone)]
pub(super) enum BindValue {
    Text(String),
    Int(i64),
}

/// `sql` (built from allow-listed names) with `binds` bound in order, not prepared for reuse.
pub(super) fn bound(sql: &str, binds: &[BindValue]) -> AnyQuery<'static> {
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.to_string())).persistent(false);
    for b in binds {
        q = b.bind(q);
    }
    q
}

/// What the request templates say of an edge list's filter (see `Store::template_filter`).
enum TemplateFilter {
    /// No template matches: the list is empty.
    Empty,
    /// The matching template events (template, event index) and the list's total. `few`: their
    /// rows in the window are at most [`EXACT_TOTAL`], and the list reads only them (the `(rs,
    /// tpl, ts)` index); else the window is read in time order, where the matches are dense.
    Some {
        pairs: Vec<(i64, i64)>,
        few: bool,
        total: i64,
        estimated: bool,
    },
    /// Rows without a template are in the window: the filter runs over the events, as before.
    Any,
}

type AnyQuery<'q> = sqlx::query::Query<'q, Any, sqlx::any::AnyArguments>;

impl BindValue {
    pub(super) fn bind<'q>(&self, q: AnyQuery<'q>) -> AnyQuery<'q> {
        match self {
            BindValue::Text(s) => q.bind(s.clone()),
            BindValue::Int(i) => q.bind(*i),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_requests_run_is_reversed_in_place() {
        let rows = vec![(9, 'a'), (9, 'b'), (9, 'c'), (8, 'd'), (7, 'e'), (7, 'f')];
        let out: Vec<char> = super::newest_first(rows, |r| r.0).into_iter().map(|r| r.1).collect();
        assert_eq!(out, ['c', 'b', 'a', 'd', 'f', 'e']);
        assert!(super::newest_first(Vec::<(i64, char)>::new(), |r| r.0).is_empty());
    }

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
