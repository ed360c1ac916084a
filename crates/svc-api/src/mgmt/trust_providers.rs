//! Trust providers (contract §3.1) and their certificate secrets (§3.2): one variant per group of
//! kinds, chosen by `provider`, each with the key material its kinds take.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::Base;
use crate::Timestamp;

/// The kinds of evidence a trust provider verifies (`provider`), in their documented order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum TrustProviderKind {
    CloudAMetadataService,
    CloudARole,
    CloudBMetadataService,
    CloudCIdentityToken,
    CiAIdentityToken,
    CiBIdentityToken,
    CiCIdentityToken,
    OrchestratorServiceAccount,
    OidcIdToken,
}

impl TrustProviderKind {
    pub const ALL: [TrustProviderKind; 9] = [
        TrustProviderKind::CloudAMetadataService,
        TrustProviderKind::CloudARole,
        TrustProviderKind::CloudBMetadataService,
        TrustProviderKind::CloudCIdentityToken,
        TrustProviderKind::CiAIdentityToken,
        TrustProviderKind::CiBIdentityToken,
        TrustProviderKind::CiCIdentityToken,
        TrustProviderKind::OrchestratorServiceAccount,
        TrustProviderKind::OidcIdToken,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TrustProviderKind::CloudAMetadataService => "CloudAMetadataService",
            TrustProviderKind::CloudARole => "CloudARole",
            TrustProviderKind::CloudBMetadataService => "CloudBMetadataService",
            TrustProviderKind::CloudCIdentityToken => "CloudCIdentityToken",
            TrustProviderKind::CiAIdentityToken => "CiAIdentityToken",
            TrustProviderKind::CiBIdentityToken => "CiBIdentityToken",
            TrustProviderKind::CiCIdentityToken => "CiCIdentityToken",
            TrustProviderKind::OrchestratorServiceAccount => "OrchestratorServiceAccount",
            TrustProviderKind::OidcIdToken => "OidcIdToken",
        }
    }

    pub fn parse(s: &str) -> Option<TrustProviderKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// `TrustProviderDTO`: its variant, by `provider` (immutable). The variants differ in the key
/// material their kinds take (§3.1); a key-material field another kind takes may be sent as
/// `null` (or `isSvcTenantOidcToken` as `false`), any other value is refused
/// (`<field>: is not allowed for provider <kind>`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "provider")]
#[schemars(rename = "TrustProviderDTO")]
pub enum TrustProviderDto {
    CloudAMetadataService(CloudAMetadataServiceTrustProviderDto),
    CloudARole(PlatformTrustProviderDto),
    CloudBMetadataService(PlatformTrustProviderDto),
    CloudCIdentityToken(PlatformTrustProviderDto),
    CiAIdentityToken(CiTrustProviderDto),
    CiBIdentityToken(CiTrustProviderDto),
    CiCIdentityToken(CiTrustProviderDto),
    OrchestratorServiceAccount(TokenIssuerTrustProviderDto),
    OidcIdToken(TokenIssuerTrustProviderDto),
}

/// The key material of a trust provider, whatever its variant: what a DTO carries and what the
/// service stores.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyMaterial {
    pub certificate: Option<String>,
    pub pem_type: Option<PemType>,
    pub jwks: Option<String>,
    pub oidc_url: Option<String>,
    pub svc_tenant: bool,
}

impl TrustProviderDto {
    /// The variant of `kind` with these fields (key material the variant does not carry is
    /// dropped).
    pub fn new(kind: TrustProviderKind, common: TrustProviderCommon, k: KeyMaterial) -> TrustProviderDto {
        let cloud_a = || CloudAMetadataServiceTrustProviderDto {
            common: common.clone(),
            certificate: k.certificate.clone(),
            pem_type: k.pem_type,
        };
        let platform = || PlatformTrustProviderDto { common: common.clone() };
        let ci = || CiTrustProviderDto {
            common: common.clone(),
            oidc_url: k.oidc_url.clone(),
        };
        let issuer = || TokenIssuerTrustProviderDto {
            common: common.clone(),
            certificate: k.certificate.clone(),
            pem_type: k.pem_type,
            jwks: k.jwks.clone(),
            oidc_url: k.oidc_url.clone(),
            is_svc_tenant_oidc_token: k.svc_tenant,
        };
        match kind {
            TrustProviderKind::CloudAMetadataService => TrustProviderDto::CloudAMetadataService(cloud_a()),
            TrustProviderKind::CloudARole => TrustProviderDto::CloudARole(platform()),
            TrustProviderKind::CloudBMetadataService => TrustProviderDto::CloudBMetadataService(platform()),
            TrustProviderKind::CloudCIdentityToken => TrustProviderDto::CloudCIdentityToken(platform()),
            TrustProviderKind::CiAIdentityToken => TrustProviderDto::CiAIdentityToken(ci()),
            TrustProviderKind::CiBIdentityToken => TrustProviderDto::CiBIdentityToken(ci()),
            TrustProviderKind::CiCIdentityToken => TrustProviderDto::CiCIdentityToken(ci()),
            TrustProviderKind::OrchestratorServiceAccount => TrustProviderDto::OrchestratorServiceAccount(issuer()),
            TrustProviderKind::OidcIdToken => TrustProviderDto::OidcIdToken(issuer()),
        }
    }

    pub fn kind(&self) -> TrustProviderKind {
        match self {
            TrustProviderDto::CloudAMetadataService(_) => TrustProviderKind::CloudAMetadataService,
            TrustProviderDto::CloudARole(_) => TrustProviderKind::CloudARole,
            TrustProviderDto::CloudBMetadataService(_) => TrustProviderKind::CloudBMetadataService,
            TrustProviderDto::CloudCIdentityToken(_) => TrustProviderKind::CloudCIdentityToken,
            TrustProviderDto::CiAIdentityToken(_) => TrustProviderKind::CiAIdentityToken,
            TrustProviderDto::CiBIdentityToken(_) => TrustProviderKind::CiBIdentityToken,
            TrustProviderDto::CiCIdentityToken(_) => TrustProviderKind::CiCIdentityToken,
            TrustProviderDto::OrchestratorServiceAccount(_) => TrustProviderKind::OrchestratorServiceAccount,
            TrustProviderDto::OidcIdToken(_) => TrustProviderKind::OidcIdToken,
        }
    }

    /// The fields every variant has.
    pub fn common(&self) -> &TrustProviderCommon {
        match self {
            TrustProviderDto::CloudAMetadataService(v) => &v.common,
            TrustProviderDto::CloudARole(v)
            | TrustProviderDto::CloudBMetadataService(v)
            | TrustProviderDto::CloudCIdentityToken(v) => &v.common,
            TrustProviderDto::CiAIdentityToken(v)
            | TrustProviderDto::CiBIdentityToken(v)
            | TrustProviderDto::CiCIdentityToken(v) => &v.common,
            TrustProviderDto::OrchestratorServiceAccount(v) | TrustProviderDto::OidcIdToken(v) => &v.common,
        }
    }

    pub fn common_mut(&mut self) -> &mut TrustProviderCommon {
        match self {
            TrustProviderDto::CloudAMetadataService(v) => &mut v.common,
            TrustProviderDto::CloudARole(v)
            | TrustProviderDto::CloudBMetadataService(v)
            | TrustProviderDto::CloudCIdentityToken(v) => &mut v.common,
            TrustProviderDto::CiAIdentityToken(v)
            | TrustProviderDto::CiBIdentityToken(v)
            | TrustProviderDto::CiCIdentityToken(v) => &mut v.common,
            TrustProviderDto::OrchestratorServiceAccount(v) | TrustProviderDto::OidcIdToken(v) => &mut v.common,
        }
    }

    /// The common fields and the key material, the variant taken apart.
    pub fn into_parts(self) -> (TrustProviderKind, TrustProviderCommon, KeyMaterial) {
        let kind = self.kind();
        match self {
            TrustProviderDto::CloudAMetadataService(v) => {
                let k = KeyMaterial {
                    certificate: v.certificate,
                    pem_type: v.pem_type,
                    ..KeyMaterial::default()
                };
                (kind, v.common, k)
            }
            TrustProviderDto::CloudARole(v)
            | TrustProviderDto::CloudBMetadataService(v)
            | TrustProviderDto::CloudCIdentityToken(v) => (kind, v.common, KeyMaterial::default()),
            TrustProviderDto::CiAIdentityToken(v)
            | TrustProviderDto::CiBIdentityToken(v)
            | TrustProviderDto::CiCIdentityToken(v) => {
                let k = KeyMaterial {
                    oidc_url: v.oidc_url,
                    ..KeyMaterial::default()
                };
                (kind, v.common, k)
            }
            TrustProviderDto::OrchestratorServiceAccount(v) | TrustProviderDto::OidcIdToken(v) => {
                let k = KeyMaterial {
                    certificate: v.certificate,
                    pem_type: v.pem_type,
                    jwks: v.jwks,
                    oidc_url: v.oidc_url,
                    svc_tenant: v.is_svc_tenant_oidc_token,
                };
                (kind, v.common, k)
            }
        }
    }

    /// The key-material fields (JSON names) the variant of `kind` carries; the others must be
    /// `null` (`false`) in a body.
    pub fn key_fields(kind: TrustProviderKind) -> &'static [&'static str] {
        match kind {
            TrustProviderKind::CloudAMetadataService => &["certificate", "pemType"],
            TrustProviderKind::CloudARole
            | TrustProviderKind::CloudBMetadataService
            | TrustProviderKind::CloudCIdentityToken => &[],
            TrustProviderKind::CiAIdentityToken
            | TrustProviderKind::CiBIdentityToken
            | TrustProviderKind::CiCIdentityToken => &["oidcUrl"],
            TrustProviderKind::OrchestratorServiceAccount | TrustProviderKind::OidcIdToken => {
                &["oidcUrl", "jwks", "certificate", "pemType", "isSvcTenantOidcToken"]
            }
        }
    }
}

/// What every `TrustProviderDTO` variant has: the base block with `resourceSet`, the match rules
/// and the read-only facts.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustProviderCommon {
    #[serde(flatten)]
    pub base: Base,
    /// The provider's resource set: the request's.
    pub resource_set: Option<Uuid>,
    /// Internal number.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub id: i32,
    /// Rules on the verified facts (§4.6): rules of one attribute are ORed, different attributes
    /// ANDed; none: any evidence of this kind that verifies is accepted. At most 100.
    pub match_rules: Option<Vec<TrustProviderMatchRuleDto>>,
    /// Computed from `certificate`; `null` without one.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub public_key_validation: Option<PublicKeyValidationDto>,
    /// Access policies (any state) listing this provider.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub access_policy_count: i32,
    /// Agent controllers whose `trustProviderId` is this provider.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub agent_controllers_count: i32,
    /// Those agent controllers.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub agent_controller_ids: Vec<Uuid>,
    /// The `clientId` to send to `/edge/v1/auth`: `svc:<stack>:<tenant>:identity:<type>:<id>`.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub edge_sdk_client_id: String,
    /// Set only in the answer of `GET …/secrets/{secretId}`; `null` everywhere else.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub secret: Option<TrustProviderSecretDto>,
}

/// `CloudAMetadataServiceTrustProviderDTO`: `CloudAMetadataService` (instance identity documents,
/// verified against the platform's built-in signers and the optional `certificate`, which must
/// hold an RSA key; certificate secrets add signers).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CloudAMetadataServiceTrustProviderDTO")]
pub struct CloudAMetadataServiceTrustProviderDto {
    #[serde(flatten)]
    pub common: TrustProviderCommon,
    /// PEM text, or base64 of PEM text; returned as sent.
    pub certificate: Option<String>,
    /// With `certificate` only, and `Certificate` for this kind.
    pub pem_type: Option<PemType>,
}

/// `PlatformTrustProviderDTO`: `CloudARole`, `CloudBMetadataService`, `CloudCIdentityToken`:
/// verified by the platform's own call or keys, configured on the server; no key material.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "PlatformTrustProviderDTO")]
pub struct PlatformTrustProviderDto {
    #[serde(flatten)]
    pub common: TrustProviderCommon,
}

/// `CiTrustProviderDTO`: `CiAIdentityToken`, `CiBIdentityToken`, `CiCIdentityToken`: a CI
/// platform's job token, verified through its issuer's discovery document.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CiTrustProviderDTO")]
pub struct CiTrustProviderDto {
    #[serde(flatten)]
    pub common: TrustProviderCommon,
    /// The issuer (discovery at `<oidcUrl>/.well-known/openid-configuration`); absent: the
    /// platform's (`SVC_CIA_ISSUER`, `SVC_CIB_ISSUER`, `SVC_CIC_ISSUER`). `https` (plain `http`
    /// only with `SVC_ALLOW_INSECURE_UPSTREAM`), no query or fragment, at most 2048 characters.
    pub oidc_url: Option<String>,
}

/// `TokenIssuerTrustProviderDTO`: `OrchestratorServiceAccount`, `OidcIdToken`: a JWT verified with
/// the keys of exactly one of `oidcUrl`, `jwks`, `certificate` or `isSvcTenantOidcToken`
/// (certificate secrets add keys).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TokenIssuerTrustProviderDTO")]
pub struct TokenIssuerTrustProviderDto {
    #[serde(flatten)]
    pub common: TrustProviderCommon,
    /// PEM text of a certificate or public key, or base64 of it; returned as sent.
    pub certificate: Option<String>,
    /// With `certificate` only: the PEM block it holds.
    pub pem_type: Option<PemType>,
    /// JWKS JSON text `{"keys": […]}`: RSA keys of at least 2048 bits, EC keys on P-256 or P-384
    /// (keys for other uses are skipped).
    pub jwks: Option<String>,
    /// The issuer (discovery at `<oidcUrl>/.well-known/openid-configuration`). `https` (plain
    /// `http` only with `SVC_ALLOW_INSECURE_UPSTREAM`), no query or fragment, at most 2048
    /// characters.
    pub oidc_url: Option<String>,
    /// `true`: the tokens are identity tokens this service issued to a workload (its own JWKS,
    /// `iss` its issuer).
    #[serde(default)]
    pub is_svc_tenant_oidc_token: bool,
}

/// What a trust provider's `certificate` holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PemType {
    Certificate,
    PublicKey,
}

impl PemType {
    pub fn as_str(self) -> &'static str {
        match self {
            PemType::Certificate => "Certificate",
            PemType::PublicKey => "PublicKey",
        }
    }

    pub fn parse(s: &str) -> Option<PemType> {
        [PemType::Certificate, PemType::PublicKey]
            .into_iter()
            .find(|p| p.as_str() == s)
    }
}

/// `TrustProviderMatchRuleDTO`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TrustProviderMatchRuleDTO")]
pub struct TrustProviderMatchRuleDto {
    /// A verified fact of the provider's kind (§3.1: `OidcIssuer`, `OidcSubject`, `OidcAudience`,
    /// `OidcCustom` for `OidcIdToken`, …).
    pub attribute: String,
    #[schemars(length(min = 1, max = 1024))]
    pub value: String,
    /// The claim name: required for `OidcCustom`, refused for other attributes.
    #[schemars(length(max = 255))]
    pub key: Option<String>,
}

/// `PublicKeyValidationDTO`: what the stored `certificate` holds.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "PublicKeyValidationDTO")]
pub struct PublicKeyValidationDto {
    /// False when the certificate has expired, is not yet valid or cannot be read.
    pub is_valid_content: bool,
    /// Lowercase hex SHA-256 of the DER.
    pub thumbprint: Option<String>,
    pub expiration_date: Option<Timestamp>,
    /// `expirationDate` as RFC 3339 text.
    pub expiration_date_string: Option<String>,
    /// RFC 4514.
    pub certificate_subject: Option<String>,
    /// Hex.
    pub serial_number: Option<String>,
    /// Why the content is not valid.
    pub message: Option<String>,
    pub pem_type: Option<PemType>,
}

/// The type of a trust-provider secret: `SymmetricKey` is kept for compatibility and refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum TrustProviderSecretType {
    #[default]
    Certificate,
    SymmetricKey,
}

impl TrustProviderSecretType {
    pub fn as_str(self) -> &'static str {
        match self {
            TrustProviderSecretType::Certificate => "Certificate",
            TrustProviderSecretType::SymmetricKey => "SymmetricKey",
        }
    }
}

/// `TrustProviderSecretSlimDTO`: a certificate added to a provider's signers (§3.2).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TrustProviderSecretSlimDTO")]
pub struct TrustProviderSecretSlimDto {
    /// The client's choice of id; generated when absent.
    pub external_id: Option<Uuid>,
    /// Base64 of a PEM certificate (or the PEM text itself), not expired.
    #[schemars(extend("writeOnly" = true))]
    pub secret: String,
    /// Default `Certificate`.
    #[serde(default)]
    #[serde(rename = "type")]
    pub kind: TrustProviderSecretType,
    /// Read-only fields of a `TrustProviderSecretDTO` sent along are ignored.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub name: Option<String>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub subject: Option<String>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub expires_at: Option<Timestamp>,
}

/// `TrustProviderSecretDTO`: a stored certificate, never its content.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TrustProviderSecretDTO")]
pub struct TrustProviderSecretDto {
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub external_id: Option<Uuid>,
    /// The thumbprint: lowercase hex SHA-256 of the DER.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub name: Option<String>,
    #[serde(default, rename = "type")]
    #[schemars(extend("readOnly" = true))]
    pub kind: Option<TrustProviderSecretType>,
    /// The certificate's subject (RFC 4514).
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub subject: Option<String>,
    /// The certificate's `notAfter`.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub expires_at: Option<Timestamp>,
}

/// `TrustProviderPatchDTO`: the fields present change (`null` and absent alike leave a field as
/// it is).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TrustProviderPatchDTO")]
pub struct TrustProviderPatchDto {
    /// May repeat the path's id, not change it.
    pub external_id: Option<Uuid>,
    #[schemars(length(min = 1, max = 128))]
    pub name: Option<String>,
    #[schemars(length(max = 1024))]
    pub description: Option<String>,
    pub is_active: Option<bool>,
    /// Replaces all tags.
    pub tags: Option<Vec<crate::Tag>>,
    /// May repeat the provider's resource set, not change it.
    pub resource_set: Option<Uuid>,
    /// Must equal the stored provider.
    pub provider: Option<TrustProviderKind>,
    /// Replaces all rules.
    pub match_rules: Option<Vec<TrustProviderMatchRuleDto>>,
    pub oidc_url: Option<String>,
    pub pem_type: Option<PemType>,
    pub certificate: Option<String>,
    pub jwks: Option<String>,
    pub is_svc_tenant_oidc_token: Option<bool>,
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::schema;

    /// Each variant's schema names exactly the key material [`TrustProviderDto::key_fields`]
    /// says its kinds take (what `Resource::prepare` lets through).
    #[test]
    fn each_variant_names_the_key_material_of_its_kinds() {
        let mut g = schema::generator();
        let _ = g.subschema_for::<TrustProviderDto>();
        let defs = g.take_definitions(true);
        let mapping = defs["TrustProviderDTO"]["discriminator"]["mapping"]
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(mapping.len(), TrustProviderKind::ALL.len());
        for k in TrustProviderKind::ALL {
            let target = mapping[k.as_str()]
                .as_str()
                .unwrap()
                .trim_start_matches(schema::COMPONENTS);
            let props = defs[target]["properties"].as_object().unwrap();
            let mut named: Vec<&str> = ["oidcUrl", "jwks", "certificate", "pemType", "isSvcTenantOidcToken"]
                .into_iter()
                .filter(|f| props.contains_key(*f))
                .collect();
            let mut want = TrustProviderDto::key_fields(k).to_vec();
            named.sort_unstable();
            want.sort_unstable();
            assert_eq!(named, want, "{}", k.as_str());
        }
    }

    /// A body is read as its kind's variant and written back as it was read (read-only fields
    /// dropped, the key material kept).
    #[test]
    fn a_body_reads_as_its_variant_and_round_trips() {
        let body = json!({"provider": "OidcIdToken", "name": "ci", "isActive": true, "jwks": "{\"keys\":[]}",
            "matchRules": [{"attribute": "OidcSubject", "value": "x"}], "edgeSdkClientId": "ignored", "id": 7});
        let dto: TrustProviderDto = schema::read(body).unwrap();
        assert_eq!(dto.kind(), TrustProviderKind::OidcIdToken);
        assert_eq!(dto.common().id, 0, "read-only, dropped");
        let (kind, common, keys) = dto.into_parts();
        assert_eq!(keys.jwks.as_deref(), Some("{\"keys\":[]}"));
        let again = TrustProviderDto::new(kind, common, keys);
        let v = serde_json::to_value(&again).unwrap();
        assert_eq!(v["provider"], "OidcIdToken");
        assert_eq!(v["isSvcTenantOidcToken"], false);
        assert_eq!(v["oidcUrl"], Value::Null);
        let err = |b: Value| schema::read::<TrustProviderDto>(b).unwrap_err().0;
        assert_eq!(err(json!({"name": "x", "isActive": true})), "provider: is required");
        assert_eq!(
            err(json!({"provider": "CiAIdentityToken", "name": "x", "isActive": true, "jwks": "{}"})),
            "jwks: unknown property"
        );
        assert_eq!(
            err(json!({"provider": "CiAIdentityToken", "name": "x", "isActive": true,
                "matchRules": [{"attribute": "CiARepository", "value": ""}]})),
            "matchRules[0].value: must be 1..1024 characters"
        );
    }
}
