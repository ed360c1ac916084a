//! SSO identity providers (contract §3.20): the `OIDCv1` and `SAMLv2` variants, write-only client
//! secrets (§1.9), role mappings to existing roles, the read-only service-provider values, and
//! `GET …/{id}/verification` (service/sso.rs does the checks).

use axum::extract::State;
use axum::response::Response;
use serde_json::Value;
use svc_api::mgmt::{
    EntityPatch, OidcIdentityProviderDto, SamlIdentityProviderDto, SsoIdentityProviderCommon, SsoIdentityProviderDto,
    SsoStatementRoleMappingDto,
};
use svc_api::reader::check_len;
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_dto, base_input, patch_input};
use super::crud::{self, OnMissing, Resource, RsFrom, discriminator_kept};
use crate::app::App;
use crate::config::Config;
use crate::domain::Perm;
use crate::domain::sso::{IdpConfig, IdpSecrets, IdpType, OidcAuthType, RoleMapping, SsoIdp};
use crate::domain::{Meta, Secret};
use crate::error::{Error, Result};
use crate::http::api::{Api, Op};
use crate::http::extract::Ids;
use crate::http::list::{Base, ListSpec, field_filter};
use crate::http::ok;
use crate::service::write::{Author, Write};
use crate::state::State as Snapshot;
use svc_api::GenericResponse;

/// `/api/v1/sso-idps` on the shared CRUD layer: global entities.
pub struct SsoIdps;

pub fn register(api: &mut Api<'_>) {
    crud::register::<SsoIdps>(api, "/api/v1/sso-idps");
    api.guarded(
        "/api/v1/sso-idps/{id}/verification",
        Perm::IdentityProviders,
        crud::scope::<SsoIdps>(),
    )
    .get(
        verification,
        Op::new("Verify an identity provider's configuration (§3.20)").ok::<GenericResponse>(200),
    );
}

const SPEC: ListSpec = ListSpec::new("entities", Base::Global)
    .fields(&["type", "userAccessEnabled"])
    .filters(&[field_filter("type"), field_filter("userAccessEnabled")]);

/// A POST or PUT body beyond the base block; a PATCH has none (`None`).
pub type IdpInput = Option<IdpBody>;

pub struct IdpBody {
    mappings: Vec<RoleMapping>,
    user_access: bool,
    config: IdpConfig,
    /// A new client secret (non-empty); `None` keeps the stored one.
    secret: Option<String>,
}

/// A POST or PUT body (its schema checked): the rules across fields and those the schema cannot
/// state — existing roles, unique mappings, the URLs (`https://…`, or `http://…` with
/// `SVC_ALLOW_INSECURE_UPSTREAM`), not the service's own issuer as `clientId`, `openid` among the
/// scopes, a client secret for `ClientSecret`, exactly one SAML metadata source.
fn parse(app: &App, dto: SsoIdentityProviderDto, stored: Option<&SsoIdp>) -> Result<(BaseInput, IdpInput)> {
    let st = app.state();
    let common = match &dto {
        SsoIdentityProviderDto::Saml(v) => v.common.clone(),
        SsoIdentityProviderDto::Oidc(v) => v.common.clone(),
    };
    let SsoIdentityProviderCommon {
        base,
        sso_statement_role_mappings,
        user_access_enabled,
    } = common;
    let base = base_input(base, None)?;
    let mut mappings = Vec::new();
    for (i, m) in sso_statement_role_mappings.unwrap_or_default().into_iter().enumerate() {
        if !st.roles.contains_key(&m.role_external_id) {
            return Err(Error::field(
                format!("ssoStatementRoleMappings[{i}].roleExternalId"),
                "unknown role",
            ));
        }
        mappings.push(RoleMapping {
            attribute_name: m.attribute_name,
            attribute_value: m.attribute_value,
            role: m.role_external_id,
        });
    }
    for (i, m) in mappings.iter().enumerate() {
        if mappings[..i].contains(m) {
            return Err(Error::field(
                format!("ssoStatementRoleMappings[{i}]"),
                "duplicate mapping",
            ));
        }
    }
    let cfg = &app.cfg;
    let (config, secret) = match dto {
        SsoIdentityProviderDto::Oidc(o) => {
            crate::upstream::check_base_url_field("oidcBaseURL", &o.oidc_base_url, cfg)?;
            // A KeyPair client assertion carries `iss` = `sub` = the client id under the
            // service's published RS256 key: naming the service's own issuer would make it a
            // token upstreams trust as the service's (issue 31).
            if o.client_id.trim_end_matches('/') == cfg.issuer().trim_end_matches('/') {
                return Err(Error::field("clientId", "must not be the service's issuer"));
            }
            if !o.scopes.split_whitespace().any(|s| s == "openid") {
                return Err(Error::field("scopes", "must contain openid"));
            }
            let auth_type = match o.auth_type {
                svc_api::mgmt::OidcAuthType::KeyPair => OidcAuthType::KeyPair,
                svc_api::mgmt::OidcAuthType::ClientSecret => OidcAuthType::ClientSecret,
            };
            // `""` keeps the stored secret, as absent and `null` do.
            let secret = o.client_secret.filter(|s| !s.is_empty());
            if let Some(s) = &secret {
                check_len("clientSecret", s, 1, 4096)?;
            }
            // A stored secret stays only where it was stored: moving `oidcBaseURL` or
            // `clientId` without a new one is refused by the write unit (issue 31).
            let stored_secret = stored.is_some_and(|s| s.secrets.client_secret.is_some());
            if auth_type == OidcAuthType::ClientSecret && secret.is_none() && !stored_secret {
                return Err(Error::field("clientSecret", "is required"));
            }
            (
                IdpConfig::Oidc {
                    base_url: o.oidc_base_url.trim_end_matches('/').to_string(),
                    client_id: o.client_id,
                    scopes: o.scopes,
                    auth_type,
                    pkce_required: o.pkce_required,
                },
                secret,
            )
        }
        SsoIdentityProviderDto::Saml(v) => {
            let entity_id = v.entity_id.filter(|s| !s.is_empty());
            if let Some(e) = &entity_id {
                check_len("entityId", e, 1, 1024)?;
            }
            let metadata_url = v.metadata_url.filter(|s| !s.is_empty());
            let metadata_xml = v.metadata_xml.filter(|s| !s.is_empty());
            match (&metadata_url, &metadata_xml) {
                (Some(_), Some(_)) => {
                    return Err(Error::field(
                        "metadataXml",
                        "exactly one of metadataUrl or metadataXml is allowed",
                    ));
                }
                (None, None) => {
                    return Err(Error::field(
                        "metadataUrl",
                        "exactly one of metadataUrl or metadataXml is required",
                    ));
                }
                _ => {}
            }
            if let Some(u) = &metadata_url {
                check_len("metadataUrl", u, 1, 2048)?;
                crate::upstream::check_url_field("metadataUrl", u, cfg)?;
            }
            if let Some(x) = &metadata_xml
                && crate::crypto::b64std_decode(x.trim()).is_none_or(|b| String::from_utf8(b).is_err())
            {
                return Err(Error::field("metadataXml", "must be base64 of the metadata XML"));
            }
            (
                IdpConfig::Saml {
                    entity_id,
                    metadata_url,
                    metadata_xml: metadata_xml.map(|x| x.trim().to_string()),
                },
                None,
            )
        }
    };
    let input = IdpBody {
        mappings,
        user_access: user_access_enabled,
        config,
        secret,
    };
    Ok((base, Some(input)))
}

/// Applies a POST or PUT body: a new secret replaces the stored one; only a `ClientSecret`
/// provider keeps one (a stored secret stays with its `oidcBaseURL` and `clientId`: the write
/// unit refuses a move without a new one, issue 31).
fn apply(idp: &mut SsoIdp, b: IdpBody) {
    idp.mappings = b.mappings;
    idp.user_access = b.user_access;
    let uses_secret = matches!(
        b.config,
        IdpConfig::Oidc {
            auth_type: OidcAuthType::ClientSecret,
            ..
        }
    );
    idp.config = b.config;
    if !uses_secret {
        idp.secrets.client_secret = None;
    }
    if let (true, Some(s)) = (uses_secret, b.secret) {
        idp.secrets.client_secret = Some(Secret::new(s));
    }
}

/// The IdP's DTO (its variant), the secret always `null`.
pub fn idp_dto(cfg: &Config, idp: &SsoIdp) -> SsoIdentityProviderDto {
    let common = SsoIdentityProviderCommon {
        base: base_dto(&idp.meta),
        sso_statement_role_mappings: Some(
            idp.mappings
                .iter()
                .map(|m| SsoStatementRoleMappingDto {
                    attribute_name: m.attribute_name.clone(),
                    attribute_value: m.attribute_value.clone(),
                    role_external_id: m.role,
                })
                .collect(),
        ),
        user_access_enabled: idp.user_access,
    };
    match &idp.config {
        IdpConfig::Oidc {
            base_url,
            client_id,
            scopes,
            auth_type,
            pkce_required,
        } => SsoIdentityProviderDto::Oidc(OidcIdentityProviderDto {
            common,
            oidc_base_url: base_url.clone(),
            client_id: client_id.clone(),
            scopes: scopes.clone(),
            auth_type: match auth_type {
                OidcAuthType::KeyPair => svc_api::mgmt::OidcAuthType::KeyPair,
                OidcAuthType::ClientSecret => svc_api::mgmt::OidcAuthType::ClientSecret,
            },
            client_secret: None,
            pkce_required: *pkce_required,
            svc_redirect_url: crate::service::sso::redirect_url(cfg),
            svc_jwks_url: format!("{}/.well-known/jwks.json", cfg.public_url),
        }),
        IdpConfig::Saml {
            entity_id,
            metadata_url,
            metadata_xml,
        } => SsoIdentityProviderDto::Saml(SamlIdentityProviderDto {
            common,
            entity_id: entity_id.clone(),
            metadata_url: metadata_url.clone(),
            metadata_xml: metadata_xml.clone(),
            service_provider_entity_id: format!("{}/api/v1/sso/saml", cfg.public_url),
            service_provider_sso_url: format!("{}/api/v1/sso/saml/acs", cfg.public_url),
        }),
    }
}

/// A role being deleted leaves the identity providers' mappings (one `IdentityProviders`
/// `Updated` entry per IdP changed), so a GET body sent back in a PUT stays valid.
pub fn release_role(w: &mut Write<'_>, author: &crate::service::write::Author, role: uuid::Uuid) {
    let hit: Vec<SsoIdp> =
        w.st.sso_idps
            .values()
            .filter(|i| i.mappings.iter().any(|m| m.role == role))
            .map(|i| (**i).clone())
            .collect();
    for mut idp in hit {
        idp.mappings.retain(|m| m.role != role);
        w.touch_meta(&mut idp.meta, author);
        let id = idp.meta.id;
        w.put(idp);
        w.audit(
            author,
            crate::domain::DEFAULT_RESOURCE_SET,
            "IdentityProviders",
            crate::events::audit::Activity::Updated,
            id,
        );
    }
}

impl Resource for SsoIdps {
    type Record = SsoIdp;
    type Input = IdpInput;
    type Dto = SsoIdentityProviderDto;
    type Patch = EntityPatch;
    const NAME: &'static str = "SSO identity providers";
    const RS: RsFrom = RsFrom::Global;
    const LIST: ListSpec = SPEC;
    /// §3.20 lists only `204` for DELETE.
    const ON_MISSING_DELETE: OnMissing = OnMissing::NoContent;

    /// §1.5: a PUT cannot change `type` (said before the other variant's fields are read).
    fn prepare(body: &mut Value, stored: Option<&SsoIdp>) -> Result<()> {
        let stored = stored.map(|s| s.idp_type().as_str());
        discriminator_kept(body, "type", stored, &[IdpType::Saml.as_str(), IdpType::Oidc.as_str()])
    }

    fn parse(
        app: &App,
        dto: SsoIdentityProviderDto,
        _: Mode,
        stored: Option<&SsoIdp>,
    ) -> Result<(BaseInput, IdpInput)> {
        parse(app, dto, stored)
    }

    /// `SSOIdentityProviderPatchDTO` is the EntityPatchDTO: the base block only.
    fn parse_patch(_: &App, p: EntityPatch, _: Option<&SsoIdp>) -> Result<(BaseInput, IdpInput)> {
        Ok((patch_input(p)?, None))
    }

    /// An identity provider a client workload names cannot be deleted (§1.10 rule 4).
    fn before_delete(w: &mut Write<'_>, _: &Author, _: Uuid, id: Uuid) -> Result<()> {
        match w
            .st
            .client_workloads
            .values()
            .find(|c| c.sso_identity_providers.contains(&id))
        {
            Some(c) => Err(Error::bad(format!(
                "clientWorkloads: referenced by client workload {}",
                c.meta.named()
            ))),
            None => Ok(()),
        }
    }

    fn create(w: &mut Write<'_>, input: IdpInput, meta: Meta) -> Result<SsoIdp> {
        let b = input.ok_or_else(|| Error::internal("create without a body"))?;
        let mut idp = SsoIdp {
            meta,
            mappings: vec![],
            user_access: false,
            trusted: false,
            config: b.config.clone(),
            secrets: IdpSecrets::default(),
        };
        apply(&mut idp, b);
        // Trust is given by a body that names the URL, never by a PATCH of the base block (an
        // administrator renaming an IdP someone else moved must not make it trusted).
        idp.trusted = crate::service::escalation::holds_everything(w.app(), &w.st)?;
        Ok(idp)
    }

    fn replace(w: &mut Write<'_>, input: IdpInput, idp: &mut SsoIdp) -> Result<()> {
        let b = input.ok_or_else(|| Error::internal("replace without a body"))?;
        if std::mem::discriminant(&b.config) != std::mem::discriminant(&idp.config) {
            return Err(Error::field("type", "cannot be changed"));
        }
        apply(idp, b);
        idp.trusted = crate::service::escalation::holds_everything(w.app(), &w.st)?;
        Ok(())
    }

    /// Mapped roles still exist; a `ClientSecret` provider has a secret.
    fn check(w: &Write<'_>, idp: &SsoIdp) -> Result<()> {
        let st = &w.st;
        for (i, m) in idp.mappings.iter().enumerate() {
            if !st.roles.contains_key(&m.role) {
                return Err(Error::field(
                    format!("ssoStatementRoleMappings[{i}].roleExternalId"),
                    "unknown role",
                ));
            }
        }
        if let IdpConfig::Oidc {
            auth_type: OidcAuthType::ClientSecret,
            ..
        } = idp.config
            && idp.secrets.client_secret.is_none()
        {
            return Err(Error::field("clientSecret", "is required"));
        }
        // A caller can grant only what it holds (issue 22): mapped roles are given at sign-in.
        let mapped: Vec<Uuid> = idp.mappings.iter().map(|m| m.role).collect();
        crate::service::escalation::check_mapped_roles(w.app(), st, &mapped)?;
        Ok(())
    }

    fn render(app: &App, _: &Snapshot, idp: &SsoIdp) -> SsoIdentityProviderDto {
        idp_dto(&app.cfg, idp)
    }
}

/// `GET …/{id}/verification`: always `200` with the outcome (§3.20); `404` for an unknown id.
async fn verification(State(app): State<App>, ids: Ids) -> Result<Response> {
    let idp = app.state().sso_idps.get(&ids.one()).cloned().ok_or(Error::NotFound)?;
    let (success, message) = match crate::service::sso::verify_idp(&app, &idp).await {
        Ok(msg) => (true, msg),
        Err(problem) => (false, problem),
    };
    Ok(ok(crud::to_json(&GenericResponse {
        success,
        message: Some(message),
        id: 0,
    })))
}
