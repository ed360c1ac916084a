//! Edge event pages read in two steps (issue 34): first the request rows a page needs, through
//! the indexes of `edge_requests` alone (no JSON read, no event expanded), then only those rows'
//! events through the event view. Serves the lists whose matches the request templates name
//! (migration 0007): a filter matching a few templates, and an `order` on a field a template
//! decides (migration 0008's `*_templates` views), which sorts the templates rather than the
//! events.

use std::collections::HashMap;
use std::sync::Arc;

use sqlx::Row;
use sqlx::any::AnyRow;

use super::events::{BindValue, EventQuery, EventTable, bound};
use super::{Dialect, Result, Store};

/// The rows of one group that are read through the templates' rows ([`Store::template_rows`])
/// and sorted, at most; a group with more is read in time order off `(rs, ts)`, where its rows
/// are dense enough to fill a page soon.
pub const FEW_ROWS: i64 = 20_000;

/// Pairs of a template and the index (`n`) of one of its events that share one place in a page's
/// order: the events of one value of an `order` on a template-level field, or all the matches of
/// a filter in time order.
pub(super) type Group = Vec<(i64, i64)>;

/// How the rows of one group follow each other in a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RowOrder {
    /// By time, then in the order written.
    Time,
    /// By an event column whose values are version 7 UUIDs of their row's time (`id`, and
    /// `context_id` where the window's rows derive it, migration 0010): by time, then by the
    /// column within one millisecond (its events read whole and sorted), ties (one request's
    /// events share a `context_id`) in the order written.
    TimeThen(&'static str),
    /// By the request's client port (`port`), then by time, then in the order written.
    Port,
}

/// A part of a page: request rows (sequence number, the indexes of the events of it the page
/// may show, in order), of which the page shows `take` events after the first `skip`.
struct Part {
    rows: Vec<(i64, Vec<i64>)>,
    skip: usize,
    take: usize,
}

/// The rows a list reads: its conditions on `edge_requests` (`rs`, `ts`) with their values.
pub(super) struct Window<'a> {
    pub conds: &'a str,
    pub binds: &'a [BindValue],
    /// The placeholders of the resource sets in `binds`.
    pub rs: &'a [String],
    /// The window's conditions on time alone (`conds` without the resource sets).
    pub times: &'a str,
    /// [`template_days`] of the window.
    pub days: String,
}

/// The columns of an edge event view that a template decides (the `*_templates` views of
/// migration 0008 have them), besides the body: an `order` on one of them, or on a body field,
/// sorts the templates. The others (`ts`, `id`, `rs`, `context_id`, `source_port`) are the row's.
pub(super) const TEMPLATE_COLUMNS: &[&str] = &[
    "event_type",
    "severity",
    "result",
    "client_ip",
    "action",
    "client_workload",
    "server_workload",
    "app_protocol",
    "user_id",
];

/// The view of a table's template events (migration 0008).
pub(super) fn template_view(table: EventTable) -> &'static str {
    match table {
        EventTable::Workload => "workload_templates",
        _ => "authorization_templates",
    }
}

/// The condition on `edge_templates.day` of the templates a window's rows can refer to: a row
/// refers to a template of its own day (migration 0007), and retention keeps up to its days of
/// them, so a list of the last day reads the templates of one or two days, not of all.
pub(super) fn template_days(from: Option<i64>, to: Option<i64>) -> String {
    let day = super::events::day_of;
    match (from, to) {
        (Some(f), Some(t)) => format!("day >= {} AND day <= {}", day(f), day(t.saturating_sub(1))),
        (Some(f), None) => format!("day >= {}", day(f)),
        (None, Some(t)) => format!("day <= {}", day(t.saturating_sub(1))),
        (None, None) => "1 = 1".to_string(),
    }
}

/// A statement giving `select` of the template events of `view` that meet `cond`, in the order
/// of `keys` (then template and index). The one column the order reads (`column`) is worked out
/// once per event, in a materialized common table: a template view's `body` is a JSON merge, which
/// the order's expressions would otherwise do again for each mention (68 → ~38 ms for the ~4,000
/// template events of ten million events on PostgreSQL).
fn ordered_template_events(view: &str, cond: &str, column: Option<&str>, select: &str, keys: &str) -> String {
    let column = column.map_or(String::new(), |c| format!(", {c}"));
    format!(
        "WITH v AS MATERIALIZED (SELECT tpl, n{column} FROM {view} WHERE {cond}) SELECT {select} FROM v ORDER BY {keys}, tpl, n"
    )
}

/// Ids as the text of an SQL list (`1, 2, 3`).
pub(super) fn id_list(ids: impl Iterator<Item = i64>) -> String {
    ids.map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

/// A statement giving `seq, tpl, ts, port` of the rows meeting `conds` among the templates
/// `list` (an id list) in `order` (with its `LIMIT`): rows read in the order of an index on the
/// window (`+ 0`: not through the templates' index, which would read all of the window).
pub(super) fn dense_rows(conds: &str, list: &str, order: &str) -> String {
    format!("SELECT seq, tpl, ts, port FROM edge_requests WHERE {conds} AND (tpl + 0) IN ({list}) {order}")
}

/// Template events in an order: each with its template, index and order identity.
type Ordered = Arc<Vec<(i64, i64, Option<String>)>>;

/// What identifies a template's content: the first 32 hex digits of its digest (a SHA-256 of its
/// day and content, migration 0007).
fn content_key(digest: &str) -> u128 {
    u128::from_str_radix(digest.get(..32).unwrap_or(digest), 16).unwrap_or_default()
}

/// One sort of [`OrderCache`]: the template events in order, and the content of each template
/// it holds, by id.
struct Sorted {
    events: Ordered,
    content: HashMap<i64, u128>,
    /// When it was last used (the cache's clock, and time).
    used: u64,
    used_at: std::time::Instant,
    /// Whether a list used it since it was last sorted in the background.
    wanted: bool,
    /// The days' condition on `edge_templates` (what [`Store::refresh_template_sorts`] reads).
    days: String,
}

/// What a background sort compares to see whether the days' templates changed: their count,
/// highest id and sum of ids.
type Stamp = (i64, Option<i64>, i64);

impl Sorted {
    /// The [`Stamp`] of the templates it holds.
    fn stamp(&self) -> Stamp {
        let ids = self.content.keys();
        (ids.len() as i64, ids.clone().max().copied(), ids.sum())
    }
}

/// The templates of some days sorted for an `order` without a filter (the statement's text is
/// the key). Templates never change once written, so a sort is right for every template it holds
/// with the same id and content: a list uses it when each of its window's templates is in it as
/// read now (id and digest), and sorts again otherwise (a template added, or an id reused for
/// other content once retention dropped the old). Sorting them is most of an ordered list's time
/// (each template event's body merged and its key read; ~40 ms for ~6,000 on PostgreSQL at ten
/// million events). Least recently used sorts go first beyond [`CACHED_EVENTS`]. The sorts used
/// lately are made again in the background when their days gain templates
/// ([`Store::refresh_template_sorts`]), so a list after a new kind of request finds one.
#[derive(Default)]
pub struct OrderCache {
    sorted: HashMap<String, Sorted>,
    clock: u64,
    events: usize,
    /// Sorts made for a list since start (what the tests see of the cache; not those made in
    /// the background).
    sorts: u64,
}

/// How long after its last use a sort is still made again when its days gain templates.
const REFRESH_USED_WITHIN: std::time::Duration = std::time::Duration::from_secs(600);

/// Sorts [`Store::refresh_template_sorts`] makes at most a call.
const REFRESH_SORTS: usize = 8;

/// Template events the [`OrderCache`] holds at most, over all its sorts (~100 bytes each).
const CACHED_EVENTS: usize = 200_000;

impl OrderCache {
    /// The sort kept for `sql`, when it holds every template of `window` as it is now.
    fn get(&mut self, sql: &str, window: &[(i64, u128)]) -> Option<Ordered> {
        self.clock += 1;
        let clock = self.clock;
        let s = self.sorted.get_mut(sql)?;
        if !window.iter().all(|(id, key)| s.content.get(id) == Some(key)) {
            return None;
        }
        s.used = clock;
        s.used_at = std::time::Instant::now();
        s.wanted = true;
        Some(s.events.clone())
    }

    /// Keeps a sort made for a list: as used now.
    fn put(&mut self, sql: String, days: &str, events: Ordered, content: HashMap<i64, u128>) {
        self.sorts += 1;
        self.remove(&sql);
        self.clock += 1;
        let (used, used_at) = (self.clock, std::time::Instant::now());
        self.insert(sql, days, events, content, (used, used_at, true));
    }

    /// Keeps a sort made in the background for the one of `sql` it replaces, when that still
    /// holds the templates of `seen` (a list may have stored a newer sort meanwhile, or the
    /// cache dropped it): with its time of last use, as not wanted again until a list uses it.
    fn put_refreshed(&mut self, sql: String, seen: Stamp, events: Ordered, content: HashMap<i64, u128>) -> bool {
        if self.sorted.get(&sql).map(Sorted::stamp) != Some(seen) {
            return false;
        }
        let Some(old) = self.remove(&sql) else {
            return false;
        };
        let days = old.days.clone();
        self.insert(sql, &days, events, content, (old.used, old.used_at, false))
    }

    fn remove(&mut self, sql: &str) -> Option<Sorted> {
        let old = self.sorted.remove(sql)?;
        self.events -= old.events.len();
        Some(old)
    }

    /// Inserts a sort (not one over [`CACHED_EVENTS`]: the one it replaces is gone all the
    /// same), dropping the least recently used ones beyond it.
    fn insert(
        &mut self,
        sql: String,
        days: &str,
        events: Ordered,
        content: HashMap<i64, u128>,
        (used, used_at, wanted): (u64, std::time::Instant, bool),
    ) -> bool {
        if events.len() > CACHED_EVENTS {
            return false;
        }
        while self.events + events.len() > CACHED_EVENTS {
            let Some(oldest) = self.sorted.iter().min_by_key(|(_, s)| s.used).map(|(k, _)| k.clone()) else {
                break;
            };
            self.remove(&oldest);
        }
        self.events += events.len();
        let days = days.to_string();
        self.sorted.insert(
            sql,
            Sorted {
                events,
                content,
                used,
                used_at,
                wanted,
                days,
            },
        );
        true
    }

    /// The sorts a list used since they were last sorted, within [`REFRESH_USED_WITHIN`]:
    /// statement, days and [`Stamp`].
    fn wanted(&self) -> Vec<(String, String, Stamp)> {
        self.sorted
            .iter()
            .filter(|(_, s)| s.wanted && s.used_at.elapsed() < REFRESH_USED_WITHIN)
            .map(|(sql, s)| (sql.clone(), s.days.clone(), s.stamp()))
            .collect()
    }
}

impl Store {
    /// The template events of the window's templates (those `w`'s rows refer to) that meet `q`'s
    /// filter (run over the table's `*_templates` view), in the order of `keys`, grouped by
    /// `identity` (an expression equal for equal keys): each group one place in the order, its
    /// events then in time order. Without a filter the days' templates are sorted once
    /// ([`OrderCache`]) and the window's picked from them.
    pub(super) async fn template_order_groups(
        &self,
        table: EventTable,
        w: &Window<'_>,
        q: &EventQuery,
        keys: &str,
        identity: &str,
    ) -> Result<Vec<Group>> {
        let mut binds = w.binds.to_vec();
        let conds = self.event_conds(table, q, &mut binds);
        let view = template_view(table);
        // The one column `keys` and `identity` read (none for "1").
        let column = match &q.order_json {
            Some(_) => Some("body"),
            None => TEMPLATE_COLUMNS.iter().copied().find(|c| *c == q.order_col),
        }
        .filter(|_| keys != "1");
        let used = format!(
            "SELECT 1 FROM {rows} WHERE {window} AND tpl = t.id",
            rows = self.template_rows(),
            window = w.conds
        );
        let in_window = |columns: &str| match self.dialect() {
            Dialect::Sqlite => format!(
                "SELECT {columns} FROM edge_templates AS t WHERE {} AND EXISTS ({used})",
                w.days
            ),
            // One index probe per template and day, as a nested loop: PostgreSQL's planner
            // turned `EXISTS` over the day partitions (migration 0014) into a hash of every row
            // of the window (0.5 s at ten million events).
            Dialect::Postgres => format!(
                "SELECT {columns} FROM edge_templates AS t CROSS JOIN LATERAL ({used} LIMIT 1) AS used WHERE {}",
                w.days
            ),
        };
        let rows: Vec<(i64, i64, Option<String>)> = if conds.is_empty() {
            // The window's templates first: the sort then holds every one of them.
            let window: Vec<(i64, u128)> = bound(&in_window("t.id, t.digest"), w.binds)
                .fetch_all(self.pool())
                .await?
                .iter()
                .map(|r| (r.get::<i64, _>(0), content_key(&r.get::<String, _>(1))))
                .collect();
            let sorted = self
                .sorted_templates(view, &w.days, column, keys, identity, &window)
                .await?;
            let ids: std::collections::HashSet<i64> = window.iter().map(|(id, _)| *id).collect();
            sorted.iter().filter(|(tpl, _, _)| ids.contains(tpl)).cloned().collect()
        } else {
            let filter: String = conds.iter().map(|c| format!(" AND {c}")).collect();
            let sql = ordered_template_events(
                view,
                &format!("tpl IN ({}){filter}", in_window("t.id")),
                column,
                &format!("tpl, n, {identity}"),
                keys,
            );
            bound(&sql, &binds)
                .fetch_all(self.pool())
                .await?
                .iter()
                .map(|r| (r.get(0), r.get(1), r.try_get(2).ok().flatten()))
                .collect()
        };
        let mut groups: Vec<Group> = Vec::new();
        let mut last: Option<Option<String>> = None;
        for (tpl, n, id) in rows {
            if last.as_ref() != Some(&id) {
                groups.push(Vec::new());
                last = Some(id);
            }
            if let Some(g) = groups.last_mut() {
                g.push((tpl, n));
            }
        }
        Ok(groups)
    }

    /// Every template event of the templates of `days` in the order of `keys` (then template and
    /// index), with its `identity`: kept in the [`OrderCache`] while it holds each template of
    /// `window` (id and content) as it is now.
    async fn sorted_templates(
        &self,
        view: &str,
        days: &str,
        column: Option<&str>,
        keys: &str,
        identity: &str,
        window: &[(i64, u128)],
    ) -> Result<Ordered> {
        let sql = ordered_template_events(
            view,
            &format!("tpl IN (SELECT id FROM edge_templates WHERE {days})"),
            column,
            &format!("tpl, n, {identity}"),
            keys,
        );
        if let Some(sorted) = self.template_orders.lock().expect("order cache").get(&sql, window) {
            return Ok(sorted);
        }
        let (events, content) = self.sort_templates(&sql, days).await?;
        self.template_orders
            .lock()
            .expect("order cache")
            .put(sql, days, events.clone(), content);
        Ok(events)
    }

    /// Runs a sort of [`Store::sorted_templates`] (`sql`): the template events in order, and
    /// every template of the `days` (those without an event of this kind too), read before the
    /// sort: the sort holds each of them.
    async fn sort_templates(&self, sql: &str, days: &str) -> Result<(Ordered, HashMap<i64, u128>)> {
        let content: HashMap<i64, u128> = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT id, digest FROM edge_templates WHERE {days}"
        )))
        .persistent(false)
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(|r| (r.get::<i64, _>(0), content_key(&r.get::<String, _>(1))))
        .collect();
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
            .persistent(false)
            .fetch_all(self.pool())
            .await?;
        let events: Ordered = Arc::new(
            rows.iter()
                .map(|r| (r.get(0), r.get(1), r.try_get(2).ok().flatten()))
                .collect(),
        );
        Ok((events, content))
    }

    /// Makes again each sort of the [`OrderCache`] a list used since it was last sorted (in the
    /// last ten minutes) whose days have gained or lost templates since (their [`Stamp`]
    /// differs), [`REFRESH_SORTS`] at most a call, so the next list finds it (a background job,
    /// every few seconds: a new kind of request, another node's, or a new day's first requests
    /// add templates). A sort a list stored meanwhile is kept rather than this one. Returns how
    /// many it sorted; a failed one does not stop the others (the last error is returned).
    pub async fn refresh_template_sorts(&self) -> Result<usize> {
        let wanted = self.template_orders.lock().expect("order cache").wanted();
        let mut now: HashMap<String, Stamp> = HashMap::new();
        let (mut sorted, mut failed) = (0, None);
        for (sql, days, seen) in wanted {
            if sorted == REFRESH_SORTS {
                break;
            }
            let stamp = match now.get(&days) {
                Some(stamp) => *stamp,
                None => match self.template_stamp(&days).await {
                    Ok(stamp) => *now.entry(days.clone()).or_insert(stamp),
                    Err(e) => {
                        failed = Some(e);
                        continue;
                    }
                },
            };
            if stamp == seen {
                continue;
            }
            match self.sort_templates(&sql, &days).await {
                Ok((events, content)) => {
                    self.template_orders
                        .lock()
                        .expect("order cache")
                        .put_refreshed(sql, seen, events, content);
                    sorted += 1;
                }
                Err(e) => failed = Some(e),
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(sorted),
        }
    }

    /// The [`Stamp`] of the templates of `days` as they are now.
    async fn template_stamp(&self, days: &str) -> Result<Stamp> {
        let r = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*), MAX(id), CAST(COALESCE(SUM(id), 0) AS BIGINT) FROM edge_templates WHERE {days}"
        )))
        .persistent(false)
        .fetch_one(self.pool())
        .await?;
        Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?))
    }

    /// The events of `q`'s page (`offset..offset + limit`) of the `groups` in their order, each
    /// group's events in `order` (newest first when `desc`), then in the order they were
    /// written (`rseq`, `n`). Reads, per group until the page is full, the sequence numbers of
    /// its rows in that order (a few: through the templates' rows, sorted; many: off `(rs, ts)`, or
    /// by port, `store::ports`; `dense` says which when the caller knows), and then only the
    /// page's rows through the event view.
    pub(super) async fn page_of_groups(
        &self,
        table: EventTable,
        w: &Window<'_>,
        groups: impl IntoIterator<Item = Group>,
        q: &EventQuery,
        order: RowOrder,
        dense: Option<bool>,
    ) -> Result<Vec<AnyRow>> {
        let desc = q.desc;
        let dir = if desc { "DESC" } else { "ASC" };
        let sort_by = match order {
            RowOrder::TimeThen(col) => Some(col),
            _ => None,
        };
        let few_rows = q.few_rows.unwrap_or(FEW_ROWS);
        let mut skip = q.offset.max(0) as usize;
        let mut want = q.limit.max(0) as usize;
        // The page's parts in order: rows with the events of each the page may show, and how
        // many of those events to skip and show (sorted by a column, the rows of one time are
        // one part, sorted when read).
        let mut picked: Vec<Part> = Vec::new();
        // The times of the rows picked: on PostgreSQL the days the page's read visits.
        let mut span = (i64::MAX, i64::MIN);
        for group in groups {
            if want == 0 {
                break;
            }
            let mut per: HashMap<i64, Vec<i64>> = HashMap::new();
            for (tpl, n) in group {
                per.entry(tpl).or_default().push(n);
            }
            for ns in per.values_mut() {
                ns.sort_unstable();
                ns.dedup();
                if desc {
                    ns.reverse();
                }
            }
            let mut tpls: Vec<i64> = per.keys().copied().collect();
            tpls.sort_unstable();
            let list = id_list(tpls.iter().copied());
            // Whether the group's rows are a few: counted, unless the caller knows (the tests'
            // `few_rows` always counts).
            let few = match dense.filter(|_| q.few_rows.is_none()) {
                Some(dense) => !dense,
                None => {
                    let count_sql = format!(
                        "SELECT COUNT(*) FROM ({}) AS c",
                        self.rows_of_templates(w.conds, &tpls, "1", None, few_rows + 1)
                    );
                    let rows_in_group: i64 = bound(&count_sql, w.binds).fetch_one(self.pool()).await?.get(0);
                    if rows_in_group == 0 {
                        continue;
                    }
                    rows_in_group <= few_rows
                }
            };
            // Each row holds at least one of the group's events.
            let need = skip + want;
            // A few rows are read through the templates' rows and sorted, many in order off
            // `(rs, ts)` (`+ 0` keeps the planner off the index not meant), or by port
            // (`store::ports`): rows sorted, not their events.
            let tpl_col = if few { "tpl" } else { "(tpl + 0)" };
            // Many rows by port on SQLite: through the rows it keeps by port (`store::ports`).
            let sketched = match (few, order) {
                (false, RowOrder::Port) => self.rows_by_port_sketch(q, &per, &list, desc, need).await?,
                _ => None,
            };
            let mut rows: Vec<(i64, i64, i64)> = match sketched {
                Some(rows) => rows,
                None => {
                    let sql = match (few, order) {
                        // Every row, sorted below.
                        (true, RowOrder::Port) => {
                            self.rows_of_templates(w.conds, &tpls, "seq, tpl, ts, port", None, few_rows)
                        }
                        (true, _) => self.rows_of_templates(w.conds, &tpls, "seq, tpl, ts", Some(desc), need as i64),
                        (false, RowOrder::Port) => self.rows_by_port(w, &list, desc, need),
                        (false, _) => dense_rows(w.conds, &list, &format!("ORDER BY ts {dir}, seq {dir} LIMIT {need}")),
                    };
                    let rows = bound(&sql, w.binds).fetch_all(self.pool()).await?;
                    if few && order == RowOrder::Port {
                        let mut keyed: Vec<(Option<i64>, i64, i64, i64)> =
                            rows.iter().map(|r| (r.get(3), r.get(2), r.get(0), r.get(1))).collect();
                        keyed.sort_unstable();
                        if desc {
                            keyed.reverse();
                        }
                        keyed.truncate(need);
                        keyed.into_iter().map(|(_, ts, seq, tpl)| (seq, tpl, ts)).collect()
                    } else {
                        rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect()
                    }
                }
            };
            // Sorted by a column within a time, the last time read is read whole.
            if sort_by.is_some()
                && rows.len() == need
                && let Some(&(seq, _, ts)) = rows.last()
            {
                let beyond = if desc { "<" } else { ">" };
                let sql = format!(
                    "SELECT seq, tpl, ts FROM edge_requests WHERE {} AND {tpl_col} IN ({list}) \
                     AND ts = {ts} AND seq {beyond} {seq} ORDER BY seq {dir}",
                    w.conds
                );
                let more = bound(&sql, w.binds).fetch_all(self.pool()).await?;
                rows.extend(more.iter().map(|r| (r.get(0), r.get(1), r.get(2))));
            }
            let mut rows = rows.into_iter().peekable();
            while let Some((seq, tpl, ts)) = rows.next() {
                let mut part = Part {
                    rows: vec![(seq, per.get(&tpl).cloned().unwrap_or_default())],
                    skip: 0,
                    take: 0,
                };
                while sort_by.is_some() && rows.peek().is_some_and(|r| r.2 == ts) {
                    let (seq, tpl, _) = rows.next().unwrap_or_default();
                    part.rows.push((seq, per.get(&tpl).cloned().unwrap_or_default()));
                }
                let events: usize = part.rows.iter().map(|(_, ns)| ns.len()).sum();
                if skip >= events {
                    skip -= events;
                    continue;
                }
                part.skip = skip;
                part.take = want.min(events - skip);
                skip = 0;
                want -= part.take;
                span = (span.0.min(ts), span.1.max(ts));
                picked.push(part);
                if want == 0 {
                    break;
                }
            }
        }
        if picked.is_empty() {
            return Ok(Vec::new());
        }
        let seqs = id_list(picked.iter().flat_map(|p| p.rows.iter().map(|(seq, _)| *seq)));
        // On PostgreSQL with the rows' times too: a read by `seq` alone would visit every day's
        // partition (`request_days`).
        let days = match self.dialect() {
            Dialect::Postgres => format!(" AND ts BETWEEN {} AND {}", span.0, span.1),
            Dialect::Sqlite => String::new(),
        };
        let sql = format!(
            "SELECT {}, rseq, n FROM {} WHERE rseq IN ({seqs}){days}",
            table.select_list(),
            table.name()
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .persistent(false)
            .fetch_all(self.pool())
            .await?;
        let mut by_event: HashMap<(i64, i64), AnyRow> = rows
            .into_iter()
            .map(|r| ((r.get::<i64, _>(r.len() - 2), r.get::<i64, _>(r.len() - 1)), r))
            .collect();
        let mut page = Vec::with_capacity(q.limit.max(0) as usize);
        for part in picked {
            let mut events: Vec<AnyRow> = part
                .rows
                .iter()
                .flat_map(|(seq, ns)| ns.iter().map(move |n| (*seq, *n)))
                .filter_map(|k| by_event.remove(&k))
                .collect();
            if let Some(col) = sort_by {
                // By the column, then in the order written; all of it reversed when descending.
                events.sort_by_cached_key(|r| {
                    let key: Option<String> = r.try_get(col).ok().flatten();
                    (key, r.get::<i64, _>(r.len() - 2), r.get::<i64, _>(r.len() - 1))
                });
                if desc {
                    events.reverse();
                }
            }
            page.extend(events.into_iter().skip(part.skip).take(part.take));
        }
        Ok(page)
    }

    /// A statement giving `columns` (of `seq, tpl, ts, port`) of at most `limit` of the rows of
    /// the templates `tpls` in the window `window`: in time order (newest first when
    /// `Some(true)`; then in the order written), or in any order (`None`). Reads each template's
    /// rows through [`Store::template_rows`]: SQLite does for an `IN` list (a row's port, where
    /// asked for, from its row); PostgreSQL's planner would scan the table for a long one (it
    /// expects every template to hold as many rows), so there each template is read on its own
    /// (`LATERAL`), at most `limit` rows of it in that order, and the rows merged.
    pub(super) fn rows_of_templates(
        &self,
        window: &str,
        tpls: &[i64],
        columns: &str,
        newest_first: Option<bool>,
        limit: i64,
    ) -> String {
        let list = id_list(tpls.iter().copied());
        let dir = |desc: bool| if desc { "DESC" } else { "ASC" };
        match self.dialect() {
            Dialect::Sqlite => format!(
                "SELECT {columns} FROM (SELECT seq, tpl, ts, \
                 (SELECT port FROM edge_requests AS r WHERE r.seq = x.seq) AS port \
                 FROM edge_request_tpls AS x WHERE {window} AND tpl IN ({list})){} LIMIT {limit}",
                newest_first.map_or(String::new(), |d| format!(" ORDER BY ts {0}, seq {0}", dir(d)))
            ),
            Dialect::Postgres => format!(
                "SELECT {columns} FROM unnest(ARRAY[{list}]::bigint[]) AS u(t) CROSS JOIN LATERAL \
                 (SELECT seq, tpl, ts, port FROM edge_requests WHERE {window} AND tpl = u.t{o} LIMIT {limit}) AS r{o} LIMIT {limit}",
                o = newest_first.map_or(String::new(), |d| format!(" ORDER BY ts {0}, seq {0}", dir(d)))
            ),
        }
    }

    /// The table whose rows list each templated request row by template, then time
    /// (`tpl, ts, seq, rs`): on SQLite a table of its own (migration 0013: the purge deletes each
    /// in its own order), on PostgreSQL `edge_requests` with its `(rs, tpl, ts)` index.
    pub(super) fn template_rows(&self) -> &'static str {
        match self.dialect() {
            Dialect::Sqlite => "edge_request_tpls",
            Dialect::Postgres => "edge_requests",
        }
    }

    /// The condition on an event view (its `rseq`) that keeps the rows of templates `list` (an
    /// id list) in the window `w` and replaces `w`'s own conditions: read through
    /// [`Store::template_rows`] (on SQLite, rows then found by their `seq`).
    pub(super) fn rows_of_templates_cond(&self, w: &Window<'_>, list: &str) -> String {
        match self.dialect() {
            // The resource sets again on the rows (`+`: not read through `(rs, ts)`): the
            // entries' `rs` is a copy.
            Dialect::Sqlite => format!(
                "rseq IN (SELECT seq FROM edge_request_tpls WHERE {} AND tpl IN ({list})) AND +rs IN ({})",
                w.conds,
                w.rs.join(", ")
            ),
            Dialect::Postgres => format!("{} AND tpl IN ({list})", w.conds),
        }
    }

    /// Whether the window holds a row that meets `cond`.
    async fn window_holds(&self, w: &Window<'_>, cond: &str) -> Result<bool> {
        let sql = format!("SELECT 1 FROM edge_requests WHERE {} AND {cond} LIMIT 1", w.conds);
        Ok(bound(&sql, w.binds).fetch_optional(self.pool()).await?.is_some())
    }

    /// Whether the window holds rows stored before templates (migration 0007): the templates
    /// then do not describe every event in it.
    pub(super) async fn window_has_untemplated_rows(&self, w: &Window<'_>) -> Result<bool> {
        self.window_holds(w, "tpl IS NULL").await
    }

    /// How many times the templates have been sorted for a list since start ([`OrderCache`]):
    /// a list that found its sort kept did not sort. Background sorts are not counted.
    pub fn template_sorts(&self) -> u64 {
        self.template_orders.lock().expect("order cache").sorts
    }

    /// Whether the window holds rows whose `contextId` is not derived from their first event's
    /// id (stored before migration 0010, or without a client port: its partial index lists
    /// them): the request-value orders then read as before.
    pub(super) async fn window_has_stored_contexts(&self, w: &Window<'_>) -> Result<bool> {
        self.window_holds(w, "(ctx IS NOT NULL OR port IS NULL)").await
    }

    /// What puts nulls lowest in an `ORDER BY` term (docs/API-CONVENTIONS.md), as SQLite does
    /// by itself; PostgreSQL puts them the other way round unless told.
    pub(super) fn nulls_lowest(&self, desc: bool) -> &'static str {
        match (self.dialect(), desc) {
            (Dialect::Sqlite, _) => "",
            (Dialect::Postgres, false) => " NULLS FIRST",
            (Dialect::Postgres, true) => " NULLS LAST",
        }
    }

    /// The value at `path` (keys from the event's shape, `events::shape`) of a row's `body`: SQL
    /// text, number or null on SQLite, `jsonb` on PostgreSQL. What an `order` on a body field
    /// sorts on.
    pub(super) fn body_value(&self, path: &[&str]) -> String {
        match self.dialect() {
            Dialect::Sqlite => {
                let p: Vec<String> = path.iter().map(|k| format!("\"{k}\"")).collect();
                format!("json_extract(body, '$.{}')", p.join("."))
            }
            Dialect::Postgres => format!("(body::jsonb #> '{{{}}}')", path.join(",")),
        }
    }

    /// An expression equal for two template events exactly when `order` puts them in one place:
    /// the sort value itself, quoted (nulls included).
    pub(super) fn order_identity(&self, col: &str, json_path: Option<&[&str]>) -> String {
        match (json_path, self.dialect()) {
            (None, Dialect::Sqlite) => format!("quote({col})"),
            (None, Dialect::Postgres) => format!("quote_nullable({col})"),
            // Numbers that compare equal are one value (`1`, `1.0`; in SQLite `true` is 1 too).
            (Some(path), Dialect::Sqlite) => {
                let v = self.body_value(path);
                format!("CASE WHEN typeof({v}) IN ('integer', 'real') THEN 'n:' || ({v} + 0.0) ELSE quote({v}) END")
            }
            (Some(path), Dialect::Postgres) => {
                let v = self.body_value(path);
                format!(
                    "CASE WHEN jsonb_typeof({v}) = 'number' THEN 'n:' || trim_scale(({v} #>> '{{}}')::numeric)::text \
                     ELSE {v}::text END"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sort(ids: &[i64]) -> (Ordered, HashMap<i64, u128>) {
        let events = Arc::new(ids.iter().map(|id| (*id, 0, None)).collect::<Vec<_>>());
        (events, ids.iter().map(|id| (*id, *id as u128)).collect())
    }

    /// A background sort replaces only the sort it was made for: not one a list stored
    /// meanwhile, nor one the cache dropped; it keeps the sort's place in the least recently used
    /// order, and a sort too big to keep takes the one it replaces with it.
    #[test]
    fn a_background_sort_replaces_only_what_it_was_made_for() {
        let mut cache = OrderCache::default();
        let (events, content) = sort(&[1, 2]);
        cache.put("a".into(), "d", events, content);
        let seen = cache.wanted()[0].2;
        // A list stores a sort of more templates meanwhile: the background's is dropped.
        let (events, content) = sort(&[1, 2, 3]);
        cache.put("a".into(), "d", events, content);
        let (events, content) = sort(&[1, 2, 4]);
        assert!(!cache.put_refreshed("a".into(), seen, events, content));
        assert!(cache.get("a", &[(3, 3)]).is_some(), "the list's sort was replaced");
        // Made for the sort there: kept, not wanted again until a list uses it, and still the
        // least recently used.
        let (events, content) = sort(&[7]);
        cache.put("b".into(), "d", events, content);
        let seen = cache.sorted["a"].stamp();
        let (events, content) = sort(&[1, 2, 3, 4]);
        assert!(cache.put_refreshed("a".into(), seen, events, content));
        assert!(cache.wanted().iter().all(|(sql, _, _)| sql == "b"));
        assert!(cache.sorted["a"].used < cache.sorted["b"].used);
        // Dropped meanwhile: not kept again.
        let seen = cache.sorted["b"].stamp();
        cache.remove("b");
        let (events, content) = sort(&[7, 8]);
        assert!(!cache.put_refreshed("b".into(), seen, events, content));
        assert!(!cache.sorted.contains_key("b"));
        // Too big to keep: the sort it replaces goes too.
        let big: Vec<i64> = (0..=CACHED_EVENTS as i64).collect();
        let (events, content) = sort(&big);
        cache.put("a".into(), "d", events, content);
        assert!(!cache.sorted.contains_key("a"));
        assert_eq!(cache.events, 0);
    }
}
