//! Schema migrations: SQL files embedded from `migrations/<dialect>/`, applied in order at start,
//! each in its own transaction and recorded in `schema_migrations`. On PostgreSQL an advisory lock
//! keeps nodes that start together from racing.

use sqlx::Row;

use super::{Dialect, Result, Store};

struct Migration {
    version: i64,
    name: &'static str,
    sqlite: &'static str,
    postgres: &'static str,
}

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "init",
        sqlite: include_str!("../../migrations/sqlite/0001_init.sql"),
        postgres: include_str!("../../migrations/postgres/0001_init.sql"),
    },
    Migration {
        version: 2,
        name: "event_rows",
        sqlite: include_str!("../../migrations/sqlite/0002_event_rows.sql"),
        postgres: include_str!("../../migrations/postgres/0002_event_rows.sql"),
    },
    Migration {
        version: 3,
        name: "log_streams",
        sqlite: include_str!("../../migrations/sqlite/0003_log_streams.sql"),
        postgres: include_str!("../../migrations/postgres/0003_log_streams.sql"),
    },
    Migration {
        version: 4,
        name: "edge_requests",
        sqlite: include_str!("../../migrations/sqlite/0004_edge_requests.sql"),
        postgres: include_str!("../../migrations/postgres/0004_edge_requests.sql"),
    },
    Migration {
        version: 5,
        name: "request_rows_compact",
        sqlite: include_str!("../../migrations/sqlite/0005_request_rows_compact.sql"),
        postgres: include_str!("../../migrations/postgres/0005_request_rows_compact.sql"),
    },
    // 6 is left to the operations branch.
    Migration {
        version: 7,
        name: "request_templates",
        sqlite: include_str!("../../migrations/sqlite/0007_request_templates.sql"),
        postgres: include_str!("../../migrations/postgres/0007_request_templates.sql"),
    },
];

const PG_LOCK: i64 = 0x5356_435f_4d49_4752; // "SVC_MIGR"

pub async fn run(store: &Store) -> Result<()> {
    let pool = store.pool();
    let mut conn = pool.acquire().await?;
    if store.dialect() == Dialect::Postgres {
        sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(PG_LOCK)
            .execute(&mut *conn)
            .await?;
    }
    let result = apply(store.dialect(), &mut conn).await;
    if store.dialect() == Dialect::Postgres {
        sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(PG_LOCK)
            .execute(&mut *conn)
            .await?;
    }
    result
}

async fn apply(dialect: Dialect, conn: &mut sqlx::AnyConnection) -> Result<()> {
    sqlx::raw_sql("CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)")
        .execute(&mut *conn)
        .await?;
    let applied: Vec<i64> = sqlx::query("SELECT version FROM schema_migrations")
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|r| r.get::<i64, _>(0))
        .collect();
    for m in MIGRATIONS {
        if applied.contains(&m.version) {
            continue;
        }
        let sql = match dialect {
            Dialect::Sqlite => m.sqlite,
            Dialect::Postgres => m.postgres,
        };
        tracing::info!(version = m.version, name = m.name, "applying migration");
        let mut tx = sqlx::Connection::begin(&mut *conn).await?;
        sqlx::raw_sql(sql).execute(&mut *tx).await?;
        sqlx::query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)")
            .bind(m.version)
            .bind(m.name)
            .bind(crate::clock::now_millis())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        tracing::info!(version = m.version, name = m.name, "applied migration");
    }
    Ok(())
}
