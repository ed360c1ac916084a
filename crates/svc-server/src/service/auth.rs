//! Management tokens (contract §2.5) and RBAC (§2.6): minting, validation on every request, the
//! caller's effective rights. Rights always come from the *current* state (role edits apply at
//! once; deactivated users, roles and providers grant nothing).

use std::sync::Arc;

use uuid::Uuid;

use crate::app::App;
use crate::domain::records::{Role, User};
use crate::domain::{Actor, DEFAULT_RESOURCE_SET, Perm};
use crate::error::{Error, Result};
use crate::issuer::mgmt_token::{LEEWAY_SECS, MGMT_AUDIENCE, MgmtClaims, base_claims, sign};
use crate::state::State;

#[derive(Clone, Debug)]
pub enum Principal {
    User(Arc<User>),
    /// A workload holding a `svc-access-token` credential.
    Workload {
        cp: Uuid,
        ap: Option<Uuid>,
    },
    /// `svc admin token`.
    Cli {
        role: Uuid,
    },
}

#[derive(Clone, Debug)]
pub struct Caller {
    pub principal: Principal,
    pub actor: Actor,
    pub exp: i64,
}

impl Caller {
    /// The roles that currently apply.
    pub fn roles(&self, st: &State) -> Vec<Arc<Role>> {
        let ids: Vec<Uuid> = match &self.principal {
            // The user's roles as `st` has them: a check against a newer state than the one
            // the caller was admitted with (a write unit's) sees roles taken away meanwhile.
            Principal::User(u) => st.users.get(&u.id).map_or_else(Vec::new, |cur| cur.roles.clone()),
            Principal::Workload { cp, .. } => crate::credential::access_token::role_of(st, cp).into_iter().collect(),
            Principal::Cli { role } => vec![*role],
        };
        ids.iter()
            .filter_map(|id| st.roles.get(id).cloned())
            .filter(|r| r.meta.active)
            .collect()
    }

    /// Whether the caller may read (or write) `perm` in resource set `rs`.
    pub fn can(&self, st: &State, perm: Perm, write: bool, rs: Uuid) -> bool {
        self.roles(st).iter().any(|r| {
            let (read, w) = r.access(perm, rs);
            if write { w } else { read }
        })
    }

    /// Whether the caller holds `perm` (read, or write when `write`) in at least one resource set.
    pub fn can_anywhere(&self, st: &State, perm: Perm, write: bool) -> bool {
        st.resource_sets.keys().any(|rs| self.can(st, perm, write, *rs))
    }

    /// Resource sets where the caller can read `perm` (lists without RS, §1.4 rule 5).
    pub fn readable_sets(&self, st: &State, perm: Perm) -> Vec<Uuid> {
        let roles = self.roles(st);
        st.resource_sets
            .keys()
            .filter(|rs| roles.iter().any(|r| r.access(perm, **rs).0))
            .copied()
            .collect()
    }

    /// Whether the caller holds any permission in `rs` (resource-set listing, §3.15).
    pub fn holds_any_in(&self, st: &State, rs: Uuid) -> bool {
        self.roles(st)
            .iter()
            .any(|r| r.covers(rs) && r.grants.iter().any(|g| g.read || g.write))
    }

    pub fn user(&self) -> Option<&Arc<User>> {
        match &self.principal {
            Principal::User(u) => Some(u),
            _ => None,
        }
    }

    pub fn is_super_admin(&self, st: &State) -> bool {
        self.roles(st)
            .iter()
            .any(|r| r.meta.id == crate::domain::records::SUPER_ADMIN_ROLE)
    }
}

/// The login response body (`LoginResponseDTO`).
pub use svc_api::mgmt::LoginResponseDto as LoginResponse;

/// A session token for a user (`svc_auth` = `password` or `sso`).
pub fn mint_user_token(app: &App, user: &User, svc_auth: &str) -> LoginResponse {
    let ttl = app.cfg.session_ttl_seconds as i64;
    let mut c = base_claims(&app.cfg, user.id.to_string(), svc_auth, ttl);
    c.email = Some(user.email.clone());
    c.name = Some(user.display_name());
    c.roles = user.roles.iter().map(Uuid::to_string).collect();
    c.sv = user.session_epoch;
    LoginResponse {
        access_token: sign(&app.keys(), &c),
        token_type: svc_api::mgmt::TokenType::Bearer,
        expires_in: ttl as i32,
    }
}

/// A CLI token for a role (`svc admin token`).
pub fn mint_cli_token(app: &App, role: Uuid, ttl: i64) -> LoginResponse {
    let mut c = base_claims(&app.cfg, "system".into(), "cli", ttl);
    c.roles = vec![role.to_string()];
    LoginResponse {
        access_token: sign(&app.keys(), &c),
        token_type: svc_api::mgmt::TokenType::Bearer,
        expires_in: ttl.min(i32::MAX as i64) as i32,
    }
}

/// Validates a bearer token; `Error::Unauthenticated` on any failure.
pub fn authenticate(app: &App, st: &State, token: &str) -> Result<Caller> {
    let now_ms = crate::clock::now_millis();
    let payload = app
        .keys()
        .verify_internal(token, now_ms)
        .ok_or(Error::Unauthenticated)?;
    let c: MgmtClaims = serde_json::from_slice(&payload).map_err(|_| Error::Unauthenticated)?;
    let now = now_ms.div_euclid(1000);
    if c.iss != app.cfg.issuer() {
        // Signed by this service's key, for another issuer: `svc admin token` run with another
        // SVC_PUBLIC_URL than the server's (issue 32); said once per refusal, never the token.
        tracing::warn!(
            token_issuer = %c.iss,
            issuer = %app.cfg.issuer(),
            "management token refused: it names another issuer than this server's SVC_PUBLIC_URL"
        );
        return Err(Error::Unauthenticated);
    }
    if c.aud != MGMT_AUDIENCE || c.exp + LEEWAY_SECS < now || c.nbf - LEEWAY_SECS > now {
        return Err(Error::Unauthenticated);
    }
    match c.svc_auth.as_str() {
        "password" | "sso" => {
            let id = Uuid::parse_str(&c.sub).map_err(|_| Error::Unauthenticated)?;
            let user = st.users.get(&id).cloned().ok_or(Error::Unauthenticated)?;
            // A token from before the user existed belongs to a deleted user whose id a new
            // one took (ids may be chosen on create): it does not come back to life.
            // Nor does one from an ended session (issue 22: password change, deactivation,
            // lock, role change), even when the user is active again.
            if !user.active || user.locked || c.iat < user.created_at.secs() || c.sv != user.session_epoch {
                return Err(Error::Unauthenticated);
            }
            let actor = Actor::User {
                id: user.id,
                email: user.email.clone(),
                display_name: user.display_name(),
            };
            Ok(Caller {
                principal: Principal::User(user),
                actor,
                exp: c.exp,
            })
        }
        "workload" => {
            let cp =
                c.cp.as_deref()
                    .and_then(|s| Uuid::parse_str(s).ok())
                    .ok_or(Error::Unauthenticated)?;
            let ap = c.ap.as_deref().and_then(|s| Uuid::parse_str(s).ok());
            // Likewise for a provider deleted and created again under its id.
            if st
                .credential_providers
                .get(&cp)
                .is_some_and(|p| c.iat < p.meta.created_at.secs())
            {
                return Err(Error::Unauthenticated);
            }
            let role = crate::credential::access_token::role_of(st, &cp).ok_or(Error::Unauthenticated)?;
            let role_name = st.roles.get(&role).map(|r| r.meta.name.clone()).unwrap_or_default();
            Ok(Caller {
                principal: Principal::Workload { cp, ap },
                actor: Actor::Role {
                    credential_provider_id: cp,
                    access_policy_id: ap,
                    role_name,
                },
                exp: c.exp,
            })
        }
        "cli" => {
            let role = c
                .roles
                .first()
                .and_then(|s| Uuid::parse_str(s).ok())
                .ok_or(Error::Unauthenticated)?;
            Ok(Caller {
                principal: Principal::Cli { role },
                actor: Actor::System,
                exp: c.exp,
            })
        }
        _ => Err(Error::Unauthenticated),
    }
}

/// Parses `Authorization: Bearer <token>`.
pub fn bearer(header: Option<&str>) -> Option<&str> {
    let h = header?.trim();
    let (scheme, token) = h.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty()).then(|| token.trim())
}

/// Whether `rs` is the default resource set (global entities count as its members, §1.4 rule 8).
pub fn global_scope() -> Uuid {
    DEFAULT_RESOURCE_SET
}
