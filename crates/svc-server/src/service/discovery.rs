//! Discovery sync (contract §3.12, §5.4): a discovery integration reads the cloud-security
//! inventory page by page and creates or refreshes one server-workload draft per discovered
//! (host, port), then records `lastSync` / `lastSyncStatus`. Runs every `syncFrequencySeconds`
//! (checked with the integration sync) and on `POST …/{id}/sync`.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};
use uuid::Uuid;

use crate::app::App;
use crate::domain::condition::{DiscoveryIntegration, ServerWorkloadDraft};
use crate::domain::{Kind, Timestamp};
use crate::service::write::{Author, Write};

/// At most this many pages per sync (500 nodes each): a bound against an endless cursor.
const MAX_PAGES: usize = 200;
const QUERY: &str = "query CloudResources($first: Int, $after: String) { cloudResources(first: $first, after: $after) { nodes { providerUniqueId name hostnames ports lastSeen } pageInfo { hasNextPage endCursor } } }";

/// One discovered (host, port).
struct Found {
    host: String,
    port: i32,
    provider_unique_id: String,
    name: String,
    last_seen: Option<Timestamp>,
}

fn due(d: &DiscoveryIntegration, now: i64) -> bool {
    d.meta.active && crate::service::jobs::period_over(d.last_sync, d.sync_frequency_seconds, now)
}

/// Syncs every discovery integration whose period is over.
pub async fn sync_due(app: &App) {
    let now = crate::clock::now_millis();
    let ids: Vec<Uuid> = app
        .state_full()
        .discovery_integrations
        .values()
        .filter(|d| due(d, now))
        .map(|d| d.meta.id)
        .collect();
    for id in ids {
        // One node per sync when several share PostgreSQL (see `jobs::turn`).
        let due_now = |st: &crate::state::State| {
            st.discovery_integrations
                .get(&id)
                .is_some_and(|d| due(d, crate::clock::now_millis()))
        };
        if let Some(_turn) = crate::service::jobs::turn(app, &format!("svc-discovery-sync:{id}"), due_now).await {
            sync(app, id).await;
        }
    }
}

/// Reads the whole inventory.
async fn inventory(app: &App, d: &DiscoveryIntegration) -> Result<Vec<Found>, String> {
    let s = |k: &str| d.config.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let (token, _) = crate::edge::conditions::client_credentials(
        app,
        &s("tokenUrl"),
        &s("clientId"),
        d.secrets.get("clientSecret").unwrap_or_default(),
        Some(&s("audience")),
    )
    .await?;
    let url = app.upstream.check_url(&d.endpoint).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let body = json!({"query": QUERY, "variables": {"first": 500, "after": after}});
        let req = app
            .upstream
            .client
            .post(url.clone())
            .json(&body)
            .bearer_auth(token.expose())
            .header("accept", "application/json");
        let f = app.upstream.send(req).await.map_err(|e| e.to_string())?;
        if !(200..300).contains(&f.status) {
            return Err(format!("inventory answered {}", f.status));
        }
        let v: Value = serde_json::from_slice(&f.body).map_err(|_| "inventory answer is not JSON".to_string())?;
        let page = v
            .pointer("/data/cloudResources")
            .ok_or_else(|| "inventory answer without data.cloudResources".to_string())?;
        for n in page.get("nodes").and_then(Value::as_array).into_iter().flatten() {
            let text = |k: &str| n.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            let last_seen = n.get("lastSeen").and_then(Value::as_str).and_then(Timestamp::parse);
            for h in n.get("hostnames").and_then(Value::as_array).into_iter().flatten() {
                let Some(host) = h.as_str().filter(|h| !h.is_empty()) else {
                    continue;
                };
                for p in n.get("ports").and_then(Value::as_array).into_iter().flatten() {
                    let Some(port) = p.as_i64().filter(|p| (1..=65535).contains(p)) else {
                        continue;
                    };
                    out.push(Found {
                        host: host.to_ascii_lowercase(),
                        port: port as i32,
                        provider_unique_id: text("providerUniqueId"),
                        name: text("name"),
                        last_seen,
                    });
                }
            }
        }
        let more = page.pointer("/pageInfo/hasNextPage").and_then(Value::as_bool) == Some(true);
        after = page
            .pointer("/pageInfo/endCursor")
            .and_then(Value::as_str)
            .map(str::to_string);
        if !more || after.is_none() {
            return Ok(out);
        }
    }
    Err(format!("inventory has more than {MAX_PAGES} pages"))
}

/// Syncs one discovery integration now.
pub async fn sync(app: &App, id: Uuid) {
    let Some(d) = app.state_full().discovery_integrations.get(&id).cloned() else {
        return;
    };
    let result = tokio::time::timeout(crate::upstream::TIMEOUT * 6, inventory(app, &d)).await;
    let result = result.unwrap_or_else(|_| Err("timed out".into()));
    if let Err(e) = record(app, &d, result).await {
        tracing::warn!(integration = %id, error = %e, "discovery sync not recorded");
    }
}

/// Stores the drafts and the sync's outcome in one system write unit.
async fn record(
    app: &App,
    d: &Arc<DiscoveryIntegration>,
    result: Result<Vec<Found>, String>,
) -> crate::error::Result<()> {
    let author = Author::system();
    let mut w = Write::begin_system(app).await?;
    let Some(current) = w.st.discovery_integrations.get(&d.meta.id).cloned() else {
        return Ok(());
    };
    let status = match &result {
        Ok(_) => "Success".to_string(),
        Err(e) => e.clone(),
    };
    if let Ok(found) = result {
        // One draft per (host, port): a later node naming the same pair wins.
        let found: HashMap<(String, i32), Found> = found.into_iter().map(|f| ((f.host.clone(), f.port), f)).collect();
        let existing: HashMap<(String, i32), Arc<ServerWorkloadDraft>> =
            w.st.server_workload_drafts
                .values()
                .filter(|x| x.integration == d.meta.id)
                .map(|x| ((x.host.clone(), x.port), x.clone()))
                .collect();
        for (_, f) in found {
            let draft = match existing.get(&(f.host.clone(), f.port)) {
                Some(x) => {
                    let mut x = (**x).clone();
                    w.touch_meta(&mut x.meta, &author);
                    x
                }
                None => {
                    let mut meta = w
                        .new_meta(Kind::ServerWorkloadDraft, Uuid::new_v4(), current.meta.rs, &author)
                        .await?;
                    meta.name = if f.name.is_empty() {
                        format!("{}:{}", f.host, f.port)
                    } else {
                        format!("{} ({}:{})", f.name, f.host, f.port)
                    };
                    meta.name.truncate(128);
                    ServerWorkloadDraft {
                        meta,
                        integration: d.meta.id,
                        host: f.host.clone(),
                        port: f.port,
                        provider_unique_id: String::new(),
                        last_seen_at: None,
                    }
                }
            };
            let mut draft = draft;
            draft.provider_unique_id = f.provider_unique_id;
            draft.last_seen_at = f.last_seen;
            w.put(draft);
        }
    }
    let mut n = (*current).clone();
    n.last_sync = Some(Timestamp::from_millis(crate::clock::now_millis()));
    n.last_sync_status = Some(status);
    w.put(n);
    w.commit().await?;
    Ok(())
}
