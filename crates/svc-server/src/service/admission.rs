//! Admission of a management request (contract §2.1, §2.6): the route's permission, scope and
//! access level ([`Guard`]), checked against a state ([`check`]); and, for the write unit, the
//! same admission again against the state it caught up with ([`admit_again`]), through a
//! task-local that `http::guard` sets for the request it admitted.

use uuid::Uuid;

use crate::app::App;
use crate::domain::Perm;
use crate::error::{Error, Result};
use crate::service::auth::{Caller, Principal, authenticate};
use crate::state::State as Snapshot;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The operation honours `X-Svc-ResourceSet` (default resource set when absent).
    Rs,
    /// A global entity: checked against the default resource set.
    Global,
    /// Resource set known only from the entity or body: the handler calls [`Ctx::check`].
    Entity,
    /// Like `Entity`, and the caller must hold the permission (read, or write for writes) in at
    /// least one resource set: without it every call is 403, whatever the id or body.
    AnySet,
    /// Any authenticated *user* (`/api/v1/me/*`).
    Me,
}

#[derive(Clone, Copy, Debug)]
pub struct Guard {
    pub perm: Perm,
    pub scope: Scope,
    /// Overrides the method-derived access (GET = read, else write).
    pub write: Option<bool>,
}

/// What a guarded request was admitted with, for [`admit_again`].
#[derive(Clone)]
pub struct Admitted {
    pub token: String,
    pub guard: Guard,
    pub write: bool,
    pub rs: Uuid,
}

tokio::task_local! {
    /// The admission of the guarded request this task serves.
    pub static ADMITTED: Admitted;
}

/// Authenticates and checks the route's permission in `st`.
pub fn check(app: &App, st: &Snapshot, a: &Admitted) -> Result<Caller> {
    let caller = authenticate(app, st, &a.token)?;
    let (perm, write) = (a.guard.perm, a.write);
    match a.guard.scope {
        Scope::Rs | Scope::Global => {
            if !caller.can(st, perm, write, a.rs) {
                return Err(Error::Forbidden);
            }
        }
        Scope::Me => {
            if !matches!(caller.principal, Principal::User(_)) {
                return Err(Error::Forbidden);
            }
        }
        // The handler checks the entity's set (`Ctx::check`).
        Scope::Entity => {}
        Scope::AnySet => {
            if !caller.can_anywhere(st, perm, write) {
                return Err(Error::Forbidden);
            }
        }
    }
    Ok(caller)
}

/// Inside a guarded request, admits its caller again against `st` (the state a write unit works
/// on after catching up): 401 when the token no longer authenticates (user deactivated, locked
/// or deleted), 403 when the permission was withdrawn. Outside one (sign-in, edge, background
/// work) there is nothing to check.
pub fn admit_again(app: &App, st: &Snapshot) -> Result<()> {
    match ADMITTED.try_with(Admitted::clone) {
        Ok(a) => check(app, st, &a).map(|_| ()),
        Err(_) => Ok(()),
    }
}
