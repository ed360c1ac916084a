//! `svc-access-token`: a management token carrying a role (contract §2.5, §3.5.2).

use uuid::Uuid;

use crate::state::State;

pub const TYPE: &str = "svc-access-token";

/// The role a `svc-access-token` provider grants, if the provider exists and is active.
pub fn role_of(st: &State, cp: &Uuid) -> Option<Uuid> {
    let p = st.credential_providers.get(cp)?;
    if !p.meta.active || p.cp_type != TYPE {
        return None;
    }
    p.config
        .get("roleId")
        .and_then(|v| v.as_str())
        .and_then(|s| Uuid::parse_str(s).ok())
}
