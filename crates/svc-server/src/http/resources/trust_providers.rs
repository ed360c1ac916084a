//! Trust providers (contract §3.1) and their certificate secrets (§3.2).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;
use svc_api::mgmt::{
    KeyMaterial, PemType, PublicKeyValidationDto, TrustProviderCommon, TrustProviderDto, TrustProviderKind,
    TrustProviderMatchRuleDto, TrustProviderPatchDto, TrustProviderSecretDto, TrustProviderSecretSlimDto,
    TrustProviderSecretType,
};
use svc_api::reader::check_len;
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_dto, base_input, patch_input};
use super::crud::{self, OnCreate, Resource};
use super::scoped::{find, for_update};
use crate::app::App;
use crate::crypto::x509::{cert_info, pem_blocks, pem_text};
use crate::domain::Perm;
use crate::domain::trust::{MatchRule, SealedCert, SecretInfo, TrustKind, TrustProvider};
use crate::domain::{Meta, Secret};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::api::{Api, Op, Query};
use crate::http::extract::{Ids, JsonBody, QueryPairs};
use crate::http::guard::Ctx;
use crate::http::list::{Base, ListParams, ListSpec, field_filter, respond};
use crate::http::{created, no_content, ok};
use crate::service::refs::{RefField, release};
use crate::service::write::{Author, Write, new_external_id};
use crate::state::State as Snapshot;

const MAX_SECRETS: usize = 10;

/// `/api/v1/trust-providers` on the shared CRUD layer; the certificate secrets (§3.2) below.
pub struct TrustProviders;

pub fn register(api: &mut Api<'_>) {
    crud::register::<TrustProviders>(api, "/api/v1/trust-providers");
    let (p, s) = (Perm::TrustProviders, crud::scope::<TrustProviders>());
    api.guarded("/api/v1/trust-providers/{tpId}/secrets", p, s)
        .get(
            list_secrets,
            Op::new("List a trust provider's secrets (§3.2)")
                .query(Query::List)
                .list::<TrustProviderSecretDto>("entities"),
        )
        .post(
            add_secret,
            Op::new("Add a trust-provider secret")
                .body::<TrustProviderSecretSlimDto>()
                .ok::<TrustProviderSecretDto>(200),
        );
    api.guarded("/api/v1/trust-providers/{tpId}/secrets/{secretId}", p, s)
        .get(
            read_secret,
            Op::new("Read a trust-provider secret: its provider, with `secret` set")
                .ok::<TrustProviderDto>(200)
                .empty(204),
        )
        .delete(delete_secret, Op::new("Delete a trust-provider secret").empty(204));
}

const FIELDS: &[&str] = &[
    "id",
    "provider",
    "certificate",
    "pemType",
    "jwks",
    "oidcUrl",
    "isSvcTenantOidcToken",
    "accessPolicyCount",
    "agentControllersCount",
    "edgeSdkClientId",
];

const SPEC: ListSpec = ListSpec::new("trustProviders", Base::Scoped)
    .fields(FIELDS)
    .filters(&[field_filter("provider")]);

/// The DTOs' name of a kind (the two lists are one: `kinds_agree`).
pub fn kind_dto(k: TrustKind) -> TrustProviderKind {
    TrustProviderKind::parse(k.as_str()).expect("every trust kind has its DTO name")
}

fn kind_of(k: TrustProviderKind) -> TrustKind {
    TrustKind::parse(k.as_str()).expect("every DTO kind is a trust kind")
}

/// `PublicKeyValidationDTO` of a stored `certificate`.
fn public_key_validation(tp: &TrustProvider) -> Option<PublicKeyValidationDto> {
    let cert = tp.certificate.as_ref()?;
    let now = crate::clock::now();
    let invalid = |message: String, pem_type: Option<PemType>| PublicKeyValidationDto {
        is_valid_content: false,
        thumbprint: None,
        expiration_date: None,
        expiration_date_string: None,
        certificate_subject: None,
        serial_number: None,
        message: Some(message),
        pem_type,
    };
    let blocks = match pem_text(cert).and_then(|t| pem_blocks(&t)) {
        Ok(b) => b,
        Err(e) => return Some(invalid(e, tp.pem_type.as_deref().and_then(PemType::parse))),
    };
    let (label, der) = &blocks[0];
    if label != "CERTIFICATE" {
        return Some(PublicKeyValidationDto {
            is_valid_content: true,
            thumbprint: Some(crate::crypto::hex(&crate::crypto::sha256(der))),
            expiration_date: None,
            expiration_date_string: None,
            certificate_subject: None,
            serial_number: None,
            message: None,
            pem_type: Some(PemType::PublicKey),
        });
    }
    Some(match cert_info(der) {
        Ok(i) => {
            let valid = i.valid_at(now);
            let message = if valid {
                None
            } else if now < i.not_before {
                Some("The certificate is not yet valid.".to_string())
            } else {
                Some("The certificate has expired.".to_string())
            };
            PublicKeyValidationDto {
                is_valid_content: valid,
                thumbprint: Some(i.thumbprint),
                expiration_date: Some(i.not_after),
                expiration_date_string: Some(i.not_after.to_rfc3339()),
                certificate_subject: Some(i.subject),
                serial_number: Some(i.serial_hex),
                message,
                pem_type: Some(PemType::Certificate),
            }
        }
        Err(e) => invalid(e, Some(PemType::Certificate)),
    })
}

pub fn client_id(app: &App, tp: &TrustProvider) -> String {
    format!(
        "svc:{}:{}:identity:{}:{}",
        app.cfg.stack,
        app.cfg.tenant,
        tp.kind.client_id_type(),
        tp.meta.id
    )
}

/// `TrustProviderSecretDTO`: a stored certificate's facts, never the certificate.
pub fn secret_dto(s: &SecretInfo) -> TrustProviderSecretDto {
    let kind = match s.secret_type.as_str() {
        "SymmetricKey" => TrustProviderSecretType::SymmetricKey,
        _ => TrustProviderSecretType::Certificate,
    };
    TrustProviderSecretDto {
        external_id: Some(s.id),
        name: Some(s.name.clone()),
        kind: Some(kind),
        subject: s.subject.clone(),
        expires_at: s.expires_at,
    }
}

/// `TrustProviderDTO` (`secret` set only by the single-secret read). Embedding views (agent
/// controllers, v1 access policies) show it only to a caller who may read the provider.
pub fn trust_dto(app: &App, st: &Snapshot, tp: &TrustProvider, secret: Option<&SecretInfo>) -> TrustProviderDto {
    let controllers: Vec<Uuid> = super::agent_controllers::referring(st, tp.meta.id)
        .map(|c| c.meta.id)
        .collect();
    let common = TrustProviderCommon {
        base: base_dto(&tp.meta),
        resource_set: Some(tp.meta.scope()),
        id: tp.meta.seq,
        match_rules: Some(
            tp.match_rules
                .iter()
                .map(|r| TrustProviderMatchRuleDto {
                    attribute: r.attribute.clone(),
                    value: r.value.clone(),
                    key: r.key.clone(),
                })
                .collect(),
        ),
        public_key_validation: public_key_validation(tp),
        access_policy_count: crud::count(st.idx.policy_count(RefField::TrustProvider, tp.meta.id)),
        agent_controllers_count: crud::count(controllers.len()),
        agent_controller_ids: controllers,
        edge_sdk_client_id: client_id(app, tp),
        secret: secret.map(secret_dto),
    };
    let keys = KeyMaterial {
        certificate: tp.certificate.clone(),
        pem_type: tp.pem_type.as_deref().and_then(PemType::parse),
        jwks: tp.jwks.clone(),
        oidc_url: tp.oidc_url.clone(),
        svc_tenant: tp.svc_tenant,
    };
    TrustProviderDto::new(kind_dto(tp.kind), common, keys)
}

/// The request fields beyond the base block.
#[derive(Default)]
pub struct Input {
    /// A PATCH's `provider`, which must repeat the stored one.
    provider: Option<TrustKind>,
    /// The provider's kind (POST and PUT).
    kind: Option<TrustKind>,
    match_rules: Option<Vec<MatchRule>>,
    certificate: Option<String>,
    pem_type: Option<String>,
    jwks: Option<String>,
    oidc_url: Option<String>,
    svc_tenant: Option<bool>,
}

fn match_rules(rules: Option<Vec<TrustProviderMatchRuleDto>>) -> Option<Vec<MatchRule>> {
    rules.map(|rules| {
        rules
            .into_iter()
            .map(|r| MatchRule {
                attribute: r.attribute,
                value: r.value,
                key: r.key,
            })
            .collect()
    })
}

/// A POST or PUT body (its schema checked).
fn parse(dto: TrustProviderDto) -> Result<(BaseInput, Input)> {
    let (kind, common, keys) = dto.into_parts();
    let base = base_input(common.base, common.resource_set)?;
    let input = Input {
        provider: None,
        kind: Some(kind_of(kind)),
        match_rules: match_rules(common.match_rules),
        certificate: keys.certificate,
        pem_type: keys.pem_type.map(|p| p.as_str().to_string()),
        jwks: keys.jwks,
        oidc_url: keys.oidc_url,
        svc_tenant: Some(keys.svc_tenant),
    };
    Ok((base, input))
}

/// Before the schema: a PUT keeps its `provider` (§1.5), and the key material a kind does not
/// take may be sent only as `null` (`isSvcTenantOidcToken` also as `false`): a value is refused
/// with the kind's name, as the contract's table says; the empty fields are dropped, so that the
/// kind's variant, which does not name them, reads the body.
fn key_material_of_kind(body: &mut Value, stored: Option<&TrustProvider>) -> Result<()> {
    let names: Vec<&str> = TrustKind::all().map(TrustKind::as_str).collect();
    crud::discriminator_kept(body, "provider", stored.map(|t| t.kind.as_str()), &names)?;
    let Some(kind) = body
        .get("provider")
        .and_then(Value::as_str)
        .and_then(TrustProviderKind::parse)
    else {
        return Ok(());
    };
    let Some(o) = body.as_object_mut() else { return Ok(()) };
    let takes = TrustProviderDto::key_fields(kind);
    let empty = |v: &Value| v.is_null() || *v == Value::Bool(false);
    for f in ["oidcUrl", "jwks", "certificate", "isSvcTenantOidcToken", "pemType"] {
        if takes.contains(&f) {
            continue;
        }
        match o.get(f) {
            None => {}
            Some(v) if empty(v) => {
                o.remove(f);
            }
            Some(_) if f == "pemType" => return Err(Error::field(f, "is only allowed with certificate")),
            Some(_) => {
                return Err(Error::field(
                    f,
                    format!("is not allowed for provider {}", kind.as_str()),
                ));
            }
        }
    }
    Ok(())
}

/// Validates a complete provider (after create, replace or patch) per §3.1.
fn validate(app: &App, tp: &TrustProvider) -> Result<()> {
    let kind = tp.kind;
    if tp.match_rules.len() > 100 {
        return Err(Error::field("matchRules", "at most 100 rules"));
    }
    let allowed = kind.match_attributes();
    for (i, r) in tp.match_rules.iter().enumerate() {
        if !allowed.contains(&r.attribute.as_str()) {
            return Err(Error::field(
                format!("matchRules[{i}].attribute"),
                format!("must be one of {}", allowed.join(", ")),
            ));
        }
        match (r.attribute == "OidcCustom", &r.key) {
            (true, None) => {
                return Err(Error::field(
                    format!("matchRules[{i}].key"),
                    "is required for OidcCustom",
                ));
            }
            (true, Some(k)) if k.is_empty() => {
                return Err(Error::field(
                    format!("matchRules[{i}].key"),
                    "is required for OidcCustom",
                ));
            }
            (false, Some(_)) => {
                return Err(Error::field(
                    format!("matchRules[{i}].key"),
                    "is only allowed for OidcCustom",
                ));
            }
            _ => {}
        }
    }
    let given: Vec<&str> = [
        tp.oidc_url.as_ref().map(|_| "oidcUrl"),
        tp.jwks.as_ref().map(|_| "jwks"),
        tp.certificate.as_ref().map(|_| "certificate"),
        tp.svc_tenant.then_some("isSvcTenantOidcToken"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let permitted = kind.spec().key_fields;
    if let Some(f) = given.iter().find(|f| !permitted.contains(f)) {
        return Err(Error::field(
            *f,
            format!("is not allowed for provider {}", kind.as_str()),
        ));
    }
    if kind.accepts_key_material() && given.len() != 1 {
        let f = given.get(1).copied().unwrap_or("oidcUrl");
        return Err(Error::field(
            f,
            "exactly one of oidcUrl, jwks, certificate or isSvcTenantOidcToken is required",
        ));
    }
    if let Some(u) = &tp.oidc_url {
        crate::upstream::check_base_url_field("oidcUrl", u, &app.cfg)?;
        check_len("oidcUrl", u, 1, 2048)?;
    }
    if let Some(j) = &tp.jwks {
        crate::crypto::jose::parse_jwks(j).map_err(|e| Error::field("jwks", e))?;
    }
    match (&tp.certificate, &tp.pem_type) {
        (Some(c), Some(pt)) => {
            let blocks = pem_text(c)
                .and_then(|t| pem_blocks(&t))
                .map_err(|e| Error::field("certificate", e))?;
            let want = if pt == "Certificate" {
                "CERTIFICATE"
            } else {
                "PUBLIC KEY"
            };
            if blocks[0].0 != want {
                return Err(Error::field(
                    "pemType",
                    format!("{pt} does not match the PEM block {}", blocks[0].0),
                ));
            }
            if kind == TrustKind::CloudAMetadataService && pt != "Certificate" {
                return Err(Error::field("pemType", "must be Certificate for CloudAMetadataService"));
            }
            if kind == TrustKind::CloudAMetadataService {
                // The platform's own signers include RSA-1024 keys: accepted for this kind only.
                crate::trust::clouda_iid::certificate_info(c).map_err(|e| Error::field("certificate", e))?;
            } else {
                crate::trust::compile::key_from_pem(c).map_err(|e| Error::field("certificate", e))?;
            }
        }
        (Some(_), None) => return Err(Error::field("pemType", "is required with certificate")),
        (None, Some(_)) => return Err(Error::field("pemType", "is only allowed with certificate")),
        (None, None) => {}
    }
    Ok(())
}

fn apply_fields(tp: &mut TrustProvider, i: &Input, full: bool) {
    if full {
        tp.match_rules = i.match_rules.clone().unwrap_or_default();
        tp.certificate = i.certificate.clone();
        tp.pem_type = i.pem_type.clone();
        tp.jwks = i.jwks.clone();
        tp.oidc_url = i.oidc_url.clone();
        tp.svc_tenant = i.svc_tenant.unwrap_or(false);
    } else {
        if let Some(v) = &i.match_rules {
            tp.match_rules = v.clone();
        }
        if let Some(v) = &i.certificate {
            tp.certificate = Some(v.clone());
        }
        if let Some(v) = &i.pem_type {
            tp.pem_type = Some(v.clone());
        }
        if let Some(v) = &i.jwks {
            tp.jwks = Some(v.clone());
        }
        if let Some(v) = &i.oidc_url {
            tp.oidc_url = Some(v.clone());
        }
        if let Some(v) = i.svc_tenant {
            tp.svc_tenant = v;
        }
    }
}

impl Resource for TrustProviders {
    type Record = TrustProvider;
    type Input = Input;
    type Dto = TrustProviderDto;
    type Patch = TrustProviderPatchDto;
    const NAME: &'static str = "trust providers";
    const LIST: ListSpec = SPEC;
    // POST answers 200 here (contract §3.1), with the usual Location.
    const ON_CREATE: OnCreate = OnCreate::Ok;

    fn prepare(body: &mut Value, stored: Option<&TrustProvider>) -> Result<()> {
        key_material_of_kind(body, stored)
    }

    fn parse(_: &App, dto: TrustProviderDto, _: Mode, _: Option<&TrustProvider>) -> Result<(BaseInput, Input)> {
        parse(dto)
    }

    fn parse_patch(_: &App, p: TrustProviderPatchDto, _: Option<&TrustProvider>) -> Result<(BaseInput, Input)> {
        let mut base = patch_input(svc_api::mgmt::EntityPatch {
            external_id: p.external_id,
            name: p.name,
            description: p.description,
            is_active: p.is_active,
            tags: p.tags,
        })?;
        base.resource_set = p.resource_set;
        let input = Input {
            provider: p.provider.map(kind_of),
            kind: None,
            match_rules: match_rules(p.match_rules),
            certificate: p.certificate,
            pem_type: p.pem_type.map(|t| t.as_str().to_string()),
            jwks: p.jwks,
            oidc_url: p.oidc_url,
            svc_tenant: p.is_svc_tenant_oidc_token,
        };
        Ok((base, input))
    }

    fn create(_: &mut Write<'_>, input: Input, meta: Meta) -> Result<TrustProvider> {
        let mut tp = TrustProvider {
            meta,
            kind: input.kind.expect("parsed on create"),
            match_rules: vec![],
            certificate: None,
            pem_type: None,
            jwks: None,
            oidc_url: None,
            svc_tenant: false,
            secret_infos: vec![],
            tokens_valid_after: None,
            secrets: Default::default(),
        };
        apply_fields(&mut tp, &input, true);
        Ok(tp)
    }

    fn replace(_: &mut Write<'_>, input: Input, tp: &mut TrustProvider) -> Result<()> {
        if input.kind != Some(tp.kind) {
            return Err(Error::field("provider", "cannot be changed"));
        }
        apply_fields(tp, &input, true);
        Ok(())
    }

    fn patch(_: &mut Write<'_>, input: Input, tp: &mut TrustProvider) -> Result<()> {
        if input.provider.is_some_and(|p| p != tp.kind) {
            return Err(Error::field("provider", "must equal the stored provider"));
        }
        apply_fields(tp, &input, false);
        Ok(())
    }

    /// The provider's rules; and whoever writes a trust provider decides whose evidence the
    /// policies accepting it see: they give the roles those policies' `svc-access-token`
    /// providers hand out (issue 31), which the caller must hold.
    fn check(w: &Write<'_>, tp: &TrustProvider) -> Result<()> {
        validate(w.app(), tp)?;
        let trusting = crate::service::escalation::policies_trusting(&w.st, tp.meta.id, tp.meta.scope());
        crate::service::escalation::check_token_roles(w.app(), &w.st, trusting)
    }

    /// Records a deactivation: tokens issued so far stay revoked after any reactivation.
    fn updated(before: &TrustProvider, tp: &mut TrustProvider, now: svc_api::Timestamp) {
        if before.meta.active && !tp.meta.active {
            tp.tokens_valid_after = Some(now);
        }
    }

    /// `active=true|false` (§3.1).
    fn refine_list(q: &QueryPairs, items: &mut Vec<Value>) -> Result<()> {
        if let Some(active) = q.get("active") {
            let want = match active.to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => return Err(Error::field("active", "must be true or false")),
            };
            items.retain(|i| i["isActive"] == want);
        }
        Ok(())
    }

    /// A trust provider an agent controller names cannot be deleted (§3.21); policies release it.
    fn before_delete(w: &mut Write<'_>, author: &Author, _: Uuid, id: Uuid) -> Result<()> {
        super::agent_controllers::check_trust_provider_unreferenced(&w.st, id)?;
        release(w, author, id, RefField::TrustProvider)
    }

    fn render(app: &App, st: &Snapshot, tp: &TrustProvider) -> TrustProviderDto {
        trust_dto(app, st, tp, None)
    }
}

// ---- secrets (§3.2) --------------------------------------------------------------------------

const SECRET_SPEC: ListSpec = ListSpec::new("entities", Base::None)
    .fields(&["externalId", "name", "type", "subject", "expiresAt"])
    .filters(&[field_filter("type")]);

async fn list_secrets(State(app): State<App>, ctx: Ctx, ids: Ids, q: QueryPairs) -> Result<Response> {
    let p = ListParams::parse(&q)?;
    let st = app.state();
    let tp = find::<TrustProvider>(&st, &ids.one(), ctx.rs).ok_or(Error::NotFound)?;
    let items = tp.secret_infos.iter().map(|s| crud::to_json(&secret_dto(s))).collect();
    Ok(ok(respond(items, &p, &SECRET_SPEC)?))
}

async fn read_secret(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let st = app.state();
    let Some(tp) = find::<TrustProvider>(&st, &ids.0[0], ctx.rs) else {
        return Ok(no_content());
    };
    Ok(match tp.secret_infos.iter().find(|s| s.id == ids.0[1]) {
        Some(s) => ok(crud::to_json(&trust_dto(&app, &st, &tp, Some(s)))),
        None => no_content(),
    })
}

async fn add_secret(State(app): State<App>, ctx: Ctx, ids: Ids, JsonBody(body): JsonBody) -> Result<Response> {
    let body: TrustProviderSecretSlimDto = svc_api::schema::read(body)?;
    let (requested, secret, ty) = (body.external_id, body.secret, body.kind);
    let tp_id = ids.one();
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let mut tp: TrustProvider = for_update(&w.st, &tp_id, ctx.rs)?;
    // A new key makes evidence the policies accepting the provider see (issue 31).
    let trusting = crate::service::escalation::policies_trusting(&w.st, tp.meta.id, tp.meta.scope());
    crate::service::escalation::check_token_roles(w.app(), &w.st, trusting)?;
    if !tp.kind.accepts_secrets() {
        return Err(Error::field(
            "secret",
            format!("is not accepted for provider {}", tp.kind.as_str()),
        ));
    }
    if ty == TrustProviderSecretType::SymmetricKey {
        return Err(Error::field("type", "SymmetricKey is not supported"));
    }
    if tp.secret_infos.len() >= MAX_SECRETS {
        return Err(Error::field(
            "secret",
            format!("at most {MAX_SECRETS} secrets per provider"),
        ));
    }
    let text = pem_text(&secret).map_err(|e| Error::field("secret", e))?;
    let blocks = pem_blocks(&text).map_err(|e| Error::field("secret", e))?;
    if blocks[0].0 != "CERTIFICATE" {
        return Err(Error::field("secret", "must be a PEM certificate"));
    }
    let info = cert_info(&blocks[0].1).map_err(|e| Error::field("secret", e))?;
    // Only an expired (or unparseable) certificate is refused (§3.2): one whose notBefore is
    // still ahead, e.g. by a little clock skew, is accepted like any other.
    if info.not_after < w.now {
        return Err(Error::field("secret", "the certificate is expired"));
    }
    if tp.kind == TrustKind::CloudAMetadataService {
        crate::trust::anchors::CloudAKey::from_cert(&info.der).map_err(|e| Error::field("secret", e))?;
    } else {
        crate::crypto::jose::VerifyingKey::from_spki_der(None, &info.spki_der)
            .map_err(|e| Error::field("secret", e))?;
    }
    let all_ids: Vec<Uuid> =
        w.st.trust_providers
            .values()
            .flat_map(|t| t.secret_infos.iter().map(|s| s.id))
            .collect();
    let sid = new_external_id(requested, |id| all_ids.contains(id))?;
    let si = SecretInfo {
        id: sid,
        name: info.thumbprint.clone(),
        secret_type: ty.as_str().to_string(),
        subject: Some(info.subject.clone()),
        expires_at: Some(info.not_after),
        created_at: w.now,
    };
    tp.secret_infos.push(si.clone());
    tp.secrets.certificates.push(SealedCert {
        id: sid,
        pem: Secret::new(text),
    });
    w.touch_meta(&mut tp.meta, &author);
    w.put(tp);
    w.audit(&author, ctx.rs, TrustProviders::CATEGORY, Activity::SecretAdded, tp_id);
    w.commit().await?;
    // 200 (§3.2) with the Location every create sends (§1.5).
    Ok(created(
        StatusCode::OK,
        format!("/api/v1/trust-providers/{tp_id}/secrets/{sid}"),
        crud::to_json(&secret_dto(&si)),
    ))
}

async fn delete_secret(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let (tp_id, sid) = (ids.0[0], ids.0[1]);
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let mut tp: TrustProvider = for_update(&w.st, &tp_id, ctx.rs)?;
    if !tp.secret_infos.iter().any(|s| s.id == sid) {
        return Err(Error::NotFound);
    }
    tp.secret_infos.retain(|s| s.id != sid);
    tp.secrets.certificates.retain(|s| s.id != sid);
    w.touch_meta(&mut tp.meta, &author);
    w.put(tp);
    w.audit(
        &author,
        ctx.rs,
        TrustProviders::CATEGORY,
        Activity::SecretDeleted,
        tp_id,
    );
    w.commit().await?;
    Ok(no_content())
}

#[cfg(test)]
mod tests {
    use svc_api::mgmt::{TrustProviderDto, TrustProviderKind};

    use crate::domain::trust::TrustKind;

    /// The DTOs' kinds are the service's, in the same order (the schema's `must be one of`
    /// lists them), and each variant carries exactly the key material its kind's row allows.
    #[test]
    fn kinds_agree() {
        let ours: Vec<&str> = TrustKind::all().map(TrustKind::as_str).collect();
        let dto: Vec<&str> = TrustProviderKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(ours, dto);
        for k in TrustKind::all() {
            let mut fields: Vec<&str> = TrustProviderDto::key_fields(super::kind_dto(k))
                .iter()
                .copied()
                .filter(|f| *f != "pemType")
                .collect();
            let mut row: Vec<&str> = k.spec().key_fields.to_vec();
            fields.sort_unstable();
            row.sort_unstable();
            assert_eq!(fields, row, "{}", k.as_str());
        }
    }
}
