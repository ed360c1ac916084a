//! The client-port order's own index on PostgreSQL (issue 34, migration 0012):
//! `edge_request_ports` holds each request row's day, resource set, port, time and sequence
//! number, sorted, written in short chunks in the background behind the event writer
//! ([`Store::index_ports`]) rather than by it: an index on `edge_requests.port` is written at a
//! random place by every request and was over the edge's instruction budget. A list ordered on
//! the port reads it per day and resource set, merged with the rows written since its mark
//! ([`Store::rows_by_port`]). SQLite has none: there the inserts would be the server's own work,
//! ~8,000 instructions a request at the least (docs/PERFORMANCE.md), and a list ordered on the
//! port sorts the window's rows.

use sqlx::Row;

use super::event_pages::Window;
use super::events::bound;
use super::{Dialect, Result, Store};

/// Request rows entered per transaction: the write lock (SQLite) is held for one chunk.
pub const INDEX_CHUNK: i64 = 2_000;

/// The `(day, resource set)` parts read per statement (SQLite allows 500 terms in a compound
/// select).
const PARTS_PER_STATEMENT: usize = 100;

/// Ports whose entries one retention `DELETE` takes from the head of a day's entries of one
/// resource set (sorted by port: each statement deletes a contiguous run).
const PURGE_PORTS: i64 = 64;

/// The UTC day of a time in milliseconds (the table's `day`).
const DAY_MS: i64 = 86_400_000;

/// One entry of the port order: the port (`None`: the row has none, lowest), time, sequence
/// number and template of a request row.
type Entry = (Option<i64>, i64, i64, Option<i64>);

impl Store {
    /// Whether the database keeps the port order's index (PostgreSQL; see the module).
    pub fn keeps_port_index(&self) -> bool {
        self.dialect() == Dialect::Postgres
    }

    /// Enters the request rows written since the last call into `edge_request_ports`, a chunk of
    /// [`INDEX_CHUNK`] rows per transaction, until none is left; returns how many it entered
    /// (none on SQLite).
    /// On PostgreSQL the mark's row lock makes nodes take turns; rows commit in `seq` order there
    /// (the event writer's lock, `Store::insert_requests`) as on SQLite, so every row up to the
    /// highest one read is in.
    pub async fn index_ports(&self) -> Result<u64> {
        if !self.keeps_port_index() {
            return Ok(0);
        }
        let mut total = 0;
        while let Some(n) = self.index_ports_chunk().await? {
            total += n;
            tokio::task::yield_now().await;
        }
        Ok(total)
    }

    /// One chunk of [`Store::index_ports`]: how many rows it entered, `None` when there were none
    /// after the mark.
    async fn index_ports_chunk(&self) -> Result<Option<u64>> {
        let mut tx = self.begin_write().await?;
        let mark: i64 = sqlx::query("SELECT seq FROM edge_request_ports_mark WHERE id = 1 FOR UPDATE")
            .fetch_one(&mut *tx)
            .await?
            .get(0);
        let last: Option<i64> = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT MAX(seq) FROM (SELECT seq FROM edge_requests WHERE seq > $1 ORDER BY seq LIMIT {INDEX_CHUNK}) AS c"
        )))
        .bind(mark)
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
        let Some(last) = last else {
            return Ok(None);
        };
        let n = sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO edge_request_ports (day, rs, port, ts, seq, tpl) \
             SELECT ts / {DAY_MS}, rs, COALESCE(port, -1), ts, seq, tpl FROM edge_requests \
             WHERE seq > $1 AND seq <= $2 ORDER BY 1, 2, 3, 4, 5 ON CONFLICT DO NOTHING"
        )))
        .bind(mark)
        .bind(last)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        sqlx::query("UPDATE edge_request_ports_mark SET seq = $1 WHERE id = 1")
            .bind(last)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Some(n))
    }

    /// How far the request rows run past the mark (their sequence numbers, not a count: a
    /// PostgreSQL sequence skips some).
    pub async fn ports_behind(&self) -> Result<i64> {
        if !self.keeps_port_index() {
            return Ok(0);
        }
        let r = sqlx::query(
            "SELECT (SELECT MAX(seq) FROM edge_requests), (SELECT seq FROM edge_request_ports_mark WHERE id = 1)",
        )
        .fetch_one(self.pool())
        .await?;
        let last: Option<i64> = r.try_get(0).ok().flatten();
        let mark: Option<i64> = r.try_get(1).ok().flatten();
        Ok((last.unwrap_or(0) - mark.unwrap_or(0)).max(0))
    }

    /// The last request row `edge_request_ports` holds (every one before it is in too; 0 on
    /// SQLite).
    pub async fn port_mark(&self) -> Result<i64> {
        if !self.keeps_port_index() {
            return Ok(0);
        }
        Ok(sqlx::query("SELECT seq FROM edge_request_ports_mark WHERE id = 1")
            .fetch_one(self.pool())
            .await?
            .get(0))
    }

    /// The first `need` rows (sequence number, template, time) of the window `w` among the
    /// templates `tpls` (an id list) by client port, then time, then the order written (all of
    /// it reversed when `desc`; no port lowest). Each day and resource set of the window is a
    /// sorted run of `edge_request_ports` read from its start; the rows after its mark are read
    /// from `edge_requests` and sorted; an entry whose row retention has deleted is skipped.
    pub(super) async fn rows_by_port(
        &self,
        w: &Window<'_>,
        (from, to): (Option<i64>, Option<i64>),
        tpls: &str,
        desc: bool,
        need: usize,
    ) -> Result<Vec<(i64, i64, i64)>> {
        let dir = if desc { "DESC" } else { "ASC" };
        let order = format!("ORDER BY port {dir}, ts {dir}, seq {dir}");
        // Read before the runs: an entry made after it is read twice at most (merged below).
        let mark = self.port_mark().await?;
        let mut entries: Vec<Entry> = Vec::new();
        let read = |rows: Vec<sqlx::any::AnyRow>, entries: &mut Vec<Entry>| {
            entries.extend(rows.iter().map(|r| {
                let port: Option<i64> = r.try_get(3).ok().flatten();
                (
                    port.filter(|p| *p >= 0),
                    r.get(2),
                    r.get(0),
                    r.try_get(1).ok().flatten(),
                )
            }));
        };
        // The days the table holds in the window (its first and last, when unbounded).
        if let (Some(first), Some(last)) = self.port_days().await? {
            let lo = from.map_or(first, |f| f.div_euclid(DAY_MS).max(first));
            let hi = to.map_or(last, |t| (t - 1).div_euclid(DAY_MS).min(last));
            let parts: Vec<String> = (lo..=hi)
                .flat_map(|day| w.rs.iter().map(move |rs| (day, rs)))
                .enumerate()
                .map(|(i, (day, rs))| {
                    format!(
                        "SELECT * FROM (SELECT seq, tpl, ts, port FROM edge_request_ports \
                         WHERE day = {day} AND rs = {rs} AND {conds} AND tpl IN ({tpls}) AND EXISTS \
                         (SELECT 1 FROM edge_requests r WHERE r.seq = edge_request_ports.seq) \
                         {order} LIMIT {need}) AS p{i}",
                        conds = w.conds
                    )
                })
                .collect();
            for chunk in parts.chunks(PARTS_PER_STATEMENT) {
                let sql = format!(
                    "SELECT seq, tpl, ts, port FROM ({}) AS u {order} LIMIT {need}",
                    chunk.join(" UNION ALL ")
                );
                read(bound(&sql, w.binds).fetch_all(self.pool()).await?, &mut entries);
            }
        }
        // The rows after the mark, through the table's own order (`+ 0`: not through the
        // templates' index, which would read all of the window).
        let sql = format!(
            "SELECT seq, tpl, ts, port FROM edge_requests WHERE seq > {mark} AND {} AND (tpl + 0) IN ({tpls}) \
             ORDER BY port {dir}{nulls}, ts {dir}, seq {dir} LIMIT {need}",
            w.conds,
            nulls = self.nulls_lowest(desc),
        );
        read(bound(&sql, w.binds).fetch_all(self.pool()).await?, &mut entries);
        entries.sort_unstable();
        entries.dedup_by_key(|e| e.2);
        if desc {
            entries.reverse();
        }
        entries.truncate(need);
        Ok(entries
            .into_iter()
            .map(|(_, ts, seq, tpl)| (seq, tpl.unwrap_or_default(), ts))
            .collect())
    }

    /// The first and last day `edge_request_ports` holds entries of (UTC days since 1970).
    pub async fn port_days(&self) -> Result<(Option<i64>, Option<i64>)> {
        if !self.keeps_port_index() {
            return Ok((None, None));
        }
        let r =
            sqlx::query("SELECT (SELECT MIN(day) FROM edge_request_ports), (SELECT MAX(day) FROM edge_request_ports)")
                .fetch_one(self.pool())
                .await?;
        Ok((r.try_get(0).ok().flatten(), r.try_get(1).ok().flatten()))
    }

    /// Retention of `edge_request_ports`: deletes the entries of days before `day`, a run of
    /// [`PURGE_PORTS`] ports of one day and resource set per statement.
    pub(super) async fn purge_ports_before(&self, day: i64) -> Result<u64> {
        let mut total = 0;
        if !self.keeps_port_index() {
            return Ok(total);
        }
        loop {
            let head = sqlx::query("SELECT day, rs FROM edge_request_ports WHERE day < $1 ORDER BY day, rs LIMIT 1")
                .bind(day)
                .fetch_optional(self.pool())
                .await?;
            let Some(head) = head else {
                return Ok(total);
            };
            let (d, rs): (i64, String) = (head.get(0), head.get(1));
            while let Some(port) =
                sqlx::query("SELECT port FROM edge_request_ports WHERE day = $1 AND rs = $2 ORDER BY port LIMIT 1")
                    .bind(d)
                    .bind(&rs)
                    .fetch_optional(self.pool())
                    .await?
            {
                let port: i64 = port.get(0);
                total += sqlx::query("DELETE FROM edge_request_ports WHERE day = $1 AND rs = $2 AND port < $3")
                    .bind(d)
                    .bind(&rs)
                    .bind(port + PURGE_PORTS)
                    .execute(self.pool())
                    .await?
                    .rows_affected();
                tokio::task::yield_now().await;
            }
        }
    }
}
