//! The node's row in `nodes` (issue 32, migration 0006): written at start and every few seconds
//! (and at once when its encryption keys change), removed at a graceful stop. It tells the host
//! commands what the running nodes hold: `svc admin token` the server's public URL, an at-rest
//! key rotation which keys each node holds and seals with.

use std::time::Duration;

use crate::app::App;
use crate::store::NodeRow;

/// How often a node writes its row.
pub const EVERY: Duration = Duration::from_secs(5);
/// A node seen within this long (ms) counts as running.
pub const LIVE_MS: i64 = 15_000;
/// Rows of nodes not seen for this long (ms) are deleted.
const FORGET_MS: i64 = 86_400_000;

/// This process's host name (`/proc/sys/kernel/hostname`; `unknown` elsewhere).
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

pub fn row(app: &App) -> NodeRow {
    let now = crate::clock::now_millis();
    NodeRow {
        node_id: app.node_id.clone(),
        host: host(),
        pid: i64::from(std::process::id()),
        version: env!("CARGO_PKG_VERSION").to_string(),
        public_url: app.cfg.public_url.clone(),
        key_ids: app.cipher.kids().join(","),
        active_key: app.cipher.kid(),
        started_at: app.started_at,
        seen_at: now,
    }
}

/// Writes the node's row now (failures are logged: the database may be away); nothing once the
/// node has left.
pub async fn announce(app: &App) {
    let left = app.node_left.lock().await;
    if *left {
        return;
    }
    let now = crate::clock::now_millis();
    if let Err(e) = app.store.node_seen(&row(app), now - FORGET_MS).await {
        tracing::debug!(error = %e, "node row not written");
    }
}

/// A stopping node removes its row (a rotation does not wait for it) and writes it no more.
pub async fn leave(app: &App) {
    let mut left = app.node_left.lock().await;
    *left = true;
    if let Err(e) = app.store.node_gone(&app.node_id).await {
        tracing::debug!(error = %e, "node row not removed");
    }
}

/// The job: the row every [`EVERY`].
pub async fn heartbeat(app: App) {
    loop {
        announce(&app).await;
        tokio::time::sleep(EVERY).await;
    }
}

/// The public URL the running server was last seen with, when it differs from `mine` (what
/// `svc admin token` signs its token for): `Some((url, seconds ago))`.
pub async fn other_public_url(app: &App, mine: &str) -> Option<(String, i64)> {
    let now = crate::clock::now_millis();
    let nodes = app.store.nodes_seen_since(0).await.ok()?;
    let latest = nodes.first()?;
    let norm = |u: &str| u.trim_end_matches('/').to_string();
    (norm(&latest.public_url) != norm(mine)).then(|| (latest.public_url.clone(), (now - latest.seen_at) / 1000))
}
