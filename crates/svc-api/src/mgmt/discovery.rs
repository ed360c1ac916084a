//! Discovery integrations and the server-workload drafts they find (contract §3.12).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Base, EntityPatch};
use crate::Timestamp;
use crate::common::KeyValue;

/// `DiscoveryIntegrationDTO`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "DiscoveryIntegrationDTO")]
pub struct DiscoveryIntegrationDto {
    #[serde(flatten)]
    pub base: Base,
    /// The integration's resource set; the default one when absent on create.
    pub resource_set: Option<Uuid>,
    #[serde(rename = "type")]
    pub kind: DiscoveryType,
    /// How often the inventory is read.
    #[schemars(range(min = 300, max = 3600))]
    pub sync_frequency_seconds: i32,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub last_sync: Option<Timestamp>,
    /// `Success` or what failed.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub last_sync_status: Option<String>,
    /// The vendor API's base URL.
    #[schemars(length(min = 1, max = 2048))]
    pub endpoint: String,
    /// JSON text of a `DiscoveryIntegrationJSON` object (`tokenUrl`, `clientId`, `clientSecret`,
    /// `audience`); answers leave `clientSecret` out, and a PUT without it keeps the stored one.
    #[serde(rename = "discoveryIntegrationJSON")]
    pub discovery_integration_json: String,
}

/// The inventories a discovery integration reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum DiscoveryType {
    CloudSecurityAIntegrationApi,
}

/// The object `discoveryIntegrationJSON` holds as text.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "DiscoveryIntegrationJSON")]
pub struct DiscoveryIntegrationJson {
    /// The OAuth2 token endpoint (client credentials).
    #[schemars(length(min = 1, max = 2048))]
    pub token_url: String,
    #[schemars(length(min = 1, max = 256))]
    pub client_id: String,
    /// Required on create; never shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096), extend("writeOnly" = true))]
    pub client_secret: Option<String>,
    #[schemars(length(min = 1, max = 2048))]
    pub audience: String,
}

/// `ServerWorkloadDraftDTO`: a server workload a discovery integration found, in the shape of a
/// server workload (`isActive` false, `accessPolicyCount` 0); read-only, never matched by the
/// Edge API.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ServerWorkloadDraftDTO")]
pub struct ServerWorkloadDraftDto {
    #[serde(flatten)]
    pub base: Base,
    pub resource_set: Uuid,
    pub service_endpoint: ServerWorkloadDraftEndpointDto,
    /// Always `null` for a draft.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub access_policy_count: i32,
    pub discovery_integration_id: Uuid,
    /// The vendor's id of the discovered resource.
    pub provider_unique_id: String,
    pub last_seen_at: Option<Timestamp>,
}

/// A draft's `serviceEndpoint`: the discovered host and port (TCP, no TLS); what a server
/// workload's endpoint adds is `null` or empty until someone makes one of it.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ServerWorkloadDraftEndpointDTO")]
pub struct ServerWorkloadDraftEndpointDto {
    pub host: String,
    pub port: i32,
    pub app_protocol: Option<String>,
    pub transport_protocol: String,
    pub requested_port: i32,
    pub requested_tls: bool,
    pub tls: bool,
    pub tls_verification: Option<String>,
    /// Always `null` for a draft.
    pub workload_service_authentication: Option<()>,
    pub url_path: Option<String>,
    pub http_headers: Vec<KeyValue>,
}

/// `DiscoveryIntegrationPatchDTO`: the `EntityPatchDTO` fields; `resourceSet` and `type` may
/// repeat the stored values (a GET body sent back), never change them.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "DiscoveryIntegrationPatchDTO")]
pub struct DiscoveryIntegrationPatchDto {
    #[serde(flatten)]
    pub patch: EntityPatch,
    pub resource_set: Option<Uuid>,
    #[serde(rename = "type")]
    pub kind: Option<DiscoveryType>,
}
