//! The client-port order (issue 34). On PostgreSQL `edge_requests` has an index on `(rs, port
//! NULLS FIRST, ts, seq)` (migration 0012), and a list ordered on the port reads each resource
//! set's rows in its order; its insert is PostgreSQL's work in each event transaction. SQLite has
//! none: there any structure sorted by port costs the server a B-tree page written per request
//! (an index ~9,400 instructions a `/credentials` request, a table filled by trigger ~14,000,
//! over issue 34's budget; docs/PERFORMANCE.md). Instead the server keeps, in memory, each
//! day's and resource set's lowest and highest rows by port ([`PortSketch`]): what the first
//! pages of a list ordered on the port show. A list reads them, checks them against the
//! database, and sorts only the window's rows of a day whose kept rows cannot prove the page.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Mutex;

use sqlx::Row;
use uuid::Uuid;

use super::event_pages::{Window, dense_rows, id_list};
use super::events::{EventQuery, RequestRow};
use super::{Dialect, Result, Store};

/// The rows each end of a part keeps: a first page of `per-page`'s largest size (1,000 rows).
pub const SKETCH_ROWS: usize = 1_000;

/// The entries all parts keep at most (~32 bytes each, both ends: ~64 MB); a part made beyond
/// it keeps none, and a list sorts its rows.
const SKETCH_ENTRIES: usize = 2_000_000;

const DAY: i64 = 86_400_000;

/// The rows of a resource set [`Store::build_port_sketch`] sorts at a time, at most (~80 ms).
const BUILD_STRETCH: usize = 250_000;

/// A request row as the sketch keeps it, in the port order (then time, then the order written).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    port: u16,
    ts: i64,
    seq: i64,
    tpl: i64,
}

/// The rows of one UTC day of one resource set, as far as the sketch keeps them.
#[derive(Default)]
struct Part {
    /// The `rows` lowest rows fed (greatest on top).
    low: BinaryHeap<Entry>,
    /// The `rows` highest rows fed (least on top).
    high: BinaryHeap<Reverse<Entry>>,
    /// The rows fed (twice for a row both read at the build and fed meanwhile).
    seen: u64,
    /// Whether the part keeps its ends (not over [`SKETCH_ENTRIES`], not a day retention has
    /// passed): a list sorts the rows of a part that does not.
    kept: bool,
}

impl Part {
    /// Feeds a row; returns the entries added.
    fn add(&mut self, e: Entry, rows: usize) -> usize {
        self.seen += 1;
        if !self.kept {
            return 0;
        }
        let mut added = 0;
        if self.low.len() < rows {
            self.low.push(e);
            added += 1;
        } else if let Some(mut top) = self.low.peek_mut()
            && e < *top
        {
            *top = e;
        }
        if self.high.len() < rows {
            self.high.push(Reverse(e));
            added += 1;
        } else if let Some(mut top) = self.high.peek_mut()
            && e > top.0
        {
            *top = Reverse(e);
        }
        added
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// Not kept: lists sort (before the build, or after it failed).
    #[default]
    Off,
    /// Rows are fed while the database's rows are read ([`Store::build_port_sketch`]).
    Building,
    /// Every stored row with a port has been fed: lists read it.
    Ready,
}

/// Each day's and resource set's lowest and highest request rows by client port, fed by the
/// event writer as it inserts them (before its commit: a row rolled back is found missing when
/// read) and built at start from the database. Every row a part was fed whose key is at most its
/// kept lowest's greatest is among them (a row leaves only for a lower one): a page whose rows
/// are all within that is the database's, once each row read is checked to be there as kept.
#[derive(Default)]
pub(super) struct PortSketch {
    state: State,
    /// The rows each end of a part keeps ([`SKETCH_ROWS`]; tests set fewer).
    rows: usize,
    parts: HashMap<(i64, Uuid), Part>,
    entries: usize,
    /// Lists read through it, and the parts whose rows they sorted.
    reads: u64,
    sorted: u64,
}

impl PortSketch {
    fn size(&self) -> usize {
        if self.rows == 0 { SKETCH_ROWS } else { self.rows }
    }

    fn add(&mut self, rs: Uuid, e: Entry) {
        let rows = self.size();
        let full = self.entries >= SKETCH_ENTRIES;
        let part = self.parts.entry((e.ts.div_euclid(DAY), rs)).or_insert_with(|| Part {
            kept: !full,
            ..Part::default()
        });
        self.entries += part.add(e, rows);
    }
}

/// How far a part's candidates are all of its rows in the window, in the list's order.
#[derive(Clone, Copy, Debug)]
enum Exact {
    /// Every row.
    All,
    /// Every row up to this one (included).
    UpTo(Entry),
    /// None: its rows are sorted.
    Nothing,
}

/// One part's share of a list: its day and set, candidates in the list's order, and how far
/// they are exact.
struct Share {
    day: i64,
    rs: Uuid,
    rows: Vec<Entry>,
    exact: Exact,
}

/// Whether `a` comes before `b` in the list's order.
fn before(a: &Entry, b: &Entry, desc: bool) -> bool {
    if desc { a > b } else { a < b }
}

/// Sorts in the list's order.
fn sort(rows: &mut [Entry], desc: bool) {
    rows.sort_unstable();
    if desc {
        rows.reverse();
    }
}

impl Store {
    /// Whether `edge_requests` has the client-port index (PostgreSQL; see the module).
    pub fn keeps_port_index(&self) -> bool {
        self.dialect() == Dialect::Postgres
    }

    /// A statement giving the first `need` rows (`seq, tpl, ts, port`) of the window `w` among
    /// the templates `tpls` (an id list) by client port, then time, then the order written (all
    /// of it reversed when `desc`; no port lowest). PostgreSQL reads each resource set's rows in
    /// the index's order and merges them (the index does not order a list of sets); SQLite sorts
    /// the window's rows (where [`Store::rows_by_port_sketch`] cannot answer).
    pub(super) fn rows_by_port(&self, w: &Window<'_>, tpls: &str, desc: bool, need: usize) -> String {
        let dir = if desc { "DESC" } else { "ASC" };
        let order = format!(
            "ORDER BY port {dir}{nulls}, ts {dir}, seq {dir} LIMIT {need}",
            nulls = self.nulls_lowest(desc)
        );
        debug_assert!(!w.rs.is_empty(), "a window has a resource set");
        if !self.keeps_port_index() {
            return dense_rows(w.conds, tpls, &order);
        }
        let one_set = |rs: &String| dense_rows(&format!("rs = {rs} AND {}", w.times), tpls, &order);
        match w.rs {
            [rs] => one_set(rs),
            sets => {
                let parts: Vec<String> = sets
                    .iter()
                    .enumerate()
                    .map(|(i, rs)| format!("SELECT * FROM ({}) AS p{i}", one_set(rs)))
                    .collect();
                format!(
                    "SELECT seq, tpl, ts, port FROM ({}) AS u {order}",
                    parts.join(" UNION ALL ")
                )
            }
        }
    }

    /// SQLite: feeds the request rows one `INSERT` stored (`rows` with their templates `tpls`,
    /// the last given the row id `last`, the others those before it) to the [`PortSketch`].
    pub(super) fn feed_port_sketch(&self, rows: &[RequestRow], tpls: &[i64], last: i64) {
        let mut sketch = self.ports.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if sketch.state == State::Off {
            return;
        }
        let first = last - rows.len() as i64 + 1;
        for (i, (r, tpl)) in rows.iter().zip(tpls).enumerate() {
            if let Some(c) = r.context {
                let e = Entry {
                    port: c.source_port,
                    ts: r.ts,
                    seq: first + i as i64,
                    tpl: *tpl,
                };
                sketch.add(r.rs, e);
            }
        }
    }

    /// Retention has deleted the rows before `before`: the parts of the days before its day
    /// keep nothing more (what a stream's floor held back is sorted when listed).
    pub(super) fn forget_port_sketch_before(&self, before: i64) {
        let mut sketch = self.ports.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let day = before.div_euclid(DAY);
        let mut freed = 0;
        for ((d, _), part) in sketch.parts.iter_mut() {
            if *d < day && part.kept {
                freed += part.low.len() + part.high.len();
                *part = Part {
                    seen: part.seen,
                    ..Part::default()
                };
            }
        }
        sketch.entries -= freed;
    }

    /// The rows each end of a part keeps, from the next build on (tests: a few, so that lists
    /// sort some parts).
    pub fn size_port_sketch(&self, rows: usize) {
        self.ports
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .rows = rows;
    }

    /// The lists read through the sketch, and the parts whose rows they sorted, since start.
    pub fn port_sketch_reads(&self) -> (u64, u64) {
        let sketch = self.ports.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        (sketch.reads, sketch.sorted)
    }

    /// SQLite: builds the [`PortSketch`] from the stored rows, feeding it the rows stored
    /// meanwhile, and lists then read it: per stretch of a day's rows of a resource set, the
    /// lowest and highest rows by port, each a sort of at most [`BUILD_STRETCH`] rows (~2 s in
    /// all for ten million events on this machine). Returns whether there is one (SQLite).
    pub async fn build_port_sketch(&self) -> Result<bool> {
        if self.dialect() != Dialect::Sqlite {
            return Ok(false);
        }
        let rows = {
            let mut sketch = self.ports.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            sketch.state = State::Building;
            sketch.parts.clear();
            sketch.entries = 0;
            sketch.size()
        };
        let built = self.read_port_sketch(rows).await;
        let mut sketch = self.ports.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        sketch.state = if built.is_ok() { State::Ready } else { State::Off };
        built.map(|()| true)
    }

    async fn read_port_sketch(&self, rows: usize) -> Result<()> {
        // Rows stored from here on are fed; those before are read (some of them both). Read on
        // the event writer's connection: a batch it was writing, perhaps unfed, has committed.
        let last = "SELECT COALESCE(MAX(seq), 0) FROM edge_requests";
        let stored: i64 = match &self.events {
            Some(writer) => sqlx::query_scalar(last).fetch_one(writer).await?,
            None => sqlx::query_scalar(last).fetch_one(self.pool()).await?,
        };
        // The resource sets, one `(rs, ts)` index probe each.
        let sets: Vec<String> = sqlx::query_scalar(
            "WITH RECURSIVE s(rs) AS (SELECT MIN(rs) FROM edge_requests UNION ALL \
             SELECT (SELECT MIN(rs) FROM edge_requests WHERE rs > s.rs) FROM s WHERE s.rs IS NOT NULL) \
             SELECT rs FROM s WHERE rs IS NOT NULL",
        )
        .fetch_all(self.pool())
        .await?;
        for text in sets {
            let Some(rs) = canonical(&text) else { continue };
            // A stretch of the set's rows at a time, within a day (a day's ends are among its
            // stretches'): each sort short (a day's ten million events in one took ~1 s), the
            // requests' statements in between.
            let mut at = i64::MIN;
            loop {
                let first: Option<i64> =
                    sqlx::query_scalar("SELECT MIN(ts) FROM edge_requests WHERE rs = $1 AND ts >= $2")
                        .bind(&text)
                        .bind(at)
                        .fetch_one(self.pool())
                        .await?;
                let Some(first) = first else { break };
                let next: Option<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                    "SELECT ts FROM edge_requests WHERE rs = $1 AND ts >= $2 ORDER BY ts LIMIT 1 OFFSET {BUILD_STRETCH}"
                )))
                .bind(&text)
                .bind(first)
                .fetch_optional(self.pool())
                .await?;
                let day_end = (first.div_euclid(DAY) + 1) * DAY;
                at = next.map_or(day_end, |n| n.max(first + 1).min(day_end));
                for dir in ["ASC", "DESC"] {
                    let sql = format!(
                        "SELECT port, ts, seq, tpl FROM edge_requests WHERE rs = $1 AND ts >= $2 AND ts < $3 \
                         AND seq <= $4 AND port IS NOT NULL AND tpl IS NOT NULL \
                         ORDER BY port {dir}, ts {dir}, seq {dir} LIMIT {}",
                        rows + 1
                    );
                    let found = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(&text)
                        .bind(first)
                        .bind(at)
                        .bind(stored)
                        .fetch_all(self.pool())
                        .await?;
                    let mut sketch = self.ports.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    for r in &found {
                        let port: i64 = r.try_get(0)?;
                        let e = Entry {
                            port: u16::try_from(port).unwrap_or(u16::MAX),
                            ts: r.try_get(1)?,
                            seq: r.try_get(2)?,
                            tpl: r.try_get(3)?,
                        };
                        sketch.add(rs, e);
                    }
                    // All of the stretch's rows: the other end is the same.
                    if found.len() <= rows {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// SQLite: the first `need` rows (`seq, tpl, ts`) by client port (then time, then the order
    /// written; all reversed when `desc`) of `q`'s window among the templates `tpls` (`list`
    /// their id list), read through the [`PortSketch`]; `None` when it cannot answer (not built,
    /// a page deeper than it keeps). Each part (a day of a resource set) in the window gives its
    /// kept rows in the window and among `tpls`, checked against the database (a row deleted, or
    /// rolled back after it was fed, is not there as kept). A part whose rows so read do not
    /// reach the page's last row is read from the database: its window's rows sorted, as the
    /// lists did before (a window taking little of a day, a filter taking few of its rows).
    pub(super) async fn rows_by_port_sketch(
        &self,
        q: &EventQuery,
        tpls: &HashMap<i64, Vec<i64>>,
        list: &str,
        desc: bool,
        need: usize,
    ) -> Result<Option<Vec<(i64, i64, i64)>>> {
        if self.dialect() != Dialect::Sqlite {
            return Ok(None);
        }
        let Some(sets) = q.rs.iter().map(|s| canonical(s)).collect::<Option<Vec<Uuid>>>() else {
            return Ok(None);
        };
        let from = q.from.unwrap_or(i64::MIN);
        let to = q.to.unwrap_or(i64::MAX);
        let (days_from, days_to) = (from.div_euclid(DAY), to.saturating_sub(1).div_euclid(DAY));
        let mut shares = Vec::new();
        {
            let mut sketch = self.ports.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if sketch.state != State::Ready || need > sketch.size() {
                return Ok(None);
            }
            sketch.reads += 1;
            let rows = sketch.size();
            for ((day, rs), part) in &sketch.parts {
                if *day < days_from || *day > days_to || !sets.contains(rs) {
                    continue;
                }
                let fits = |e: &Entry| e.ts >= from && e.ts < to && tpls.contains_key(&e.tpl);
                let (mut kept, end): (Vec<Entry>, Option<Entry>) = if desc {
                    (
                        part.high.iter().map(|r| r.0).filter(fits).collect(),
                        part.high.peek().map(|r| r.0),
                    )
                } else {
                    (
                        part.low.iter().copied().filter(fits).collect(),
                        part.low.peek().copied(),
                    )
                };
                sort(&mut kept, desc);
                kept.dedup();
                let mut exact = match end {
                    _ if !part.kept => Exact::Nothing,
                    _ if part.seen <= rows as u64 => Exact::All,
                    Some(end) => Exact::UpTo(end),
                    None => Exact::Nothing,
                };
                if kept.len() > need {
                    kept.truncate(need);
                    exact = Exact::UpTo(kept[need - 1]);
                }
                shares.push(Share {
                    day: *day,
                    rs: *rs,
                    rows: kept,
                    exact,
                });
            }
        }
        // Each candidate as stored (its row still there, with the port, time and template kept).
        let seqs = id_list(shares.iter().flat_map(|s| s.rows.iter().map(|e| e.seq)));
        if !seqs.is_empty() {
            let sql = format!("SELECT port, ts, seq, tpl FROM edge_requests WHERE seq IN ({seqs})");
            let found = sqlx::query(sqlx::AssertSqlSafe(sql))
                .persistent(false)
                .fetch_all(self.pool())
                .await?;
            let mut stored = std::collections::HashSet::with_capacity(found.len());
            for r in &found {
                let port: Option<i64> = r.try_get(0)?;
                stored.insert((
                    port,
                    r.try_get::<i64, _>(1)?,
                    r.try_get::<i64, _>(2)?,
                    r.try_get::<Option<i64>, _>(3)?,
                ));
            }
            for share in &mut shares {
                share
                    .rows
                    .retain(|e| stored.contains(&(Some(i64::from(e.port)), e.ts, e.seq, Some(e.tpl))));
            }
        }
        // The page's last row as read: every part must be exact up to it (or whole, when the
        // page is not full).
        let last = |shares: &[Share]| {
            let mut all: Vec<Entry> = shares.iter().flat_map(|s| s.rows.iter().copied()).collect();
            sort(&mut all, desc);
            all.truncate(need);
            all
        };
        let page = last(&shares);
        let bound = (page.len() == need).then(|| page[need - 1]);
        let mut sorted = 0;
        for share in &mut shares {
            let enough = match (share.exact, bound) {
                (Exact::All, _) => true,
                (Exact::UpTo(end), Some(bound)) => !before(&end, &bound, desc),
                _ => false,
            };
            if enough {
                continue;
            }
            // The part's rows in the window, sorted.
            let dir = if desc { "DESC" } else { "ASC" };
            let sql = format!(
                "SELECT port, ts, seq, tpl FROM edge_requests WHERE rs = $1 AND ts >= $2 AND ts < $3 \
                 AND (tpl + 0) IN ({list}) ORDER BY port {dir}, ts {dir}, seq {dir} LIMIT {need}"
            );
            let found = sqlx::query(sqlx::AssertSqlSafe(sql))
                .persistent(false)
                .bind(share.rs.hyphenated().to_string())
                .bind(from.max(share.day * DAY))
                .bind(to.min((share.day + 1) * DAY))
                .fetch_all(self.pool())
                .await?;
            share.rows = Vec::with_capacity(found.len());
            for r in &found {
                let port: i64 = r.try_get(0)?;
                share.rows.push(Entry {
                    port: u16::try_from(port).unwrap_or(u16::MAX),
                    ts: r.try_get(1)?,
                    seq: r.try_get(2)?,
                    tpl: r.try_get(3)?,
                });
            }
            sorted += 1;
        }
        if sorted > 0 {
            self.ports
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .sorted += sorted;
        }
        Ok(Some(last(&shares).into_iter().map(|e| (e.seq, e.tpl, e.ts)).collect()))
    }
}

/// A resource set's id from its stored text (the lower-case hyphenated form its rows hold).
fn canonical(text: &str) -> Option<Uuid> {
    Uuid::try_parse(text)
        .ok()
        .filter(|u| u.hyphenated().to_string() == text)
}

/// The sketch, shared by a store's clones.
pub(super) type Sketch = std::sync::Arc<Mutex<PortSketch>>;
