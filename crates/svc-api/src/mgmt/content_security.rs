//! Content security (contract §3.13): entries for an edge gateway's inspection of MCP tool
//! traffic, stored and referenced by policies; no variant changes a decision of this service.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Base, EntityPatch};

/// `ContentSecurityDTO`: its variant, by `type`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
#[schemars(rename = "ContentSecurityDTO")]
pub enum ContentSecurityDto {
    #[serde(rename = "SensorAAIDR")]
    SensorAAidr(SensorAAidrContentSecurityDto),
}

fn timeout_ms() -> i32 {
    30_000
}

fn max_retries() -> i32 {
    3
}

/// `SensorAAIDRContentSecurityDTO`: sensorA's AI detection-and-response API.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "SensorAAIDRContentSecurityDTO")]
pub struct SensorAAidrContentSecurityDto {
    #[serde(flatten)]
    pub base: Base,
    /// The entry's resource set; the default one when absent on create.
    pub resource_set: Option<Uuid>,
    /// The vendor API's base URL (`https` unless insecure upstreams are allowed).
    #[schemars(length(min = 1, max = 2048))]
    pub base_url: String,
    /// The vendor API's token or client secret; kept when absent on PUT.
    #[schemars(length(max = 8192), extend("writeOnly" = true))]
    pub encrypted_token: Option<String>,
    /// Allow traffic when the vendor is unreachable.
    #[serde(default)]
    pub fail_open: bool,
    #[serde(default = "timeout_ms")]
    #[schemars(range(min = 5000, max = 600000))]
    pub timeout_ms: i32,
    #[serde(default = "max_retries")]
    #[schemars(range(min = 0, max = 10))]
    pub max_retries: i32,
    /// Access policies referring to the entry.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub access_policy_count: i32,
}

/// `ContentSecurityPatchDTO`: the `EntityPatchDTO` fields; `resourceSet` and `type` may repeat
/// the stored values (a GET body sent back), never change them.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ContentSecurityPatchDTO")]
pub struct ContentSecurityPatchDto {
    #[serde(flatten)]
    pub patch: EntityPatch,
    pub resource_set: Option<Uuid>,
    #[serde(rename = "type")]
    pub kind: Option<ContentSecurityType>,
}

/// The content-security variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ContentSecurityType {
    #[serde(rename = "SensorAAIDR")]
    SensorAAidr,
}
