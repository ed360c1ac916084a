//! The built-in `GeoIP` and `Time` integrations every resource set holds (contract §3.11): made
//! with the resource set, and at start for sets that predate them; and the periodic sync of the
//! vendor integrations (`lastSync`, `lastSyncStatus`).

use uuid::Uuid;

use crate::app::App;
use crate::domain::condition::{GEOIP, Integration, TIME};
use crate::domain::credential::SecretFields;
use crate::domain::{Kind, Meta};
use crate::error::Result;
use crate::events::audit::Activity;
use crate::service::write::{Author, Write};
use crate::state::State;

pub const CATEGORY: &str = "Integrations";

/// The built-in integration of `int_type` in `rs`.
pub fn builtin(st: &State, rs: Uuid, int_type: &str) -> Option<Uuid> {
    st.integrations
        .values()
        .find(|i| i.builtin && i.meta.rs == Some(rs) && i.int_type == int_type)
        .map(|i| i.meta.id)
}

/// Whether every resource set holds both built-in integrations.
pub fn complete(st: &State) -> bool {
    st.resource_sets
        .keys()
        .all(|rs| builtin(st, *rs, GEOIP).is_some() && builtin(st, *rs, TIME).is_some())
}

/// Adds the missing built-in integrations of `rs`; `audit`: one `Created` entry each (a
/// management write; the start-up's own writes are not audited).
pub async fn add_builtins(w: &mut Write<'_>, rs: Uuid, author: &Author, audit: bool) -> Result<()> {
    for (t, name) in [(GEOIP, "GeoIP"), (TIME, "Time")] {
        if builtin(&w.st, rs, t).is_some() {
            continue;
        }
        let id = Uuid::new_v4();
        let mut meta: Meta = w.new_meta(Kind::Integration, id, Some(rs), author).await?;
        meta.name = name.into();
        meta.active = true;
        w.put(Integration {
            meta,
            int_type: t.into(),
            sync_frequency_seconds: 3600,
            endpoint: "builtin".into(),
            config: Default::default(),
            builtin: true,
            last_sync: None,
            last_sync_status: None,
            secrets: SecretFields::default(),
        });
        if audit {
            w.audit(author, rs, CATEGORY, Activity::Created, id);
        }
    }
    Ok(())
}

/// Whether a vendor integration's sync is due at `now` (ms).
fn sync_due(i: &Integration, now: i64) -> bool {
    !i.builtin && i.meta.active && super::jobs::period_over(i.last_sync, i.sync_frequency_seconds, now)
}

/// §3.11: every `syncFrequencySeconds`, each active vendor integration obtains a token from its
/// `tokenUrl` and records `lastSync` and `lastSyncStatus` (`Success` or the error). The record is
/// made by one node only when several share PostgreSQL: each due integration's sync holds a
/// cluster-wide lock (`service::jobs::turn`), and a node that gets it after another has synced
/// sees the recorded `lastSync` and skips.
pub async fn sync_integrations(app: &App) {
    let now = crate::clock::now_millis();
    let due: Vec<Uuid> = app
        .state_full()
        .integrations
        .values()
        .filter(|i| sync_due(i, now))
        .map(|i| i.meta.id)
        .collect();
    for id in due {
        let due_now = |st: &crate::state::State| {
            st.integrations
                .get(&id)
                .is_some_and(|i| sync_due(i, crate::clock::now_millis()))
        };
        let Some(_turn) = super::jobs::turn(app, &format!("svc-integration-sync:{id}"), due_now).await else {
            continue;
        };
        let Some(i) = app.state_full().integrations.get(&id).cloned() else {
            continue;
        };
        let status = match tokio::time::timeout(
            crate::upstream::TIMEOUT,
            crate::edge::conditions::request_token(app, &i),
        )
        .await
        {
            Ok(Ok(_)) => "Success".to_string(),
            Ok(Err(e)) => e,
            Err(_) => "timed out".to_string(),
        };
        let mut w = match Write::begin_system(app).await {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(error = %e, "integration sync not recorded");
                return;
            }
        };
        let Some(current) = w.st.integrations.get(&i.meta.id).cloned() else {
            continue;
        };
        if !sync_due(&current, now) {
            continue;
        }
        let mut n = (*current).clone();
        n.last_sync = Some(crate::domain::Timestamp::from_millis(crate::clock::now_millis()));
        n.last_sync_status = Some(status);
        w.put(n);
        if let Err(e) = w.commit().await {
            tracing::warn!(integration = %i.meta.id, error = %e, "integration sync not recorded");
        }
    }
}
