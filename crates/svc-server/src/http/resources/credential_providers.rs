//! Credential providers v2 (contract §3.5) and the deprecated v1 view (§3.6). Both address the same
//! stored entity: v2 puts the variant fields next to the base fields, v1 carries them as JSON text
//! in `providerDetailJSON`. Secret fields are write-only.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use svc_api::mgmt::{
    CredentialProviderCommon, CredentialProviderDto, CredentialProviderFields, CredentialProviderPatchDto,
    CredentialProviderType, CredentialProviderUiDto, CredentialProviderV1PatchDto, CredentialProviderV2Dto,
};
use svc_api::{GenericResponse, schema};
use uuid::Uuid;

use super::common::{BaseInput, base_dto, base_input, check_rs_unchanged, patch_input, resolve_rs};
use super::crud::{count, discriminator_kept, to_json};
use super::scoped::{delete_released, find, for_update, list_in_rs, read_in_rs, taken};
use crate::app::App;
use crate::config::Config;
use crate::credential::types::{self, TypeSpec};
use crate::credential::{authorization_code, cib_account};
use crate::domain::credential::{CredentialProvider, SecretFields};
use crate::domain::{Kind, Perm};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::api::{Api, Op, Query};
use crate::http::extract::{Client, Ids, JsonBody, QueryPairs};
use crate::http::guard::{Ctx, Scope};
use crate::http::list::{Base, ListSpec, field_filter};
use crate::http::{created, no_content, ok};
use crate::service::refs::RefField;
use crate::service::write::{Write, new_external_id};
use crate::state::State as Snapshot;

const CATEGORY: &str = "CredentialProviders";

pub fn register(api: &mut Api<'_>) {
    let (p, s) = (Perm::CredentialProviders, Scope::Rs);
    type V2 = CredentialProviderV2Dto;
    type V1 = CredentialProviderUiDto;
    api.guarded("/api/v2/credential-providers", p, s)
        .get(
            list::<ApiV2>,
            Op::new("List credential providers (§3.5)")
                .query(Query::List)
                .list::<V2>("credentialProviders"),
        )
        .post(
            create::<ApiV2>,
            Op::new("Create a credential provider").body::<V2>().ok::<V2>(201),
        )
        .put(
            replace::<ApiV2>,
            Op::new("Replace a credential provider").body::<V2>().ok::<V2>(200),
        );
    api.guarded("/api/v2/credential-providers/{id}", p, s)
        .get(
            read::<ApiV2>,
            Op::new("Read a credential provider").ok::<V2>(200).empty(204),
        )
        .patch(
            patch::<ApiV2>,
            Op::new("Patch a credential provider")
                .body::<CredentialProviderPatchDto>()
                .ok::<V2>(200),
        )
        .delete(remove::<ApiV2>, Op::new("Delete a credential provider").empty(204));
    api.guarded("/api/v2/credential-providers/{id}/verification", p, s).get(
        verification,
        Op::new("Verify a credential provider: one real fetch (`success` says whether a credential was obtained)")
            .ok::<GenericResponse>(200),
    );
    api.guarded("/api/v1/credential-providers", p, s)
        .get(
            list::<ApiV1>,
            Op::new("List credential providers (§3.6, deprecated)")
                .query(Query::List)
                .list::<V1>("credentialProviders"),
        )
        .post(
            create::<ApiV1>,
            Op::new("Create a credential provider")
                .body::<CredentialProviderDto>()
                .ok::<V1>(201),
        )
        .put(
            replace::<ApiV1>,
            Op::new("Replace a credential provider")
                .body::<CredentialProviderDto>()
                .ok::<V1>(201),
        );
    api.guarded("/api/v1/credential-providers/{id}", p, s)
        .get(
            read::<ApiV1>,
            Op::new("Read a credential provider").ok::<V1>(200).empty(204),
        )
        .patch(
            patch::<ApiV1>,
            Op::new("Patch a credential provider")
                .body::<CredentialProviderV1PatchDto>()
                .ok::<V1>(201),
        )
        .delete(remove::<ApiV1>, Op::new("Delete a credential provider").empty(204));
    // `authorize` is a write though it is a GET.
    for path in [
        "/api/v2/credential-providers/{id}/authorize",
        "/api/v1/credential-providers/{id}/authorize",
    ] {
        api.guarded(path, p, s).as_write(true).get(
            authorize,
            Op::new("Start the admin consent (§3.5.4): 302 to the authorization server").redirect(),
        );
    }
    api.public("/api/v1/credential-providers/{id}/callback").get(
        callback,
        Op::new(
            "The admin consent's callback (§3.5.4): 302 to finalCallbackUrl when set, else 200; \
             400 when the state is unknown or the authorization failed",
        )
        .query(Query::Callback)
        .ok::<GenericResponse>(200)
        .redirect(),
    );
}

/// Both views' list.
const SPEC: ListSpec = ListSpec::new("credentialProviders", Base::Scoped)
    .fields(&[
        "type",
        "lifetimeTimeSpanSeconds",
        "lifetimeExpiration",
        "accessPolicyCount",
    ])
    .filters(&[field_filter("type")]);

/// Where v1's variant fields are, and what a v1 error about one of them starts with.
const DETAIL: &str = "providerDetailJSON";

fn spec_of(kind: CredentialProviderType) -> Result<&'static TypeSpec> {
    types::spec(kind.as_str()).ok_or_else(|| Error::internal("a credential provider type without its spec"))
}

fn stored_kind(p: &CredentialProvider) -> Result<CredentialProviderType> {
    CredentialProviderType::parse(&p.cp_type).ok_or_else(|| Error::internal("a stored provider of an unknown type"))
}

fn common_dto(st: &Snapshot, p: &CredentialProvider) -> CredentialProviderCommon {
    CredentialProviderCommon {
        base: base_dto(&p.meta),
        resource_set: Some(p.meta.scope()),
        lifetime_time_span_seconds: Some(p.lifetime_time_span_seconds),
        lifetime_expiration: p.lifetime_expiration,
        access_policy_count: count(st.idx.policy_count(RefField::CredentialProvider, p.meta.id)),
    }
}

/// `CredentialProviderV2DTO`: the variant of the provider's type, secrets `null`.
pub fn provider_v2_dto(st: &Snapshot, cfg: &Config, p: &CredentialProvider) -> CredentialProviderV2Dto {
    CredentialProviderV2Dto::from_parts(common_dto(st, p), types::fields_of(p, cfg))
}

/// `CredentialProviderUIDTO` (v1): the type's fields as JSON text, secrets left out.
pub fn provider_v1_dto(st: &Snapshot, cfg: &Config, p: &CredentialProvider) -> CredentialProviderUiDto {
    let fields = types::fields_of(p, cfg);
    let kind = fields.kind();
    let mut detail = to_json(&fields);
    if let (Some(m), Some(spec)) = (detail.as_object_mut(), types::spec(&p.cp_type)) {
        for s in spec.secret_fields {
            m.remove(*s);
        }
    }
    let role = match &fields {
        CredentialProviderFields::SvcAccessToken(f) => Some(f.role_id),
        _ => None,
    };
    let common = common_dto(st, p);
    CredentialProviderUiDto {
        provider: CredentialProviderDto {
            base: common.base,
            resource_set: common.resource_set,
            kind,
            role_id: role,
            lifetime_time_span_seconds: common.lifetime_time_span_seconds,
            lifetime_expiration: common.lifetime_expiration,
            provider_detail_json: Some(detail.to_string()),
            access_policy_count: common.access_policy_count,
        },
    }
}

/// Secret fields given in a request: (wire name, value).
type GivenSecrets = Vec<(&'static str, String)>;

/// A POST or PUT body reduced to what both API versions carry.
struct Input {
    base: BaseInput,
    kind: CredentialProviderType,
    lifetime: Option<i32>,
    config: Map<String, Value>,
    secrets: GivenSecrets,
    /// v1: the effective `roleId` is the top-level field, not one inside `providerDetailJSON`
    /// (an error about it names `roleId`, not `providerDetailJSON.roleId`).
    role_top: bool,
}

/// A PATCH body (`CredentialProviderPatchDTO`; v1 also `roleId`).
struct PatchInput {
    base: BaseInput,
    kind: Option<String>,
    lifetime: Option<i32>,
    /// `providerDetailJSON` text, read against the stored type.
    detail: Option<String>,
    /// v1: the top-level `roleId`.
    role: Option<Uuid>,
}

/// `providerDetailJSON`'s text as JSON.
fn detail_value(text: &str) -> Result<Value> {
    match serde_json::from_str(text) {
        Ok(Value::Null) => Err(Error::field(DETAIL, "must be an object, not null")),
        Ok(v) => Ok(v),
        Err(e) => Err(Error::field(DETAIL, format!("must be JSON text of an object ({e})"))),
    }
}

/// v1's `providerDetailJSON` with v1's top-level `roleId`, which mirrors `svc-access-token.roleId`:
/// it goes into the variant fields (unless `providerDetailJSON` names one too); for other types a
/// non-null `roleId` is refused. Also says whether the top-level value is the one that applies.
fn detail_with_role(
    text: Option<&str>,
    role: Option<Uuid>,
    kind: CredentialProviderType,
) -> Result<(Option<Value>, bool)> {
    if role.is_some() && kind != CredentialProviderType::SvcAccessToken {
        return Err(Error::field("roleId", "applies only to svc-access-token providers"));
    }
    let mut detail = text.map(detail_value).transpose()?;
    let Some(role) = role else {
        return Ok((detail, false));
    };
    let mut top = false;
    if let Some(m) = detail.get_or_insert_with(|| json!({})).as_object_mut()
        && m.get("roleId").is_none_or(Value::is_null)
    {
        m.insert("roleId".into(), json!(role));
        top = true;
    }
    Ok((detail, top))
}

/// Where a provider's variant fields came from, for the paths of its errors.
#[derive(Clone, Copy)]
enum Fields {
    /// A v2 body: the fields are top-level.
    Body,
    /// `providerDetailJSON` (v1 bodies, PATCH): an error names a field by its path inside it
    /// (§3.6: `providerDetailJSON.<field>: …`), except `roleId` when `role_top`: the value that
    /// applies came from v1's top-level `roleId`.
    Detail { role_top: bool },
}

impl Fields {
    /// `in_detail`: the fields came in `providerDetailJSON` (a v1 body, a PATCH's detail text).
    fn of(in_detail: bool, role_top: bool) -> Fields {
        if in_detail {
            Fields::Detail { role_top }
        } else {
            Fields::Body
        }
    }

    /// `e` with the path its field has in the request.
    fn name(self, e: Error) -> Error {
        match (e, self) {
            (Error::BadRequest(m), Fields::Detail { role_top })
                if !(m.starts_with(&format!("{DETAIL}.")) || role_top && m.starts_with("roleId:")) =>
            {
                Error::BadRequest(format!("{DETAIL}.{m}"))
            }
            (other, _) => other,
        }
    }
}

/// The type's rules on fields its schema accepted, then their stored form and the secrets given.
fn read_fields(
    mut fields: CredentialProviderFields,
    spec: &TypeSpec,
    from: Fields,
) -> Result<(Map<String, Value>, GivenSecrets)> {
    types::check_fields(&mut fields).map_err(|e| from.name(e.into()))?;
    Ok(types::stored(&fields, spec))
}

fn apply_secrets(secrets: &mut SecretFields, given: GivenSecrets) {
    for (k, v) in given {
        secrets.set(k, v);
    }
}

fn check_required_secrets(spec: &TypeSpec, secrets: &SecretFields, from: Fields) -> Result<()> {
    for s in spec.required_secrets {
        if secrets.get(s).is_none() {
            return Err(from.name(Error::field(*s, "is required")));
        }
    }
    Ok(())
}

/// `lifetimeTimeSpanSeconds` per type: checked against the type's range, defaulted, or 0.
fn resolve_lifetime(spec: &TypeSpec, given: Option<i32>, current: Option<i32>) -> Result<i32> {
    match spec.lifetime {
        None => Ok(0),
        Some((min, max, default)) => match given {
            Some(v) if v < min || v > max => {
                Err(Error::field("lifetimeTimeSpanSeconds", format!("must be {min}..{max}")))
            }
            Some(v) => Ok(v),
            None => Ok(current.unwrap_or(default)),
        },
    }
}

/// Type rules on the complete provider, then its server-made fields.
fn finalize(p: &mut CredentialProvider, spec: &TypeSpec, st: &Snapshot, cfg: &Config, from: Fields) -> Result<()> {
    (spec.check)(p, st, cfg)
        .and_then(|()| (spec.complete)(p))
        .map_err(|e| from.name(e))
}

/// A PATCH's `providerDetailJSON` on the stored provider: its keys replace the fields they name,
/// a key given as `null` clears its field (as does `""` where the type reads it as absent), and
/// the merged fields are read as a whole (a cleared required field: `is required`; rules across
/// fields hold for the result). Server-kept fields stay as they are.
fn patched_fields(
    p: &CredentialProvider,
    kind: CredentialProviderType,
    spec: &TypeSpec,
    given: Value,
    role_top: bool,
) -> Result<(Map<String, Value>, GivenSecrets)> {
    let Value::Object(given) = given else {
        // The schema's message for a detail that is no object.
        CredentialProviderFields::read_at(kind, given, DETAIL)?;
        return Err(Error::field(DETAIL, "must be an object"));
    };
    let mut merged = p.config.clone();
    for k in types::kept_fields(spec) {
        merged.remove(k);
    }
    for (k, v) in given {
        if v.is_null() {
            merged.remove(&k);
        } else {
            merged.insert(k, v);
        }
    }
    let fields = CredentialProviderFields::read_at(kind, Value::Object(merged), DETAIL)?;
    read_fields(fields, spec, Fields::Detail { role_top })
}

// ---- the two views' handlers -------------------------------------------------------------------

/// One API version's view of the providers: v2 (§3.5) or the deprecated v1 (§3.6).
trait View: Send + Sync + 'static {
    const PATH: &'static str;
    /// v1: the variant fields come as `providerDetailJSON` text (an error names them inside
    /// it), PUT and PATCH answer `201`, and a DELETE of an id the resource set does not hold
    /// answers `204` (the contract lists only that) instead of `404`.
    const V1: bool;
    /// A POST or PUT body, checked against its DTO's schema, then the type's rules.
    fn read(body: Value) -> Result<Input>;
    /// A PATCH body, checked against its DTO's schema.
    fn read_patch(body: Value) -> Result<PatchInput>;
    /// The provider as this view shows it.
    fn render(st: &Snapshot, cfg: &Config, p: &CredentialProvider) -> Value;
}

/// `/api/v2/credential-providers`.
struct ApiV2;
/// `/api/v1/credential-providers` (deprecated).
struct ApiV1;

impl View for ApiV2 {
    const PATH: &'static str = "/api/v2/credential-providers";
    const V1: bool = false;

    fn read(body: Value) -> Result<Input> {
        let dto: CredentialProviderV2Dto = schema::read(body)?;
        let (common, fields) = dto.into_parts();
        let base = base_input(common.base, common.resource_set)?;
        let kind = fields.kind();
        let (config, secrets) = read_fields(fields, spec_of(kind)?, Fields::Body)?;
        Ok(Input {
            base,
            kind,
            lifetime: common.lifetime_time_span_seconds,
            config,
            secrets,
            role_top: false,
        })
    }

    fn read_patch(body: Value) -> Result<PatchInput> {
        patch_of(schema::read(body)?, None)
    }

    fn render(st: &Snapshot, cfg: &Config, p: &CredentialProvider) -> Value {
        to_json(&provider_v2_dto(st, cfg, p))
    }
}

impl View for ApiV1 {
    const PATH: &'static str = "/api/v1/credential-providers";
    const V1: bool = true;

    fn read(body: Value) -> Result<Input> {
        let dto: CredentialProviderDto = schema::read(body)?;
        let base = base_input(dto.base, dto.resource_set)?;
        let kind = dto.kind;
        let (detail, role_top) = detail_with_role(dto.provider_detail_json.as_deref(), dto.role_id, kind)?;
        let fields = CredentialProviderFields::read_at(kind, detail.unwrap_or_else(|| json!({})), DETAIL)?;
        let (config, secrets) = read_fields(fields, spec_of(kind)?, Fields::Detail { role_top })?;
        Ok(Input {
            base,
            kind,
            lifetime: dto.lifetime_time_span_seconds,
            config,
            secrets,
            role_top,
        })
    }

    fn read_patch(body: Value) -> Result<PatchInput> {
        let dto: CredentialProviderV1PatchDto = schema::read(body)?;
        patch_of(dto.patch, dto.role_id)
    }

    fn render(st: &Snapshot, cfg: &Config, p: &CredentialProvider) -> Value {
        to_json(&provider_v1_dto(st, cfg, p))
    }
}

fn patch_of(dto: CredentialProviderPatchDto, role: Option<Uuid>) -> Result<PatchInput> {
    Ok(PatchInput {
        base: BaseInput {
            resource_set: dto.resource_set,
            ..patch_input(dto.patch)?
        },
        kind: dto.kind,
        lifetime: dto.lifetime_time_span_seconds,
        detail: dto.provider_detail_json,
        role,
    })
}

async fn list<V: View>(State(app): State<App>, ctx: Ctx, q: QueryPairs) -> Result<Response> {
    let st = app.state();
    list_in_rs::<CredentialProvider>(&st, ctx.rs, &q, &SPEC, |c| V::render(&st, &app.cfg, c))
}

async fn read<V: View>(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let st = app.state();
    Ok(read_in_rs::<CredentialProvider>(&st, ids.one(), ctx.rs, |c| {
        V::render(&st, &app.cfg, c)
    }))
}

async fn create<V: View>(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let input = V::read(body)?;
    let spec = spec_of(input.kind)?;
    let rs = resolve_rs(input.base.resource_set, ctx.rs)?;
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let id = new_external_id(input.base.external_id, |id| taken::<CredentialProvider>(&w.st, id))?;
    let mut meta = w.new_meta(Kind::CredentialProvider, id, Some(rs), &author).await?;
    input.base.apply_full(&mut meta);
    let mut secrets = SecretFields::default();
    apply_secrets(&mut secrets, input.secrets);
    let from = Fields::of(V::V1, input.role_top);
    check_required_secrets(spec, &secrets, from)?;
    let mut p = CredentialProvider {
        meta,
        cp_type: spec.name.to_string(),
        lifetime_time_span_seconds: resolve_lifetime(spec, input.lifetime, None)?,
        lifetime_expiration: None,
        config: input.config,
        secrets,
    };
    finalize(&mut p, spec, &w.st, &app.cfg, from)?;
    crate::service::escalation::check_access_token_role(&ctx.caller, &w.st, &p)?;
    w.put(p);
    w.audit(&author, rs, CATEGORY, Activity::Created, id);
    let st = w.commit().await?;
    if spec.name == cib_account::TYPE {
        let app = app.clone();
        tokio::spawn(async move { cib_account::provision(app.services_via(&app.upstream_for(rs)), id).await });
    }
    Ok(created(
        StatusCode::CREATED,
        format!("{}/{id}", V::PATH),
        V::render(&st, &app.cfg, &st.credential_providers[&id]),
    ))
}

/// The end of a PUT or PATCH: the type's rules on the changed provider, the escalation rule,
/// the stamp, the audit entry, the commit, and the provider in the view's shape.
async fn finish_update<V: View>(
    app: &App,
    mut w: Write<'_>,
    ctx: &Ctx,
    mut p: CredentialProvider,
    spec: &TypeSpec,
    from: Fields,
    activity: Activity,
) -> Result<Response> {
    finalize(&mut p, spec, &w.st, &app.cfg, from)?;
    crate::service::escalation::check_access_token_role(&ctx.caller, &w.st, &p)?;
    let author = ctx.author();
    w.touch_meta(&mut p.meta, &author);
    let id = p.meta.id;
    w.put(p);
    w.audit(&author, ctx.rs, CATEGORY, activity, id);
    let st = w.commit().await?;
    let status = if V::V1 { StatusCode::CREATED } else { StatusCode::OK };
    let body = V::render(&st, &app.cfg, &st.credential_providers[&id]);
    Ok((status, axum::Json(body)).into_response())
}

async fn replace<V: View>(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    // A changed discriminator is reported before the body is read against either type (§1.5).
    let stored = body
        .get("externalId")
        .and_then(Value::as_str)
        .and_then(svc_api::reader::parse_uuid)
        .and_then(|id| find::<CredentialProvider>(&app.state(), &id, ctx.rs));
    let known = types::names();
    discriminator_kept(&body, "type", stored.as_ref().map(|p| p.cp_type.as_str()), &known)?;
    let input = V::read(body)?;
    let id = input
        .base
        .external_id
        .ok_or_else(|| Error::field("externalId", "is required"))?;
    let w = Write::begin(&app).await?;
    let mut p: CredentialProvider = for_update(&w.st, &id, ctx.rs)?;
    // §1.4 rule 3: a PUT body naming another resource set than the header.
    resolve_rs(input.base.resource_set, ctx.rs)?;
    if input.kind.as_str() != p.cp_type {
        return Err(Error::field("type", "cannot be changed"));
    }
    let spec = spec_of(input.kind)?;
    input.base.apply_full(&mut p.meta);
    set_lifetime(&mut p, resolve_lifetime(spec, input.lifetime, None)?);
    let old = std::mem::replace(&mut p.config, input.config);
    types::keep_fields(spec, &old, &mut p.config);
    // Secrets absent or null keep their stored value.
    apply_secrets(&mut p.secrets, input.secrets);
    let from = Fields::of(V::V1, input.role_top);
    finish_update::<V>(&app, w, &ctx, p, spec, from, Activity::Updated).await
}

async fn patch<V: View>(State(app): State<App>, ctx: Ctx, ids: Ids, JsonBody(body): JsonBody) -> Result<Response> {
    let input = V::read_patch(body)?;
    let id = ids.one();
    let w = Write::begin(&app).await?;
    let mut p: CredentialProvider = for_update(&w.st, &id, ctx.rs)?;
    check_rs_unchanged(input.base.resource_set, ctx.rs)?;
    if let Some(t) = &input.kind
        && *t != p.cp_type
    {
        return Err(Error::field("type", "must equal the stored type"));
    }
    let kind = stored_kind(&p)?;
    let spec = spec_of(kind)?;
    let (detail, role_top) = detail_with_role(input.detail.as_deref(), input.role, kind)?;
    let from = Fields::of(detail.is_some(), role_top);
    if let Some(given) = detail {
        let (config, secrets) = patched_fields(&p, kind, spec, given, role_top)?;
        let old = std::mem::replace(&mut p.config, config);
        types::keep_fields(spec, &old, &mut p.config);
        apply_secrets(&mut p.secrets, secrets);
    }
    input.base.apply_patch(&mut p.meta)?;
    let span = resolve_lifetime(spec, input.lifetime, Some(p.lifetime_time_span_seconds))?;
    set_lifetime(&mut p, span);
    finish_update::<V>(&app, w, &ctx, p, spec, from, Activity::Patched).await
}

/// Sets `lifetimeTimeSpanSeconds`; an authorised provider's `lifetimeExpiration` follows it
/// (§3.5.2: authorization time + the span; the authorization time is the stored expiry minus
/// the span it was computed with).
fn set_lifetime(p: &mut CredentialProvider, span: i32) {
    if let Some(e) = p.lifetime_expiration {
        let authorized = e.millis() - i64::from(p.lifetime_time_span_seconds) * 1000;
        p.lifetime_expiration = Some(svc_api::Timestamp::from_millis(authorized + i64::from(span) * 1000));
    }
    p.lifetime_time_span_seconds = span;
}

async fn remove<V: View>(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let id = ids.one();
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let Some(gone) =
        delete_released::<CredentialProvider>(&mut w, &author, ctx.rs, CATEGORY, id, RefField::CredentialProvider)?
    else {
        return if V::V1 { Ok(no_content()) } else { Err(Error::NotFound) };
    };
    w.commit().await?;
    if gone.cp_type == cib_account::TYPE {
        let app = app.clone();
        tokio::spawn(async move {
            let up = app.upstream_for(gone.meta.scope());
            cib_account::revoke_after_delete(app.services_via(&up), &gone).await
        });
    }
    Ok(no_content())
}

// ---- provider actions -------------------------------------------------------------------------

/// `GET …/verification`: one real fetch, never returning the credential (always 200).
async fn verification(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let st = app.state_full();
    let p = find::<CredentialProvider>(&st, &ids.one(), ctx.rs).ok_or(Error::NotFound)?;
    let compiled = st.idx.credentials.get(&p.meta.id).cloned().ok_or(Error::NotFound)?;
    let outcome = crate::credential::verify(app.services_via(&app.upstream_for(compiled.rs)), &compiled).await;
    let answer = match outcome {
        Ok(()) => GenericResponse::ok("A credential was obtained."),
        Err(reason) => GenericResponse::error(reason),
    };
    Ok(ok(to_json(&answer)))
}

async fn authorize(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let p = find::<CredentialProvider>(&app.state(), &ids.one(), ctx.rs).ok_or(Error::NotFound)?;
    if p.cp_type != authorization_code::TYPE {
        return Err(Error::field(
            "type",
            format!(
                "authorize applies only to oauth-authorization-code providers, not {}",
                p.cp_type
            ),
        ));
    }
    let url = crate::service::consent::authorize_url(&app, &p, &ctx.author()).await?;
    Ok(redirect(&url))
}

fn redirect(url: &str) -> Response {
    let mut r = StatusCode::FOUND.into_response();
    if let Ok(v) = axum::http::HeaderValue::from_str(url) {
        r.headers_mut().insert(axum::http::header::LOCATION, v);
    }
    r
}

/// `GET /api/v1/credential-providers/{id}/callback` (public, §3.5.4 step 2).
async fn callback(State(app): State<App>, Client(client): Client, ids: Ids, q: QueryPairs) -> Result<Response> {
    if let Some(err) = q.get("error") {
        // The state is checked (and spent) first, as for a code: a forged or replayed callback
        // learns nothing but that its state is unknown.
        let state = q.get("state").ok_or_else(|| Error::field("state", "is required"))?;
        crate::service::consent::abandon_authorization(&app, ids.one(), state).await?;
        let desc = q
            .get("error_description")
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        return Err(Error::bad(format!("Authorization failed: {err}{desc}")));
    }
    let state = q.get("state").ok_or_else(|| Error::field("state", "is required"))?;
    let code = q.get("code").ok_or_else(|| Error::field("code", "is required"))?;
    match crate::service::consent::complete_authorization(&app, ids.one(), code, state, client).await? {
        Some(url) if !url.is_empty() => Ok(redirect(&url)),
        _ => Ok(ok(to_json(&GenericResponse::ok("Authorization complete.")))),
    }
}
