//! Access policies v1 (deprecated, contract §3.9): a view of the v2 policy with at most one
//! credential provider, scoped by `X-Svc-ResourceSet`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;
use svc_api::mgmt::{EntityRefDto, PolicyDto, PolicyExternalDto, PolicyPatchDto, Readable, WorkloadExternalDto};
use svc_api::schema;
use uuid::Uuid;

use super::access_conditions::v1_dto as condition_v1_dto;
use super::access_policies::{
    PolicyInput, add_note, create_policy, delete_policy, note_dto, require_id, update_policy,
};
use super::client_workloads::client_dto;
use super::common::{BaseInput, Mode, base_dto, base_input, patch_input, reader, resolve_rs};
use super::content_security::cs_dto;
use super::credential_providers::provider_v1_dto;
use super::crud::to_json;
use super::server_workloads::server_dto;
use super::trust_providers::trust_dto;
use crate::app::App;
use crate::domain::Perm;
use crate::domain::condition::{AccessCondition, ContentSecurity};
use crate::domain::credential::CredentialProvider;
use crate::domain::policy::{Mapping, MappingType, Policy};
use crate::domain::trust::TrustProvider;
use crate::domain::workload::{ClientWorkload, ServerWorkload};
use crate::error::{Error, Result};
use crate::http::api::{Api, Op, Query};
use crate::http::extract::{Ids, JsonBody, QueryPairs};
use crate::http::guard::{Ctx, Scope};
use crate::http::list::{Base, Filter, ListParams, ListSpec, respond};
use crate::http::{created, no_content, ok, with_warnings};
use crate::service::policies::for_pair;
use crate::state::{MetaRecord, State as Snapshot};

const SEVERAL: &str = "policy has several credential providers; use /api/v2";

pub fn register(api: &mut Api<'_>) {
    let (p, s) = (Perm::AccessPolicies, Scope::Rs);
    api.guarded("/api/v1/access-policies", p, s)
        .get(
            list,
            Op::new("List access policies (§3.9, deprecated)")
                .query(Query::List)
                .list::<PolicyExternalDto>("accessPolicies"),
        )
        .post(
            create,
            Op::new("Create an access policy")
                .body::<PolicyDto>()
                .ok::<PolicyDto>(200),
        )
        .put(
            replace,
            Op::new("Replace an access policy")
                .body::<PolicyDto>()
                .ok::<PolicyDto>(200),
        );
    api.guarded(
        "/api/v1/access-policies/getByWorkloadIds/{clientWorkloadId}/{serverWorkloadId}",
        p,
        s,
    )
    .get(
        by_workloads,
        Op::new("The policy between two workloads").ok::<PolicyExternalDto>(200),
    );
    api.guarded("/api/v1/access-policies/{id}", p, s)
        .get(
            read,
            Op::new("Read an access policy").ok::<PolicyExternalDto>(200).empty(204),
        )
        .patch(
            patch,
            Op::new("Patch an access policy")
                .body::<PolicyPatchDto>()
                .ok::<PolicyDto>(200),
        )
        .delete(remove, Op::new("Delete an access policy").empty(204));
    api.guarded("/api/v1/access-policies/{id}/notes", p, s).post(
        note,
        Op::new("Add a note to a policy")
            .body::<svc_api::mgmt::PolicyNoteDto>()
            .ok::<svc_api::mgmt::PolicyNoteDto>(201),
    );
}

fn single_cp(p: &Policy) -> Option<Uuid> {
    match p.mappings.as_slice() {
        [m] => Some(m.credential_provider),
        _ => None,
    }
}

/// `WorkloadExternalDTO`: a summary of a workload with the policy's providers.
fn workload_summary(st: &Snapshot, p: &Policy, server: bool) -> WorkloadExternalDto {
    // The workload's base block, type and (a server's) endpoint, if it still exists.
    let (id, found) = if server {
        let w = st.server_workloads.get(&p.server_workload);
        let endpoint = |w: &ServerWorkload| Some(super::server_workloads::endpoint_dto(&w.endpoint));
        (p.server_workload, w.map(|w| (&w.meta, w.label.clone(), endpoint(w))))
    } else {
        let w = st.client_workloads.get(&p.client_workload);
        (p.client_workload, w.map(|w| (&w.meta, w.label.clone(), None)))
    };
    let (name, active, label, endpoint) = match found {
        Some((m, label, endpoint)) => (Some(m.name.clone()), m.active, label, endpoint),
        None => (None, false, None, None),
    };
    let trust_providers = p
        .trust_providers
        .iter()
        .map(|t| EntityRefDto {
            external_id: *t,
            name: st.trust_providers.get(t).map(|x| x.meta.name.clone()),
        })
        .collect();
    let cp = single_cp(p);
    WorkloadExternalDto {
        external_id: id,
        name,
        is_active: active,
        kind: label,
        // A server's endpoint (absent, as a client's, when the workload is gone).
        service_endpoint: endpoint,
        trust_providers,
        credential_provider_id: cp,
        credential_provider_text: cp
            .and_then(|c| st.credential_providers.get(&c))
            .map(|c| c.meta.name.clone()),
    }
}

/// `PolicyDTO` (write responses).
fn policy_dto(st: &Snapshot, p: &Policy) -> PolicyDto {
    PolicyDto {
        base: base_dto(&p.meta),
        resource_set: Some(p.meta.scope()),
        client_workload: Some(p.client_workload),
        server_workload: Some(p.server_workload),
        credential_provider: single_cp(p),
        trust_providers: Some(p.trust_providers.clone()),
        access_conditions: Some(p.access_conditions.clone()),
        content_security: Some(p.content_security.clone()),
        client_workload_details: Some(workload_summary(st, p, false)),
        server_workload_details: Some(workload_summary(st, p, true)),
        policy_notes: Some(p.notes.iter().map(note_dto).collect()),
        access_policy_count: None,
    }
}

/// An embedded entity: rendered in full when the reader `may` read its kind in its resource set,
/// else its reference (`externalId`, `name`), which a reader of the policy may see (issue 31).
fn readable<T: MetaRecord, D>(may: &impl Fn(Perm, Uuid) -> bool, v: &T, render: impl Fn(&T) -> D) -> Readable<D> {
    let m = v.meta();
    if may(T::KIND.expect_family().perm, m.scope()) {
        Readable::Full(render(v))
    } else {
        Readable::Reference(EntityRefDto {
            external_id: m.id,
            name: Some(m.name.clone()),
        })
    }
}

/// The entities `ids` names that still exist, each as [`readable`] gives it.
fn readables<T: MetaRecord, D>(
    st: &Snapshot,
    ids: &[Uuid],
    may: &impl Fn(Perm, Uuid) -> bool,
    render: impl Fn(&T) -> D,
) -> Vec<Readable<D>> {
    ids.iter()
        .filter_map(|id| st.get::<T>(id))
        .map(|v| readable(may, v.as_ref(), &render))
        .collect()
}

/// `PolicyExternalDTO` (reads): referenced entities expanded — those the caller may read by
/// itself; the others as their reference (issue 31).
fn policy_external(app: &App, st: &Snapshot, p: &Policy) -> PolicyExternalDto {
    let may = reader(app, st);
    let client = st
        .get::<ClientWorkload>(&p.client_workload)
        .map(|w| readable(&may, w.as_ref(), |w| client_dto(st, w)));
    let server = st
        .get::<ServerWorkload>(&p.server_workload)
        .map(|w| readable(&may, w.as_ref(), |w| server_dto(st, w)));
    let cp = single_cp(p)
        .and_then(|c| st.get::<CredentialProvider>(&c))
        .map(|c| readable(&may, c.as_ref(), |c| provider_v1_dto(st, &app.cfg, c)));
    PolicyExternalDto {
        base: base_dto(&p.meta),
        resource_set: Some(p.meta.scope()),
        client_workload: client,
        server_workload: server,
        trust_providers: readables::<TrustProvider, _>(st, &p.trust_providers, &may, |t| trust_dto(app, st, t, None)),
        access_conditions: readables::<AccessCondition, _>(st, &p.access_conditions, &may, |c| {
            condition_v1_dto(st, c, &may)
        }),
        content_security: readables::<ContentSecurity, _>(st, &p.content_security, &may, |c| cs_dto(st, c)),
        credential_provider: cp,
        policy_notes: p.notes.iter().map(note_dto).collect(),
    }
}

/// A v1 body: the policy's fields, and `credentialProvider` (`None`: a PATCH leaves it as it is;
/// `Some(None)`: none).
fn parse(body: Value, mode: Mode) -> Result<(PolicyInput, Option<Option<Uuid>>)> {
    if mode == Mode::Patch {
        let dto: PolicyPatchDto = schema::read(body)?;
        let input = PolicyInput {
            base: BaseInput {
                resource_set: dto.resource_set,
                ..patch_input(dto.patch)?
            },
            client_workload: dto.client_workload,
            server_workload: dto.server_workload,
            mappings: None,
            trust_providers: dto.trust_providers,
            access_conditions: dto.access_conditions,
            content_security: dto.content_security,
        };
        return Ok((input, dto.credential_provider.map(Some)));
    }
    let dto: PolicyDto = schema::read(body)?;
    let base = base_input(dto.base, dto.resource_set)?;
    require_id(mode, &base)?;
    let i = PolicyInput {
        base,
        client_workload: dto.client_workload,
        server_workload: dto.server_workload,
        mappings: None,
        trust_providers: dto.trust_providers,
        access_conditions: dto.access_conditions,
        content_security: dto.content_security,
    };
    i.require_workloads(mode)?;
    Ok((i, Some(dto.credential_provider)))
}

fn mapping_for(cp: Option<Uuid>) -> Vec<Mapping> {
    cp.map(|c| Mapping::new(c, MappingType::None, Default::default()))
        .into_iter()
        .collect()
}

fn in_rs(p: &Policy, rs: Uuid) -> Result<()> {
    if p.meta.scope() == rs {
        Ok(())
    } else {
        Err(Error::NotFound)
    }
}

fn several_refused(p: &Policy) -> Result<()> {
    if p.mappings.len() > 1 {
        Err(Error::field("credentialProvider", SEVERAL))
    } else {
        Ok(())
    }
}

const SPEC: ListSpec = ListSpec::new("accessPolicies", Base::Scoped).filters(&[
    ("clientWorkload", Filter::Field("clientWorkload.externalId")),
    ("serverWorkload", Filter::Field("serverWorkload.externalId")),
]);

async fn list(State(app): State<App>, ctx: Ctx, q: QueryPairs) -> Result<Response> {
    let p = ListParams::parse(&q)?;
    let st = app.state();
    let items = st
        .in_rs::<Policy>(Some(ctx.rs))
        .map(|p| to_json(&policy_external(&app, &st, p)))
        .collect();
    Ok(ok(respond(items, &p, &SPEC)?))
}

async fn read(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let st = app.state();
    Ok(match st.policies.get(&ids.one()).filter(|p| p.meta.scope() == ctx.rs) {
        Some(p) => ok(to_json(&policy_external(&app, &st, p))),
        None => no_content(),
    })
}

/// A v1 policy names its provider in `credentialProvider`: the shared v2 checks report it as the
/// first mapping's `credentialProviderId`, which a v1 body does not have (§1.8: the path of the
/// offending field).
fn v1_path(e: Error) -> Error {
    const V2: &str = "credentialProviders[0].credentialProviderId:";
    match e {
        Error::BadRequest(m) if m.starts_with(V2) => {
            Error::BadRequest(format!("credentialProvider:{}", &m[V2.len()..]))
        }
        other => other,
    }
}

async fn create(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let (mut input, cp) = parse(body, Mode::Create)?;
    input.mappings = Some(mapping_for(cp.flatten()));
    let rs = resolve_rs(input.base.resource_set, ctx.rs)?;
    let (st, id, warnings) = create_policy(&app, &ctx, input, rs).await.map_err(v1_path)?;
    let location = format!("/api/v1/access-policies/{id}");
    let r = created(StatusCode::OK, location, to_json(&policy_dto(&st, &st.policies[&id])));
    Ok(with_warnings(r, &warnings))
}

async fn replace(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let (mut input, cp) = parse(body, Mode::Replace)?;
    let id = input.base.external_id.expect("required on replace");
    input.mappings = Some(mapping_for(cp.flatten()));
    // §1.4 rule 3: a PUT body naming another resource set than the header.
    let rs = resolve_rs(input.base.resource_set, ctx.rs)?;
    let (st, warnings) = update_policy(&app, &ctx, id, input, true, |p| {
        in_rs(p, rs)?;
        several_refused(p)
    })
    .await
    .map_err(v1_path)?;
    Ok(with_warnings(
        ok(to_json(&policy_dto(&st, &st.policies[&id]))),
        &warnings,
    ))
}

async fn patch(State(app): State<App>, ctx: Ctx, ids: Ids, JsonBody(body): JsonBody) -> Result<Response> {
    let (mut input, cp) = parse(body, Mode::Patch)?;
    let id = ids.one();
    let given = cp.is_some();
    if let Some(cp) = cp {
        input.mappings = Some(mapping_for(cp));
    }
    let rs = ctx.rs;
    let (st, warnings) = update_policy(&app, &ctx, id, input, false, |p| {
        in_rs(p, rs)?;
        if given { several_refused(p) } else { Ok(()) }
    })
    .await
    .map_err(v1_path)?;
    Ok(with_warnings(
        ok(to_json(&policy_dto(&st, &st.policies[&id]))),
        &warnings,
    ))
}

async fn remove(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let rs = ctx.rs;
    // The spec lists only 204 here: a missing policy (or one in another set) is a no-op.
    match delete_policy(&app, &ctx, ids.one(), |p| in_rs(p, rs)).await {
        Ok(_) | Err(Error::NotFound) => Ok(no_content()),
        Err(e) => Err(e),
    }
}

async fn by_workloads(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let st = app.state();
    let p = for_pair(&st, ids.0[0], ids.0[1])
        .filter(|p| p.meta.scope() == ctx.rs)
        .ok_or(Error::NotFound)?;
    Ok(ok(to_json(&policy_external(&app, &st, &p))))
}

async fn note(State(app): State<App>, ctx: Ctx, ids: Ids, JsonBody(body): JsonBody) -> Result<Response> {
    let rs = ctx.rs;
    add_note(&app, &ctx, ids.one(), body, |p| in_rs(p, rs)).await
}
