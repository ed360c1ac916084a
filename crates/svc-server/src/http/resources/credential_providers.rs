//! Credential providers v2 (contract §3.5) and the deprecated v1 view (§3.6). Both address the same
//! stored entity: v2 puts the variant fields next to the base fields, v1 carries them as JSON text
//! in `providerDetailJSON`. Secret fields are write-only.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use svc_api::Obj;
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_json, check_rs_unchanged, parse_base, resolve_rs};
use super::scoped::{delete_released, find, for_update, list_in_rs, read_in_rs, taken};
use crate::app::App;
use crate::config::Config;
use crate::credential::types::{self, TypeSpec};
use crate::credential::{authorization_code, cib_account};
use crate::domain::credential::{CredentialProvider, SecretFields};
use crate::domain::{Kind, Perm};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::api::{Api, Op, Query, Untyped};
use crate::http::extract::{Client, Ids, JsonBody, QueryPairs};
use crate::http::guard::{Ctx, Scope};
use crate::http::list::{Base, ListSpec, field_filter};
use crate::http::{created, no_content, ok};
use crate::service::refs::RefField;
use crate::service::write::{Write, new_external_id};
use crate::state::State as Snapshot;
use svc_api::GenericResponse;

const CATEGORY: &str = "CredentialProviders";

pub fn register(api: &mut Api<'_>) {
    let (p, s) = (Perm::CredentialProviders, Scope::Rs);
    api.guarded("/api/v2/credential-providers", p, s)
        .get(
            list::<ApiV2>,
            Op::new("List credential providers (§3.5)")
                .query(Query::List)
                .list::<Untyped>("credentialProviders"),
        )
        .post(
            create::<ApiV2>,
            Op::new("Create a credential provider")
                .body::<Untyped>()
                .ok::<Untyped>(201),
        )
        .put(
            replace::<ApiV2>,
            Op::new("Replace a credential provider")
                .body::<Untyped>()
                .ok::<Untyped>(200),
        );
    api.guarded("/api/v2/credential-providers/{id}", p, s)
        .get(
            read::<ApiV2>,
            Op::new("Read a credential provider").ok::<Untyped>(200).empty(204),
        )
        .patch(
            patch::<ApiV2>,
            Op::new("Patch a credential provider")
                .body::<Untyped>()
                .ok::<Untyped>(200),
        )
        .delete(remove::<ApiV2>, Op::new("Delete a credential provider").empty(204));
    api.guarded("/api/v2/credential-providers/{id}/verification", p, s).get(
        verification,
        Op::new("Verify a credential provider").ok::<GenericResponse>(200),
    );
    api.guarded("/api/v1/credential-providers", p, s)
        .get(
            list::<ApiV1>,
            Op::new("List credential providers (§3.6, deprecated)")
                .query(Query::List)
                .list::<Untyped>("credentialProviders"),
        )
        .post(
            create::<ApiV1>,
            Op::new("Create a credential provider")
                .body::<Untyped>()
                .ok::<Untyped>(201),
        )
        .put(
            replace::<ApiV1>,
            Op::new("Replace a credential provider")
                .body::<Untyped>()
                .ok::<Untyped>(201),
        );
    api.guarded("/api/v1/credential-providers/{id}", p, s)
        .get(
            read::<ApiV1>,
            Op::new("Read a credential provider").ok::<Untyped>(200).empty(204),
        )
        .patch(
            patch::<ApiV1>,
            Op::new("Patch a credential provider")
                .body::<Untyped>()
                .ok::<Untyped>(201),
        )
        .delete(remove::<ApiV1>, Op::new("Delete a credential provider").empty(204));
    // `authorize` is a write though it is a GET.
    for path in [
        "/api/v2/credential-providers/{id}/authorize",
        "/api/v1/credential-providers/{id}/authorize",
    ] {
        api.guarded(path, p, s)
            .as_write(true)
            .get(authorize, Op::new("Start the admin consent (§3.5.4)").redirect());
    }
    api.public("/api/v1/credential-providers/{id}/callback").get(
        callback,
        Op::new("The admin consent's callback (§3.5.4)")
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

const BASE_RO: &[&str] = &["lifetimeExpiration", "accessPolicyCount"];

fn spec_of(name: &str) -> Result<&'static TypeSpec> {
    types::spec(name).ok_or_else(|| Error::field("type", format!("must be one of {}", types::names().join(", "))))
}

/// The variant fields as the wire shows them: stored non-secret fields and computed ones, with
/// secrets as `null` (or removed, for the v1 text).
fn variant_fields(p: &CredentialProvider, cfg: &Config, secrets_as_null: bool) -> Map<String, Value> {
    let mut m = p.config.clone();
    if let Some(spec) = types::spec(&p.cp_type) {
        (spec.present)(p, cfg, &mut m);
        for s in spec.secret_fields {
            if secrets_as_null {
                m.insert(s.to_string(), Value::Null);
            } else {
                m.remove(*s);
            }
        }
    }
    m
}

/// `CredentialProviderV2DTO` (flat variant).
pub fn provider_v2_json(st: &Snapshot, cfg: &Config, p: &CredentialProvider) -> Value {
    let mut o = Map::new();
    o.insert("type".into(), json!(p.cp_type));
    o.extend(base_json(&p.meta, true));
    o.insert("lifetimeTimeSpanSeconds".into(), json!(p.lifetime_time_span_seconds));
    o.insert("lifetimeExpiration".into(), json!(p.lifetime_expiration));
    o.insert(
        "accessPolicyCount".into(),
        json!(st.idx.policy_count(RefField::CredentialProvider, p.meta.id)),
    );
    o.extend(variant_fields(p, cfg, true));
    Value::Object(o)
}

/// `CredentialProviderUIDTO` (v1): variant fields as JSON text, secrets removed.
pub fn provider_v1_json(st: &Snapshot, cfg: &Config, p: &CredentialProvider) -> Value {
    let mut o = base_json(&p.meta, true);
    o.insert("type".into(), json!(p.cp_type));
    let role = (p.cp_type == crate::credential::access_token::TYPE)
        .then(|| p.config.get("roleId").cloned())
        .flatten();
    o.insert("roleId".into(), role.unwrap_or(Value::Null));
    o.insert("lifetimeTimeSpanSeconds".into(), json!(p.lifetime_time_span_seconds));
    o.insert("lifetimeExpiration".into(), json!(p.lifetime_expiration));
    o.insert(
        "providerDetailJSON".into(),
        json!(Value::Object(variant_fields(p, cfg, false)).to_string()),
    );
    o.insert(
        "accessPolicyCount".into(),
        json!(st.idx.policy_count(RefField::CredentialProvider, p.meta.id)),
    );
    Value::Object(o)
}

/// Secret fields given in a request: (wire name, value).
type GivenSecrets = Vec<(&'static str, String)>;

/// A request reduced to what both API versions carry.
struct Input {
    base: BaseInput,
    cp_type: Option<String>,
    lifetime: Option<i32>,
    config: Map<String, Value>,
    secrets: Vec<(&'static str, String)>,
    /// PATCH: `providerDetailJSON` text, read against the stored type.
    detail: Option<String>,
    /// v1 PATCH: the top-level `roleId`.
    role: Option<Uuid>,
    /// v1 POST/PUT: the effective `roleId` is the top-level field, not one inside
    /// `providerDetailJSON` (an error about it names `roleId`, not `providerDetailJSON.roleId`).
    role_top: bool,
}

/// v1's top-level `roleId` mirrors `svc-access-token.roleId`: it goes into the variant fields
/// (unless `providerDetailJSON` names one too). For other types a non-null `roleId` is refused.
/// Also says whether the top-level value is the one that applies.
fn with_role(detail: Option<String>, role: Option<Uuid>, cp_type: &str) -> Result<(Option<String>, bool)> {
    let Some(role) = role else { return Ok((detail, false)) };
    if cp_type != crate::credential::access_token::TYPE {
        return Err(Error::field("roleId", "applies only to svc-access-token providers"));
    }
    let mut v: Value = match &detail {
        Some(t) => {
            serde_json::from_str(t).map_err(|e| Error::field("providerDetailJSON", format!("malformed JSON ({e})")))?
        }
        None => json!({}),
    };
    let mut top = false;
    if let Some(m) = v.as_object_mut()
        && m.get("roleId").is_none_or(Value::is_null)
    {
        m.insert("roleId".into(), json!(role));
        top = true;
    }
    Ok((Some(v.to_string()), top))
}

/// Reads secrets and variant fields of `spec` from `o` (a v2 body or a v1 providerDetailJSON).
fn read_variant(o: &mut Obj, spec: &'static TypeSpec, mode: types::Mode) -> Result<(Map<String, Value>, GivenSecrets)> {
    // The type's own checks first: they look at the secrets it validates (an API key's length,
    // a private key's PEM) before the secrets are taken out of the body.
    let config = (spec.parse)(o, mode)?;
    let mut secrets = Vec::new();
    for s in spec.secret_fields {
        if let Some(v) = o.opt_str(s)?
            && !v.is_empty()
        {
            secrets.push((*s, v));
        }
    }
    o.ignore(spec.ro_fields);
    Ok((config, secrets))
}

impl Input {
    /// What both views' bodies start with: the base block, `type`, `lifetimeTimeSpanSeconds`.
    fn head(o: &mut Obj, mode: Mode) -> Result<Input> {
        Ok(Input {
            base: parse_base(o, mode, true)?,
            cp_type: o.opt_str("type")?,
            lifetime: o.opt_i32("lifetimeTimeSpanSeconds")?,
            config: Map::new(),
            secrets: vec![],
            detail: None,
            role: None,
            role_top: false,
        })
    }
}

fn parse_v2(body: Value, mode: Mode) -> Result<Input> {
    let mut o = Obj::root(body)?;
    let mut input = Input::head(&mut o, mode)?;
    o.ignore(BASE_RO);
    if mode == Mode::Patch {
        input.detail = o.opt_str("providerDetailJSON")?;
    } else {
        let name = input
            .cp_type
            .as_deref()
            .ok_or_else(|| Error::field("type", "is required"))?;
        (input.config, input.secrets) = read_variant(&mut o, spec_of(name)?, types::Mode::Full)?;
    }
    o.finish()?;
    Ok(input)
}

fn parse_v1(body: Value, mode: Mode) -> Result<Input> {
    let mut o = Obj::root(body)?;
    let mut input = Input::head(&mut o, mode)?;
    let role = o.opt_uuid("roleId")?;
    let detail = o.opt_str("providerDetailJSON")?;
    o.ignore(BASE_RO);
    o.finish()?;
    if mode == Mode::Patch {
        // The top-level roleId mirrors svc-access-token's field; it is applied in `patch`.
        (input.detail, input.role) = (detail, role);
        return Ok(input);
    }
    let name = input
        .cp_type
        .as_deref()
        .ok_or_else(|| Error::field("type", "is required"))?;
    let spec = spec_of(name)?;
    let (detail, role_top) = with_role(detail, role, name)?;
    let mut inner = Obj::from_json_text(detail.as_deref().unwrap_or("{}"), "providerDetailJSON".into())?;
    (input.config, input.secrets) = read_variant(&mut inner, spec, types::Mode::Full)?;
    inner.finish()?;
    input.role_top = role_top;
    Ok(input)
}

fn apply_secrets(secrets: &mut SecretFields, given: Vec<(&'static str, String)>) {
    for (k, v) in given {
        secrets.set(k, v);
    }
}

fn check_required_secrets(spec: &TypeSpec, secrets: &SecretFields, prefix: &str) -> Result<()> {
    for s in spec.required_secrets {
        if secrets.get(s).is_none() {
            return Err(Error::field(format!("{prefix}{s}"), "is required"));
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

/// Type rules on the complete provider, then its server-made fields.
fn finalize(p: &mut CredentialProvider, spec: &TypeSpec, st: &Snapshot, cfg: &Config, from: Fields) -> Result<()> {
    const DETAIL: &str = "providerDetailJSON.";
    (spec.check)(p, st, cfg)
        .and_then(|()| (spec.complete)(p))
        .map_err(|e| match (e, from) {
            (Error::BadRequest(m), Fields::Detail { role_top })
                if !(m.starts_with(DETAIL) || role_top && m.starts_with("roleId:")) =>
            {
                Error::BadRequest(format!("{DETAIL}{m}"))
            }
            (other, _) => other,
        })
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
}

// ---- the two views' handlers -------------------------------------------------------------------

/// One API version's view of the providers: v2 (§3.5) or the deprecated v1 (§3.6).
trait View: Send + Sync + 'static {
    const PATH: &'static str;
    /// v1: the variant fields come as `providerDetailJSON` text (an error names them inside
    /// it), PUT and PATCH answer `201`, and a DELETE of an id the resource set does not hold
    /// answers `204` (the contract lists only that) instead of `404`.
    const V1: bool;
}

/// `/api/v2/credential-providers`.
struct ApiV2;
/// `/api/v1/credential-providers` (deprecated).
struct ApiV1;

impl View for ApiV2 {
    const PATH: &'static str = "/api/v2/credential-providers";
    const V1: bool = false;
}

impl View for ApiV1 {
    const PATH: &'static str = "/api/v1/credential-providers";
    const V1: bool = true;
}

fn parse<V: View>(body: Value, mode: Mode) -> Result<Input> {
    if V::V1 {
        parse_v1(body, mode)
    } else {
        parse_v2(body, mode)
    }
}

fn render<V: View>(st: &Snapshot, cfg: &Config, p: &CredentialProvider) -> Value {
    if V::V1 {
        provider_v1_json(st, cfg, p)
    } else {
        provider_v2_json(st, cfg, p)
    }
}

async fn list<V: View>(State(app): State<App>, ctx: Ctx, q: QueryPairs) -> Result<Response> {
    let st = app.state();
    list_in_rs::<CredentialProvider>(&st, ctx.rs, &q, &SPEC, |c| render::<V>(&st, &app.cfg, c))
}

async fn read<V: View>(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let st = app.state();
    Ok(read_in_rs::<CredentialProvider>(&st, ids.one(), ctx.rs, |c| {
        render::<V>(&st, &app.cfg, c)
    }))
}

async fn create<V: View>(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse::<V>(body, Mode::Create)?;
    let spec = spec_of(input.cp_type.as_deref().unwrap_or_default())?;
    let rs = resolve_rs(input.base.resource_set, ctx.rs)?;
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let id = new_external_id(input.base.external_id, |id| taken::<CredentialProvider>(&w.st, id))?;
    let mut meta = w.new_meta(Kind::CredentialProvider, id, Some(rs), &author).await?;
    input.base.apply_full(&mut meta);
    let mut secrets = SecretFields::default();
    apply_secrets(&mut secrets, input.secrets);
    check_required_secrets(spec, &secrets, if V::V1 { "providerDetailJSON." } else { "" })?;
    let mut p = CredentialProvider {
        meta,
        cp_type: spec.name.to_string(),
        lifetime_time_span_seconds: resolve_lifetime(spec, input.lifetime, None)?,
        lifetime_expiration: None,
        config: input.config,
        secrets,
    };
    finalize(&mut p, spec, &w.st, &app.cfg, Fields::of(V::V1, input.role_top))?;
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
        render::<V>(&st, &app.cfg, &st.credential_providers[&id]),
    ))
}

/// PUT: a changed discriminator is reported before the body is read against either type.
fn check_type_unchanged(app: &App, ctx: &Ctx, body: &Value) -> Result<()> {
    let id = body
        .get("externalId")
        .and_then(Value::as_str)
        .and_then(svc_api::reader::parse_uuid);
    let ty = body.get("type").and_then(Value::as_str);
    if let (Some(id), Some(ty)) = (id, ty)
        && let Some(p) = find::<CredentialProvider>(&app.state(), &id, ctx.rs)
        && p.cp_type != ty
    {
        return Err(Error::field("type", "cannot be changed"));
    }
    Ok(())
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
    let body = render::<V>(&st, &app.cfg, &st.credential_providers[&id]);
    Ok((status, axum::Json(body)).into_response())
}

async fn replace<V: View>(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    check_type_unchanged(&app, &ctx, &body)?;
    let input = parse::<V>(body, Mode::Replace)?;
    let id = input
        .base
        .external_id
        .ok_or_else(|| Error::field("externalId", "is required"))?;
    let w = Write::begin(&app).await?;
    let mut p: CredentialProvider = for_update(&w.st, &id, ctx.rs)?;
    // §1.4 rule 3: a PUT body naming another resource set than the header.
    resolve_rs(input.base.resource_set, ctx.rs)?;
    if input.cp_type.as_deref() != Some(p.cp_type.as_str()) {
        return Err(Error::field("type", "cannot be changed"));
    }
    let spec = spec_of(&p.cp_type)?;
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
    let input = parse::<V>(body, Mode::Patch)?;
    let id = ids.one();
    let w = Write::begin(&app).await?;
    let mut p: CredentialProvider = for_update(&w.st, &id, ctx.rs)?;
    check_rs_unchanged(input.base.resource_set, ctx.rs)?;
    if let Some(t) = &input.cp_type
        && *t != p.cp_type
    {
        return Err(Error::field("type", "must equal the stored type"));
    }
    let spec = spec_of(&p.cp_type)?;
    let (detail, role_top) = with_role(input.detail.clone(), input.role, &p.cp_type)?;
    if let Some(text) = &detail {
        let mut inner = Obj::from_json_text(text, "providerDetailJSON".into())?;
        let (fields, secrets) = read_variant(&mut inner, spec, types::Mode::Patch)?;
        inner.finish()?;
        let old = p.config.clone();
        // A key given as null (or as "" where the type reads "" as absent) clears that field;
        // other given keys replace theirs.
        if let Ok(Value::Object(given)) = serde_json::from_str::<Value>(text) {
            for (k, v) in given {
                let blank = v.as_str().is_some_and(|t| t.trim().is_empty());
                if v.is_null() || (blank && !fields.contains_key(&k)) {
                    p.config.remove(&k);
                }
            }
        }
        p.config.extend(fields);
        types::keep_fields(spec, &old, &mut p.config);
        apply_secrets(&mut p.secrets, secrets);
        // Rules across fields (a literal vs. dynamic subject, …) apply to the merged configuration.
        let mut merged = Obj::nested(Value::Object(p.config.clone()), "providerDetailJSON".into())?;
        (spec.parse)(&mut merged, types::Mode::Full)?;
    }
    input.base.apply_patch(&mut p.meta)?;
    let span = resolve_lifetime(spec, input.lifetime, Some(p.lifetime_time_span_seconds))?;
    set_lifetime(&mut p, span);
    let from = Fields::of(detail.is_some(), role_top);
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
    Ok(ok(match outcome {
        Ok(()) => json!({"success": true, "message": "A credential was obtained.", "id": 0}),
        Err(reason) => json!({"success": false, "message": reason, "id": 0}),
    }))
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
        _ => Ok(ok(
            json!({"success": true, "message": "Authorization complete.", "id": 0}),
        )),
    }
}
