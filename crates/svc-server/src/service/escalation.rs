//! A caller can grant only what it holds (issue 22; Kubernetes RBAC's escalation rule): a role
//! written, or a role given to a user, may carry only permissions the caller holds, at the same
//! level, in each of the role's resource sets, and only resource sets where the caller holds some
//! permission. SuperAdmin holds everything, so it may grant everything. The same holds for the
//! role a `svc-access-token` credential provider hands to workloads. Checked in the write unit
//! against the state it caught up with; a refusal is `403 Forbidden.` (§1.8).

use uuid::Uuid;

use crate::app::App;
use crate::credential::access_token;
use crate::domain::credential::CredentialProvider;
use crate::domain::records::Role;
use crate::error::{Error, Result};
use crate::service::admission::ADMITTED;
use crate::service::auth::{Caller, authenticate};
use crate::state::State;

/// The resource sets a role covers (system roles: every one, future ones included).
fn sets_of(st: &State, role: &Role) -> Vec<Uuid> {
    if role.all_resource_sets {
        st.resource_sets.keys().copied().collect()
    } else {
        role.resource_sets.clone()
    }
}

/// Whether everything `role` grants is the caller's own (whether or not the role is active: it
/// may be switched on later).
pub fn holds_role(caller: &Caller, st: &State, role: &Role) -> bool {
    sets_of(st, role).iter().all(|rs| {
        caller.holds_any_in(st, *rs)
            && role
                .grants
                .iter()
                .filter(|g| g.read || g.write)
                .all(|g| caller.can(st, g.perm, g.write, *rs))
    })
}

/// The caller of the guarded request this task serves, as `st` knows it (none for the service's
/// own writes).
pub fn current_caller(app: &App, st: &State) -> Option<Caller> {
    let token = ADMITTED.try_with(|a| a.token.clone()).ok()?;
    authenticate(app, st, &token).ok()
}

/// A role about to be stored: unless it grants nothing new (same permissions and resource sets
/// as stored, and not switched on), the caller must hold all of it.
pub fn check_role(app: &App, st: &State, role: &Role) -> Result<()> {
    if let Some(before) = st.roles.get(&role.meta.id)
        && before.grants == role.grants
        && before.resource_sets == role.resource_sets
        && before.all_resource_sets == role.all_resource_sets
        && (before.meta.active || !role.meta.active)
    {
        return Ok(());
    }
    match current_caller(app, st) {
        Some(caller) if !holds_role(&caller, st, role) => Err(Error::Forbidden),
        _ => Ok(()),
    }
}

/// Roles given to a user (`added`: those the user did not hold before): the caller must hold
/// each of them.
pub fn check_roles_given(caller: &Caller, st: &State, added: &[Uuid]) -> Result<()> {
    for id in added {
        if let Some(role) = st.roles.get(id)
            && !holds_role(caller, st, role)
        {
            return Err(Error::Forbidden);
        }
    }
    Ok(())
}

/// The role a `svc-access-token` provider names (whether or not the provider is active).
fn token_role(p: &CredentialProvider) -> Option<Uuid> {
    if p.cp_type != access_token::TYPE {
        return None;
    }
    p.config
        .get("roleId")
        .and_then(|v| v.as_str())
        .and_then(|s| Uuid::parse_str(s).ok())
}

/// A `svc-access-token` provider about to be stored confers its role on every workload it
/// issues to: naming a role, or switching the provider on, gives that role, so the caller must
/// hold it.
pub fn check_access_token_role(caller: &Caller, st: &State, p: &CredentialProvider) -> Result<()> {
    let Some(role) = token_role(p) else {
        return Ok(());
    };
    if let Some(before) = st.credential_providers.get(&p.meta.id)
        && token_role(before) == Some(role)
        && (before.meta.active || !p.meta.active)
    {
        return Ok(());
    }
    check_roles_given(caller, st, &[role])
}

/// Whether the caller of this unit holds everything SuperAdmin grants (the service's own writes
/// do): what an identity provider needs to sign in existing accounts (issue 31).
pub fn holds_everything(app: &App, st: &State) -> bool {
    match current_caller(app, st) {
        None => true,
        Some(caller) => st
            .roles
            .get(&crate::domain::records::SUPER_ADMIN_ROLE)
            .is_some_and(|r| holds_role(&caller, st, r)),
    }
}

/// A caller may change, unlock or delete a user, or end the user's sessions, only when it holds
/// every role the user holds (issue 31): a `Users` administrator who could set SuperAdmin's
/// password, e-mail or second factor would become SuperAdmin.
pub fn check_may_act_on(caller: &Caller, st: &State, user: &crate::domain::records::User) -> Result<()> {
    for id in &user.roles {
        if let Some(role) = st.roles.get(id)
            && !holds_role(caller, st, role)
        {
            return Err(Error::Forbidden);
        }
    }
    Ok(())
}

/// Roles an SSO identity provider maps its users to (issue 22): a role mapped anew must be the
/// caller's own, as giving it to a user directly would need.
pub fn check_mapped_roles(app: &App, st: &State, id: Uuid, mapped: &[Uuid]) -> Result<()> {
    let before: Vec<Uuid> = st
        .sso_idps
        .get(&id)
        .map(|i| i.mappings.iter().map(|m| m.role).collect())
        .unwrap_or_default();
    let added: Vec<Uuid> = mapped.iter().filter(|r| !before.contains(r)).copied().collect();
    match current_caller(app, st) {
        Some(caller) if !added.is_empty() => check_roles_given(&caller, st, &added),
        _ => Ok(()),
    }
}
