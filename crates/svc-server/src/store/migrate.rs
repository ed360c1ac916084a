//! Schema migrations: SQL files embedded from `migrations/<dialect>/`, applied in order at start,
//! each in its own transaction and recorded in `schema_migrations` in that transaction (a
//! migration that fails leaves nothing of itself, and one recorded is never applied again); on
//! PostgreSQL an index build that must not block writes runs its statements on their own, each
//! safe to run again (`Migration::concurrent`). On PostgreSQL an advisory lock keeps nodes that
//! start together from racing. A database whose schema is newer than this binary's (a newer svc
//! upgraded it) is refused, by `serve` and by every host command: an older node must not write to
//! a schema it does not know (issue 32, docs/OPERATIONS.md "Upgrades").

use sqlx::Row;

use super::{Dialect, Result, Store, StoreError};

#[derive(Clone, Copy)]
struct Migration {
    version: i64,
    name: &'static str,
    sqlite: &'static str,
    postgres: &'static str,
    /// PostgreSQL: each statement runs on its own, outside a transaction, and the migration is
    /// recorded after the last: an index built `CONCURRENTLY` lets the nodes still running write
    /// meanwhile. Its statements must be safe to run again (a build cut short leaves an invalid
    /// index: drop it first).
    concurrent: bool,
}

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "init",
        sqlite: include_str!("../../migrations/sqlite/0001_init.sql"),
        postgres: include_str!("../../migrations/postgres/0001_init.sql"),
        concurrent: false,
    },
    Migration {
        version: 2,
        name: "event_rows",
        sqlite: include_str!("../../migrations/sqlite/0002_event_rows.sql"),
        postgres: include_str!("../../migrations/postgres/0002_event_rows.sql"),
        concurrent: false,
    },
    Migration {
        version: 3,
        name: "log_streams",
        sqlite: include_str!("../../migrations/sqlite/0003_log_streams.sql"),
        postgres: include_str!("../../migrations/postgres/0003_log_streams.sql"),
        concurrent: false,
    },
    Migration {
        version: 4,
        name: "edge_requests",
        sqlite: include_str!("../../migrations/sqlite/0004_edge_requests.sql"),
        postgres: include_str!("../../migrations/postgres/0004_edge_requests.sql"),
        concurrent: false,
    },
    Migration {
        version: 5,
        name: "request_rows_compact",
        sqlite: include_str!("../../migrations/sqlite/0005_request_rows_compact.sql"),
        postgres: include_str!("../../migrations/postgres/0005_request_rows_compact.sql"),
        concurrent: false,
    },
    Migration {
        version: 6,
        name: "nodes",
        sqlite: include_str!("../../migrations/sqlite/0006_nodes.sql"),
        postgres: include_str!("../../migrations/postgres/0006_nodes.sql"),
        concurrent: false,
    },
    Migration {
        version: 7,
        name: "request_templates",
        sqlite: include_str!("../../migrations/sqlite/0007_request_templates.sql"),
        postgres: include_str!("../../migrations/postgres/0007_request_templates.sql"),
        concurrent: false,
    },
    Migration {
        version: 8,
        name: "template_views",
        sqlite: include_str!("../../migrations/sqlite/0008_template_views.sql"),
        postgres: include_str!("../../migrations/postgres/0008_template_views.sql"),
        concurrent: false,
    },
    Migration {
        version: 9,
        name: "audit_search",
        sqlite: include_str!("../../migrations/sqlite/0009_audit_search.sql"),
        postgres: include_str!("../../migrations/postgres/0009_audit_search.sql"),
        concurrent: false,
    },
    Migration {
        version: 10,
        name: "request_orders",
        sqlite: include_str!("../../migrations/sqlite/0010_request_orders.sql"),
        postgres: include_str!("../../migrations/postgres/0010_request_orders.sql"),
        concurrent: false,
    },
    Migration {
        version: 11,
        name: "template_names",
        sqlite: include_str!("../../migrations/sqlite/0011_template_names.sql"),
        postgres: include_str!("../../migrations/postgres/0011_template_names.sql"),
        concurrent: false,
    },
    Migration {
        version: 12,
        name: "port_index",
        sqlite: include_str!("../../migrations/sqlite/0012_port_index.sql"),
        postgres: include_str!("../../migrations/postgres/0012_port_index.sql"),
        concurrent: true,
    },
    Migration {
        version: 13,
        name: "template_rows",
        sqlite: include_str!("../../migrations/sqlite/0013_template_rows.sql"),
        postgres: include_str!("../../migrations/postgres/0013_template_rows.sql"),
        concurrent: false,
    },
    Migration {
        version: 14,
        name: "request_days",
        sqlite: include_str!("../../migrations/sqlite/0014_request_days.sql"),
        postgres: include_str!("../../migrations/postgres/0014_request_days.sql"),
        concurrent: true,
    },
];

/// The versions of every migration this binary knows, in order.
pub fn versions() -> Vec<i64> {
    MIGRATIONS.iter().map(|m| m.version).collect()
}

/// The schema version this binary writes: its newest migration.
pub const LATEST: i64 = MIGRATIONS[MIGRATIONS.len() - 1].version;

const PG_LOCK: i64 = 0x5356_435f_4d49_4752; // "SVC_MIGR"

/// Applies the migrations up to `version` (every one: [`LATEST`]; fewer, a database an older
/// binary left, for tests).
pub async fn run_through(store: &Store, version: i64) -> Result<()> {
    let known = MIGRATIONS.iter().take_while(|m| m.version <= version).count();
    let pool = store.pool();
    let mut conn = pool.acquire().await?;
    if store.dialect() == Dialect::Postgres {
        // Tried every 100 ms rather than waited for in one statement: a waiting statement holds
        // a snapshot, and an index built `CONCURRENTLY` by the node holding the lock waits for
        // every snapshot older than its build (a deadlock; `Migration::concurrent`).
        while !sqlx::query("SELECT pg_try_advisory_lock($1)")
            .bind(PG_LOCK)
            .fetch_one(&mut *conn)
            .await?
            .get::<bool, _>(0)
        {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
    let result = apply(store.dialect(), &mut conn, &MIGRATIONS[..known]).await;
    if store.dialect() == Dialect::Postgres {
        sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(PG_LOCK)
            .execute(&mut *conn)
            .await?;
    }
    result
}

/// The database's schema version: `None` when it holds no svc schema (an empty database).
pub async fn version(store: &Store) -> Result<Option<i64>> {
    let exists = match store.dialect() {
        Dialect::Sqlite => "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
        Dialect::Postgres => {
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'schema_migrations'"
        }
    };
    let n: i64 = sqlx::query(exists).fetch_one(store.pool()).await?.get(0);
    if n == 0 {
        return Ok(None);
    }
    let v: Option<i64> = sqlx::query("SELECT MAX(version) FROM schema_migrations")
        .fetch_one(store.pool())
        .await?
        .get(0);
    Ok(Some(v.unwrap_or(0)))
}

/// The refusal of a database upgraded by a newer svc.
fn newer(found: i64) -> StoreError {
    StoreError::other(format!(
        "the database's schema is version {found}, newer than this svc {} knows (version {LATEST}): a newer svc \
         upgraded it; run that version (an older one must not write to it), or restore a backup taken before the upgrade",
        env!("CARGO_PKG_VERSION")
    ))
}

/// A host command's check (`svc admin …` other than `migrate`): the database holds the schema
/// this binary writes, no older (`svc migrate` or the new server upgrades it first) and no newer.
pub async fn check_current(store: &Store) -> Result<()> {
    match version(store).await? {
        None => Err(StoreError::other(
            "the database holds no svc schema: start the server once (svc serve) or run svc migrate, or point \
             SVC_DATABASE_URL at the server's database",
        )),
        Some(v) if v > LATEST => Err(newer(v)),
        Some(v) if v < LATEST => Err(StoreError::other(format!(
            "the database's schema is version {v}, older than this svc's ({LATEST}): upgrade it first (svc migrate, or \
             start the new server)"
        ))),
        Some(_) => Ok(()),
    }
}

async fn apply(dialect: Dialect, conn: &mut sqlx::AnyConnection, migrations: &[Migration]) -> Result<()> {
    sqlx::raw_sql("CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)")
        .execute(&mut *conn)
        .await?;
    let applied: Vec<i64> = sqlx::query("SELECT version FROM schema_migrations")
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|r| r.get::<i64, _>(0))
        .collect();
    let known = migrations.last().map_or(0, |m| m.version);
    if let Some(found) = applied.iter().copied().max().filter(|v| *v > known) {
        return Err(newer(found));
    }
    for m in migrations {
        if applied.contains(&m.version) {
            continue;
        }
        let sql = match dialect {
            Dialect::Sqlite => m.sqlite,
            Dialect::Postgres => m.postgres,
        };
        tracing::info!(version = m.version, name = m.name, "applying migration");
        if dialect == Dialect::Postgres && m.concurrent {
            for statement in statements(sql) {
                sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
                    .execute(&mut *conn)
                    .await?;
            }
            record(&mut *conn, m).await?;
        } else {
            let mut tx = sqlx::Connection::begin(&mut *conn).await?;
            sqlx::raw_sql(sql).execute(&mut *tx).await?;
            record(&mut tx, m).await?;
            tx.commit().await?;
        }
        tracing::info!(version = m.version, name = m.name, "applied migration");
    }
    Ok(())
}

/// Records `m` as applied.
async fn record(conn: &mut sqlx::AnyConnection, m: &Migration) -> Result<()> {
    sqlx::query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)")
        .bind(m.version)
        .bind(m.name)
        .bind(crate::clock::now_millis())
        .execute(conn)
        .await?;
    Ok(())
}

/// The statements of a migration's SQL, one by one: each ends a line with `;` (not inside a
/// `$$` body: a `DO` block is one statement); comment lines are left out.
fn statements(sql: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, _) in sql.match_indices(['$', ';']) {
        if sql[i..].starts_with("$$") && !sql[..i].ends_with('$') {
            quoted = !quoted;
        } else if !quoted && sql[i..].starts_with(";\n") {
            parts.push(&sql[start..i]);
            start = i + 2;
        }
    }
    parts.push(&sql[start..]);
    parts
        .into_iter()
        .map(|s| {
            s.lines()
                .filter(|l| !l.trim_start().starts_with("--"))
                .collect::<Vec<_>>()
                .join("\n")
                .trim()
                .to_string()
        })
        .filter(|s| !s.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_migrations_statements_are_split_without_its_comments() {
        let sql = "-- a comment; with a semicolon\nDROP INDEX x;\n\n-- more\nCREATE INDEX x\n    ON t (a);\n";
        assert_eq!(statements(sql), ["DROP INDEX x", "CREATE INDEX x\n    ON t (a)"]);
        let sql = "DO $$\nBEGIN\n    SELECT 1;\n    SELECT 2;\nEND\n$$;\nSELECT 3;\n";
        assert_eq!(
            statements(sql),
            ["DO $$\nBEGIN\n    SELECT 1;\n    SELECT 2;\nEND\n$$", "SELECT 3"]
        );
    }

    const FIRST: Migration = Migration {
        version: 1,
        name: "first",
        sqlite: "CREATE TABLE a (x INTEGER);",
        postgres: "",
        concurrent: false,
    };

    async fn conn(path: &std::path::Path) -> sqlx::AnyConnection {
        sqlx::any::install_default_drivers();
        <sqlx::AnyConnection as sqlx::Connection>::connect(&format!("sqlite://{}?mode=rwc", path.display()))
            .await
            .unwrap()
    }

    async fn tables(c: &mut sqlx::AnyConnection) -> Vec<String> {
        sqlx::query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .fetch_all(&mut *c)
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    }

    #[tokio::test]
    async fn a_failing_migration_leaves_nothing_and_applied_ones_are_not_applied_again() {
        let path = std::env::temp_dir().join(format!("svc-migrate-{}.db", crate::util::uuid_v4()));
        let mut c = conn(&path).await;
        // The second migration's first statement succeeds, its second fails.
        let broken = Migration {
            version: 2,
            name: "broken",
            sqlite: "CREATE TABLE b (x INTEGER); INSERT INTO missing VALUES (1);",
            postgres: "",
            concurrent: false,
        };
        assert!(apply(Dialect::Sqlite, &mut c, &[FIRST, broken]).await.is_err());
        assert_eq!(tables(&mut c).await, ["a", "schema_migrations"], "no table b");
        let fixed = Migration {
            version: 2,
            name: "fixed",
            sqlite: "CREATE TABLE b (x INTEGER);",
            postgres: "",
            concurrent: false,
        };
        // Version 1 is not applied again (its CREATE TABLE would fail), version 2 now is; and a
        // third run changes nothing.
        apply(Dialect::Sqlite, &mut c, &[FIRST, fixed]).await.unwrap();
        apply(Dialect::Sqlite, &mut c, &[FIRST, fixed]).await.unwrap();
        assert_eq!(tables(&mut c).await, ["a", "b", "schema_migrations"]);
        // An older list refuses the newer database.
        let e = apply(Dialect::Sqlite, &mut c, &[FIRST]).await.unwrap_err();
        assert!(e.message.contains("schema is version 2, newer than this svc"), "{e}");
        drop(c);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
}
