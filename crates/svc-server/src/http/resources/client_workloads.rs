//! Client workloads (contract §3.3) and the identity-type catalogue.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};
use svc_api::Obj;

use super::common::{BaseInput, Mode, base_json, check_rs_unchanged, new_external_id, parse_base, resolve_rs};
use super::scoped::{delete_released, for_update, list_in_rs, read_in_rs, taken};
use crate::app::App;
use crate::domain::identity::{IDENTITY_TYPES, lookup};
use crate::domain::workload::{ClientWorkload, Identity};
use crate::domain::{Kind, Label, Perm};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::extract::{Ids, JsonBody, QueryPairs};
use crate::http::guard::{Ctx, Scope, guarded};
use crate::http::list::{Filter, ListSpec};
use crate::http::{no_content, ok};
use crate::service::refs::RefField;
use crate::service::write::Write;
use crate::state::State as Snapshot;

const CATEGORY: &str = "ClientWorkloads";

pub fn routes(app: &App) -> Router<App> {
    let p = Perm::ClientWorkloads;
    Router::new()
        .route(
            "/api/v1/client-workloads",
            guarded(app, p, Scope::Rs, get(list).post(create).put(replace)),
        )
        .route(
            "/api/v1/client-workloads/identifiers",
            guarded(app, p, Scope::AnySet, get(identifiers)),
        )
        .route(
            "/api/v1/client-workloads/{id}",
            guarded(app, p, Scope::Rs, get(read).patch(patch).delete(remove)),
        )
}

fn has_identity_type(item: &Value, v: &str) -> bool {
    item["identities"].as_array().is_some_and(|a| {
        a.iter()
            .any(|i| i["type"].as_str().is_some_and(|t| t.eq_ignore_ascii_case(v)))
    })
}

fn has_identity_value(item: &Value, v: &str) -> bool {
    item["identities"].as_array().is_some_and(|a| {
        a.iter()
            .any(|i| i["value"].as_str().is_some_and(|t| t.eq_ignore_ascii_case(v)))
    })
}

const SPEC: ListSpec = ListSpec {
    items_key: "clientWorkloads",
    fields: &[
        "externalId",
        "name",
        "description",
        "isActive",
        "createdAt",
        "modifiedAt",
        "createdBy",
        "modifiedBy",
        "resourceSet",
        "enforceSso",
        "type",
        "accessPolicyCount",
    ],
    default_order: ("name", false),
    filters: &[
        ("identityType", Filter::Func(has_identity_type)),
        ("identity", Filter::Func(has_identity_value)),
        ("type", Filter::Field("type")),
    ],
};

pub fn client_json(st: &Snapshot, w: &ClientWorkload) -> Value {
    let mut o = base_json(&w.meta, true);
    let ids: Vec<Value> = w
        .identities
        .iter()
        .map(|i| json!({"type": i.kind, "value": i.value, "key": i.key}))
        .collect();
    o.insert("identities".into(), Value::Array(ids));
    o.insert("enforceSso".into(), json!(w.enforce_sso));
    o.insert("ssoIdentityProviders".into(), json!(w.sso_identity_providers));
    o.insert("type".into(), json!(w.label));
    o.insert(
        "accessPolicyCount".into(),
        json!(st.idx.policy_count(RefField::ClientWorkload, w.meta.id)),
    );
    Value::Object(o)
}

fn parse_identities(o: &mut Obj) -> Result<Option<Vec<Identity>>> {
    let ids = o.opt_obj_list("identities", |i| {
        let kind = i.req_str_len("type", 1, 255)?;
        let value = i.req_str_len("value", 1, 1024)?;
        let key = i.opt_str_len("key", 0, 255)?;
        let Some(ty) = lookup(&kind) else {
            return Err(svc_api::FieldError::new(
                i.path("type"),
                "unknown identity type (see /api/v1/client-workloads/identifiers)",
            ));
        };
        match (ty.name == "oidcIdToken", &key) {
            (true, None) => {
                return Err(svc_api::FieldError::new(i.path("key"), "is required for oidcIdToken"));
            }
            (true, Some(k)) if k.is_empty() => {
                return Err(svc_api::FieldError::new(i.path("key"), "is required for oidcIdToken"));
            }
            (false, Some(_)) => {
                return Err(svc_api::FieldError::new(
                    i.path("key"),
                    "is only allowed for oidcIdToken",
                ));
            }
            _ => {}
        }
        if ty.name == "sourceIPAddress" && crate::net::IpNet::parse(&value).is_none() {
            return Err(svc_api::FieldError::new(
                i.path("value"),
                "must be an IP address or CIDR",
            ));
        }
        Ok(Identity {
            kind: Label::new(&kind),
            value,
            key,
        })
    })?;
    if ids.as_ref().is_some_and(|v| v.len() > 50) {
        return Err(Error::field("identities", "at most 50 identities"));
    }
    Ok(ids)
}

struct Input {
    base: BaseInput,
    identities: Option<Vec<Identity>>,
    enforce_sso: Option<bool>,
    sso: Option<Vec<uuid::Uuid>>,
    label: Option<String>,
}

fn parse(body: Value, mode: Mode) -> Result<Input> {
    let mut o = Obj::root(body)?;
    let base = parse_base(&mut o, mode, true)?;
    let identities = parse_identities(&mut o)?;
    let (enforce_sso, sso, label) = if mode == Mode::Patch {
        (None, None, None)
    } else {
        let e = o.opt_bool("enforceSso")?;
        let s = o.opt_uuid_list("ssoIdentityProviders")?;
        // SSO identity providers are not part of this version: no id can exist yet.
        if s.as_ref().is_some_and(|v| !v.is_empty()) {
            return Err(Error::field("ssoIdentityProviders[0]", "unknown SSO identity provider"));
        }

        let l = o.opt_str_len("type", 0, 64)?;
        (e, s, l)
    };
    o.ignore(&["accessPolicyCount"]);
    o.finish()?;
    Ok(Input {
        base,
        identities,
        enforce_sso,
        sso,
        label,
    })
}

async fn list(State(app): State<App>, ctx: Ctx, q: QueryPairs) -> Result<Response> {
    let st = app.state();
    list_in_rs::<ClientWorkload>(&st, ctx.rs, &q, &SPEC, |w| client_json(&st, w))
}

async fn read(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let st = app.state();
    Ok(read_in_rs::<ClientWorkload>(&st, ids.one(), ctx.rs, |w| {
        client_json(&st, w)
    }))
}

async fn create(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse(body, Mode::Create)?;
    let rs = resolve_rs(input.base.resource_set, ctx.rs)?;
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let id = new_external_id(input.base.external_id, |id| taken::<ClientWorkload>(&w.st, id))?;
    let mut meta = w.new_meta(Kind::ClientWorkload, id, Some(rs), &author).await?;
    input.base.apply_full(&mut meta);
    w.put(ClientWorkload {
        meta,
        identities: input.identities.unwrap_or_default(),
        enforce_sso: input.enforce_sso.unwrap_or(false),
        sso_identity_providers: input.sso.unwrap_or_default(),
        label: input.label,
    });
    w.audit(&author, rs, CATEGORY, Activity::Created, id);
    w.commit().await?;
    Ok(super::workload_created("client-workloads", id))
}

async fn replace(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse(body, Mode::Replace)?;
    let id = input.base.external_id.expect("required on replace");
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let mut cw: ClientWorkload = for_update(&w.st, &id, ctx.rs)?;
    // §1.4 rule 3: a PUT body naming another resource set than the header.
    resolve_rs(input.base.resource_set, ctx.rs)?;
    input.base.apply_full(&mut cw.meta);
    cw.identities = input.identities.unwrap_or_default();
    cw.enforce_sso = input.enforce_sso.unwrap_or(false);
    cw.sso_identity_providers = input.sso.unwrap_or_default();
    cw.label = input.label;
    w.touch_meta(&mut cw.meta, &author);
    w.put(cw);
    w.audit(&author, ctx.rs, CATEGORY, Activity::Updated, id);
    let st = w.commit().await?;
    Ok(ok(client_json(&st, &st.client_workloads[&id])))
}

async fn patch(State(app): State<App>, ctx: Ctx, ids: Ids, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse(body, Mode::Patch)?;
    let id = ids.one();
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let mut cw: ClientWorkload = for_update(&w.st, &id, ctx.rs)?;
    check_rs_unchanged(input.base.resource_set, ctx.rs)?;
    input.base.apply_patch(&mut cw.meta)?;
    if let Some(ids) = input.identities {
        cw.identities = ids;
    }
    w.touch_meta(&mut cw.meta, &author);
    w.put(cw);
    w.audit(&author, ctx.rs, CATEGORY, Activity::Patched, id);
    let st = w.commit().await?;
    Ok(ok(client_json(&st, &st.client_workloads[&id])))
}

async fn remove(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let id = ids.one();
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    if delete_released::<ClientWorkload>(&mut w, &author, ctx.rs, CATEGORY, id, RefField::ClientWorkload)?.is_none() {
        return Err(Error::NotFound);
    }
    w.commit().await?;
    Ok(no_content())
}

/// `GET /api/v1/client-workloads/identifiers`: the identity-type catalogue. It belongs to no
/// resource set: `Client Workloads` read in any resource set may read it.
async fn identifiers() -> Result<Response> {
    let items: Vec<Value> = IDENTITY_TYPES
        .iter()
        .map(|t| json!({"name": t.name, "displayName": t.display_name, "environmentPath": t.environment_path, "isSupported": true}))
        .collect();
    Ok(ok(Value::Array(items)))
}
