//! Agent controllers (contract §3.21): their own shape (no base block: an int `id`, no
//! `createdBy`), a trust provider of any resource set, and single-use device codes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{Tag, Timestamp};

fn yes() -> bool {
    true
}

/// `AgentControllerDTO`: only `name` is required.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AgentControllerDTO")]
pub struct AgentControllerDto {
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub id: i32,
    /// The public id; generated on POST when absent, required on PUT.
    pub external_id: Option<Uuid>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub created_at: Timestamp,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub modified_at: Option<Timestamp>,
    /// The software version the controller last reported.
    pub version: Option<String>,
    /// Default true.
    #[serde(default = "yes")]
    pub is_active: bool,
    #[schemars(length(min = 1, max = 128))]
    pub name: String,
    #[schemars(length(max = 1024))]
    pub description: Option<String>,
    /// At most 50, keys unique.
    pub tags: Option<Vec<Tag>>,
    /// The controller's TLS certificates (with `check-tls-type=true`; none is registered in this
    /// version).
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub tls_certificates: Vec<AgentControllerTlsCertificateDto>,
    /// The trust provider (of any resource set) that attests the controller; a writer may name
    /// only one it can read.
    pub trust_provider_id: Option<Uuid>,
    /// That trust provider (`TrustProviderDTO`), shown only to a caller who may read it (else
    /// `null`).
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub trust_provider: Option<super::TrustProviderDto>,
    /// Always false in this version (no health reports yet).
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub is_healthy: bool,
    /// Seconds.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub last_reported_uptime: i64,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub last_reported_health_time: Option<Timestamp>,
    /// At most 256 characters: a fully qualified domain name or a `*.` wildcard, unique among
    /// controllers (stored in lower case).
    pub allowed_tls_hostname: Option<String>,
}

/// `AgentControllerTlsCertificateDTO`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AgentControllerTlsCertificateDTO")]
pub struct AgentControllerTlsCertificateDto {
    pub subject: Option<String>,
    pub serial_number: Option<String>,
    pub thumbprint: Option<String>,
    pub not_before: Option<Timestamp>,
    pub not_after: Option<Timestamp>,
    pub host_name: Option<String>,
    pub created_at: Option<Timestamp>,
    pub is_managed_by_svc: bool,
}

/// `AgentControllerPatchDTO`: only the fields present change; the read-only fields of an
/// `AgentControllerDTO` are accepted and ignored (a GET body sent back).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AgentControllerPatchDTO")]
pub struct AgentControllerPatchDto {
    /// May repeat the path's id, not change it.
    pub external_id: Option<Uuid>,
    pub version: Option<String>,
    pub is_active: Option<bool>,
    pub trust_provider_id: Option<Uuid>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub id: Option<i32>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub created_at: Option<Timestamp>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub modified_at: Option<Timestamp>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub tls_certificates: Option<Vec<AgentControllerTlsCertificateDto>>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub trust_provider: Option<super::TrustProviderDto>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub is_healthy: Option<bool>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub last_reported_uptime: Option<i64>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub last_reported_health_time: Option<Timestamp>,
}

/// `AgentControllerDeviceCodeDTO`: six digits, single use, valid 15 minutes; a new code replaces
/// the previous one.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "AgentControllerDeviceCodeDTO")]
pub struct AgentControllerDeviceCodeDto {
    pub device_code: Option<String>,
}
