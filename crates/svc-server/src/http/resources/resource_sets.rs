//! Resource sets (contract §3.15, §1.4, §1.10 rule 6): the default one is fixed; deleting one
//! deletes everything in it, all-or-nothing, with one audit entry per deleted entity.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use svc_api::Obj;
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_json, parse_base};
use crate::app::App;
use crate::domain::credential::{CredentialIntegration, CredentialProvider};
use crate::domain::policy::Policy;
use crate::domain::records::ResourceSet;
use crate::domain::trust::TrustProvider;
use crate::domain::workload::{ClientWorkload, ServerWorkload};
use crate::domain::{DEFAULT_RESOURCE_SET, Kind, Perm};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::api::{Api, Op, Query, Untyped};
use crate::http::extract::{Ids, JsonBody, QueryPairs};
use crate::http::guard::{Ctx, Scope};
use crate::http::list::{Base, ListParams, ListSpec, respond};
use crate::http::{created, no_content, ok};
use crate::service::write::{Author, Write, new_external_id};
use crate::state::{Record, State as Snapshot};

const CATEGORY: &str = "ResourceSets";

pub fn register(api: &mut Api<'_>) {
    let p = Perm::ResourceSets;
    api.guarded("/api/v1/resource-sets", p, Scope::Entity).get(
        list,
        Op::new("List resource sets (§3.15)")
            .query(Query::List)
            .list::<Untyped>("entities"),
    );
    api.guarded("/api/v1/resource-sets", p, Scope::Global)
        .post(
            create,
            Op::new("Create a resource set").body::<Untyped>().ok::<Untyped>(201),
        )
        .put(
            replace,
            Op::new("Replace a resource set").body::<Untyped>().ok::<Untyped>(200),
        );
    api.guarded("/api/v1/resource-sets/{id}", p, Scope::Entity)
        .get(read, Op::new("Read a resource set").ok::<Untyped>(200).empty(204));
    api.guarded("/api/v1/resource-sets/{id}", p, Scope::Global)
        .patch(
            patch,
            Op::new("Patch a resource set").body::<Untyped>().ok::<Untyped>(200),
        )
        .delete(remove, Op::new("Delete a resource set and what it holds").empty(204));
}

/// The counts a `ResourceSetDTO` carries: orderable, read-only.
const COUNTS: &[&str] = &[
    "serverWorkloadCount",
    "clientWorkloadCount",
    "accessPolicyCount",
    "trustProviderCount",
    "accessConditionCount",
    "credentialProviderCount",
];

const SPEC: ListSpec = ListSpec::new("entities", Base::Global).fields(COUNTS);

fn count<T: Record>(st: &Snapshot, rs: Uuid) -> usize {
    T::table(st).values().filter(|v| v.rs() == Some(rs)).count()
}

/// `ResourceSetDTO`; `deep` also expands the roles that reach it (`rolesDetails`).
pub fn resource_set_json(st: &Snapshot, s: &ResourceSet, deep: bool) -> Value {
    let id = s.meta.id;
    let mut o = base_json(&s.meta, false);
    o.insert("serverWorkloadCount".into(), json!(count::<ServerWorkload>(st, id)));
    o.insert("clientWorkloadCount".into(), json!(count::<ClientWorkload>(st, id)));
    o.insert("accessPolicyCount".into(), json!(count::<Policy>(st, id)));
    o.insert("trustProviderCount".into(), json!(count::<TrustProvider>(st, id)));
    o.insert(
        "accessConditionCount".into(),
        json!(count::<crate::domain::condition::AccessCondition>(st, id)),
    );
    o.insert(
        "credentialProviderCount".into(),
        json!(count::<CredentialProvider>(st, id)),
    );
    if !deep {
        // Inside a RoleDTO (and so in every UserDTO): not expanded again. Arrays are never
        // `null` (§1.1); empty here, since filling them would put every user's e-mail in the
        // roles list and cost a scan of roles and users per nested set.
        for k in ["roles", "rolesDetails", "users"] {
            o.insert(k.into(), json!([]));
        }
        return Value::Object(o);
    }
    let mut roles: Vec<_> = st.roles.values().filter(|r| r.covers(id)).collect();
    roles.sort_by_key(|r| r.meta.seq);
    let role_ids: Vec<Uuid> = roles.iter().map(|r| r.meta.id).collect();
    let mut users: Vec<String> = st
        .users
        .values()
        .filter(|u| u.roles.iter().any(|r| role_ids.contains(r)))
        .map(|u| u.email.clone())
        .collect();
    users.sort();
    o.insert("roles".into(), json!(role_ids));
    o.insert(
        "rolesDetails".into(),
        Value::Array(roles.iter().map(|r| super::roles::role_json(st, r)).collect()),
    );
    o.insert("users".into(), json!(users));
    Value::Object(o)
}

fn parse(body: Value, mode: Mode) -> Result<BaseInput> {
    let mut o = Obj::root(body)?;
    let base = parse_base(&mut o, mode, false)?;
    o.ignore(COUNTS);
    o.ignore(&["roles", "rolesDetails", "users"]);
    o.finish()?;
    Ok(base)
}

/// Visible: all with `Resource Sets` read, else those where the caller holds any permission.
fn visible(ctx: &Ctx, st: &Snapshot, id: Uuid) -> bool {
    ctx.caller.can(st, Perm::ResourceSets, false, DEFAULT_RESOURCE_SET) || ctx.caller.holds_any_in(st, id)
}

/// A caller without any permission in any resource set may not read resource sets at all
/// (§2.6: a user without roles can only log in, call `/api/v1/me/*` and the health check).
fn may_read_any(ctx: &Ctx, st: &Snapshot) -> Result<()> {
    if st.resource_sets.keys().any(|id| visible(ctx, st, *id)) {
        Ok(())
    } else {
        Err(Error::Forbidden)
    }
}

async fn list(State(app): State<App>, ctx: Ctx, q: QueryPairs) -> Result<Response> {
    let p = ListParams::parse(&q)?;
    let st = app.state();
    may_read_any(&ctx, &st)?;
    let items = st
        .resource_sets
        .values()
        .filter(|s| visible(&ctx, &st, s.meta.id))
        .map(|s| resource_set_json(&st, s, true))
        .collect();
    Ok(ok(respond(items, &p, &SPEC)?))
}

async fn read(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let st = app.state();
    may_read_any(&ctx, &st)?;
    match st.resource_sets.get(&ids.one()) {
        Some(s) if visible(&ctx, &st, s.meta.id) => Ok(ok(resource_set_json(&st, s, true))),
        Some(_) => Err(Error::Forbidden),
        None => Ok(no_content()),
    }
}

async fn create(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse(body, Mode::Create)?;
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let id = new_external_id(input.external_id, |id| w.st.resource_sets.contains_key(id))?;
    let mut meta = w.new_meta(Kind::ResourceSet, id, None, &author).await?;
    input.apply_full(&mut meta);
    w.put(ResourceSet { meta });
    w.audit(&author, DEFAULT_RESOURCE_SET, CATEGORY, Activity::Created, id);
    crate::service::integrations::add_builtins(&mut w, id, &author, true).await?;
    let st = w.commit().await?;
    Ok(created(
        StatusCode::CREATED,
        format!("/api/v1/resource-sets/{id}"),
        resource_set_json(&st, &st.resource_sets[&id], true),
    ))
}

fn editable(st: &Snapshot, id: &Uuid) -> Result<ResourceSet> {
    if *id == DEFAULT_RESOURCE_SET {
        return Err(Error::bad(
            "resourceSet: the default resource set cannot be modified or deleted",
        ));
    }
    st.resource_sets.get(id).map(|s| (**s).clone()).ok_or(Error::NotFound)
}

async fn replace(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse(body, Mode::Replace)?;
    let id = input.external_id.expect("required on replace");
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let mut s = editable(&w.st, &id)?;
    input.apply_full(&mut s.meta);
    w.touch_meta(&mut s.meta, &author);
    w.put(s);
    w.audit(&author, DEFAULT_RESOURCE_SET, CATEGORY, Activity::Updated, id);
    let st = w.commit().await?;
    Ok(ok(resource_set_json(&st, &st.resource_sets[&id], true)))
}

async fn patch(State(app): State<App>, ctx: Ctx, ids: Ids, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse(body, Mode::Patch)?;
    let id = ids.one();
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let mut s = editable(&w.st, &id)?;
    input.apply_patch(&mut s.meta)?;
    w.touch_meta(&mut s.meta, &author);
    w.put(s);
    w.audit(&author, DEFAULT_RESOURCE_SET, CATEGORY, Activity::Patched, id);
    let st = w.commit().await?;
    Ok(ok(resource_set_json(&st, &st.resource_sets[&id], true)))
}

/// Deletes every entity of type `T` in `rs`, auditing each. The entries go to the default resource
/// set, beside the resource set's own `Deleted` entry: under the deleted set's id no one could
/// read them any more (`X-Svc-ResourceSet` must name an existing set).
fn cascade<T: Record>(w: &mut Write<'_>, author: &Author, rs: Uuid) {
    let category = const { T::KIND.expect_family().category };
    let ids: Vec<Uuid> = T::table(&w.st)
        .values()
        .filter(|v| v.rs() == Some(rs))
        .map(|v| v.id())
        .collect();
    for id in ids {
        w.remove::<T>(&id);
        w.audit(author, DEFAULT_RESOURCE_SET, category, Activity::Deleted, id);
    }
}

async fn remove(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let id = ids.one();
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    editable(&w.st, &id)?;
    super::agent_controllers::release_resource_set(&mut w, &author, id);
    // Policies first: nothing may reference a deleted entity, even inside the unit.
    cascade::<Policy>(&mut w, &author, id);
    cascade::<CredentialProvider>(&mut w, &author, id);
    cascade::<CredentialIntegration>(&mut w, &author, id);
    cascade::<crate::domain::condition::AccessCondition>(&mut w, &author, id);
    cascade::<crate::domain::condition::Integration>(&mut w, &author, id);
    cascade::<crate::domain::condition::ContentSecurity>(&mut w, &author, id);
    cascade::<crate::domain::condition::ServerWorkloadDraft>(&mut w, &author, id);
    cascade::<crate::domain::condition::DiscoveryIntegration>(&mut w, &author, id);
    cascade::<ClientWorkload>(&mut w, &author, id);
    cascade::<ServerWorkload>(&mut w, &author, id);
    cascade::<TrustProvider>(&mut w, &author, id);
    cascade::<crate::domain::sso::Routing>(&mut w, &author, id);
    let roles: Vec<_> =
        w.st.roles
            .values()
            .filter(|r| r.resource_sets.contains(&id))
            .cloned()
            .collect();
    for r in roles {
        let mut r = (*r).clone();
        // A role left with no resource set grants nothing: falling back to the default set (the
        // input default of §3.16) would widen a role meant for the deleted set only.
        r.resource_sets.retain(|s| *s != id);
        w.touch_meta(&mut r.meta, &author);
        let rid = r.meta.id;
        w.put(r);
        w.audit(&author, DEFAULT_RESOURCE_SET, "Roles", Activity::Updated, rid);
    }
    w.remove::<ResourceSet>(&id);
    w.audit(&author, DEFAULT_RESOURCE_SET, CATEGORY, Activity::Deleted, id);
    w.commit().await?;
    Ok(no_content())
}
