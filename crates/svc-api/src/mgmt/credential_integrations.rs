//! Credential provider integrations (contract §3.7): the connections `ciB-managed-account` and
//! `cloudB-key-vault-value` credential providers use, one variant per kind, chosen by `type`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Base, EntityPatch};
use crate::Timestamp;

/// `CredentialProviderIntegrationDTO`: its variant, by `type`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
#[schemars(rename = "CredentialProviderIntegrationDTO")]
pub enum CredentialProviderIntegrationDto {
    CiB(CiBCredentialProviderIntegrationDto),
    CloudBDirectoryFederation(CloudBDirectoryFederationCredentialProviderIntegrationDto),
}

/// What both variants have.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialProviderIntegrationCommon {
    #[serde(flatten)]
    pub base: Base,
    /// The integration's resource set: the request's.
    pub resource_set: Option<Uuid>,
    /// When the stored administrator token expires.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub token_expiration: Option<Timestamp>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub last_operation_timestamp: Option<Timestamp>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub status: Option<String>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub error_message: Option<String>,
}

/// `type: CiB`: ciB's REST API (v4) with an administrator token, which `ciB-managed-account`
/// providers use to manage service accounts.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CiBCredentialProviderIntegrationDTO")]
pub struct CiBCredentialProviderIntegrationDto {
    #[serde(flatten)]
    pub common: CredentialProviderIntegrationCommon,
    /// `^https://[a-zA-Z0-9\-.]+\.[a-zA-Z]{2,}(:\d+)?(/\S*)?$`.
    #[schemars(length(min = 1, max = 2048))]
    pub url: String,
    /// The administrator token; required on create, kept when absent on PUT.
    #[schemars(extend("writeOnly" = true))]
    pub personal_access_token: Option<String>,
    /// Informative.
    #[schemars(length(max = 256))]
    pub user_id: Option<String>,
    /// Informative.
    #[schemars(length(max = 256))]
    pub top_level_group_id: Option<String>,
}

/// `type: CloudBDirectoryFederation`: cloudB's directory, reached with a federated client
/// assertion, and the key vault `cloudB-key-vault-value` providers read.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CloudBDirectoryFederationCredentialProviderIntegrationDTO")]
pub struct CloudBDirectoryFederationCredentialProviderIntegrationDto {
    #[serde(flatten)]
    pub common: CredentialProviderIntegrationCommon,
    /// `^\S+$`.
    #[schemars(length(min = 1, max = 2048))]
    pub audience: String,
    #[schemars(length(min = 1, max = 2048))]
    pub subject: String,
    /// The directory tenant, a UUID.
    #[serde(rename = "cloudBTenant")]
    #[schemars(length(min = 1, max = 36))]
    pub cloud_b_tenant: String,
    /// A UUID.
    #[schemars(length(min = 1, max = 36))]
    pub client_id: String,
    /// `^[a-zA-Z](?!.*--)[a-zA-Z0-9-]{1,22}[a-zA-Z0-9]$`.
    #[schemars(length(min = 1, max = 24))]
    pub key_vault_name: String,
    /// Stored (false when absent).
    pub fetch_secret_names: Option<bool>,
}

/// The PATCH body: the `EntityPatchDTO` fields; `resourceSet` and `type` may repeat the stored
/// values (a GET body sent back), never change them.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CredentialProviderIntegrationPatchDTO")]
pub struct CredentialProviderIntegrationPatchDto {
    #[serde(flatten)]
    pub patch: EntityPatch,
    pub resource_set: Option<Uuid>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
}
