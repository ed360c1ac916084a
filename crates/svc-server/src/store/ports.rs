//! The client-port order (issue 34). On PostgreSQL `edge_requests` has an index on `(rs, port
//! NULLS FIRST, ts, seq)` (migration 0012), and a list ordered on the port reads each resource
//! set's rows in its order; its insert is PostgreSQL's work in each event transaction. SQLite has
//! none: there any structure sorted by port costs the server a B-tree page written per request
//! (an index ~9,400 instructions a `/credentials` request, a table filled by trigger ~14,000,
//! over issue 34's budget; docs/PERFORMANCE.md). Instead the server keeps, in memory, each
//! day's and resource set's lowest and highest rows by port (`store::port_sketch`): what the
//! first pages of a list ordered on the port show. A list reads them, checks them against the
//! database, and sorts only the window's rows of a day whose kept rows cannot prove the page.

use std::collections::HashMap;
use std::sync::Mutex;

use sqlx::Row;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::event_pages::{Window, dense_rows, id_list};
use super::events::{EventQuery, RequestRow, day_of, day_start};
use super::port_sketch::{Entry, PortSketch, Share, Sizes, sort};
use super::{Dialect, Result, Store};

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
        let mut sketch = self.port_sketch();
        if !sketch.feeding() {
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

    fn port_sketch(&self) -> std::sync::MutexGuard<'_, PortSketch> {
        self.ports.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Retention has deleted the rows before `before`: the days before its day are forgotten.
    pub(super) fn forget_port_sketch_before(&self, before: i64) {
        self.port_sketch().forget_before(day_of(before));
    }

    /// Tests: the sizes of the next build (a few rows kept, a few parts, short stretches, so
    /// that lists sort some days and the build reads several stretches).
    #[doc(hidden)]
    pub fn size_port_sketch(&self, keep: usize, parts: usize, stretch: usize) {
        self.port_sketch().resize(Sizes { keep, parts, stretch });
    }

    /// The lists read through the sketch, and the shares of them sorted, since start.
    pub fn port_sketch_reads(&self) -> (u64, u64) {
        let sketch = self.port_sketch();
        (sketch.reads, sketch.sorted)
    }

    /// SQLite with the event writer's connection: builds the [`PortSketch`] from the stored rows,
    /// feeding it the rows stored meanwhile, and lists then read it: per stretch of a day's rows
    /// of a resource set, the lowest and highest rows by port, each a sort of at most
    /// [`Sizes::stretch`] rows (~2 s in all for ten million events on this machine). Returns
    /// whether it built one.
    pub async fn build_port_sketch(&self) -> Result<bool> {
        let Some(writer) = self.events.as_ref().filter(|_| self.dialect() == Dialect::Sqlite) else {
            return Ok(false);
        };
        let (generation, sizes) = self.port_sketch().start_build();
        let built = self.read_port_sketch(writer, generation, sizes).await;
        self.port_sketch().finish_build(generation, matches!(built, Ok(true)));
        built
    }

    async fn read_port_sketch(&self, writer: &sqlx::SqlitePool, generation: u64, sizes: Sizes) -> Result<bool> {
        // Rows stored from here on are fed; those before are read (some of them both). Read on
        // the event writer's connection: a batch it was writing, perhaps unfed, has committed.
        let stored: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM edge_requests")
            .fetch_one(writer)
            .await?;
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
                    "SELECT ts FROM edge_requests WHERE rs = $1 AND ts >= $2 ORDER BY ts LIMIT 1 OFFSET {}",
                    sizes.stretch
                )))
                .bind(&text)
                .bind(first)
                .fetch_optional(self.pool())
                .await?;
                let day_end = day_start_after(first);
                at = next.map_or(day_end, |n| n.max(first.saturating_add(1)).min(day_end));
                for dir in ["ASC", "DESC"] {
                    let sql = format!(
                        "SELECT port, ts, seq, tpl FROM edge_requests WHERE rs = $1 AND ts >= $2 AND ts < $3 \
                         AND seq <= $4 AND port IS NOT NULL AND tpl IS NOT NULL \
                         ORDER BY port {dir}, ts {dir}, seq {dir} LIMIT {}",
                        sizes.keep + 1
                    );
                    let found = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(&text)
                        .bind(first)
                        .bind(at)
                        .bind(stored)
                        .fetch_all(self.pool())
                        .await?;
                    let mut sketch = self.port_sketch();
                    if !sketch.building(generation) {
                        return Ok(false);
                    }
                    for r in &found {
                        let e =
                            entry(r)?.ok_or_else(|| super::StoreError::other("a stored client port out of range"))?;
                        sketch.add(rs, e);
                    }
                    // All of the stretch's rows: the other end is the same.
                    if found.len() <= sizes.keep {
                        break;
                    }
                }
                if at == i64::MAX {
                    break;
                }
            }
        }
        Ok(true)
    }

    /// SQLite: the first `need` rows (`seq, tpl, ts`) by client port (then time, then the order
    /// written; all reversed when `desc`) of `q`'s window among the templates `tpls` (`list`
    /// their id list), read through the [`PortSketch`]; `None` when it cannot answer (not built,
    /// a page deeper than it keeps, a row without a port). Each share (a day of a resource set,
    /// or the days retention passed) in the window gives its kept rows in the window and among
    /// `tpls`; in the list's order they are checked against the database until the page is full
    /// (a row deleted, or rolled back after it was fed, is not there as kept). A share whose
    /// kept rows do not reach the page's last row is read from the database: its rows in the
    /// window sorted, as the lists did before (a window taking little of a day, a filter taking
    /// few of its rows, a day not kept).
    pub(super) async fn rows_by_port_sketch(
        &self,
        q: &EventQuery,
        tpls: &HashMap<i64, Vec<i64>>,
        list: &str,
        desc: bool,
        need: usize,
    ) -> Result<Option<Vec<(i64, i64, i64)>>> {
        if self.dialect() != Dialect::Sqlite || need == 0 {
            return Ok(None);
        }
        let Some(sets) = q.rs.iter().map(|s| canonical(s)).collect::<Option<Vec<Uuid>>>() else {
            return Ok(None);
        };
        let (from, to) = (q.from.unwrap_or(i64::MIN), q.to.unwrap_or(i64::MAX));
        // Copied out under the lock (the event writer takes it in its transaction), selected here.
        let Some(mut shares) = self.port_sketch().shares(&sets, from, to, desc, need) else {
            return Ok(None);
        };
        for share in &mut shares {
            share.select(&|tpl| tpls.contains_key(&tpl), desc);
        }
        // Every candidate in the list's order (with its share), checked until the page is full.
        let mut order: Vec<(Entry, usize)> = shares
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.rows.iter().map(move |e| (*e, i)))
            .collect();
        order.sort_unstable_by(|a, b| if desc { b.0.cmp(&a.0) } else { a.0.cmp(&b.0) });
        let sets: Vec<String> = shares.iter().map(|s| s.rs.hyphenated().to_string()).collect();
        let mut page: Vec<(Entry, usize)> = Vec::with_capacity(need);
        let mut checked = 0;
        while page.len() < need && checked < order.len() {
            let batch = &order[checked..order.len().min(checked + need - page.len())];
            checked += batch.len();
            let stored = self.stored_as_kept(batch.iter().map(|(e, _)| e.seq)).await?;
            page.extend(batch.iter().filter(|(e, i)| {
                stored.get(&e.seq).is_some_and(|(rs, port, ts, tpl)| {
                    *rs == sets[*i] && *port == Some(i64::from(e.port)) && *ts == e.ts && *tpl == Some(e.tpl)
                })
            }));
        }
        let last = (page.len() == need).then(|| page[need - 1].0);
        // The shares whose kept rows do not reach the page's last row: their rows sorted. The
        // others' rows up to it are all in `page` (each checked: everything up to it was).
        let mut rows: Vec<Entry> = page
            .iter()
            .filter(|(_, i)| shares[*i].exact.reaches(last.as_ref(), desc))
            .map(|(e, _)| *e)
            .collect();
        let mut sorted = 0;
        for share in shares.iter().filter(|s| !s.exact.reaches(last.as_ref(), desc)) {
            match self.share_by_port(share, list, desc, need).await? {
                Some(found) => rows.extend(found),
                None => return Ok(None),
            }
            sorted += 1;
        }
        self.port_sketch().sorted += sorted;
        sort(&mut rows, desc);
        rows.truncate(need);
        Ok(Some(rows.into_iter().map(|e| (e.seq, e.tpl, e.ts)).collect()))
    }

    /// The rows of `seqs` as stored: resource set, port, time and template by `seq`.
    async fn stored_as_kept(
        &self,
        seqs: impl Iterator<Item = i64>,
    ) -> Result<HashMap<i64, (String, Option<i64>, i64, Option<i64>)>> {
        let sql = format!(
            "SELECT seq, rs, port, ts, tpl FROM edge_requests WHERE seq IN ({})",
            id_list(seqs)
        );
        let found = sqlx::query(sqlx::AssertSqlSafe(sql))
            .persistent(false)
            .fetch_all(self.pool())
            .await?;
        found
            .iter()
            .map(|r| {
                Ok((
                    r.try_get(0)?,
                    (r.try_get(1)?, r.try_get(2)?, r.try_get(3)?, r.try_get(4)?),
                ))
            })
            .collect()
    }

    /// The first `need` rows by port of `share`'s set and time among the templates `list`,
    /// sorted from the database; `None` for a row without a port (stored since the list
    /// looked: the list then sorts as without the sketch).
    async fn share_by_port(&self, share: &Share, list: &str, desc: bool, need: usize) -> Result<Option<Vec<Entry>>> {
        let dir = if desc { "DESC" } else { "ASC" };
        let sql = format!(
            "SELECT port, ts, seq, tpl FROM edge_requests WHERE rs = $1 AND ts >= $2 AND ts < $3 \
             AND (tpl + 0) IN ({list}) ORDER BY port {dir}, ts {dir}, seq {dir} LIMIT {need}"
        );
        let found = sqlx::query(sqlx::AssertSqlSafe(sql))
            .persistent(false)
            .bind(share.rs.hyphenated().to_string())
            .bind(share.from)
            .bind(share.to)
            .fetch_all(self.pool())
            .await?;
        found.iter().map(entry).collect()
    }
}

/// A row's `port, ts, seq, tpl` as kept; `None` without a port or template, or with a port out
/// of range.
fn entry(r: &AnyRow) -> Result<Option<Entry>> {
    let (port, tpl): (Option<i64>, Option<i64>) = (r.try_get(0)?, r.try_get(3)?);
    let (Some(port), Some(tpl)) = (port.and_then(|p| u16::try_from(p).ok()), tpl) else {
        return Ok(None);
    };
    Ok(Some(Entry {
        port,
        ts: r.try_get(1)?,
        seq: r.try_get(2)?,
        tpl,
    }))
}

/// The first millisecond of the day after the one of `ts` (saturating).
fn day_start_after(ts: i64) -> i64 {
    day_start(day_of(ts).saturating_add(1))
}

/// A resource set's id from its stored text (the lower-case hyphenated form its rows hold).
fn canonical(text: &str) -> Option<Uuid> {
    Uuid::try_parse(text)
        .ok()
        .filter(|u| u.hyphenated().to_string() == text)
}

/// The sketch, shared by a store's clones.
pub(super) type Sketch = std::sync::Arc<Mutex<PortSketch>>;
