//! Roles (contract §3.16, §2.6): permissions × resource sets. System roles are read-only.

use serde_json::{Value, json};
use svc_api::Obj;
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_json, parse_base};
use super::crud::{self, OnMissing, Resource, RsFrom};
use crate::app::App;
use crate::domain::records::{Grant, Role};
use crate::domain::{DEFAULT_RESOURCE_SET, Meta, Perm};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::api::{Api, Untyped};
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

fn access_level(read: bool, write: bool) -> &'static str {
    match (read, write) {
        (_, true) => "Read/Write",
        (true, false) => "Read-Only",
        _ => "No Access",
    }
}

/// `PermissionDTO[]`: all 23 permissions in §2.7 order.
pub fn permissions_json(grants: &[Grant]) -> Value {
    Value::Array(
        Perm::ALL
            .iter()
            .map(|p| {
                let g = grants.iter().find(|g| g.perm == *p);
                let write = g.is_some_and(|g| g.write) && !p.read_only();
                let read = g.is_some_and(|g| g.read) || write;
                json!({
                    "name": p.name(),
                    "read": read,
                    "write": write,
                    "isReadable": true,
                    "isWritable": !p.read_only(),
                    "accessLevel": access_level(read, write),
                })
            })
            .collect(),
    )
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
pub fn role_json(st: &Snapshot, r: &Role) -> Value {
    let mut o = base_json(&r.meta, false);
    let users = st.users.values().filter(|u| u.roles.contains(&r.meta.id)).count();
    let cps = st
        .credential_providers
        .values()
        .filter(|c| {
            c.cp_type == crate::credential::access_token::TYPE
                && c.config.get("roleId").and_then(Value::as_str) == Some(&r.meta.id.to_string())
        })
        .count();
    o.insert("usersCount".into(), json!(users));
    o.insert("credentialProvidersCount".into(), json!(cps));
    o.insert("isSystem".into(), json!(r.system));
    o.insert("permissions".into(), permissions_json(&r.grants));
    let sets: Vec<Value> = role_sets(st, r)
        .iter()
        .filter_map(|id| st.resource_sets.get(id))
        .map(|s| super::resource_sets::resource_set_json(st, s, false))
        .collect();
    o.insert("resourceSets".into(), Value::Array(sets));
    Value::Object(o)
}

pub struct RoleInput {
    grants: Option<Vec<Grant>>,
    sets: Option<Vec<Uuid>>,
}

fn parse(st: &Snapshot, body: Value, mode: Mode) -> Result<(BaseInput, RoleInput)> {
    let mut o = Obj::root(body)?;
    let base = parse_base(&mut o, mode, false)?;
    o.ignore(&["usersCount", "credentialProvidersCount", "isSystem"]);
    if mode == Mode::Patch {
        o.finish()?;
        return Ok((
            base,
            RoleInput {
                grants: None,
                sets: None,
            },
        ));
    }
    let grants = o.opt_obj_list("permissions", |p| {
        let name = p.req_str("name")?;
        let perm = Perm::parse(&name)
            .ok_or_else(|| svc_api::FieldError::new(p.path("name"), format!("unknown permission '{name}'")))?;
        let read = p.opt_bool("read")?.unwrap_or(false);
        let write = p.opt_bool("write")?.unwrap_or(false);
        if write && perm.read_only() {
            return Err(svc_api::FieldError::new(
                p.path("write"),
                format!("'{name}' is read-only"),
            ));
        }
        p.ignore(&["isReadable", "isWritable", "accessLevel"]);
        Ok(Grant {
            perm,
            read: read || write,
            write,
        })
    })?;
    if let Some(g) = &grants {
        for (i, x) in g.iter().enumerate() {
            if g[..i].iter().any(|y| y.perm == x.perm) {
                return Err(Error::field(format!("permissions[{i}].name"), "duplicate permission"));
            }
        }
    }
    let sets = o.opt_list("resourceSets", |v, path| {
        // Only `externalId` of each element is read; the other ResourceSetDTO fields are ignored.
        let mut e = Obj::nested(v, path)?;
        let id = e.req_uuid("externalId")?;
        if !st.resource_set_exists(&id) {
            return Err(svc_api::FieldError::new(e.path("externalId"), "unknown resource set"));
        }
        Ok(id)
    })?;
    o.finish()?;
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
    type Dto = Untyped;
    type Patch = Untyped;
    const NAME: &'static str = "roles";
    const RS: RsFrom = RsFrom::Global;
    const LIST: ListSpec = SPEC;
    const ON_MISSING_DELETE: OnMissing = OnMissing::NoContent;

    fn parse(app: &App, body: Untyped, mode: Mode, _stored: Option<&Role>) -> Result<(BaseInput, RoleInput)> {
        parse(&app.state(), body.0, mode)
    }

    fn parse_patch(app: &App, body: Untyped, stored: Option<&Role>) -> Result<(BaseInput, RoleInput)> {
        Self::parse(app, body, Mode::Patch, stored)
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

    fn render(_: &App, st: &Snapshot, r: &Role) -> Untyped {
        Untyped(role_json(st, r))
    }
}
