//! Access policies v1 (deprecated, contract §3.9): a view of the v2 policy with at most one
//! credential provider, scoped by `X-Svc-ResourceSet`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use svc_api::Obj;
use uuid::Uuid;

use super::access_conditions::v1_condition_json;
use super::access_policies::{PolicyInput, add_note, create_policy, delete_policy, note_json, update_policy};
use super::client_workloads::client_json;
use super::common::{Mode, base_json, for_reader, parse_base, reader, rendered, rendered_or_null, resolve_rs};
use super::content_security::cs_json;
use super::server_workloads::server_json;
use super::trust_providers::trust_json;
use crate::app::App;
use crate::domain::Perm;
use crate::domain::condition::{AccessCondition, ContentSecurity};
use crate::domain::credential::CredentialProvider;
use crate::domain::policy::{Mapping, MappingType, Policy};
use crate::domain::trust::TrustProvider;
use crate::domain::workload::{ClientWorkload, ServerWorkload};
use crate::error::{Error, Result};
use crate::http::api::{Api, Op, Query, Untyped};
use crate::http::extract::{Ids, JsonBody, QueryPairs};
use crate::http::guard::{Ctx, Scope};
use crate::http::list::{Base, Filter, ListParams, ListSpec, respond};
use crate::http::{created, no_content, ok, with_warnings};
use crate::service::policies::for_pair;
use crate::state::State as Snapshot;

const SEVERAL: &str = "policy has several credential providers; use /api/v2";

pub fn register(api: &mut Api<'_>) {
    let (p, s) = (Perm::AccessPolicies, Scope::Rs);
    api.guarded("/api/v1/access-policies", p, s)
        .get(
            list,
            Op::new("List access policies (§3.9, deprecated)")
                .query(Query::List)
                .list::<Untyped>("accessPolicies"),
        )
        .post(
            create,
            Op::new("Create an access policy").body::<Untyped>().ok::<Untyped>(200),
        )
        .put(
            replace,
            Op::new("Replace an access policy").body::<Untyped>().ok::<Untyped>(200),
        );
    api.guarded(
        "/api/v1/access-policies/getByWorkloadIds/{clientWorkloadId}/{serverWorkloadId}",
        p,
        s,
    )
    .get(
        by_workloads,
        Op::new("The policy between two workloads").ok::<Untyped>(200),
    );
    api.guarded("/api/v1/access-policies/{id}", p, s)
        .get(read, Op::new("Read an access policy").ok::<Untyped>(200).empty(204))
        .patch(
            patch,
            Op::new("Patch an access policy").body::<Untyped>().ok::<Untyped>(200),
        )
        .delete(remove, Op::new("Delete an access policy").empty(204));
    api.guarded("/api/v1/access-policies/{id}/notes", p, s).post(
        note,
        Op::new("Add a note to a policy").body::<Untyped>().ok::<Untyped>(201),
    );
}

fn single_cp(p: &Policy) -> Option<Uuid> {
    match p.mappings.as_slice() {
        [m] => Some(m.credential_provider),
        _ => None,
    }
}

/// `WorkloadExternalDTO`: a summary of a workload with the policy's providers.
fn workload_summary(st: &Snapshot, p: &Policy, server: bool) -> Value {
    // The workload's base block, type and (a server's) endpoint, if it still exists.
    let (id, found) = if server {
        let w = st.server_workloads.get(&p.server_workload);
        let endpoint = |w: &ServerWorkload| Some(super::server_workloads::endpoint_json(&w.endpoint));
        (p.server_workload, w.map(|w| (&w.meta, w.label.clone(), endpoint(w))))
    } else {
        let w = st.client_workloads.get(&p.client_workload);
        (p.client_workload, w.map(|w| (&w.meta, w.label.clone(), None)))
    };
    let (name, active, label, endpoint) = match found {
        Some((m, label, endpoint)) => (Some(m.name.clone()), m.active, label, endpoint),
        None => (None, false, None, None),
    };
    let tps: Vec<Value> = p
        .trust_providers
        .iter()
        .map(|t| json!({"externalId": t, "name": st.trust_providers.get(t).map(|x| x.meta.name.clone())}))
        .collect();
    let cp = single_cp(p);
    let mut o = json!({
        "externalId": id,
        "name": name,
        "isActive": active,
        "type": label,
        "trustProviders": tps,
        "credentialProviderId": cp,
        "credentialProviderText": cp.and_then(|c| st.credential_providers.get(&c)).map(|c| c.meta.name.clone()),
    });
    if server {
        o["serviceEndpoint"] = endpoint.unwrap_or(Value::Null);
    }
    o
}

/// `PolicyDTO` (write responses).
fn policy_dto(st: &Snapshot, p: &Policy) -> Value {
    let mut o = base_json(&p.meta, true);
    o.insert("clientWorkload".into(), json!(p.client_workload));
    o.insert("serverWorkload".into(), json!(p.server_workload));
    o.insert("credentialProvider".into(), json!(single_cp(p)));
    o.insert("trustProviders".into(), json!(p.trust_providers));
    o.insert("accessConditions".into(), json!(p.access_conditions));
    o.insert("contentSecurity".into(), json!(p.content_security));
    o.insert("clientWorkloadDetails".into(), workload_summary(st, p, false));
    o.insert("serverWorkloadDetails".into(), workload_summary(st, p, true));
    o.insert(
        "policyNotes".into(),
        Value::Array(p.notes.iter().map(note_json).collect()),
    );
    Value::Object(o)
}

/// `PolicyExternalDTO` (reads): referenced entities expanded — those the caller may read by
/// itself; the others as their EntityMetaDTO (issue 31).
fn policy_external(app: &App, st: &Snapshot, p: &Policy) -> Value {
    let may = reader(app, st);
    let mut o = base_json(&p.meta, true);
    let client =
        rendered_or_null::<ClientWorkload>(st, &p.client_workload, |w| for_reader(&may, w, |w| client_json(st, w)));
    o.insert("clientWorkload".into(), client);
    let server =
        rendered_or_null::<ServerWorkload>(st, &p.server_workload, |w| for_reader(&may, w, |w| server_json(st, w)));
    o.insert("serverWorkload".into(), server);
    let tps = rendered::<TrustProvider>(st, &p.trust_providers, |t| {
        for_reader(&may, t, |t| trust_json(app, st, t, None))
    });
    o.insert("trustProviders".into(), tps);
    let acs = rendered::<AccessCondition>(st, &p.access_conditions, |c| {
        for_reader(&may, c, |c| v1_condition_json(st, c, &may))
    });
    o.insert("accessConditions".into(), acs);
    let css = rendered::<ContentSecurity>(st, &p.content_security, |c| for_reader(&may, c, |c| cs_json(st, c)));
    o.insert("contentSecurity".into(), css);
    let cp = single_cp(p).and_then(|c| st.get::<CredentialProvider>(&c)).map(|c| {
        for_reader(&may, c.as_ref(), |c| {
            super::credential_providers::provider_v1_json(st, &app.cfg, c)
        })
    });
    o.insert("credentialProvider".into(), cp.unwrap_or(Value::Null));
    o.insert(
        "policyNotes".into(),
        Value::Array(p.notes.iter().map(note_json).collect()),
    );
    Value::Object(o)
}

fn parse(body: Value, mode: Mode) -> Result<(PolicyInput, Option<Option<Uuid>>)> {
    let mut o = Obj::root(body)?;
    let base = parse_base(&mut o, mode, true)?;
    let client_workload = o.opt_uuid("clientWorkload")?;
    let server_workload = o.opt_uuid("serverWorkload")?;
    // `credentialProvider`: absent (PATCH: unchanged) vs. given.
    let cp_given = o.has("credentialProvider");
    let cp = o.opt_uuid("credentialProvider")?;
    let i = PolicyInput {
        base,
        client_workload,
        server_workload,
        mappings: None,
        trust_providers: o.opt_uuid_list("trustProviders")?,
        access_conditions: o.opt_uuid_list("accessConditions")?,
        content_security: o.opt_uuid_list("contentSecurity")?,
    };
    o.ignore(&[
        "clientWorkloadDetails",
        "serverWorkloadDetails",
        "policyNotes",
        "accessPolicyCount",
    ]);
    o.finish()?;
    i.require_workloads(mode)?;
    let cp = if mode == Mode::Patch && !cp_given {
        None
    } else {
        Some(cp)
    };
    Ok((i, cp))
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
        .map(|p| policy_external(&app, &st, p))
        .collect();
    Ok(ok(respond(items, &p, &SPEC)?))
}

async fn read(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let st = app.state();
    Ok(match st.policies.get(&ids.one()).filter(|p| p.meta.scope() == ctx.rs) {
        Some(p) => ok(policy_external(&app, &st, p)),
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
    let r = created(StatusCode::OK, location, policy_dto(&st, &st.policies[&id]));
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
    Ok(with_warnings(ok(policy_dto(&st, &st.policies[&id])), &warnings))
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
    Ok(with_warnings(ok(policy_dto(&st, &st.policies[&id])), &warnings))
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
    Ok(ok(policy_external(&app, &st, &p)))
}

async fn note(State(app): State<App>, ctx: Ctx, ids: Ids, JsonBody(body): JsonBody) -> Result<Response> {
    let rs = ctx.rs;
    add_note(&app, &ctx, ids.one(), body, |p| in_rs(p, rs)).await
}
