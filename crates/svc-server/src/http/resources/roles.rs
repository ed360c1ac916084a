//! Roles (contract §3.16, §2.6): permissions × resource sets. System roles are read-only.

use serde_json::Value;
use svc_api::mgmt::{AccessLevel, EntityPatch, PermissionDto, RoleDto};
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_dto, base_input, patch_input};
use super::crud::{self, OnMissing, Resource, RsFrom};
use crate::app::App;
use crate::domain::records::{Grant, Role};
use crate::domain::{DEFAULT_RESOURCE_SET, Meta, Perm};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::api::Api;
use crate::http::list::{Base, ListSpec, field_filter};
use crate::service::write::{Author, Write};
use crate::state::State as Snapshot;

/// `/api/v1/roles` on the shared CRUD layer: global entities; system roles are read-only.
pub struct Roles;

pub fn register(api: &mut Api<'_>) {
    crud::register::<Roles>(api, "/api/v1/roles");
}

const SPEC: ListSpec = ListSpec::new("roles", Base::Global)
    .fields(&["usersCount", "credentialProvidersCount", "isSystem"])
    .filters(&[field_filter("isSystem")]);

fn access_level(read: bool, write: bool) -> AccessLevel {
    match (read, write) {
        (_, true) => AccessLevel::ReadWrite,
        (true, false) => AccessLevel::ReadOnly,
        _ => AccessLevel::NoAccess,
    }
}

/// `PermissionDTO[]`: all 23 permissions in §2.7 order.
pub fn permissions_dto(grants: &[Grant]) -> Vec<PermissionDto> {
    Perm::ALL
        .iter()
        .map(|p| {
            let g = grants.iter().find(|g| g.perm == *p);
            let write = g.is_some_and(|g| g.write) && !p.read_only();
            let read = g.is_some_and(|g| g.read) || write;
            PermissionDto {
                name: p.name().to_string(),
                read,
                write,
                is_readable: true,
                is_writable: !p.read_only(),
                access_level: access_level(read, write),
            }
        })
        .collect()
}

/// The resource sets a role covers, in creation order.
pub fn role_sets(st: &Snapshot, r: &Role) -> Vec<Uuid> {
    let mut sets: Vec<_> = if r.all_resource_sets {
        st.resource_sets.values().map(|s| (s.meta.seq, s.meta.id)).collect()
    } else {
        r.resource_sets
            .iter()
            .filter_map(|id| st.resource_sets.get(id))
            .map(|s| (s.meta.seq, s.meta.id))
            .collect()
    };
    sets.sort();
    sets.into_iter().map(|(_, id)| id).collect()
}

/// `RoleDTO`. Nested resource sets are summaries (no roles inside them, to avoid recursion).
pub fn role_dto(st: &Snapshot, r: &Role) -> RoleDto {
    let users = st.users.values().filter(|u| u.roles.contains(&r.meta.id)).count();
    let cps = st
        .credential_providers
        .values()
        .filter(|c| {
            c.cp_type == crate::credential::access_token::TYPE
                && c.config.get("roleId").and_then(Value::as_str) == Some(&r.meta.id.to_string())
        })
        .count();
    let sets = role_sets(st, r)
        .iter()
        .filter_map(|id| st.resource_sets.get(id))
        .map(|s| super::resource_sets::nested_dto(st, s))
        .collect();
    RoleDto {
        base: base_dto(&r.meta),
        users_count: crud::count(users),
        credential_providers_count: crud::count(cps),
        is_system: r.system,
        permissions: Some(permissions_dto(&r.grants)),
        resource_sets: Some(sets),
    }
}

pub struct RoleInput {
    grants: Option<Vec<Grant>>,
    sets: Option<Vec<Uuid>>,
}

/// `name` must be a permission of §2.7 (a known one, once), `write` only where it can be granted.
fn parse(st: &Snapshot, dto: RoleDto) -> Result<(BaseInput, RoleInput)> {
    let base = base_input(dto.base, None)?;
    let grants = match dto.permissions {
        None => None,
        Some(list) => {
            let mut grants: Vec<Grant> = Vec::with_capacity(list.len());
            for (i, p) in list.into_iter().enumerate() {
                let perm = Perm::parse(&p.name).ok_or_else(|| {
                    Error::field(
                        format!("permissions[{i}].name"),
                        format!("unknown permission '{}'", p.name),
                    )
                })?;
                if p.write && perm.read_only() {
                    return Err(Error::field(
                        format!("permissions[{i}].write"),
                        format!("'{}' is read-only", p.name),
                    ));
                }
                grants.push(Grant {
                    perm,
                    read: p.read || p.write,
                    write: p.write,
                });
            }
            for (i, x) in grants.iter().enumerate() {
                if grants[..i].iter().any(|y| y.perm == x.perm) {
                    return Err(Error::field(format!("permissions[{i}].name"), "duplicate permission"));
                }
            }
            Some(grants)
        }
    };
    let sets = match dto.resource_sets {
        None => None,
        Some(list) => {
            let mut ids = Vec::with_capacity(list.len());
            for (i, s) in list.into_iter().enumerate() {
                if !st.resource_set_exists(&s.external_id) {
                    return Err(Error::field(
                        format!("resourceSets[{i}].externalId"),
                        "unknown resource set",
                    ));
                }
                ids.push(s.external_id);
            }
            Some(ids)
        }
    };
    Ok((base, RoleInput { grants, sets }))
}

fn normalise_sets(sets: Option<Vec<Uuid>>) -> Vec<Uuid> {
    let mut s = sets.unwrap_or_default();
    if s.is_empty() {
        s.push(DEFAULT_RESOURCE_SET);
    }
    let mut seen = std::collections::HashSet::new();
    s.retain(|id| seen.insert(*id));
    s
}

impl Resource for Roles {
    type Record = Role;
    type Input = RoleInput;
    type Dto = RoleDto;
    type Patch = EntityPatch;
    const NAME: &'static str = "roles";
    const RS: RsFrom = RsFrom::Global;
    const LIST: ListSpec = SPEC;
    const ON_MISSING_DELETE: OnMissing = OnMissing::NoContent;

    fn parse(app: &App, dto: RoleDto, _: Mode, _: Option<&Role>) -> Result<(BaseInput, RoleInput)> {
        parse(&app.state(), dto)
    }

    /// RolePatchDTO is the EntityPatchDTO.
    fn parse_patch(_: &App, patch: EntityPatch, _: Option<&Role>) -> Result<(BaseInput, RoleInput)> {
        let input = RoleInput {
            grants: None,
            sets: None,
        };
        Ok((patch_input(patch)?, input))
    }

    fn create(_: &mut Write<'_>, input: RoleInput, meta: Meta) -> Result<Role> {
        Ok(Role {
            meta,
            system: false,
            grants: input.grants.unwrap_or_default(),
            all_resource_sets: false,
            resource_sets: normalise_sets(input.sets),
        })
    }

    fn replace(_: &mut Write<'_>, input: RoleInput, role: &mut Role) -> Result<()> {
        role.grants = input.grants.unwrap_or_default();
        role.resource_sets = normalise_sets(input.sets);
        Ok(())
    }

    /// A caller can grant only what it holds (issue 22).
    fn check(w: &Write<'_>, rec: &Role) -> Result<()> {
        crate::service::escalation::check_role(w.app(), &w.st, rec)
    }

    fn editable(r: &Role) -> Result<()> {
        if r.system {
            return Err(Error::bad("role: system roles cannot be modified or deleted"));
        }
        Ok(())
    }

    /// A role an `svc-access-token` provider names cannot be deleted; its holders lose it (one
    /// audit entry per user changed).
    fn before_delete(w: &mut Write<'_>, author: &Author, rs: Uuid, id: Uuid) -> Result<()> {
        let id_text = id.to_string();
        if let Some(cp) = w.st.credential_providers.values().find(|c| {
            c.cp_type == crate::credential::access_token::TYPE
                && c.config.get("roleId").and_then(Value::as_str) == Some(id_text.as_str())
        }) {
            return Err(Error::bad(format!(
                "role: referenced by credential provider {}",
                cp.meta.named()
            )));
        }
        super::sso_idps::release_role(w, author, id);
        let holders: Vec<_> = w.st.users.values().filter(|u| u.roles.contains(&id)).cloned().collect();
        for u in holders {
            let mut u = (*u).clone();
            u.roles.retain(|r| *r != id);
            u.modified_at = w.now;
            u.modified_by = author.actor.label();
            let uid = u.id;
            w.put(u);
            w.audit(author, rs, "Users", Activity::Updated, uid);
        }
        Ok(())
    }

    fn render(_: &App, st: &Snapshot, r: &Role) -> RoleDto {
        role_dto(st, r)
    }
}
