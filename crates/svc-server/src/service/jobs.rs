//! The background jobs of a node: the event writer, the log streams' delivery, the database
//! health probe, the refresh from other nodes' changes (the change log on PostgreSQL, key changes
//! on SQLite), signing-key rotation, event retention and the event lists' sorted templates.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::app::App;
use crate::issuer::keys;

/// How long after start the first event-retention purge waits.
const RETENTION_FIRST_DELAY: Duration = Duration::from_secs(15 * 60);

/// Starts the background jobs: event writer, log-stream delivery, health probe, cross-node
/// refresh, key rotation, retention.
pub fn spawn(node: &App) {
    node.events.start();
    // §3.14: every active log stream, every `SVC_LOG_STREAM_INTERVAL_SECONDS`.
    on_node(node.clock.clone(), crate::service::streams::run(node.clone()));
    // §3.11: the integrations' periodic token check (`lastSync`, `lastSyncStatus`).
    let app = node.clone();
    on_node(app.clock.clone(), async move {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            crate::service::integrations::sync_integrations(&app).await;
            crate::service::discovery::sync_due(&app).await;
        }
    });
    // §3.10: the GeoIP database is opened again when its file changes.
    if node.cfg.geoip_db.is_some() {
        let app = node.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(2)).await;
                let a = app.clone();
                let _ = tokio::task::spawn_blocking(move || a.geoip.refresh()).await;
            }
        });
    }
    // The node's row: what it holds, for the host commands (`service::nodes`).
    tokio::spawn(crate::service::nodes::heartbeat(node.clone()));
    // Whether the database can be used (issue 32: requests answer 503 at once while it cannot).
    let app = node.clone();
    on_node(app.clock.clone(), async move { app.store.probe_forever().await });
    // Changes committed elsewhere, every second. PostgreSQL: other nodes' writes. SQLite
    // serves one node, but `svc admin keys rotate` writes to the same file from a process of
    // its own, and its new keys must be published at once (§5.1): only key changes are
    // looked for there.
    let app = node.clone();
    if node.store.dialect() == crate::store::Dialect::Postgres {
        on_node(app.clock.clone(), async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let _g = app.write_lock.lock().await;
                if let Err(e) = crate::service::load::sync_changes(&app).await {
                    tracing::warn!(error = %e, "refresh from the database failed");
                }
            }
        });
    } else {
        on_node(app.clock.clone(), async move {
            let mut seen = app.last_change.load(Ordering::Acquire);
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                match app.store.key_changes_since(seen).await {
                    // The cursor moves past a key change only once its keys are loaded: a failed
                    // reload is tried again the next second. An at-rest key rotation's step
                    // (`encryption`) first: the key file is read again.
                    Ok((last, keys, encryption)) => {
                        let mut done = true;
                        if encryption && let Err(e) = crate::service::rekey::adopt(&app).await {
                            tracing::warn!(error = %e, "encryption key reload failed");
                            done = false;
                        }
                        if keys && let Err(e) = app.reload_keys().await {
                            tracing::warn!(error = %e, "key reload failed");
                            done = false;
                        }
                        if done {
                            seen = last;
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "reading the change log failed"),
                }
            }
        });
    }
    let app = node.clone();
    on_node(app.clock.clone(), async move {
        loop {
            let now = crate::clock::now_millis();
            let ring = app.keys.load_full();
            // Not while the node cannot seal with the database's encryption key (issue 32).
            let rotated = if app.cipher.stale() {
                Ok(false)
            } else {
                keys::rotate_if_due(
                    &app.store,
                    &app.cipher,
                    &ring,
                    app.cfg.signing_key_rotation_days,
                    now,
                    &app.node_id,
                )
                .await
            };
            match rotated {
                Ok(true) => tracing::info!("rotated signing keys"),
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "key rotation failed"),
            }
            if let Err(e) = app.reload_keys().await {
                tracing::warn!(error = %e, "key reload failed");
            }
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    });
    // Event retention, hourly: old rows are deleted from the head of each table in short
    // chunks (`Store::purge_events_through`). The first purge still waits: a node that has just
    // (re)started is taking over traffic (docs/PERFORMANCE.md).
    let app = node.clone();
    if node.cfg.events_retention_days > 0 {
        on_node(app.clock.clone(), async move {
            tokio::time::sleep(RETENTION_FIRST_DELAY).await;
            loop {
                if let Err(e) = retention(&app).await {
                    tracing::warn!(error = %e, "event retention purge failed");
                }
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
        });
    }
    // PostgreSQL: the event rows' partitions of today and the next days, made ahead hourly after
    // `Store::open` made them at start (the event writer makes one it finds missing, at the cost
    // of its batch's wait).
    let app = node.clone();
    on_node(app.clock.clone(), async move {
        loop {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            app.store.prepare_request_days_ahead(crate::clock::now_millis()).await;
        }
    });
    // SQLite: the event lists' rows by client port (`store::ports`), read from the database once
    // at start (a sort of each day's rows, off the requests' path); until then, and after a
    // failure until the next try a minute on, a list ordered on the port sorts the window's rows.
    let app = node.clone();
    on_node(app.clock.clone(), async move {
        loop {
            let started = std::time::Instant::now();
            match app.store.build_port_sketch().await {
                Ok(true) => {
                    let ms = started.elapsed().as_millis() as u64;
                    tracing::info!(ms, "event rows by client port read");
                    break;
                }
                Ok(false) => break,
                Err(e) => tracing::warn!(error = %e, "reading the event rows by client port failed"),
            }
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
    });
    // The event lists' sorted templates (`store::event_pages::OrderCache`): those a list used
    // since are sorted again when their days gain templates, every 2 s, so the next finds them.
    // A failure is logged once until it changes or a turn succeeds.
    let app = node.clone();
    on_node(app.clock.clone(), async move {
        let mut failing: Option<String> = None;
        loop {
            tokio::time::sleep(Duration::from_secs(2)).await;
            match app.store.refresh_template_sorts().await {
                Ok(_) => failing = None,
                Err(e) if failing.as_deref() != Some(e.message.as_str()) => {
                    tracing::warn!(error = %e, "sorting the event lists' templates again failed");
                    failing = Some(e.message);
                }
                Err(_) => {}
            }
        }
    });
    // Expired single-use states (SSO sign-ins and consents never finished), every minute.
    let app = node.clone();
    on_node(app.clock.clone(), async move {
        loop {
            tokio::time::sleep(Duration::from_secs(60)).await;
            if let Err(e) = app.store.purge_pending(crate::clock::now_millis()).await {
                tracing::warn!(error = %e, "purging expired pending states failed");
            }
        }
    });
}

/// One retention purge: audit entries and events older than `SVC_EVENTS_RETENTION_DAYS`
/// (nothing when 0), except what an active log stream has not delivered yet (§3.14). Returns
/// the number of rows deleted.
pub async fn retention(app: &App) -> Result<u64, crate::store::StoreError> {
    let days = i64::from(app.cfg.events_retention_days);
    if days == 0 {
        return Ok(0);
    }
    // On PostgreSQL the start of that day: days are dropped whole (`store::request_days`).
    let cutoff = app
        .store
        .retention_cutoff(crate::clock::now_millis() - days * 86_400_000);
    let floors = crate::service::streams::retention_floors(app).await?;
    let started = std::time::Instant::now();
    let purged = app.store.purge_events_through(cutoff, &floors).await?;
    if purged > 0 {
        let ms = started.elapsed().as_millis() as u64;
        tracing::info!(rows = purged, ms, "event retention purged old rows");
    }
    Ok(purged)
}

/// Whether a period of `secs` seconds is over since `last` at `now` (ms); never synced: over.
pub fn period_over(last: Option<crate::domain::Timestamp>, secs: i32, now: i64) -> bool {
    last.is_none_or(|t| now - t.millis() >= i64::from(secs) * 1000)
}

/// A periodic task's turn across nodes: holds the cluster-wide lock `name` (PostgreSQL; on SQLite
/// there is one node), catches up with the other nodes' changes, and asks `still_due` of the state
/// it caught up with, so a node that gets the lock after another has done this period's work sees
/// it recorded and skips. The lock is held until the guard drops; `None` when the task is not due
/// any more or the lock could not be taken (the turn is skipped).
pub async fn turn(
    app: &App,
    name: &str,
    still_due: impl FnOnce(&crate::state::State) -> bool,
) -> Option<Option<crate::store::ClusterLock>> {
    match app.store.cluster_lock(name).await {
        Ok(lock) => {
            crate::service::load::catch_up(app).await;
            still_due(&app.state_full()).then_some(lock)
        }
        Err(e) => {
            tracing::warn!(error = %e, job = name, "cluster lock not taken: skipping this turn");
            None
        }
    }
}

/// Spawns a job of the node on its clock ([`crate::clock::scope`]).
fn on_node(clock: std::sync::Arc<crate::clock::Clock>, job: impl std::future::Future<Output = ()> + Send + 'static) {
    tokio::spawn(crate::clock::scope(clock, job));
}
