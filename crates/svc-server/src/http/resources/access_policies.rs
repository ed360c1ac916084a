//! Access policies v2 (contract §3.8): the body, the DTOs, notes, credential mappings and
//! `getByWorkloadIds`; the rules (§3.8 1–4, compliance settings) and the write units are
//! `service::policies`. The v1 view (§3.9) in `access_policies_v1.rs` shares everything here.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use svc_api::Obj;
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_json, check_rs_unchanged, entity_meta, parse_base};
use crate::app::App;
use crate::domain::credential::CredentialProvider;
use crate::domain::policy::{Mapping, MappingType, Note, Policy, Selectors};
use crate::domain::trust::TrustProvider;
use crate::domain::workload::{ClientWorkload, ServerWorkload};
use crate::domain::{DEFAULT_RESOURCE_SET, Perm};
use crate::error::{Error, Result};
use crate::http::api::{Api, Op, Query, Untyped};
use crate::http::extract::{Ids, JsonBody, QueryPairs};
use crate::http::guard::{Ctx, Scope};
use crate::http::list::{Base, Filter, ListParams, ListSpec, respond};
use crate::http::{created, no_content, ok, with_warnings};
use crate::service::policies::{self, for_pair};
use crate::state::State as Snapshot;

pub fn register(api: &mut Api<'_>) {
    let (p, s) = (Perm::AccessPolicies, Scope::AnySet);
    api.guarded("/api/v2/access-policies", p, s)
        .get(
            list,
            Op::new("List access policies (§3.8)")
                .query(Query::List)
                .list::<Untyped>("entities"),
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
        "/api/v2/access-policies/getByWorkloadIds/{clientWorkloadId}/{serverWorkloadId}",
        p,
        s,
    )
    .get(
        by_workloads,
        Op::new("The policy between two workloads").ok::<Untyped>(200),
    );
    api.guarded("/api/v2/access-policies/{id}", p, s)
        .get(read, Op::new("Read an access policy").ok::<Untyped>(200).empty(204))
        .patch(
            patch,
            Op::new("Patch an access policy").body::<Untyped>().ok::<Untyped>(200),
        )
        .delete(remove, Op::new("Delete an access policy").empty(204));
    api.guarded("/api/v2/access-policies/{id}/notes", p, s)
        .get(
            list_notes,
            Op::new("A policy's notes, newest first")
                .query(Query::List)
                .list::<Untyped>("entities"),
        )
        .post(
            add_note_v2,
            Op::new("Add a note to a policy").body::<Untyped>().ok::<Untyped>(201),
        );
    api.guarded("/api/v2/access-policies/{id}/credential-mappings", p, s)
        .get(
            credential_mappings,
            Op::new("A policy's credential mappings")
                .query(Query::List)
                .list::<Untyped>("entities"),
        );
    super::access_policies_v1::register(api);
}

// ---- presentation ----------------------------------------------------------------------------

/// `PolicyCredentialMappingDTO`: unused selectors are written as `""`.
pub fn mapping_json(m: &Mapping) -> Value {
    let s = |v: &Option<String>| json!(v.clone().unwrap_or_default());
    let sel = m.selectors();
    json!({
        "credentialProviderId": m.credential_provider,
        "mappingType": m.mapping_type.as_str(),
        "accessKeyId": s(&sel.access_key_id),
        "accountName": s(&sel.account_name),
        "headerName": s(&sel.header_name),
        "headerValue": s(&sel.header_value),
        "httpbodyFieldPath": s(&sel.body_field_path),
        "httpbodyFieldValue": s(&sel.body_field_value),
    })
}

/// `CreatePolicyDTO` (write responses).
pub fn create_json(p: &Policy) -> Value {
    let mut o = base_json(&p.meta, true);
    o.insert("clientWorkload".into(), json!(p.client_workload));
    o.insert("serverWorkload".into(), json!(p.server_workload));
    o.insert("trustProviders".into(), json!(p.trust_providers));
    o.insert("accessConditions".into(), json!(p.access_conditions));
    o.insert("contentSecurity".into(), json!(p.content_security));
    o.insert(
        "credentialProviders".into(),
        Value::Array(p.mappings.iter().map(mapping_json).collect()),
    );
    Value::Object(o)
}

fn meta_of<T: crate::state::Record + crate::state::HasMeta>(st: &Snapshot, id: &Uuid) -> Value {
    st.get::<T>(id)
        .map(|v| entity_meta(v.meta()))
        .unwrap_or_else(|| json!({"externalId": id, "name": null, "isActive": false, "tags": []}))
}

/// `GetPolicyDTO` (reads).
pub fn get_json(st: &Snapshot, p: &Policy) -> Value {
    let mut o = base_json(&p.meta, true);
    o.insert(
        "clientWorkload".into(),
        meta_of::<ClientWorkload>(st, &p.client_workload),
    );
    o.insert(
        "serverWorkload".into(),
        meta_of::<ServerWorkload>(st, &p.server_workload),
    );
    o.insert(
        "trustProviders".into(),
        Value::Array(
            p.trust_providers
                .iter()
                .map(|t| meta_of::<TrustProvider>(st, t))
                .collect(),
        ),
    );
    o.insert(
        "credentialProviders".into(),
        Value::Array(
            p.mappings
                .iter()
                .map(|m| meta_of::<CredentialProvider>(st, &m.credential_provider))
                .collect(),
        ),
    );
    o.insert(
        "accessConditions".into(),
        Value::Array(
            p.access_conditions
                .iter()
                .map(|c| meta_of::<crate::domain::condition::AccessCondition>(st, c))
                .collect(),
        ),
    );
    o.insert(
        "contentSecurity".into(),
        Value::Array(
            p.content_security
                .iter()
                .map(|c| meta_of::<crate::domain::condition::ContentSecurity>(st, c))
                .collect(),
        ),
    );
    Value::Object(o)
}

pub fn note_json(n: &Note) -> Value {
    json!({"note": n.note, "createdAt": n.created_at, "createdBy": n.created_by})
}

// ---- input -----------------------------------------------------------------------------------

/// The policy fields of a request (v2 shape; v1 converts into it).
#[derive(Default)]
pub struct PolicyInput {
    pub base: BaseInput,
    pub client_workload: Option<Uuid>,
    pub server_workload: Option<Uuid>,
    pub mappings: Option<Vec<Mapping>>,
    pub trust_providers: Option<Vec<Uuid>>,
    pub access_conditions: Option<Vec<Uuid>>,
    pub content_security: Option<Vec<Uuid>>,
}

/// `^[\p{L}a-zA-Z0-9][\p{L}a-zA-Z0-9._-]*$` (§3.8): ASCII digits, letters of any script; not
/// other scripts' digits or letter-like numbers (`٣`, `Ⅻ`), which `char::is_alphanumeric` takes.
fn selector_ok(s: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || (c.is_alphabetic() && !c.is_numeric());
    let mut chars = s.chars();
    match chars.next() {
        None => true,
        Some(c) if word(c) => chars.all(|c| word(c) || matches!(c, '.' | '_' | '-')),
        Some(_) => false,
    }
}

fn parse_mapping(m: &mut Obj) -> std::result::Result<Mapping, svc_api::FieldError> {
    let cp = m.req_uuid("credentialProviderId")?;
    let names: Vec<&str> = MappingType::ALL.iter().map(|t| t.as_str()).collect();
    let mt = MappingType::parse(&m.req_enum("mappingType", &names)?).unwrap_or(MappingType::None);
    let mut sel = |name: &str| -> std::result::Result<Option<String>, svc_api::FieldError> {
        let v = m.opt_str_len(name, 0, 256)?;
        if let Some(s) = &v {
            let ok = if name == "accessKeyId" {
                s.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
            } else {
                selector_ok(s)
            };
            if !ok {
                let pattern = if name == "accessKeyId" {
                    "^[A-Z0-9]*$"
                } else {
                    "^[\\p{L}a-zA-Z0-9][\\p{L}a-zA-Z0-9._-]*$"
                };
                return Err(svc_api::FieldError::new(m.path(name), format!("must match {pattern}")));
            }
        }
        Ok(v.filter(|s| !s.is_empty()))
    };
    let selectors = Selectors {
        access_key_id: sel("accessKeyId")?,
        account_name: sel("accountName")?,
        header_name: sel("headerName")?,
        header_value: sel("headerValue")?,
        body_field_path: sel("httpbodyFieldPath")?,
        body_field_value: sel("httpbodyFieldValue")?,
    };
    let used: &[&str] = match mt {
        MappingType::None => &[],
        MappingType::AccessKeyId => &["accessKeyId"],
        MappingType::AccountName => &["accountName"],
        MappingType::HttpHeader => &["headerName", "headerValue"],
        MappingType::HttpBody => &["httpbodyFieldPath", "httpbodyFieldValue"],
    };
    let fields = [
        ("accessKeyId", &selectors.access_key_id),
        ("accountName", &selectors.account_name),
        ("headerName", &selectors.header_name),
        ("headerValue", &selectors.header_value),
        ("httpbodyFieldPath", &selectors.body_field_path),
        ("httpbodyFieldValue", &selectors.body_field_value),
    ];
    for (name, v) in fields {
        match (used.contains(&name), v.is_some()) {
            (true, false) => {
                return Err(svc_api::FieldError::new(
                    m.path(name),
                    format!("is required for mappingType {}", mt.as_str()),
                ));
            }
            (false, true) => {
                return Err(svc_api::FieldError::new(
                    m.path(name),
                    format!("must be empty for mappingType {}", mt.as_str()),
                ));
            }
            _ => {}
        }
    }
    Ok(Mapping::new(cp, mt, selectors))
}

/// Reads the v2 body (`CreatePolicyDTO` or `PatchPolicyV2DTO`).
pub fn parse_v2(body: Value, mode: Mode) -> Result<PolicyInput> {
    let mut o = Obj::root(body)?;
    let base = parse_base(&mut o, mode, true)?;
    let i = PolicyInput {
        base,
        client_workload: o.opt_uuid("clientWorkload")?,
        server_workload: o.opt_uuid("serverWorkload")?,
        mappings: o.opt_obj_list("credentialProviders", parse_mapping)?,
        trust_providers: o.opt_uuid_list("trustProviders")?,
        access_conditions: o.opt_uuid_list("accessConditions")?,
        content_security: o.opt_uuid_list("contentSecurity")?,
    };
    o.ignore(&["accessPolicyCount"]);
    o.finish()?;
    i.require_workloads(mode)?;
    Ok(i)
}

impl PolicyInput {
    /// A POST or PUT names both workloads.
    pub fn require_workloads(&self, mode: Mode) -> Result<()> {
        if mode != Mode::Patch {
            if self.client_workload.is_none() {
                return Err(Error::field("clientWorkload", "is required"));
            }
            if self.server_workload.is_none() {
                return Err(Error::field("serverWorkload", "is required"));
            }
        }
        Ok(())
    }

    /// Applies to a policy: all fields (create/replace) or only present ones (patch).
    pub fn apply(&self, p: &mut Policy, full: bool) -> Result<()> {
        if full {
            self.base.apply_full(&mut p.meta);
        } else {
            self.base.apply_patch(&mut p.meta)?;
        }
        if let Some(v) = self.client_workload {
            p.client_workload = v;
        }
        if let Some(v) = self.server_workload {
            p.server_workload = v;
        }
        let list = |given: &Option<Vec<Uuid>>, current: &mut Vec<Uuid>| {
            if let Some(v) = given {
                *current = v.clone();
            } else if full {
                current.clear();
            }
        };
        list(&self.trust_providers, &mut p.trust_providers);
        list(&self.access_conditions, &mut p.access_conditions);
        list(&self.content_security, &mut p.content_security);
        if let Some(m) = &self.mappings {
            p.mappings = m.clone();
        } else if full {
            p.mappings.clear();
        }
        Ok(())
    }
}

/// The policy if it exists and the caller may act on it (route permission in its set). A policy
/// in a set where the caller cannot even read is invisible, as an unknown id (§1.4 rules 4, 5).
pub fn visible(ctx: &Ctx, st: &Snapshot, id: &Uuid) -> Result<Option<Arc<Policy>>> {
    match st.policies.get(id) {
        Some(p) if ctx.caller.can(st, ctx.perm, false, p.meta.scope()) => {
            ctx.check(st, p.meta.scope())?;
            Ok(Some(p.clone()))
        }
        _ => Ok(None),
    }
}

// ---- write units shared with v1 (`service::policies`) -----------------------------------------

/// The caller's permission in a policy's resource set, against the state a unit writes on.
fn readmit(ctx: &Ctx) -> impl Fn(&Snapshot, Uuid) -> Result<()> + '_ {
    |st, rs| ctx.check(st, rs)
}

pub async fn create_policy(
    app: &App,
    ctx: &Ctx,
    input: PolicyInput,
    rs: Uuid,
) -> Result<(Arc<Snapshot>, Uuid, Vec<&'static str>)> {
    let id = input.base.external_id;
    policies::create(app, &ctx.author(), rs, id, readmit(ctx), |p| input.apply(p, true)).await
}

/// Replaces (`full`) or patches a policy after `check` accepted its current state.
pub async fn update_policy(
    app: &App,
    ctx: &Ctx,
    id: Uuid,
    input: PolicyInput,
    full: bool,
    check: impl FnOnce(&Policy) -> Result<()>,
) -> Result<(Arc<Snapshot>, Vec<&'static str>)> {
    policies::update(app, &ctx.author(), id, full, readmit(ctx), |p| {
        check(p)?;
        check_rs_unchanged(input.base.resource_set, p.meta.scope())?;
        input.apply(p, full)
    })
    .await
}

pub async fn delete_policy(app: &App, ctx: &Ctx, id: Uuid, check: impl FnOnce(&Policy) -> Result<()>) -> Result<bool> {
    policies::delete(app, &ctx.author(), id, readmit(ctx), check).await
}

/// `POST …/notes` (`NoteDTO`): `201` with the note.
pub async fn add_note(
    app: &App,
    ctx: &Ctx,
    id: Uuid,
    body: Value,
    check: impl FnOnce(&Policy) -> Result<()>,
) -> Result<Response> {
    let mut o = Obj::root(body)?;
    let text = o.req_str_len("note", 1, 1024)?;
    o.ignore(&["createdAt", "createdBy"]);
    o.finish()?;
    let note = policies::add_note(app, &ctx.author(), id, text, readmit(ctx), check).await?;
    Ok((StatusCode::CREATED, axum::Json(note_json(&note))).into_response())
}

// ---- v2 handlers ------------------------------------------------------------------------------

fn refs_any(item: &Value, field: &str, v: &str) -> bool {
    match &item[field] {
        Value::Array(a) => a
            .iter()
            .any(|e| e["externalId"].as_str().is_some_and(|x| x.eq_ignore_ascii_case(v))),
        o => o["externalId"].as_str().is_some_and(|x| x.eq_ignore_ascii_case(v)),
    }
}

const SPEC: ListSpec = ListSpec::new("entities", Base::Scoped)
    .order("modifiedAt", true)
    .filters(&[
        crate::http::list::RESOURCE_SET_FILTER,
        ("clientWorkload", Filter::Func(|i, v| refs_any(i, "clientWorkload", v))),
        ("serverWorkload", Filter::Func(|i, v| refs_any(i, "serverWorkload", v))),
        (
            "credentialProvider",
            Filter::Func(|i, v| refs_any(i, "credentialProviders", v)),
        ),
        ("trustProvider", Filter::Func(|i, v| refs_any(i, "trustProviders", v))),
        (
            "accessCondition",
            Filter::Func(|i, v| refs_any(i, "accessConditions", v)),
        ),
    ]);

/// `query`: substring of the policy's name or the names of the entities it references.
fn query_match(item: &Value, q: &str) -> bool {
    let q = q.to_lowercase();
    let name = |v: &Value| v["name"].as_str().is_some_and(|n| n.to_lowercase().contains(&q));
    name(item)
        || name(&item["clientWorkload"])
        || name(&item["serverWorkload"])
        || ["trustProviders", "credentialProviders"]
            .iter()
            .any(|f| item[*f].as_array().is_some_and(|a| a.iter().any(name)))
}

async fn list(State(app): State<App>, ctx: Ctx, q: QueryPairs) -> Result<Response> {
    let p = ListParams::parse(&q)?;
    let st = app.state();
    let sets = ctx.readable_sets(&st);
    let mut items: Vec<Value> = st
        .policies
        .values()
        .filter(|p| sets.contains(&p.meta.scope()))
        .map(|p| get_json(&st, p))
        .collect();
    if let Some(query) = q.get("query") {
        items.retain(|i| query_match(i, query));
    }
    Ok(ok(respond(items, &p, &SPEC)?))
}

async fn read(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let st = app.state();
    Ok(match visible(&ctx, &st, &ids.one())? {
        Some(p) => ok(get_json(&st, &p)),
        None => no_content(),
    })
}

async fn create(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse_v2(body, Mode::Create)?;
    let rs = input.base.resource_set.unwrap_or(DEFAULT_RESOURCE_SET);
    let st = app.state_full();
    if !st.resource_set_exists(&rs) {
        return Err(Error::field("resourceSet", "unknown resource set"));
    }
    ctx.check(&st, rs)?;
    let (st, id, warnings) = create_policy(&app, &ctx, input, rs).await?;
    let location = format!("/api/v2/access-policies/{id}");
    let r = created(StatusCode::OK, location, create_json(&st.policies[&id]));
    Ok(with_warnings(r, &warnings))
}

async fn replace(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse_v2(body, Mode::Replace)?;
    let id = input.base.external_id.expect("required on replace");
    let st = app.state_full();
    visible(&ctx, &st, &id)?.ok_or(Error::NotFound)?;
    let (st, warnings) = update_policy(&app, &ctx, id, input, true, |_| Ok(())).await?;
    Ok(with_warnings(ok(create_json(&st.policies[&id])), &warnings))
}

async fn patch(State(app): State<App>, ctx: Ctx, ids: Ids, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse_v2(body, Mode::Patch)?;
    let id = ids.one();
    let st = app.state_full();
    visible(&ctx, &st, &id)?.ok_or(Error::NotFound)?;
    let (st, warnings) = update_policy(&app, &ctx, id, input, false, |_| Ok(())).await?;
    Ok(with_warnings(ok(create_json(&st.policies[&id])), &warnings))
}

async fn remove(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let id = ids.one();
    let st = app.state_full();
    visible(&ctx, &st, &id)?.ok_or(Error::NotFound)?;
    if delete_policy(&app, &ctx, id, |_| Ok(())).await? {
        Ok(no_content())
    } else {
        Err(Error::NotFound)
    }
}

async fn by_workloads(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let st = app.state();
    let p = for_pair(&st, ids.0[0], ids.0[1])
        .filter(|p| ctx.caller.can(&st, ctx.perm, false, p.meta.scope()))
        .ok_or(Error::NotFound)?;
    Ok(ok(get_json(&st, &p)))
}

async fn add_note_v2(State(app): State<App>, ctx: Ctx, ids: Ids, JsonBody(body): JsonBody) -> Result<Response> {
    let id = ids.one();
    let st = app.state_full();
    visible(&ctx, &st, &id)?.ok_or(Error::NotFound)?;
    add_note(&app, &ctx, id, body, |_| Ok(())).await
}

/// A policy's own lists (notes, credential mappings) in their fixed order, paged by `page` and
/// `per-page` as every list (§1.6).
fn fixed_order_page(q: &QueryPairs, items: Vec<Value>, order: Option<&str>) -> Result<Response> {
    let page = crate::http::list::parse_int(q, "page", 1, 1, i32::MAX)?;
    let per_page = crate::http::list::parse_int(q, "per-page", 100, 1, 1000)?;
    let total = items.len();
    let skip = (page as usize - 1).saturating_mul(per_page as usize);
    let items = items.into_iter().skip(skip).take(per_page as usize).collect();
    Ok(ok(svc_api::common::list_wrapper(
        "entities",
        items,
        page,
        per_page,
        order.map(Into::into),
        total,
    )))
}

async fn list_notes(State(app): State<App>, ctx: Ctx, ids: Ids, q: QueryPairs) -> Result<Response> {
    let st = app.state();
    let p = visible(&ctx, &st, &ids.one())?.ok_or(Error::NotFound)?;
    fixed_order_page(
        &q,
        p.notes.iter().rev().map(note_json).collect(),
        Some("createdAt desc"),
    )
}

async fn credential_mappings(State(app): State<App>, ctx: Ctx, ids: Ids, q: QueryPairs) -> Result<Response> {
    let st = app.state();
    let p = visible(&ctx, &st, &ids.one())?.ok_or(Error::NotFound)?;
    fixed_order_page(&q, p.mappings.iter().map(mapping_json).collect(), None)
}

#[cfg(test)]
mod tests {
    /// §3.8's selector pattern: letters of any script and ASCII digits, then also `._-`.
    #[test]
    fn selectors_follow_the_contract_pattern() {
        for ok in ["", "AKIA0", "héllo", "Ωmega.v2", "日本-1", "a_b.c-d"] {
            assert!(super::selector_ok(ok), "{ok}");
        }
        for bad in ["-a", ".a", "a b", "a/b", "٣", "a٣", "Ⅻ", "²"] {
            assert!(!super::selector_ok(bad), "{bad}");
        }
    }
}
