//! Resource sets (contract §3.15, §1.4, §1.10 rule 6): the default one is fixed; deleting one
//! deletes everything in it, all-or-nothing, with one audit entry per deleted entity.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;
use svc_api::mgmt::{EntityPatch, ResourceSetCounts, ResourceSetDto, RoleResourceSetDto};
use uuid::Uuid;

use super::common::{BaseInput, base_dto, base_input, patch_input};
use super::crud::{self, to_json};
use crate::app::App;
use crate::domain::credential::{CredentialIntegration, CredentialProvider};
use crate::domain::policy::Policy;
use crate::domain::records::ResourceSet;
use crate::domain::trust::TrustProvider;
use crate::domain::workload::{ClientWorkload, ServerWorkload};
use crate::domain::{DEFAULT_RESOURCE_SET, Kind, Perm};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::api::{Api, Op, Query};
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
            .list::<ResourceSetDto>("entities"),
    );
    api.guarded("/api/v1/resource-sets", p, Scope::Global)
        .post(
            create,
            Op::new("Create a resource set")
                .body::<ResourceSetDto>()
                .ok::<ResourceSetDto>(201),
        )
        .put(
            replace,
            Op::new("Replace a resource set")
                .body::<ResourceSetDto>()
                .ok::<ResourceSetDto>(200),
        );
    api.guarded("/api/v1/resource-sets/{id}", p, Scope::Entity).get(
        read,
        Op::new("Read a resource set").ok::<ResourceSetDto>(200).empty(204),
    );
    api.guarded("/api/v1/resource-sets/{id}", p, Scope::Global)
        .patch(
            patch,
            Op::new("Patch a resource set")
                .body::<EntityPatch>()
                .ok::<ResourceSetDto>(200),
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

fn count<T: Record>(st: &Snapshot, rs: Uuid) -> i32 {
    crud::count(T::table(st).values().filter(|v| v.rs() == Some(rs)).count())
}

fn counts(st: &Snapshot, id: Uuid) -> ResourceSetCounts {
    ResourceSetCounts {
        server_workload_count: count::<ServerWorkload>(st, id),
        client_workload_count: count::<ClientWorkload>(st, id),
        access_policy_count: count::<Policy>(st, id),
        trust_provider_count: count::<TrustProvider>(st, id),
        access_condition_count: count::<crate::domain::condition::AccessCondition>(st, id),
        credential_provider_count: count::<CredentialProvider>(st, id),
    }
}

/// `ResourceSetDTO`, with the roles that reach it expanded (`rolesDetails`) and their users'
/// e-mails — to a reader who may read roles (`roles`, `rolesDetails`) and users (`users`) by
/// itself; to others these are empty (issue 31: any permission in a set must not list its
/// administrators).
pub fn resource_set_dto(st: &Snapshot, s: &ResourceSet, may: &impl Fn(Perm, Uuid) -> bool) -> ResourceSetDto {
    let id = s.meta.id;
    let mut roles: Vec<_> = st.roles.values().filter(|r| r.covers(id)).collect();
    roles.sort_by_key(|r| r.meta.seq);
    let role_ids: Vec<Uuid> = roles.iter().map(|r| r.meta.id).collect();
    let mut users: Vec<String> = Vec::new();
    if may(Perm::Users, DEFAULT_RESOURCE_SET) {
        users = st
            .users
            .values()
            .filter(|u| u.roles.iter().any(|r| role_ids.contains(r)))
            .map(|u| u.email.clone())
            .collect();
        users.sort();
    }
    let read_roles = may(Perm::Roles, DEFAULT_RESOURCE_SET);
    ResourceSetDto {
        base: base_dto(&s.meta),
        counts: counts(st, id),
        roles: if read_roles { role_ids } else { Vec::new() },
        roles_details: if read_roles {
            roles.iter().map(|r| super::roles::role_dto(st, r)).collect()
        } else {
            Vec::new()
        },
        users,
    }
}

/// A resource set inside a `RoleDTO` (and so in every `UserDTO`): not expanded again. Arrays are
/// never `null` (§1.1); empty here, since filling them would put every user's e-mail in the
/// roles list and cost a scan of roles and users per nested set.
pub fn nested_dto(st: &Snapshot, s: &ResourceSet) -> RoleResourceSetDto {
    let m = &s.meta;
    RoleResourceSetDto {
        external_id: m.id,
        name: m.name.clone(),
        description: m.description.clone(),
        is_active: m.active,
        tags: Some(m.tags.clone()),
        created_at: m.created_at,
        modified_at: Some(m.modified_at),
        created_by: m.created_by.as_ref().map(|l| l.to_string()),
        modified_by: m.modified_by.as_ref().map(|l| l.to_string()),
        counts: counts(st, m.id),
        roles: Vec::new(),
        roles_details: Vec::new(),
        users: Vec::new(),
    }
}

fn parse(body: Value) -> Result<BaseInput> {
    base_input(svc_api::schema::read::<ResourceSetDto>(body)?.base, None)
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
    let may = super::common::reader(&app, &st);
    let items = st
        .resource_sets
        .values()
        .filter(|s| visible(&ctx, &st, s.meta.id))
        .map(|s| to_json(&resource_set_dto(&st, s, &may)))
        .collect();
    Ok(ok(respond(items, &p, &SPEC)?))
}

async fn read(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let st = app.state();
    may_read_any(&ctx, &st)?;
    match st.resource_sets.get(&ids.one()) {
        Some(s) if visible(&ctx, &st, s.meta.id) => Ok(ok(to_json(&resource_set_dto(
            &st,
            s,
            &super::common::reader(&app, &st),
        )))),
        Some(_) => Err(Error::Forbidden),
        None => Ok(no_content()),
    }
}

async fn create(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse(body)?;
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
        to_json(&resource_set_dto(
            &st,
            &st.resource_sets[&id],
            &super::common::reader(&app, &st),
        )),
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
    let input = parse(body)?;
    let id = input
        .external_id
        .ok_or_else(|| Error::field("externalId", "is required"))?;
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let mut s = editable(&w.st, &id)?;
    input.apply_full(&mut s.meta);
    w.touch_meta(&mut s.meta, &author);
    w.put(s);
    w.audit(&author, DEFAULT_RESOURCE_SET, CATEGORY, Activity::Updated, id);
    let st = w.commit().await?;
    Ok(ok(to_json(&resource_set_dto(
        &st,
        &st.resource_sets[&id],
        &super::common::reader(&app, &st),
    ))))
}

async fn patch(State(app): State<App>, ctx: Ctx, ids: Ids, JsonBody(body): JsonBody) -> Result<Response> {
    let input = patch_input(svc_api::schema::read::<EntityPatch>(body)?)?;
    let id = ids.one();
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let mut s = editable(&w.st, &id)?;
    input.apply_patch(&mut s.meta)?;
    w.touch_meta(&mut s.meta, &author);
    w.put(s);
    w.audit(&author, DEFAULT_RESOURCE_SET, CATEGORY, Activity::Patched, id);
    let st = w.commit().await?;
    Ok(ok(to_json(&resource_set_dto(
        &st,
        &st.resource_sets[&id],
        &super::common::reader(&app, &st),
    ))))
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
