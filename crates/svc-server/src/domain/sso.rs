//! Records of routings (§3.17), agent controllers (§3.21) and SSO identity providers (§3.20).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Meta, Secret, Timestamp, secret};

/// A routing: upstream calls for `meta.rs` (its `resourceSetId`) go through `proxy_url`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Routing {
    /// `rs` is the routing's `resourceSetId` (it is the set the routing is checked and audited in).
    pub meta: Meta,
    pub proxy_url: String,
    /// Its last POST or PUT came from a caller holding everything SuperAdmin holds (or from the
    /// service): only then do plain-`http` calls of the set go through its proxy, which reads and
    /// may answer them (issue 31). Routings stored before the rule are untrusted.
    #[serde(default)]
    pub trusted: bool,
}

/// An agent controller. Its device code is kept only as a SHA-256 hash.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AgentController {
    pub meta: Meta,
    pub version: Option<String>,
    pub trust_provider: Option<Uuid>,
    pub allowed_tls_hostname: Option<String>,
    #[serde(default)]
    pub device_code: Option<DeviceCode>,
}

/// A pending device code: hex SHA-256 of the six digits, and its end of validity.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DeviceCode {
    pub hash: String,
    pub expires_at: Timestamp,
}

/// Device codes are valid for 15 minutes (§3.21).
pub const DEVICE_CODE_TTL_MS: i64 = 15 * 60 * 1000;

impl DeviceCode {
    pub fn hash_of(code: &str) -> String {
        crate::crypto::hex(&crate::crypto::sha256(code.as_bytes()))
    }
}

impl AgentController {
    /// Spends the controller's device code: `true` when `code` is the current one and unexpired
    /// (then it is gone: single use). A wrong code leaves the pending one as it is.
    pub fn redeem_device_code(&mut self, code: &str, now_ms: i64) -> bool {
        let ok = self
            .device_code
            .as_ref()
            .is_some_and(|d| d.expires_at.millis() > now_ms && d.hash == DeviceCode::hash_of(code));
        if ok {
            self.device_code = None;
        }
        ok
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum IdpType {
    #[serde(rename = "OIDCv1")]
    Oidc,
    #[serde(rename = "SAMLv2")]
    Saml,
}

impl IdpType {
    pub fn as_str(self) -> &'static str {
        match self {
            IdpType::Oidc => "OIDCv1",
            IdpType::Saml => "SAMLv2",
        }
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum OidcAuthType {
    KeyPair,
    ClientSecret,
}

impl OidcAuthType {
    pub fn as_str(self) -> &'static str {
        match self {
            OidcAuthType::KeyPair => "KeyPair",
            OidcAuthType::ClientSecret => "ClientSecret",
        }
    }
}

/// One `ssoStatementRoleMappings` row.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RoleMapping {
    pub attribute_name: Option<String>,
    pub attribute_value: Option<String>,
    pub role: Uuid,
}

/// The variant fields of an identity provider.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub enum IdpConfig {
    Oidc {
        base_url: String,
        client_id: String,
        scopes: String,
        auth_type: OidcAuthType,
        pkce_required: bool,
    },
    Saml {
        entity_id: Option<String>,
        metadata_url: Option<String>,
        /// Base64 of the metadata XML, as given.
        metadata_xml: Option<String>,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SsoIdp {
    pub meta: Meta,
    pub mappings: Vec<RoleMapping>,
    pub user_access: bool,
    /// Last written by a caller holding everything SuperAdmin holds, or by the service (issue
    /// 31): only then may it bind an existing account by its verified e-mail, and apply its role
    /// mappings to users it did not create. Whoever may only configure IdPs must not thereby
    /// sign in as anyone.
    #[serde(default)]
    pub trusted: bool,
    pub config: IdpConfig,
    #[serde(skip)]
    pub secrets: IdpSecrets,
}

impl SsoIdp {
    pub fn idp_type(&self) -> IdpType {
        match self.config {
            IdpConfig::Oidc { .. } => IdpType::Oidc,
            IdpConfig::Saml { .. } => IdpType::Saml,
        }
    }

    /// An OIDC client secret goes to the token endpoint of `oidcBaseURL`'s discovery, for
    /// `clientId`.
    pub fn secret_home(&self) -> super::SecretHome {
        match &self.config {
            IdpConfig::Oidc {
                base_url, client_id, ..
            } => super::SecretHome {
                fields: vec![("oidcBaseURL", base_url.clone()), ("clientId", client_id.clone())],
                given: &["clientSecret"],
                held: self
                    .secrets
                    .client_secret
                    .iter()
                    .map(|s| ("clientSecret".to_string(), s.stamp()))
                    .collect(),
            },
            IdpConfig::Saml { .. } => super::SecretHome::nowhere(),
        }
    }

    /// An identity provider users may sign in through (§2.3).
    pub fn offers_sign_in(&self) -> bool {
        self.meta.active && self.user_access && self.idp_type() == IdpType::Oidc
    }
}

/// The sealed part of an identity provider: the OIDC client secret.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct IdpSecrets {
    /// Stored as `clientSecret` (its wire name) since issue 31; `client_secret` before.
    #[serde(
        with = "secret::storage::option",
        default,
        rename = "clientSecret",
        alias = "client_secret"
    )]
    pub client_secret: Option<Secret<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn controller(code: &str, expires: i64) -> AgentController {
        AgentController {
            meta: serde_json::from_value(serde_json::json!({
                "id": Uuid::from_u128(1), "seq": 1, "rs": null, "name": "c", "description": null,
                "active": true, "tags": [], "created_at": "2026-11-22T00:00:00.000Z",
                "modified_at": "2026-11-22T00:00:00.000Z", "created_by": null, "modified_by": null
            }))
            .unwrap(),
            version: None,
            trust_provider: None,
            allowed_tls_hostname: None,
            device_code: Some(DeviceCode {
                hash: DeviceCode::hash_of(code),
                expires_at: Timestamp::from_millis(expires),
            }),
        }
    }

    #[test]
    fn a_device_code_is_single_use_and_expires() {
        let mut c = controller("123456", 1_000_000);
        assert!(!c.redeem_device_code("654321", 0), "wrong code");
        assert!(c.redeem_device_code("123456", 0));
        assert!(!c.redeem_device_code("123456", 0), "spent");
        let mut c = controller("123456", 1_000);
        assert!(!c.redeem_device_code("123456", 1_000), "expired at its end");
        assert!(
            c.device_code.is_some(),
            "an expired code is not taken by a failed attempt"
        );
    }

    #[test]
    fn a_new_device_code_replaces_the_old_one() {
        let mut c = controller("111111", 1_000_000);
        // What POST …/device-code does: the new code's hash replaces the pending one.
        c.device_code = Some(DeviceCode {
            hash: DeviceCode::hash_of("222222"),
            expires_at: Timestamp::from_millis(1_000_000),
        });
        assert!(!c.redeem_device_code("111111", 0), "the old code is void");
        assert!(c.redeem_device_code("222222", 0));
    }

    #[test]
    fn the_stored_hash_is_not_the_code() {
        let c = controller("123456", 1);
        let body = serde_json::to_string(&c).unwrap();
        assert!(!body.contains("123456"));
    }
}
