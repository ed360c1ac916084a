//! The built-in `GeoIP` and `Time` integrations every resource set holds (contract §3.11): made
//! with the resource set, and at start for sets that predate them.

use uuid::Uuid;

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
