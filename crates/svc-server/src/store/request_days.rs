//! PostgreSQL's request rows by the day (issue 34, migration 0014). `edge_requests` is partitioned
//! on `ts`, one partition per UTC day (`edge_requests_pYYYYMMDD`, with a primary key on `seq` of
//! its own), and retention detaches a day older than its cutoff and drops it whole instead of
//! deleting its rows (36.8 s for a day of ten million events, the edge's p99 3-7x; run 41).
//!
//! - **Made ahead.** Every node makes today's partition and the next [`DAYS_AHEAD`] days' (at
//!   start, `Store::open`, and hourly, `Store::prepare_request_days_ahead`), and the event
//!   writer makes the partition of a day it has not seen before it writes a row of it
//!   (`Store::ensure_request_days`): a clock far off, or a restore of old rows, still finds a
//!   partition. There is no default partition: `DETACH … CONCURRENTLY` refuses a table that
//!   has one.
//! - **Dropped whole.** A partition whose whole range is older than the purge's cutoff, and none
//!   of whose rows a log stream still holds back, is detached `CONCURRENTLY` (new queries and
//!   inserts go on; it waits for the transactions that use the table) and dropped. A detach cut
//!   short (the node stopped) is finished by the next purge (`FINALIZE`). The retention job
//!   rounds its cutoff down to a day's start on PostgreSQL ([`Store::retention_cutoff`]), so a
//!   day's events go together once the whole day is past the retention, at most a day late.
//! - **Rows deleted as before** where a partition is not whole: the rows stored before the
//!   migration (`edge_requests_legacy`, one partition of every time before the second day after
//!   it; a new database has none), rows a log stream holds back, and a cutoff inside a day
//!   (`Store::purge_events` called with one).
//! - Partitions are made and dropped under one advisory lock, so nodes take turns; a purge that
//!   finds the lock taken leaves the old rows to the node dropping them (it would otherwise
//!   delete them one by one). The event writer waits 2 s for it at most. A node that knew a day
//!   another node dropped fails one insert of a late row of it, then asks again.
//! - A failure to drop one day is logged and leaves it to the next purge; a day's table left
//!   detached (a drop cut short, or an operator's) is dropped once its day is old.
//!
//! A list's window prunes the days it does not cover; a read by `seq` alone visits every
//! partition (a log stream's catch-up, once per transaction).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use sqlx::Row;

use super::events::{RequestRow, day_of, day_start};
use super::{Dialect, Result, Store, StoreError};

/// The key of the PostgreSQL advisory lock under which partitions are made and dropped
/// ("svcdays").
const DAYS_LOCK: i64 = 0x0073_7663_6461_7973;

/// How many days after today a partition is made ahead.
pub const DAYS_AHEAD: i64 = 2;

/// The days whose partition this node knows to exist (so the event writer asks the catalog once
/// a day).
pub(super) type KnownDays = Arc<Mutex<HashSet<i64>>>;

/// A partition of `edge_requests`: its name, its range of times `[from, to)`, and whether a
/// detach of it was cut short.
struct Partition {
    name: String,
    from: i64,
    to: i64,
    detaching: bool,
}

/// The range of a partition as `pg_get_expr` prints it: `FOR VALUES FROM (MINVALUE) TO
/// ('1795996800000')`.
fn bounds(expr: &str) -> Option<(i64, i64)> {
    let value = |after: &str| -> Option<i64> {
        let rest = &expr[expr.find(after)? + after.len()..];
        match rest[..rest.find(')')?].trim().trim_matches('\'') {
            "MINVALUE" => Some(i64::MIN),
            "MAXVALUE" => Some(i64::MAX),
            v => v.parse().ok(),
        }
    };
    Some((value("FROM (")?, value("TO (")?))
}

/// The name of day `day`'s partition: `edge_requests_pYYYYMMDD`.
fn day_name(day: i64) -> String {
    match time::OffsetDateTime::from_unix_timestamp(day.saturating_mul(86_400)) {
        Ok(t) => format!("edge_requests_p{:04}{:02}{:02}", t.year(), u8::from(t.month()), t.day()),
        Err(_) => format!("edge_requests_d{day}"),
    }
}

/// Whether one of `parts` holds the whole of day `day`.
fn covered(parts: &[Partition], day: i64) -> bool {
    let (from, to) = (day_start(day), day_start(day.saturating_add(1)));
    parts.iter().any(|p| p.from <= from && to <= p.to)
}

/// The partitions of `edge_requests`.
async fn partitions(conn: &mut sqlx::AnyConnection) -> Result<Vec<Partition>> {
    let rows = sqlx::query(
        "SELECT c.relname::text, pg_get_expr(c.relpartbound, c.oid), i.inhdetachpending \
         FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid \
         WHERE i.inhparent = 'edge_requests'::regclass",
    )
    .fetch_all(&mut *conn)
    .await?;
    rows.iter()
        .map(|r| {
            let expr: String = r.get(1);
            let (from, to) = bounds(&expr)
                .ok_or_else(|| StoreError::other(format!("a partition's range not understood: {expr}")))?;
            Ok(Partition {
                name: r.get(0),
                from,
                to,
                detaching: r.get(2),
            })
        })
        .collect()
}

impl Store {
    /// The cutoff a retention purge of records older than `cutoff` uses: on PostgreSQL the start
    /// of its UTC day, so that whole days are dropped (see the module); on SQLite `cutoff`.
    pub fn retention_cutoff(&self, cutoff: i64) -> i64 {
        match self.dialect() {
            Dialect::Postgres => day_start(day_of(cutoff)),
            Dialect::Sqlite => cutoff,
        }
    }

    /// PostgreSQL: makes the partitions of today (at `now`) and the next [`DAYS_AHEAD`] days
    /// that do not exist yet; a failure is logged (the event writer makes a day it finds
    /// missing). Nothing on SQLite.
    pub async fn prepare_request_days_ahead(&self, now: i64) {
        let today = day_of(now);
        let days: Vec<i64> = (today..=today + DAYS_AHEAD).collect();
        if let Err(e) = self.prepare_request_days(&days).await {
            tracing::warn!(error = %e, "making the event rows' partitions of the next days failed");
        }
    }

    /// The event writer's part (PostgreSQL): makes the partitions of `batch`'s days this node has
    /// not seen yet. A hash lookup per row once they are known.
    pub(super) async fn ensure_request_days(&self, batch: &[RequestRow]) -> Result<()> {
        if self.dialect() != Dialect::Postgres {
            return Ok(());
        }
        let missing: Vec<i64> = {
            let known = self.request_days.lock().unwrap_or_else(PoisonError::into_inner);
            let mut missing = Vec::new();
            for r in batch {
                let day = day_of(r.ts);
                if !known.contains(&day) && !missing.contains(&day) {
                    missing.push(day);
                }
            }
            missing
        };
        if missing.is_empty() {
            return Ok(());
        }
        self.prepare_request_days(&missing).await
    }

    /// After a failed event insert: the days are asked of the catalog again (another node may
    /// have dropped one this node knew).
    pub(super) fn forget_request_days(&self) {
        self.request_days.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }

    /// Makes the partitions of `days` that no partition holds yet (PostgreSQL), and remembers
    /// them all as known.
    async fn prepare_request_days(&self, days: &[i64]) -> Result<()> {
        if self.dialect() != Dialect::Postgres {
            return Ok(());
        }
        let mut conn = self.pool().acquire().await?;
        let parts = partitions(&mut conn).await?;
        if days.iter().any(|d| !covered(&parts, *d)) {
            let mut tx = sqlx::Connection::begin(&mut *conn).await?;
            // Not long behind a drop (which holds the lock while its detach waits for the
            // transactions using the table): the batch fails and is written again.
            sqlx::query("SET LOCAL lock_timeout = '2s'").execute(&mut *tx).await?;
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(DAYS_LOCK)
                .execute(&mut *tx)
                .await?;
            // Again under the lock: another node may have made them meanwhile.
            let parts = partitions(&mut tx).await?;
            for &day in days.iter().filter(|d| !covered(&parts, **d)) {
                let (from, to) = (day_start(day), day_start(day.saturating_add(1)));
                let name = day_name(day);
                // A table of that name not attached is one a drop left (detached, not
                // dropped): its rows are of that day, so it is attached again.
                let sql = format!(
                    "CREATE TABLE IF NOT EXISTS {table} (LIKE edge_requests INCLUDING DEFAULTS, PRIMARY KEY (seq)); \
                     ALTER TABLE edge_requests ATTACH PARTITION {table} FOR VALUES FROM ({from}) TO ({to})",
                    table = quoted(&name)
                );
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut *tx).await?;
                tracing::info!(partition = name, "made the event rows' partition of a day");
            }
            tx.commit().await?;
        }
        self.request_days
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(days.iter().copied());
        Ok(())
    }

    /// Retention's part on PostgreSQL: detaches and drops every partition whose whole range is
    /// before `before` and whose rows are all at or below `floor` (a log stream's, when given),
    /// finishes a detach cut short, and drops a day's table a drop left detached. Returns the
    /// rows dropped, or `None` when the rows before `before` are not to be deleted one by one
    /// now: another node holds the lock (it is dropping them), or the partitions could not be
    /// read. A failure to drop one day is logged and leaves that day to the next purge. SQLite:
    /// `Some(0)`.
    pub(super) async fn drop_request_days(&self, before: i64, floor: Option<i64>) -> Option<u64> {
        use sqlx::Connection;
        if self.dialect() != Dialect::Postgres {
            return Some(0);
        }
        let dropped = async {
            // A session lock (a detach `CONCURRENTLY` runs outside a transaction) on a connection
            // taken out of the pool: if this is cut short the connection closes, which releases it.
            let mut conn = self.pool().acquire().await?.detach();
            let locked: bool = sqlx::query("SELECT pg_try_advisory_lock($1)")
                .bind(DAYS_LOCK)
                .fetch_one(&mut conn)
                .await?
                .get(0);
            let dropped = match locked {
                true => {
                    // A day's count (the purge's figure) read by this backend alone: a parallel
                    // scan took every core from the edge for its ~70 ms.
                    sqlx::query("SET max_parallel_workers_per_gather = 0")
                        .execute(&mut conn)
                        .await?;
                    self.drop_days_locked(&mut conn, before, floor).await.map(Some)
                }
                false => Ok(None),
            };
            let _ = conn.close().await;
            dropped
        };
        match dropped.await {
            Ok(dropped) => dropped,
            Err(e) => {
                tracing::warn!(error = %e, "reading the event rows' partitions of each day failed");
                None
            }
        }
    }

    async fn drop_days_locked(&self, conn: &mut sqlx::AnyConnection, before: i64, floor: Option<i64>) -> Result<u64> {
        let mut parts = partitions(conn).await?;
        // A detach cut short first: while one is pending, PostgreSQL refuses any other.
        parts.sort_by_key(|p| (!p.detaching, p.from));
        let (mut total, mut dropped) = (0u64, false);
        for p in parts {
            let old = p.to <= before;
            if !old && !p.detaching {
                continue;
            }
            let started = std::time::Instant::now();
            match self.drop_day(conn, &p, old, floor).await {
                Ok(None) => {}
                Ok(Some(rows)) => {
                    let ms = started.elapsed().as_millis() as u64;
                    tracing::info!(
                        partition = p.name,
                        rows,
                        ms,
                        "dropped the event rows' partition of a day"
                    );
                    total += rows;
                    dropped = true;
                }
                Err(e) => tracing::warn!(partition = p.name, error = %e, "dropping the event rows of a day failed"),
            }
        }
        // A day detached whose drop failed (the node stopped between the two), once the day is
        // old: a day's table not attached is only ever that (one is made and attached in one
        // transaction), or one an operator detached to keep, which goes with its day too.
        let left: Vec<String> = sqlx::query(
            "SELECT relname::text FROM pg_class WHERE relkind = 'r' AND NOT relispartition \
             AND relname ~ '^edge_requests_[pd]-?[0-9]+$' \
             AND relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'edge_requests'::regclass)",
        )
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
        for name in left {
            if day_of_name(&name).is_none_or(|d| day_start(d.saturating_add(1)) > before) {
                continue;
            }
            match drop_table(conn, &name).await {
                Ok(rows) => {
                    tracing::info!(table = name, rows, "dropped a day's event rows detached before");
                    total += rows;
                    dropped = true;
                }
                Err(e) => tracing::warn!(table = name, error = %e, "dropping the event rows of a day failed"),
            }
        }
        if dropped {
            // A row written late into a dropped day makes its partition again.
            self.forget_request_days();
        }
        Ok(total)
    }

    /// Drops partition `p` when `old` and no row of it is above `floor` (its rows; `None` when
    /// kept); a detach of it cut short is finished first, and a partition that is not `old` is
    /// attached again.
    async fn drop_day(
        &self,
        conn: &mut sqlx::AnyConnection,
        p: &Partition,
        old: bool,
        floor: Option<i64>,
    ) -> Result<Option<u64>> {
        let name = quoted(&p.name);
        if p.detaching {
            execute(
                conn,
                &format!("ALTER TABLE edge_requests DETACH PARTITION {name} FINALIZE"),
            )
            .await?;
            if !old {
                // No longer old (the retention was raised, or an earlier cutoff given).
                execute(
                    conn,
                    &format!(
                        "ALTER TABLE edge_requests ATTACH PARTITION {name} FOR VALUES FROM ({}) TO ({})",
                        bound_sql(p.from),
                        bound_sql(p.to)
                    ),
                )
                .await?;
                return Ok(None);
            }
        } else {
            if let Some(floor) = floor {
                let newest: Option<i64> = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT MAX(seq) FROM {name}")))
                    .fetch_one(&mut *conn)
                    .await?
                    .get(0);
                if newest.is_some_and(|s| s > floor) {
                    return Ok(None);
                }
            }
            execute(
                conn,
                &format!("ALTER TABLE edge_requests DETACH PARTITION {name} CONCURRENTLY"),
            )
            .await?;
        }
        Ok(Some(drop_table(conn, &p.name).await?))
    }
}

/// Runs one statement (outside a transaction: a detach `CONCURRENTLY` must).
async fn execute(conn: &mut sqlx::AnyConnection, sql: &str) -> Result<()> {
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Drops the day's table `name` (detached), returning its rows.
async fn drop_table(conn: &mut sqlx::AnyConnection, name: &str) -> Result<u64> {
    let name = quoted(name);
    let rows: i64 = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {name}")))
        .fetch_one(&mut *conn)
        .await?
        .get(0);
    execute(conn, &format!("DROP TABLE {name}")).await?;
    Ok(rows as u64)
}

/// `name` as an SQL identifier.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A partition's bound as SQL.
fn bound_sql(v: i64) -> String {
    match v {
        i64::MIN => "MINVALUE".into(),
        i64::MAX => "MAXVALUE".into(),
        v => v.to_string(),
    }
}

/// The day a day's table is named for ([`day_name`]).
fn day_of_name(name: &str) -> Option<i64> {
    if let Some(day) = name.strip_prefix("edge_requests_d") {
        return day.parse().ok();
    }
    let digits = name.strip_prefix("edge_requests_p").filter(|d| d.len() == 8)?;
    let number = |r: std::ops::Range<usize>| digits.get(r)?.parse::<u16>().ok();
    let month = time::Month::try_from(u8::try_from(number(4..6)?).ok()?).ok()?;
    let date =
        time::Date::from_calendar_date(i32::from(number(0..4)?), month, u8::try_from(number(6..8)?).ok()?).ok()?;
    Some(date.midnight().assume_utc().unix_timestamp().div_euclid(86_400))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partitions_range_and_a_days_name_are_read_and_made() {
        assert_eq!(
            bounds("FOR VALUES FROM (MINVALUE) TO ('1795996800000')"),
            Some((i64::MIN, 1_795_996_800_000))
        );
        assert_eq!(
            bounds("FOR VALUES FROM ('1795996800000') TO ('1796083200000')"),
            Some((1_795_996_800_000, 1_796_083_200_000))
        );
        assert_eq!(bounds("DEFAULT"), None);
        assert_eq!(day_name(day_of(1_795_996_800_000)), "edge_requests_p20261130");
        assert_eq!(day_name(0), "edge_requests_p19700101");
        for day in [0, 20_787, day_of(1_795_996_800_000), -3] {
            assert_eq!(day_of_name(&day_name(day)), Some(day), "{}", day_name(day));
        }
        assert_eq!(day_of_name("edge_requests_legacy"), None);
        assert_eq!(day_of_name("edge_requests_p20261399"), None);
        let parts = [Partition {
            name: "x".into(),
            from: i64::MIN,
            to: 1_795_996_800_000,
            detaching: false,
        }];
        assert!(covered(&parts, day_of(1_795_996_800_000) - 1));
        assert!(!covered(&parts, day_of(1_795_996_800_000)));
    }
}
