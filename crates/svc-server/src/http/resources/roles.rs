//! Roles (contract §3.16, §2.6): permissions × resource sets. System roles are read-only.

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};
use svc_api::Obj;
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_json, new_external_id, parse_base};
use crate::app::App;
use crate::domain::records::{Grant, Role};
use crate::domain::{DEFAULT_RESOURCE_SET, Kind, Perm};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::extract::{Ids, JsonBody, QueryPairs};
use crate::http::guard::{Ctx, Scope, guarded};
use crate::http::list::{Filter, ListParams, ListSpec, respond};
use crate::http::{created, no_content, ok};
use crate::service::write::Write;
use crate::state::State as Snapshot;

const CATEGORY: &str = "Roles";

pub fn routes(app: &App) -> Router<App> {
    Router::new()
        .route(
            "/api/v1/roles",
            guarded(app, Perm::Roles, Scope::Global, get(list).post(create).put(replace)),
        )
        .route(
            "/api/v1/roles/{id}",
            guarded(app, Perm::Roles, Scope::Global, get(read).patch(patch).delete(remove)),
        )
}

const SPEC: ListSpec = ListSpec {
    items_key: "roles",
    fields: &[
        "externalId",
        "name",
        "description",
        "isActive",
        "createdAt",
        "modifiedAt",
        "createdBy",
        "modifiedBy",
        "usersCount",
        "credentialProvidersCount",
        "isSystem",
    ],
    default_order: ("name", false),
    filters: &[("isSystem", Filter::Field("isSystem"))],
};

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

struct RoleInput {
    base: BaseInput,
    grants: Option<Vec<Grant>>,
    sets: Option<Vec<Uuid>>,
}

fn parse(st: &Snapshot, body: Value, mode: Mode) -> Result<RoleInput> {
    let mut o = Obj::root(body)?;
    let base = parse_base(&mut o, mode, false)?;
    o.ignore(&["usersCount", "credentialProvidersCount", "isSystem"]);
    if mode == Mode::Patch {
        o.finish()?;
        return Ok(RoleInput {
            base,
            grants: None,
            sets: None,
        });
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
    Ok(RoleInput { base, grants, sets })
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

async fn list(State(app): State<App>, q: QueryPairs) -> Result<Response> {
    let p = ListParams::parse(&q)?;
    let st = app.state();
    let items = st.roles.values().map(|r| role_json(&st, r)).collect();
    Ok(ok(respond(items, &p, &SPEC)?))
}

async fn read(State(app): State<App>, ids: Ids) -> Result<Response> {
    let st = app.state();
    Ok(match st.roles.get(&ids.one()) {
        Some(r) => ok(role_json(&st, r)),
        None => no_content(),
    })
}

async fn create(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse(&app.state(), body, Mode::Create)?;
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let id = new_external_id(input.base.external_id, |id| w.st.roles.contains_key(id))?;
    let mut meta = w.new_meta(Kind::Role, id, None, &author).await?;
    input.base.apply_full(&mut meta);
    let role = Role {
        meta,
        system: false,
        grants: input.grants.unwrap_or_default(),
        all_resource_sets: false,
        resource_sets: normalise_sets(input.sets),
    };
    w.put(role);
    w.audit(&author, DEFAULT_RESOURCE_SET, CATEGORY, Activity::Created, id);
    let st = w.commit().await?;
    Ok(created(
        StatusCode::CREATED,
        format!("/api/v1/roles/{id}"),
        role_json(&st, &st.roles[&id]),
    ))
}

fn editable(st: &Snapshot, id: &Uuid) -> Result<Role> {
    let r = st.roles.get(id).ok_or(Error::NotFound)?;
    if r.system {
        return Err(Error::bad("role: system roles cannot be modified or deleted"));
    }
    Ok((**r).clone())
}

async fn replace(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse(&app.state(), body, Mode::Replace)?;
    let id = input.base.external_id.expect("required on replace");
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let mut role = editable(&w.st, &id)?;
    input.base.apply_full(&mut role.meta);
    role.grants = input.grants.unwrap_or_default();
    role.resource_sets = normalise_sets(input.sets);
    w.touch_meta(&mut role.meta, &author);
    w.put(role);
    w.audit(&author, DEFAULT_RESOURCE_SET, CATEGORY, Activity::Updated, id);
    let st = w.commit().await?;
    Ok(ok(role_json(&st, &st.roles[&id])))
}

async fn patch(State(app): State<App>, ctx: Ctx, ids: Ids, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse(&app.state(), body, Mode::Patch)?;
    let id = ids.one();
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let mut role = editable(&w.st, &id)?;
    input.base.apply_patch(&mut role.meta)?;
    w.touch_meta(&mut role.meta, &author);
    w.put(role);
    w.audit(&author, DEFAULT_RESOURCE_SET, CATEGORY, Activity::Patched, id);
    let st = w.commit().await?;
    Ok(ok(role_json(&st, &st.roles[&id])))
}

async fn remove(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let id = ids.one();
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    if !w.st.roles.contains_key(&id) {
        return Ok(no_content());
    }
    editable(&w.st, &id)?;
    let id_text = id.to_string();
    if let Some(cp) = w.st.credential_providers.values().find(|c| {
        c.cp_type == crate::credential::access_token::TYPE
            && c.config.get("roleId").and_then(Value::as_str) == Some(id_text.as_str())
    }) {
        return Err(Error::bad(format!(
            "role: referenced by credential provider '{}' ({})",
            cp.meta.name, cp.meta.id
        )));
    }
    // Deleting a role removes it from users' roles (one audit entry per user changed).
    let holders: Vec<_> = w.st.users.values().filter(|u| u.roles.contains(&id)).cloned().collect();
    for u in holders {
        let mut u = (*u).clone();
        u.roles.retain(|r| *r != id);
        u.modified_at = w.now;
        u.modified_by = author.actor.label();
        let uid = u.id;
        w.put(u);
        w.audit(&author, DEFAULT_RESOURCE_SET, "Users", Activity::Updated, uid);
    }
    w.remove::<Role>(&id);
    w.audit(&author, DEFAULT_RESOURCE_SET, CATEGORY, Activity::Deleted, id);
    w.commit().await?;
    Ok(no_content())
}
