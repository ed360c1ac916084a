//! Credential providers (contract §3.5, §3.6): `CredentialProviderV2DTO`, a `oneOf` on `type` whose
//! variants put their own fields (§3.5.2) beside the common ones, and the deprecated v1 view
//! (`CredentialProviderDTO` / `CredentialProviderUIDTO`), which carries the same variant fields as
//! the JSON text `providerDetailJSON`. Each type's own fields are one struct (`…Fields`), flattened
//! into its v2 variant and read at `providerDetailJSON` for v1 ([`CredentialProviderFields`]).
//!
//! Secrets (`apiKey`, `password`, `clientSecret`, `privateKey`) are write-only: `null` in v2
//! answers, left out of v1's text. Server-made fields (a ciB account's provisioning state, a
//! signed JWT's `keyContent`, the authorization-code URLs) are read-only: accepted and ignored on
//! input. Rules the schema cannot state (patterns, dynamic expressions, SPIFFE IDs, references,
//! rules across fields) stay with the type (`svc-server`'s `credential/<type>.rs`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::{Base, EntityPatch};
use crate::reader::FieldError;
use crate::{Timestamp, schema};

/// A credential provider's `type` (§3.5.1), in the order the service lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CredentialProviderType")]
pub enum CredentialProviderType {
    #[serde(rename = "svc-access-token")]
    SvcAccessToken,
    #[serde(rename = "apikey")]
    ApiKey,
    #[serde(rename = "oauth-authorization-code")]
    OAuthAuthorizationCode,
    #[serde(rename = "cloudA-sts-oidc")]
    CloudASts,
    #[serde(rename = "oauth-client-credential")]
    OAuthClientCredential,
    #[serde(rename = "signed-jwt")]
    SignedJwt,
    #[serde(rename = "username-password")]
    UsernamePassword,
    #[serde(rename = "vaultClientToken")]
    VaultClientToken,
    #[serde(rename = "oidc-id-token")]
    OidcIdToken,
    #[serde(rename = "jwt-svid-token")]
    JwtSvidToken,
    #[serde(rename = "x509svid")]
    X509Svid,
    #[serde(rename = "aiA-wif")]
    AiAWif,
    #[serde(rename = "aiB-wif")]
    AiBWif,
    #[serde(rename = "cloudC-identity-federation")]
    CloudCIdentityFederation,
    #[serde(rename = "cloudB-directory-federation")]
    CloudBDirectoryFederation,
    #[serde(rename = "cloudB-key-vault-value")]
    CloudBKeyVaultValue,
    #[serde(rename = "ciB-managed-account")]
    CiBManagedAccount,
}

impl CredentialProviderType {
    pub const ALL: [CredentialProviderType; 17] = [
        Self::SvcAccessToken,
        Self::ApiKey,
        Self::OAuthAuthorizationCode,
        Self::CloudASts,
        Self::OAuthClientCredential,
        Self::SignedJwt,
        Self::UsernamePassword,
        Self::VaultClientToken,
        Self::OidcIdToken,
        Self::JwtSvidToken,
        Self::X509Svid,
        Self::AiAWif,
        Self::AiBWif,
        Self::CloudCIdentityFederation,
        Self::CloudBDirectoryFederation,
        Self::CloudBKeyVaultValue,
        Self::CiBManagedAccount,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SvcAccessToken => "svc-access-token",
            Self::ApiKey => "apikey",
            Self::OAuthAuthorizationCode => "oauth-authorization-code",
            Self::CloudASts => "cloudA-sts-oidc",
            Self::OAuthClientCredential => "oauth-client-credential",
            Self::SignedJwt => "signed-jwt",
            Self::UsernamePassword => "username-password",
            Self::VaultClientToken => "vaultClientToken",
            Self::OidcIdToken => "oidc-id-token",
            Self::JwtSvidToken => "jwt-svid-token",
            Self::X509Svid => "x509svid",
            Self::AiAWif => "aiA-wif",
            Self::AiBWif => "aiB-wif",
            Self::CloudCIdentityFederation => "cloudC-identity-federation",
            Self::CloudBDirectoryFederation => "cloudB-directory-federation",
            Self::CloudBKeyVaultValue => "cloudB-key-vault-value",
            Self::CiBManagedAccount => "ciB-managed-account",
        }
    }

    pub fn parse(s: &str) -> Option<CredentialProviderType> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

// ---- v2 ------------------------------------------------------------------------------------------

/// `CredentialProviderV2DTO`: its variant, by `type`; the variant's fields sit next to the common
/// ones.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
#[schemars(rename = "CredentialProviderV2DTO")]
pub enum CredentialProviderV2Dto {
    #[serde(rename = "svc-access-token")]
    SvcAccessToken(CpTypeSvcAccessTokenV2Dto),
    #[serde(rename = "apikey")]
    ApiKey(CpTypeApiKeyUiV2Dto),
    #[serde(rename = "oauth-authorization-code")]
    OAuthAuthorizationCode(CpTypeOAuth2AuthorizationCodeUiV2Dto),
    #[serde(rename = "cloudA-sts-oidc")]
    CloudASts(CpCloudAStsV2Dto),
    #[serde(rename = "oauth-client-credential")]
    OAuthClientCredential(CpTypeOAuth2ClientCredentialsUiV2Dto),
    #[serde(rename = "signed-jwt")]
    SignedJwt(CpTypeJwtTokenV2Dto),
    #[serde(rename = "username-password")]
    UsernamePassword(CpTypeUsernamePasswordUiV2Dto),
    #[serde(rename = "vaultClientToken")]
    VaultClientToken(CpTypeVaultClientTokenV2Dto),
    #[serde(rename = "oidc-id-token")]
    OidcIdToken(CpTypeOidcIdTokenV2Dto),
    #[serde(rename = "jwt-svid-token")]
    JwtSvidToken(CpTypeJwtSvidTokenV2Dto),
    #[serde(rename = "x509svid")]
    X509Svid(CpTypeX509SvidV2Dto),
    #[serde(rename = "aiA-wif")]
    AiAWif(CpTypeAiAWifV2Dto),
    #[serde(rename = "aiB-wif")]
    AiBWif(CpTypeAiBWifV2Dto),
    #[serde(rename = "cloudC-identity-federation")]
    CloudCIdentityFederation(CpTypeCloudCIdentityFederationV2Dto),
    #[serde(rename = "cloudB-directory-federation")]
    CloudBDirectoryFederation(CpTypeCloudBDirectoryFederationV2Dto),
    #[serde(rename = "cloudB-key-vault-value")]
    CloudBKeyVaultValue(CpTypeCloudBKeyVaultValueDto),
    #[serde(rename = "ciB-managed-account")]
    CiBManagedAccount(CpCiBManagedAccountDto),
}

/// What every `CredentialProviderV2DTO` variant has.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialProviderCommon {
    #[serde(flatten)]
    pub base: Base,
    /// The provider's resource set: the request's.
    pub resource_set: Option<Uuid>,
    /// Meaning per type (`oauth-authorization-code`: how long a consent holds, ≥ 86400, default
    /// 2592000; `oidc-id-token` / `jwt-svid-token`: the token's lifetime, 60..86400, default 3600;
    /// `x509svid`: the certificate's, 900..124416000, default 3600); `0` for the other types.
    pub lifetime_time_span_seconds: Option<i32>,
    /// `oauth-authorization-code`: when the consent ends (authorization time + the span).
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub lifetime_expiration: Option<Timestamp>,
    /// Access policies mapping the provider.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub access_policy_count: i32,
}

/// `type: svc-access-token`: a management token carrying a role (§2.5).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPTypeSvcAccessTokenV2DTO")]
pub struct CpTypeSvcAccessTokenV2Dto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: SvcAccessTokenFields,
}

/// `type: apikey`: a stored API key.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPTypeApiKeyUIV2DTO")]
pub struct CpTypeApiKeyUiV2Dto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: ApiKeyFields,
}

/// `type: oauth-authorization-code`: an administrator's consent (§3.5.4), then the token
/// endpoint's access tokens, renewed with the refresh token.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPTypeOAuth2AuthorizationCodeUIV2DTO")]
pub struct CpTypeOAuth2AuthorizationCodeUiV2Dto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: OAuthAuthorizationCodeFields,
}

/// `type: cloudA-sts-oidc`: cloudA STS credentials for a role, against a federation assertion
/// the service signs.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPCloudAStsV2DTO")]
pub struct CpCloudAStsV2Dto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: CloudAStsFields,
}

/// `type: oauth-client-credential`: the token endpoint's access token for a client (RFC 6749
/// §4.4).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPTypeOAuth2ClientCredentialsUIV2DTO")]
pub struct CpTypeOAuth2ClientCredentialsUiV2Dto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: OAuthClientCredentialFields,
}

/// `type: signed-jwt`: a dataWarehouseA key-pair JWT signed with the provider's own RSA key.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPTypeJWTTokenV2DTO")]
pub struct CpTypeJwtTokenV2Dto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: SignedJwtFields,
}

/// `type: username-password`: a stored username and password.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPTypeUsernamePasswordUIV2DTO")]
pub struct CpTypeUsernamePasswordUiV2Dto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: UsernamePasswordFields,
}

/// `type: vaultClientToken`: a vault's client token, from a JWT login with a JWT the service
/// signs for that vault.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPTypeVaultClientTokenV2DTO")]
pub struct CpTypeVaultClientTokenV2Dto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: VaultClientTokenFields,
}

/// `type: oidc-id-token` (ext): an identity token the service signs with its issuer keys.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPTypeOidcIdTokenV2DTO")]
pub struct CpTypeOidcIdTokenV2Dto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: IssuedJwtFields,
}

/// `type: jwt-svid-token` (ext): a JWT-SVID the service signs; its subject (once resolved) is a
/// SPIFFE ID.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPTypeJwtSvidTokenV2DTO")]
pub struct CpTypeJwtSvidTokenV2Dto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: IssuedJwtFields,
}

/// `type: x509svid` (ext): an X.509-SVID the service's CA signs for the workload's CSR.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPTypeX509SvidV2DTO")]
pub struct CpTypeX509SvidV2Dto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: X509SvidFields,
}

/// `type: aiA-wif`: aiA's workload identity federation (token exchange).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPTypeAiAWifV2DTO")]
pub struct CpTypeAiAWifV2Dto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: AiAWifFields,
}

/// `type: aiB-wif`: aiB's workload identity federation (token exchange).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPTypeAiBWifV2DTO")]
pub struct CpTypeAiBWifV2Dto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: AiBWifFields,
}

/// `type: cloudC-identity-federation`: a cloudC service account's access token through workload
/// identity federation.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPTypeCloudCIdentityFederationV2DTO")]
pub struct CpTypeCloudCIdentityFederationV2Dto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: CloudCIdentityFederationFields,
}

/// `type: cloudB-directory-federation`: cloudB directory tokens for an application, against a
/// federated client assertion the service signs.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPTypeCloudBDirectoryFederationV2DTO")]
pub struct CpTypeCloudBDirectoryFederationV2Dto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: CloudBDirectoryFederationFields,
}

/// `type: cloudB-key-vault-value`: one or two secrets of a cloudB key vault, read through a
/// `CloudBDirectoryFederation` credential provider integration (§3.7).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPTypeCloudBKeyVaultValueDTO")]
pub struct CpTypeCloudBKeyVaultValueDto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: CloudBKeyVaultValueFields,
}

/// `type: ciB-managed-account`: a ciB service account the service creates through a `CiB`
/// integration (§3.7), whose personal access tokens are the credential.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPCiBManagedAccountDTO")]
pub struct CpCiBManagedAccountDto {
    #[serde(flatten)]
    pub common: CredentialProviderCommon,
    #[serde(flatten)]
    pub fields: CiBManagedAccountFields,
}

impl CredentialProviderV2Dto {
    /// The common fields and the type's own.
    pub fn into_parts(self) -> (CredentialProviderCommon, CredentialProviderFields) {
        use CredentialProviderFields as F;
        match self {
            Self::SvcAccessToken(v) => (v.common, F::SvcAccessToken(v.fields)),
            Self::ApiKey(v) => (v.common, F::ApiKey(v.fields)),
            Self::OAuthAuthorizationCode(v) => (v.common, F::OAuthAuthorizationCode(v.fields)),
            Self::CloudASts(v) => (v.common, F::CloudASts(v.fields)),
            Self::OAuthClientCredential(v) => (v.common, F::OAuthClientCredential(v.fields)),
            Self::SignedJwt(v) => (v.common, F::SignedJwt(v.fields)),
            Self::UsernamePassword(v) => (v.common, F::UsernamePassword(v.fields)),
            Self::VaultClientToken(v) => (v.common, F::VaultClientToken(v.fields)),
            Self::OidcIdToken(v) => (v.common, F::OidcIdToken(v.fields)),
            Self::JwtSvidToken(v) => (v.common, F::JwtSvidToken(v.fields)),
            Self::X509Svid(v) => (v.common, F::X509Svid(v.fields)),
            Self::AiAWif(v) => (v.common, F::AiAWif(v.fields)),
            Self::AiBWif(v) => (v.common, F::AiBWif(v.fields)),
            Self::CloudCIdentityFederation(v) => (v.common, F::CloudCIdentityFederation(v.fields)),
            Self::CloudBDirectoryFederation(v) => (v.common, F::CloudBDirectoryFederation(v.fields)),
            Self::CloudBKeyVaultValue(v) => (v.common, F::CloudBKeyVaultValue(v.fields)),
            Self::CiBManagedAccount(v) => (v.common, F::CiBManagedAccount(v.fields)),
        }
    }

    /// The variant of `fields`' type.
    pub fn from_parts(common: CredentialProviderCommon, fields: CredentialProviderFields) -> Self {
        use CredentialProviderFields as F;
        match fields {
            F::SvcAccessToken(fields) => Self::SvcAccessToken(CpTypeSvcAccessTokenV2Dto { common, fields }),
            F::ApiKey(fields) => Self::ApiKey(CpTypeApiKeyUiV2Dto { common, fields }),
            F::OAuthAuthorizationCode(fields) => {
                Self::OAuthAuthorizationCode(CpTypeOAuth2AuthorizationCodeUiV2Dto { common, fields })
            }
            F::CloudASts(fields) => Self::CloudASts(CpCloudAStsV2Dto { common, fields }),
            F::OAuthClientCredential(fields) => {
                Self::OAuthClientCredential(CpTypeOAuth2ClientCredentialsUiV2Dto { common, fields })
            }
            F::SignedJwt(fields) => Self::SignedJwt(CpTypeJwtTokenV2Dto { common, fields }),
            F::UsernamePassword(fields) => Self::UsernamePassword(CpTypeUsernamePasswordUiV2Dto { common, fields }),
            F::VaultClientToken(fields) => Self::VaultClientToken(CpTypeVaultClientTokenV2Dto { common, fields }),
            F::OidcIdToken(fields) => Self::OidcIdToken(CpTypeOidcIdTokenV2Dto { common, fields }),
            F::JwtSvidToken(fields) => Self::JwtSvidToken(CpTypeJwtSvidTokenV2Dto { common, fields }),
            F::X509Svid(fields) => Self::X509Svid(CpTypeX509SvidV2Dto { common, fields }),
            F::AiAWif(fields) => Self::AiAWif(CpTypeAiAWifV2Dto { common, fields }),
            F::AiBWif(fields) => Self::AiBWif(CpTypeAiBWifV2Dto { common, fields }),
            F::CloudCIdentityFederation(fields) => {
                Self::CloudCIdentityFederation(CpTypeCloudCIdentityFederationV2Dto { common, fields })
            }
            F::CloudBDirectoryFederation(fields) => {
                Self::CloudBDirectoryFederation(CpTypeCloudBDirectoryFederationV2Dto { common, fields })
            }
            F::CloudBKeyVaultValue(fields) => {
                Self::CloudBKeyVaultValue(CpTypeCloudBKeyVaultValueDto { common, fields })
            }
            F::CiBManagedAccount(fields) => Self::CiBManagedAccount(CpCiBManagedAccountDto { common, fields }),
        }
    }
}

// ---- each type's own fields (§3.5.2) ----------------------------------------------------------

/// One type's own fields: what a v2 variant adds to the common fields, and what v1's
/// `providerDetailJSON` holds. Serialised as the type's fields alone (no `type`).
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum CredentialProviderFields {
    SvcAccessToken(SvcAccessTokenFields),
    ApiKey(ApiKeyFields),
    OAuthAuthorizationCode(OAuthAuthorizationCodeFields),
    CloudASts(CloudAStsFields),
    OAuthClientCredential(OAuthClientCredentialFields),
    SignedJwt(SignedJwtFields),
    UsernamePassword(UsernamePasswordFields),
    VaultClientToken(VaultClientTokenFields),
    OidcIdToken(IssuedJwtFields),
    JwtSvidToken(IssuedJwtFields),
    X509Svid(X509SvidFields),
    AiAWif(AiAWifFields),
    AiBWif(AiBWifFields),
    CloudCIdentityFederation(CloudCIdentityFederationFields),
    CloudBDirectoryFederation(CloudBDirectoryFederationFields),
    CloudBKeyVaultValue(CloudBKeyVaultValueFields),
    CiBManagedAccount(CiBManagedAccountFields),
}

impl CredentialProviderFields {
    /// Reads `v` (an object found at `path`: v1's `providerDetailJSON`) as the fields of type
    /// `t`, checked against their schema (`schema::read_at`).
    pub fn read_at(t: CredentialProviderType, v: Value, path: &str) -> Result<Self, FieldError> {
        use CredentialProviderType as T;
        Ok(match t {
            T::SvcAccessToken => Self::SvcAccessToken(schema::read_at(v, path)?),
            T::ApiKey => Self::ApiKey(schema::read_at(v, path)?),
            T::OAuthAuthorizationCode => Self::OAuthAuthorizationCode(schema::read_at(v, path)?),
            T::CloudASts => Self::CloudASts(schema::read_at(v, path)?),
            T::OAuthClientCredential => Self::OAuthClientCredential(schema::read_at(v, path)?),
            T::SignedJwt => Self::SignedJwt(schema::read_at(v, path)?),
            T::UsernamePassword => Self::UsernamePassword(schema::read_at(v, path)?),
            T::VaultClientToken => Self::VaultClientToken(schema::read_at(v, path)?),
            T::OidcIdToken => Self::OidcIdToken(schema::read_at(v, path)?),
            T::JwtSvidToken => Self::JwtSvidToken(schema::read_at(v, path)?),
            T::X509Svid => Self::X509Svid(schema::read_at(v, path)?),
            T::AiAWif => Self::AiAWif(schema::read_at(v, path)?),
            T::AiBWif => Self::AiBWif(schema::read_at(v, path)?),
            T::CloudCIdentityFederation => Self::CloudCIdentityFederation(schema::read_at(v, path)?),
            T::CloudBDirectoryFederation => Self::CloudBDirectoryFederation(schema::read_at(v, path)?),
            T::CloudBKeyVaultValue => Self::CloudBKeyVaultValue(schema::read_at(v, path)?),
            T::CiBManagedAccount => Self::CiBManagedAccount(schema::read_at(v, path)?),
        })
    }

    /// Reads stored fields (the JSON object of a stored provider's variant fields, written from
    /// these types) without the request checks: keys of no field are ignored.
    pub fn from_stored(t: CredentialProviderType, v: Value) -> Result<Self, serde_json::Error> {
        use CredentialProviderType as T;
        use serde_json::from_value as of;
        Ok(match t {
            T::SvcAccessToken => Self::SvcAccessToken(of(v)?),
            T::ApiKey => Self::ApiKey(of(v)?),
            T::OAuthAuthorizationCode => Self::OAuthAuthorizationCode(of(v)?),
            T::CloudASts => Self::CloudASts(of(v)?),
            T::OAuthClientCredential => Self::OAuthClientCredential(of(v)?),
            T::SignedJwt => Self::SignedJwt(of(v)?),
            T::UsernamePassword => Self::UsernamePassword(of(v)?),
            T::VaultClientToken => Self::VaultClientToken(of(v)?),
            T::OidcIdToken => Self::OidcIdToken(of(v)?),
            T::JwtSvidToken => Self::JwtSvidToken(of(v)?),
            T::X509Svid => Self::X509Svid(of(v)?),
            T::AiAWif => Self::AiAWif(of(v)?),
            T::AiBWif => Self::AiBWif(of(v)?),
            T::CloudCIdentityFederation => Self::CloudCIdentityFederation(of(v)?),
            T::CloudBDirectoryFederation => Self::CloudBDirectoryFederation(of(v)?),
            T::CloudBKeyVaultValue => Self::CloudBKeyVaultValue(of(v)?),
            T::CiBManagedAccount => Self::CiBManagedAccount(of(v)?),
        })
    }

    /// The fields of type `t` with every required value empty: what [`Self::from_stored`] falls
    /// back to when a stored provider cannot be read.
    pub fn empty(t: CredentialProviderType) -> Self {
        use CredentialProviderType as T;
        match t {
            T::SvcAccessToken => Self::SvcAccessToken(Default::default()),
            T::ApiKey => Self::ApiKey(Default::default()),
            T::OAuthAuthorizationCode => Self::OAuthAuthorizationCode(Default::default()),
            T::CloudASts => Self::CloudASts(Default::default()),
            T::OAuthClientCredential => Self::OAuthClientCredential(Default::default()),
            T::SignedJwt => Self::SignedJwt(Default::default()),
            T::UsernamePassword => Self::UsernamePassword(Default::default()),
            T::VaultClientToken => Self::VaultClientToken(Default::default()),
            T::OidcIdToken => Self::OidcIdToken(Default::default()),
            T::JwtSvidToken => Self::JwtSvidToken(Default::default()),
            T::X509Svid => Self::X509Svid(Default::default()),
            T::AiAWif => Self::AiAWif(Default::default()),
            T::AiBWif => Self::AiBWif(Default::default()),
            T::CloudCIdentityFederation => Self::CloudCIdentityFederation(Default::default()),
            T::CloudBDirectoryFederation => Self::CloudBDirectoryFederation(Default::default()),
            T::CloudBKeyVaultValue => Self::CloudBKeyVaultValue(Default::default()),
            T::CiBManagedAccount => Self::CiBManagedAccount(Default::default()),
        }
    }

    pub fn kind(&self) -> CredentialProviderType {
        use CredentialProviderType as T;
        match self {
            Self::SvcAccessToken(_) => T::SvcAccessToken,
            Self::ApiKey(_) => T::ApiKey,
            Self::OAuthAuthorizationCode(_) => T::OAuthAuthorizationCode,
            Self::CloudASts(_) => T::CloudASts,
            Self::OAuthClientCredential(_) => T::OAuthClientCredential,
            Self::SignedJwt(_) => T::SignedJwt,
            Self::UsernamePassword(_) => T::UsernamePassword,
            Self::VaultClientToken(_) => T::VaultClientToken,
            Self::OidcIdToken(_) => T::OidcIdToken,
            Self::JwtSvidToken(_) => T::JwtSvidToken,
            Self::X509Svid(_) => T::X509Svid,
            Self::AiAWif(_) => T::AiAWif,
            Self::AiBWif(_) => T::AiBWif,
            Self::CloudCIdentityFederation(_) => T::CloudCIdentityFederation,
            Self::CloudBDirectoryFederation(_) => T::CloudBDirectoryFederation,
            Self::CloudBKeyVaultValue(_) => T::CloudBKeyVaultValue,
            Self::CiBManagedAccount(_) => T::CiBManagedAccount,
        }
    }
}

/// `literal` (the value as it is) or `dynamic` (a template of `${…}` expressions resolved at
/// issuance, §3.5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "CPValueType")]
pub enum ValueType {
    Literal,
    Dynamic,
}

/// `JWTClaimDTO`: a custom claim of a JWT the service signs.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "JWTClaimDTO")]
pub struct JwtClaimDto {
    /// Not `iss`, `iat`, `exp`, `nbf` or `jti` (nor `sub` in a JWT-SVID).
    #[schemars(length(min = 1, max = 256))]
    pub key: String,
    /// A template when `valueType` is `dynamic`.
    #[schemars(length(max = 4096))]
    pub value: String,
    /// `literal` when absent.
    pub value_type: Option<ValueType>,
}

/// The one `valueType` of an OAuth custom parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "CPLiteralValueType")]
pub enum LiteralValueType {
    Literal,
}

/// `CPTypeOAuth2CustomParameters`: a parameter added to the OAuth request.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CPTypeOAuth2CustomParameters")]
pub struct CustomParameterDto {
    /// Not a parameter the protocol sets (`grant_type`, `client_id`, `scope`, …).
    #[schemars(length(min = 1, max = 256))]
    pub key: String,
    #[schemars(length(max = 4096))]
    pub value: String,
    /// `literal` when absent.
    pub value_type: Option<LiteralValueType>,
}

/// `svc-access-token`'s fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SvcAccessTokenFields {
    /// Always `svc-api`.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub audience: Option<String>,
    /// An existing role (system roles too): the token gets its permissions. The caller must hold
    /// what it grants.
    pub role_id: Uuid,
    #[schemars(range(min = 300, max = 43200))]
    pub lifetime_in_seconds: i32,
    /// Greater than `lifetimeInSeconds`; stored (no refresh tokens are issued).
    pub absolute_token_lifetime: Option<i32>,
}

/// `apikey`'s fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyFields {
    /// 1..8192 characters; required on create, kept when absent or empty.
    #[schemars(extend("writeOnly" = true))]
    pub api_key: Option<String>,
}

/// `oauth-authorization-code`'s fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OAuthAuthorizationCodeFields {
    #[serde(rename = "clientID")]
    #[schemars(length(min = 1, max = 1024))]
    pub client_id: String,
    /// Kept when absent; required again when `tokenUrl` changes.
    #[schemars(extend("writeOnly" = true))]
    pub client_secret: Option<String>,
    #[schemars(length(max = 4096))]
    pub scope: Option<String>,
    /// Added to the authorization request.
    pub custom_parameters: Option<Vec<CustomParameterDto>>,
    /// The authorization server's metadata address.
    #[schemars(length(min = 1, max = 2048))]
    pub o_auth_url: String,
    /// `https` (`http` with `SVC_ALLOW_INSECURE_UPSTREAM`).
    #[schemars(length(min = 1, max = 2048))]
    pub authorization_url: String,
    /// `https` (`http` with `SVC_ALLOW_INSECURE_UPSTREAM`).
    #[schemars(length(min = 1, max = 2048))]
    pub token_url: String,
    /// Stored.
    #[schemars(length(max = 2048))]
    pub introspection_url: Option<String>,
    /// Send S256 PKCE (false when absent).
    pub is_pkce_required: Option<bool>,
    /// `{base_url}/api/v1/credential-providers/{id}/callback`.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub call_back_url: Option<String>,
    /// An absolute http(s) URL the callback redirects to after a consent.
    #[schemars(length(max = 2048))]
    pub final_callback_url: Option<String>,
    /// `{base_url}/api/v2/credential-providers/{id}/authorize`.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub user_authorization_url: Option<String>,
    /// Always `null`.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub state: Option<String>,
}

/// `cloudA-sts-oidc`'s fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloudAStsFields {
    /// `^arn:[^:]+:iam::\d{12}:role/.+$`.
    #[serde(rename = "cloudAIAMRoleArn")]
    #[schemars(length(min = 1, max = 2048))]
    pub cloud_a_iam_role_arn: String,
    /// `DurationSeconds`; 3600 when absent.
    #[schemars(range(min = 900, max = 43200))]
    pub lifetime: Option<i32>,
}

/// `authHeader` (HTTP Basic, the default) or `postBody` (form fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CPCredentialStyle")]
pub enum CredentialStyle {
    AuthHeader,
    PostBody,
}

/// `oauth-client-credential`'s fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OAuthClientCredentialFields {
    #[serde(rename = "clientID")]
    #[schemars(length(min = 1, max = 1024))]
    pub client_id: String,
    /// Kept when absent; required again when `url` changes.
    #[schemars(extend("writeOnly" = true))]
    pub client_secret: Option<String>,
    #[schemars(length(max = 4096))]
    pub scope: Option<String>,
    /// Added to the token request.
    pub custom_parameters: Option<Vec<CustomParameterDto>>,
    /// The token endpoint: `https` (`http` with `SVC_ALLOW_INSECURE_UPSTREAM`).
    #[schemars(length(min = 1, max = 2048))]
    pub url: String,
    /// `authHeader` when absent.
    pub credential_style: Option<CredentialStyle>,
}

/// The one `tokenConfiguration` of a signed JWT.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPTokenConfiguration")]
pub enum TokenConfiguration {
    #[default]
    #[serde(rename = "dataWarehouseA")]
    DataWarehouseA,
}

/// The one `algorithmType` of a signed JWT.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPSignedJwtAlgorithm")]
pub enum SignedJwtAlgorithm {
    #[default]
    RS256,
}

/// `signed-jwt`'s fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignedJwtFields {
    pub token_configuration: TokenConfiguration,
    pub algorithm_type: SignedJwtAlgorithm,
    /// The JWT's lifetime in seconds.
    #[schemars(range(min = 1, max = 3600))]
    pub lifetime: i32,
    /// `ACCOUNT.USER`, upper case.
    #[schemars(length(min = 3, max = 512))]
    pub subject: String,
    /// `ACCOUNT.USER.SHA256:<fingerprint>`; when absent the service derives it from `subject` and
    /// the key (and shows the derived value).
    #[schemars(length(min = 1, max = 1024))]
    pub issuer: Option<String>,
    /// The key pair's public key (PEM), to register with the warehouse.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub key_content: Option<String>,
    /// A PKCS#8 PEM RSA key of at least 2048 bits; generated (RSA-2048) when absent on create.
    #[schemars(extend("writeOnly" = true))]
    pub private_key: Option<String>,
}

/// `username-password`'s fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsernamePasswordFields {
    #[schemars(length(min = 1, max = 1024))]
    pub username: String,
    /// Required on create, kept when absent.
    #[schemars(extend("writeOnly" = true))]
    pub password: Option<String>,
}

/// A vault provider's `forwardingConfig` (stored, no effect).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "CPForwardingConfig")]
pub enum ForwardingConfig {
    #[serde(rename = "")]
    Empty,
    Conditional,
    Unconditional,
}

/// `vaultClientToken`'s fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VaultClientTokenFields {
    /// The service's issuer; when given it must be that.
    pub issuer: Option<String>,
    /// The login JWT's `sub`: literal, or a template (`subjectType: dynamic`).
    #[schemars(length(min = 1, max = 2048))]
    pub subject: String,
    /// `literal` when absent.
    pub subject_type: Option<ValueType>,
    /// The login JWT's lifetime in seconds.
    #[schemars(range(min = 1, max = 3600))]
    pub lifetime: i32,
    /// Extra claims of the login JWT (its `aud` is always the vault's address).
    pub custom_claim_names: Option<Vec<JwtClaimDto>>,
    /// A host name.
    #[schemars(length(min = 1, max = 253))]
    pub vault_host: String,
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// `true` when absent; `false` (plain http) needs `SVC_ALLOW_INSECURE_UPSTREAM`.
    pub tls: Option<bool>,
    /// The auth mount path (`auth/jwt`).
    #[schemars(length(min = 1, max = 512))]
    pub authentication_path: String,
    /// Sent as `X-Vault-Namespace`.
    #[schemars(length(max = 512))]
    pub namespace: Option<String>,
    /// The login role.
    #[schemars(length(max = 512))]
    pub role: Option<String>,
    pub forwarding_config: Option<ForwardingConfig>,
    /// Stored, no effect.
    pub private_network_access: Option<bool>,
}

/// The signature algorithm of a token the service signs with its issuer keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPJwtAlgorithm")]
pub enum JwtAlgorithm {
    ES256,
    RS256,
}

/// `oidc-id-token`'s and `jwt-svid-token`'s fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IssuedJwtFields {
    /// The token's `sub`: literal, or a template (`subjectType: dynamic`); a JWT-SVID's is a
    /// SPIFFE ID.
    #[schemars(length(min = 1, max = 2048))]
    pub subject: String,
    /// `literal` when absent.
    pub subject_type: Option<ValueType>,
    #[schemars(length(min = 1, max = 2048))]
    pub audience: String,
    /// `ES256` when absent.
    pub algorithm_type: Option<JwtAlgorithm>,
    pub custom_claims: Option<Vec<JwtClaimDto>>,
    /// The service's issuer.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub issuer: Option<String>,
}

/// `x509svid`'s fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct X509SvidFields {
    /// `spiffe://…`, or a template (`spiffeIdType: dynamic`).
    #[schemars(length(min = 1, max = 2048))]
    pub spiffe_id: String,
    /// `literal` when absent.
    pub spiffe_id_type: Option<ValueType>,
    /// The subject DN (RFC 4514), or a template; an empty subject when absent.
    #[schemars(length(max = 1024))]
    pub subject: Option<String>,
    pub subject_type: Option<ValueType>,
    /// Only `digitalSignature` (the default).
    pub key_usage: Option<Vec<String>>,
    /// `true` when absent.
    pub idkp_client_auth: Option<bool>,
    /// `false` when absent.
    pub idkp_server_auth: Option<bool>,
}

/// `aiA-wif`'s fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AiAWifFields {
    /// `^fdrl_.+$`.
    #[schemars(length(min = 1, max = 256))]
    pub federation_rule_id: String,
    /// A UUID.
    #[schemars(length(min = 1, max = 36))]
    pub organization_id: String,
    /// `^svac_.+$`.
    #[schemars(length(min = 1, max = 256))]
    pub service_account_id: String,
    /// `^wrkspc_.+$`.
    #[schemars(length(max = 256))]
    pub workspace_id: Option<String>,
    /// The subject token's `aud`; `SVC_AIA_TOKEN_URL` when absent.
    #[schemars(length(max = 2048))]
    pub audience: Option<String>,
    #[schemars(length(min = 1, max = 4096))]
    pub scope: String,
    #[schemars(range(min = 300, max = 43200))]
    pub lifetime: Option<i32>,
}

/// `aiB-wif`'s fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AiBWifFields {
    /// `^idp_.+$`.
    #[schemars(length(min = 1, max = 256))]
    pub identity_provider_id: String,
    /// `^user-.+$`.
    #[schemars(length(min = 1, max = 256))]
    pub service_account_id: String,
    /// The subject token's `aud`; `SVC_AIB_TOKEN_URL` when absent.
    #[schemars(length(max = 2048))]
    pub audience: Option<String>,
}

/// `cloudC-identity-federation`'s fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloudCIdentityFederationFields {
    /// The workload-identity-pool provider's audience.
    #[schemars(length(min = 1, max = 2048))]
    pub audience: String,
    /// An e-mail address.
    #[schemars(length(min = 1, max = 320))]
    pub service_account_email: String,
    /// 3600 when absent.
    #[schemars(range(min = 1, max = 43200))]
    pub lifetime: Option<i32>,
}

/// `cloudB-directory-federation`'s fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloudBDirectoryFederationFields {
    /// The client assertion's `aud`.
    #[schemars(length(min = 1, max = 2048))]
    pub audience: String,
    /// The client assertion's `sub` (the federated credential's subject).
    #[schemars(length(min = 1, max = 2048))]
    pub subject: String,
    /// `<resource>/.default`.
    #[schemars(length(min = 1, max = 4096))]
    pub scope: String,
    /// The directory tenant: `^[A-Za-z0-9.-]+$`.
    #[serde(rename = "cloudBTenant")]
    #[schemars(length(min = 1, max = 256))]
    pub cloud_b_tenant: String,
    /// The application (client) id.
    #[schemars(length(min = 1, max = 256))]
    pub client_id: String,
}

/// `cloudB-key-vault-value`'s fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloudBKeyVaultValueFields {
    /// The secret holding the API key (or the username): `^[0-9a-zA-Z-]{1,127}$`.
    #[schemars(length(min = 1, max = 127))]
    pub secret_name1: String,
    /// The secret holding the password: then the credential is `UsernamePassword`.
    #[schemars(length(max = 127))]
    pub secret_name2: Option<String>,
    /// A `CloudBDirectoryFederation` integration of the provider's resource set.
    pub credential_provider_integration_external_id: Uuid,
    /// Stored, no effect.
    pub private_network_access: Option<bool>,
}

/// A ciB managed account's provisioning state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CPCiBAccountStatus")]
pub enum CiBAccountStatus {
    Pending,
    Provisioned,
    Error,
}

/// `ciB-managed-account`'s fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CiBManagedAccountFields {
    /// Comma-separated group ids or paths (this or `projectIds`).
    #[schemars(length(max = 4096))]
    pub group_ids: Option<String>,
    /// Comma-separated project ids or paths (this or `groupIds`).
    #[schemars(length(max = 4096))]
    pub project_ids: Option<String>,
    #[schemars(extend("enum" = [0, 5, 10, 15, 20, 30, 40, 50]))]
    pub access_level: i32,
    /// The tokens' lifetime (1 h..8760 h).
    #[schemars(range(min = 3600, max = 31536000))]
    pub lifetime_in_seconds: i32,
    /// Space-separated token scopes.
    #[schemars(length(min = 1, max = 1024))]
    pub scope: String,
    /// A `CiB` integration of the provider's resource set.
    pub credential_provider_integration_external_id: Uuid,
    /// Letters, digits, `.`, `_`, `-`; create only (later values are ignored);
    /// `Svc_<name>_managed_service_account` when absent.
    #[schemars(length(max = 255))]
    pub username: Option<String>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub user_id: Option<i32>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub token_sensitive_data_id: Option<Uuid>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub token_id: Option<String>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub token_expiration: Option<Timestamp>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub last_operation_timestamp: Option<Timestamp>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub status: Option<CiBAccountStatus>,
    /// Why provisioning failed.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub error_message: Option<String>,
}

/// `CredentialProviderPatchDTO` (v2 PATCH): the `EntityPatchDTO` fields, `providerDetailJSON`
/// whose keys replace the type's fields (a key given as `null` clears an optional field), `type`
/// (must equal the stored one), `lifetimeTimeSpanSeconds` (with the type's range) and
/// `resourceSet` (may repeat the provider's own). The read-only fields of a GET body are accepted
/// and ignored.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CredentialProviderPatchDTO")]
pub struct CredentialProviderPatchDto {
    #[serde(flatten)]
    pub patch: EntityPatch,
    pub resource_set: Option<Uuid>,
    /// Must equal the stored type.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub lifetime_time_span_seconds: Option<i32>,
    /// JSON text of an object: the type's fields to replace.
    #[serde(rename = "providerDetailJSON")]
    pub provider_detail_json: Option<String>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub created_at: Option<Timestamp>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub modified_at: Option<Timestamp>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub created_by: Option<String>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub modified_by: Option<String>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub lifetime_expiration: Option<Timestamp>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub access_policy_count: Option<i32>,
}

// ---- v1 ------------------------------------------------------------------------------------------

/// `CredentialProviderDTO` (v1 POST and PUT bodies): the type's fields as the JSON text
/// `providerDetailJSON`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CredentialProviderDTO")]
pub struct CredentialProviderDto {
    #[serde(flatten)]
    pub base: Base,
    /// The provider's resource set: the request's.
    pub resource_set: Option<Uuid>,
    #[serde(rename = "type")]
    pub kind: CredentialProviderType,
    /// `svc-access-token`'s `roleId` (used unless `providerDetailJSON` names one); `null` for the
    /// other types.
    pub role_id: Option<Uuid>,
    /// As in `CredentialProviderV2DTO`.
    pub lifetime_time_span_seconds: Option<i32>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub lifetime_expiration: Option<Timestamp>,
    /// JSON text of an object: the type's fields of `CredentialProviderV2DTO`'s variant
    /// (`{"apiKey": "…"}`), checked as the v2 body's (errors name
    /// `providerDetailJSON.<field>`). Secrets are left out of answers.
    #[serde(rename = "providerDetailJSON")]
    pub provider_detail_json: Option<String>,
    /// Access policies mapping the provider.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub access_policy_count: i32,
}

/// `CredentialProviderUIDTO` (v1 answers): the fields of `CredentialProviderDTO`, with
/// `providerDetailJSON` holding no secret.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CredentialProviderUIDTO")]
pub struct CredentialProviderUiDto {
    #[serde(flatten)]
    pub provider: CredentialProviderDto,
}

/// The v1 PATCH body: `CredentialProviderPatchDTO` and v1's top-level `roleId` (an
/// `svc-access-token`'s, unless `providerDetailJSON` names one).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CredentialProviderV1PatchDTO")]
pub struct CredentialProviderV1PatchDto {
    #[serde(flatten)]
    pub patch: CredentialProviderPatchDto,
    pub role_id: Option<Uuid>,
}
