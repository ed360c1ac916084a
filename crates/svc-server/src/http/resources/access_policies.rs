//! Access policies v2 (contract §3.8): the body, the DTOs, notes, credential mappings and
//! `getByWorkloadIds`; the rules (§3.8 1–4, compliance settings) and the write units are
//! `service::policies`. The v1 view (§3.9) in `access_policies_v1.rs` shares everything here.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use svc_api::common::EntityMeta;
use svc_api::mgmt::{
    CreatePolicyDto, GetPolicyDto, MappingType as MappingTypeDto, PatchPolicyV2Dto, PolicyCredentialMappingDto,
    PolicyNoteDto,
};
use svc_api::{FieldError, schema};
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_dto, base_input, check_rs_unchanged, patch_input};
use super::crud::to_json;
use crate::app::App;
use crate::domain::credential::CredentialProvider;
use crate::domain::policy::{Mapping, MappingType, Note, Policy, Selectors};
use crate::domain::trust::TrustProvider;
use crate::domain::workload::{ClientWorkload, ServerWorkload};
use crate::domain::{DEFAULT_RESOURCE_SET, Meta, Perm};
use crate::error::{Error, Result};
use crate::http::api::{Api, Op, Query};
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
                .list::<GetPolicyDto>("entities"),
        )
        .post(
            create,
            Op::new("Create an access policy")
                .body::<CreatePolicyDto>()
                .ok::<CreatePolicyDto>(200),
        )
        .put(
            replace,
            Op::new("Replace an access policy")
                .body::<CreatePolicyDto>()
                .ok::<CreatePolicyDto>(200),
        );
    api.guarded(
        "/api/v2/access-policies/getByWorkloadIds/{clientWorkloadId}/{serverWorkloadId}",
        p,
        s,
    )
    .get(
        by_workloads,
        Op::new("The policy between two workloads").ok::<GetPolicyDto>(200),
    );
    api.guarded("/api/v2/access-policies/{id}", p, s)
        .get(
            read,
            Op::new("Read an access policy").ok::<GetPolicyDto>(200).empty(204),
        )
        .patch(
            patch,
            Op::new("Patch an access policy")
                .body::<PatchPolicyV2Dto>()
                .ok::<CreatePolicyDto>(200),
        )
        .delete(remove, Op::new("Delete an access policy").empty(204));
    api.guarded("/api/v2/access-policies/{id}/notes", p, s)
        .get(
            list_notes,
            Op::new("A policy's notes, newest first")
                .query(Query::List)
                .list::<PolicyNoteDto>("entities"),
        )
        .post(
            add_note_v2,
            Op::new("Add a note to a policy")
                .body::<PolicyNoteDto>()
                .ok::<PolicyNoteDto>(201),
        );
    api.guarded("/api/v2/access-policies/{id}/credential-mappings", p, s)
        .get(
            credential_mappings,
            Op::new("A policy's credential mappings")
                .query(Query::List)
                .list::<PolicyCredentialMappingDto>("entities"),
        );
    super::access_policies_v1::register(api);
}

// ---- presentation ----------------------------------------------------------------------------

fn mapping_type_dto(t: MappingType) -> MappingTypeDto {
    match t {
        MappingType::None => MappingTypeDto::None,
        MappingType::AccountName => MappingTypeDto::AccountName,
        MappingType::HttpHeader => MappingTypeDto::HttpHeader,
        MappingType::HttpBody => MappingTypeDto::HttpBody,
        MappingType::AccessKeyId => MappingTypeDto::AccessKeyId,
    }
}

fn mapping_type(t: MappingTypeDto) -> MappingType {
    match t {
        MappingTypeDto::None => MappingType::None,
        MappingTypeDto::AccountName => MappingType::AccountName,
        MappingTypeDto::HttpHeader => MappingType::HttpHeader,
        MappingTypeDto::HttpBody => MappingType::HttpBody,
        MappingTypeDto::AccessKeyId => MappingType::AccessKeyId,
    }
}

/// `PolicyCredentialMappingDTO`: unused selectors are written as `""`.
pub fn mapping_dto(m: &Mapping) -> PolicyCredentialMappingDto {
    let s = |v: &Option<String>| Some(v.clone().unwrap_or_default());
    let sel = m.selectors();
    PolicyCredentialMappingDto {
        credential_provider_id: m.credential_provider,
        mapping_type: mapping_type_dto(m.mapping_type),
        access_key_id: s(&sel.access_key_id),
        account_name: s(&sel.account_name),
        header_name: s(&sel.header_name),
        header_value: s(&sel.header_value),
        httpbody_field_path: s(&sel.body_field_path),
        httpbody_field_value: s(&sel.body_field_value),
    }
}

/// `CreatePolicyDTO` (write responses).
pub fn create_dto(p: &Policy) -> CreatePolicyDto {
    CreatePolicyDto {
        base: base_dto(&p.meta),
        resource_set: Some(p.meta.scope()),
        client_workload: Some(p.client_workload),
        server_workload: Some(p.server_workload),
        credential_providers: Some(p.mappings.iter().map(mapping_dto).collect()),
        trust_providers: Some(p.trust_providers.clone()),
        access_conditions: Some(p.access_conditions.clone()),
        content_security: Some(p.content_security.clone()),
        access_policy_count: None,
    }
}

/// `EntityMetaDTO`.
pub fn meta_dto(m: &Meta) -> EntityMeta {
    EntityMeta {
        external_id: m.id,
        name: Some(m.name.clone()),
        is_active: m.active,
        tags: m.tags.clone(),
    }
}

/// The `EntityMetaDTO` of the entity `id` names; an entity deleted since: its id alone.
fn meta_of<T: crate::state::Record + crate::state::HasMeta>(st: &Snapshot, id: &Uuid) -> EntityMeta {
    st.get::<T>(id)
        .map(|v| meta_dto(v.meta()))
        .unwrap_or_else(|| EntityMeta {
            external_id: *id,
            name: None,
            is_active: false,
            tags: Vec::new(),
        })
}

/// `GetPolicyDTO` (reads).
pub fn get_dto(st: &Snapshot, p: &Policy) -> GetPolicyDto {
    GetPolicyDto {
        base: base_dto(&p.meta),
        resource_set: Some(p.meta.scope()),
        client_workload: meta_of::<ClientWorkload>(st, &p.client_workload),
        server_workload: meta_of::<ServerWorkload>(st, &p.server_workload),
        trust_providers: p
            .trust_providers
            .iter()
            .map(|t| meta_of::<TrustProvider>(st, t))
            .collect(),
        credential_providers: p
            .mappings
            .iter()
            .map(|m| meta_of::<CredentialProvider>(st, &m.credential_provider))
            .collect(),
        access_conditions: p
            .access_conditions
            .iter()
            .map(|c| meta_of::<crate::domain::condition::AccessCondition>(st, c))
            .collect(),
        content_security: p
            .content_security
            .iter()
            .map(|c| meta_of::<crate::domain::condition::ContentSecurity>(st, c))
            .collect(),
    }
}

/// `PolicyNoteDTO`.
pub fn note_dto(n: &Note) -> PolicyNoteDto {
    PolicyNoteDto {
        note: n.note.clone(),
        created_at: n.created_at,
        created_by: n.created_by.as_ref().map(|l| l.to_string()),
    }
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

/// A mapping's rules its schema cannot state: the selectors' patterns, then which selectors its
/// type uses (required) and which it does not (null or empty). `at`: `credentialProviders[i]`.
fn parse_mapping(at: &str, m: PolicyCredentialMappingDto) -> std::result::Result<Mapping, FieldError> {
    let mt = mapping_type(m.mapping_type);
    let path = |name: &str| format!("{at}.{name}");
    let sel = |name: &str, v: Option<String>| -> std::result::Result<Option<String>, FieldError> {
        if let Some(s) = &v {
            let (ok, pattern) = if name == "accessKeyId" {
                (
                    s.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()),
                    "^[A-Z0-9]*$",
                )
            } else {
                (selector_ok(s), "^[\\p{L}a-zA-Z0-9][\\p{L}a-zA-Z0-9._-]*$")
            };
            if !ok {
                return Err(FieldError::new(path(name), format!("must match {pattern}")));
            }
        }
        Ok(v.filter(|s| !s.is_empty()))
    };
    let selectors = Selectors {
        access_key_id: sel("accessKeyId", m.access_key_id)?,
        account_name: sel("accountName", m.account_name)?,
        header_name: sel("headerName", m.header_name)?,
        header_value: sel("headerValue", m.header_value)?,
        body_field_path: sel("httpbodyFieldPath", m.httpbody_field_path)?,
        body_field_value: sel("httpbodyFieldValue", m.httpbody_field_value)?,
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
                return Err(FieldError::new(
                    path(name),
                    format!("is required for mappingType {}", mt.as_str()),
                ));
            }
            (false, true) => {
                return Err(FieldError::new(
                    path(name),
                    format!("must be empty for mappingType {}", mt.as_str()),
                ));
            }
            _ => {}
        }
    }
    Ok(Mapping::new(m.credential_provider_id, mt, selectors))
}

fn parse_mappings(given: Option<Vec<PolicyCredentialMappingDto>>) -> Result<Option<Vec<Mapping>>> {
    let Some(given) = given else { return Ok(None) };
    let mut out = Vec::with_capacity(given.len());
    for (i, m) in given.into_iter().enumerate() {
        out.push(parse_mapping(&format!("credentialProviders[{i}]"), m)?);
    }
    Ok(Some(out))
}

/// A PUT names the policy by `externalId`.
pub fn require_id(mode: Mode, base: &BaseInput) -> Result<()> {
    if mode == Mode::Replace && base.external_id.is_none() {
        return Err(Error::field("externalId", "is required"));
    }
    Ok(())
}

/// Reads the v2 POST or PUT body (`CreatePolicyDTO`).
pub fn parse_v2(body: Value, mode: Mode) -> Result<PolicyInput> {
    let dto: CreatePolicyDto = schema::read(body)?;
    let base = base_input(dto.base, dto.resource_set)?;
    require_id(mode, &base)?;
    let i = PolicyInput {
        base,
        client_workload: dto.client_workload,
        server_workload: dto.server_workload,
        mappings: parse_mappings(dto.credential_providers)?,
        trust_providers: dto.trust_providers,
        access_conditions: dto.access_conditions,
        content_security: dto.content_security,
    };
    i.require_workloads(mode)?;
    Ok(i)
}

/// Reads the v2 PATCH body (`PatchPolicyV2DTO`).
pub fn parse_v2_patch(body: Value) -> Result<PolicyInput> {
    let dto: PatchPolicyV2Dto = schema::read(body)?;
    Ok(PolicyInput {
        base: BaseInput {
            resource_set: dto.resource_set,
            ..patch_input(dto.patch)?
        },
        client_workload: dto.client_workload,
        server_workload: dto.server_workload,
        mappings: parse_mappings(dto.credential_providers)?,
        trust_providers: dto.trust_providers,
        access_conditions: dto.access_conditions,
        content_security: dto.content_security,
    })
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

/// `POST …/notes` (`PolicyNoteDTO`): `201` with the note.
pub async fn add_note(
    app: &App,
    ctx: &Ctx,
    id: Uuid,
    body: Value,
    check: impl FnOnce(&Policy) -> Result<()>,
) -> Result<Response> {
    let text = schema::read::<PolicyNoteDto>(body)?.note;
    let note = policies::add_note(app, &ctx.author(), id, text, readmit(ctx), check).await?;
    Ok((StatusCode::CREATED, axum::Json(to_json(&note_dto(&note)))).into_response())
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
        .map(|p| to_json(&get_dto(&st, p)))
        .collect();
    if let Some(query) = q.get("query") {
        items.retain(|i| query_match(i, query));
    }
    Ok(ok(respond(items, &p, &SPEC)?))
}

async fn read(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let st = app.state();
    Ok(match visible(&ctx, &st, &ids.one())? {
        Some(p) => ok(to_json(&get_dto(&st, &p))),
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
    let r = created(StatusCode::OK, location, to_json(&create_dto(&st.policies[&id])));
    Ok(with_warnings(r, &warnings))
}

async fn replace(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse_v2(body, Mode::Replace)?;
    let id = input.base.external_id.expect("required on replace");
    let st = app.state_full();
    visible(&ctx, &st, &id)?.ok_or(Error::NotFound)?;
    let (st, warnings) = update_policy(&app, &ctx, id, input, true, |_| Ok(())).await?;
    Ok(with_warnings(ok(to_json(&create_dto(&st.policies[&id]))), &warnings))
}

async fn patch(State(app): State<App>, ctx: Ctx, ids: Ids, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse_v2_patch(body)?;
    let id = ids.one();
    let st = app.state_full();
    visible(&ctx, &st, &id)?.ok_or(Error::NotFound)?;
    let (st, warnings) = update_policy(&app, &ctx, id, input, false, |_| Ok(())).await?;
    Ok(with_warnings(ok(to_json(&create_dto(&st.policies[&id]))), &warnings))
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
    Ok(ok(to_json(&get_dto(&st, &p))))
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
        p.notes.iter().rev().map(|n| to_json(&note_dto(n))).collect(),
        Some("createdAt desc"),
    )
}

async fn credential_mappings(State(app): State<App>, ctx: Ctx, ids: Ids, q: QueryPairs) -> Result<Response> {
    let st = app.state();
    let p = visible(&ctx, &st, &ids.one())?.ok_or(Error::NotFound)?;
    fixed_order_page(&q, p.mappings.iter().map(|m| to_json(&mapping_dto(m))).collect(), None)
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
