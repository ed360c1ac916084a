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

/// The caller of the guarded request this task serves, as `st` knows it; `None` for the
/// service's own writes (no request was admitted). A request whose token no longer authenticates
/// (it expired while the write ran, issue 31) is refused, never taken for the service.
pub fn current_caller(app: &App, st: &State) -> Result<Option<Caller>> {
    let Ok(token) = ADMITTED.try_with(|a| a.token.clone()) else {
        return Ok(None);
    };
    authenticate(app, st, &token)
        .map(Some)
        .map_err(|_| Error::Unauthenticated)
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
    match current_caller(app, st)? {
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
pub fn holds_everything(app: &App, st: &State) -> Result<bool> {
    Ok(match current_caller(app, st)? {
        None => true,
        Some(caller) => st
            .roles
            .get(&crate::domain::records::SUPER_ADMIN_ROLE)
            .is_some_and(|r| holds_role(&caller, st, r)),
    })
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

/// The roles the `svc-access-token` providers of `policies` hand to their client workloads.
fn token_roles<'p>(st: &State, policies: impl Iterator<Item = &'p crate::domain::policy::Policy>) -> Vec<Uuid> {
    let mut roles: Vec<Uuid> = policies
        .flat_map(|p| p.mappings.iter())
        .filter_map(|m| st.credential_providers.get(&m.credential_provider))
        .filter_map(|p| token_role(p))
        .collect();
    roles.sort();
    roles.dedup();
    roles
}

/// Issue 31: whatever decides which workload receives a policy's credentials gives the roles its
/// `svc-access-token` providers hand out — the policy itself, a trust provider the policy accepts
/// (its keys make the evidence), a client workload's identities (they say whose evidence it is).
/// The caller of such a write must hold those roles, as naming the role in the provider needs.
pub fn check_token_roles<'p>(
    app: &App,
    st: &State,
    policies: impl Iterator<Item = &'p crate::domain::policy::Policy>,
) -> Result<()> {
    let roles = token_roles(st, policies);
    match current_caller(app, st)? {
        Some(caller) if !roles.is_empty() => check_roles_given(&caller, st, &roles),
        _ => Ok(()),
    }
}

/// The policies a trust provider's evidence may satisfy: those of its resource set that name it,
/// or name no trust provider (they accept any of the set).
pub fn policies_trusting(st: &State, tp: Uuid, rs: Uuid) -> impl Iterator<Item = &crate::domain::policy::Policy> {
    st.policies
        .values()
        .map(|p| p.as_ref())
        .filter(move |p| p.meta.scope() == rs && (p.trust_providers.is_empty() || p.trust_providers.contains(&tp)))
}

/// The policies whose client is `workload`.
pub fn policies_of_client(st: &State, workload: Uuid) -> impl Iterator<Item = &crate::domain::policy::Policy> {
    st.policies
        .values()
        .map(|p| p.as_ref())
        .filter(move |p| p.client_workload == workload)
}

/// Roles an SSO identity provider maps its users to (issues 22, 31): whoever writes the
/// provider must hold every role it maps — a kept mapping as much as a new one, since moving the
/// provider or changing a mapping's attribute decides who receives it.
pub fn check_mapped_roles(app: &App, st: &State, mapped: &[Uuid]) -> Result<()> {
    match current_caller(app, st)? {
        Some(caller) if !mapped.is_empty() => check_roles_given(&caller, st, mapped),
        _ => Ok(()),
    }
}
