//! SSO identity providers (contract §3.20): an OIDC or SAML variant, chosen by `type`, with role
//! mappings for the users it signs in.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::Base;

/// `SSOIdentityProviderDTO`: its variant, by `type` (immutable).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
#[schemars(rename = "SSOIdentityProviderDTO")]
pub enum SsoIdentityProviderDto {
    #[serde(rename = "SAMLv2")]
    Saml(SamlIdentityProviderDto),
    #[serde(rename = "OIDCv1")]
    Oidc(OidcIdentityProviderDto),
}

impl SsoIdentityProviderDto {
    /// The fields every variant has.
    pub fn common(&self) -> &SsoIdentityProviderCommon {
        match self {
            SsoIdentityProviderDto::Saml(v) => &v.common,
            SsoIdentityProviderDto::Oidc(v) => &v.common,
        }
    }
}

/// What every `SSOIdentityProviderDTO` variant has: the base block without `resourceSet` (an
/// identity provider is global).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SsoIdentityProviderCommon {
    #[serde(flatten)]
    pub base: Base,
    /// The roles a user signing in through the provider holds; its writer must hold every role
    /// it maps. Rows are unique.
    pub sso_statement_role_mappings: Option<Vec<SsoStatementRoleMappingDto>>,
    /// Users may sign in through it (`OIDCv1` only in this version).
    #[serde(default)]
    pub user_access_enabled: bool,
}

/// `SsoStatementRoleMappingDTO`: a claim value that gives a role. A row matches a string claim
/// equal to `attributeValue`, an array claim containing it, or a boolean or number whose JSON text
/// equals it; a row without `attributeName` or `attributeValue` never matches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "SsoStatementRoleMappingDTO")]
pub struct SsoStatementRoleMappingDto {
    pub attribute_name: Option<String>,
    pub attribute_value: Option<String>,
    /// An existing role.
    pub role_external_id: Uuid,
}

/// How the service authenticates at the OIDC token endpoint: `KeyPair`, `private_key_jwt` under
/// the service's published RS256 key (`svcJwksUrl`); `ClientSecret`, `client_secret_basic` with
/// `clientSecret`.
// No doc comments on the variants: they would make the schema a `oneOf` of constants, not an
// `enum` (and the body check's message would name one value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum OidcAuthType {
    KeyPair,
    ClientSecret,
}

/// `OidcIdentityProviderDTO`: an OpenID Connect provider users sign in through.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "OidcIdentityProviderDTO")]
pub struct OidcIdentityProviderDto {
    #[serde(flatten)]
    pub common: SsoIdentityProviderCommon,
    /// The issuer (discovery at `<oidcBaseURL>/.well-known/openid-configuration`): `https`
    /// (`http` only with `SVC_ALLOW_INSECURE_UPSTREAM`), no query or fragment; stored without a
    /// trailing `/`.
    #[serde(rename = "oidcBaseURL")]
    #[schemars(length(min = 1, max = 2048))]
    pub oidc_base_url: String,
    /// Not the service's own issuer.
    #[schemars(length(min = 1, max = 256))]
    pub client_id: String,
    /// Space-separated; must contain `openid`.
    #[schemars(length(min = 1, max = 1024))]
    pub scopes: String,
    pub auth_type: OidcAuthType,
    /// At most 4096 characters. Required for `ClientSecret` while none is stored, and again
    /// when `oidcBaseURL` or `clientId` changes; absent, `null` or `""` keeps the stored one.
    #[schemars(extend("writeOnly" = true))]
    pub client_secret: Option<String>,
    /// Stored; PKCE (`S256`) is always used.
    #[serde(default)]
    pub pkce_required: bool,
    /// The redirect URI to register at the provider: `<public URL>/api/v1/sso/callback`.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub svc_redirect_url: String,
    /// The service's keys, to register at the provider for `KeyPair`.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub svc_jwks_url: String,
}

/// `SamlIdentityProviderDTO`: a SAML 2 provider, stored and verified (sign-in is not offered in
/// this version).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "SamlIdentityProviderDTO")]
pub struct SamlIdentityProviderDto {
    #[serde(flatten)]
    pub common: SsoIdentityProviderCommon,
    /// Compared with the metadata's `entityID` when set; at most 1024 characters.
    pub entity_id: Option<String>,
    /// Where the metadata is fetched (`https`); exactly one of `metadataUrl` and `metadataXml`.
    pub metadata_url: Option<String>,
    /// Base64 of the metadata XML.
    pub metadata_xml: Option<String>,
    /// `<public URL>/api/v1/sso/saml`.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub service_provider_entity_id: String,
    /// `<public URL>/api/v1/sso/saml/acs`.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub service_provider_sso_url: String,
}
