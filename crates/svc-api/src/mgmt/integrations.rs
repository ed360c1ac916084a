//! Integrations (contract §3.11): one stored entity, shown as `IntegrationV2DTO` (variants by
//! `integrationType`, vendor fields at the top level) and as `IntegrationDTO` (v1: the vendor
//! fields in `integrationJSON`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Base, EntityPatch};
use crate::Timestamp;

/// The integration types, in their documented order. `SvcGeoIPCondition` and `SvcTimeCondition`
/// are the built-in ones every resource set holds (they cannot be created, changed or deleted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum IntegrationType {
    SensorA,
    CloudSecurityAIntegrationApi,
    SvcGeoIPCondition,
    SvcTimeCondition,
}

impl IntegrationType {
    pub const ALL: [IntegrationType; 4] = [
        IntegrationType::SensorA,
        IntegrationType::CloudSecurityAIntegrationApi,
        IntegrationType::SvcGeoIPCondition,
        IntegrationType::SvcTimeCondition,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            IntegrationType::SensorA => "SensorA",
            IntegrationType::CloudSecurityAIntegrationApi => "CloudSecurityAIntegrationApi",
            IntegrationType::SvcGeoIPCondition => "SvcGeoIPCondition",
            IntegrationType::SvcTimeCondition => "SvcTimeCondition",
        }
    }

    pub fn parse(s: &str) -> Option<IntegrationType> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// `IntegrationV2DTO`: its variant, by `integrationType` (a body may give `type` instead).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "integrationType")]
#[schemars(rename = "IntegrationV2DTO")]
pub enum IntegrationV2Dto {
    SensorA(SensorAIntegrationDto),
    CloudSecurityAIntegrationApi(CloudSecurityAIntegrationDto),
    SvcGeoIPCondition(GeoIpIntegrationDto),
    SvcTimeCondition(TimeIntegrationDto),
}

impl IntegrationV2Dto {
    /// The fields every variant has.
    pub fn common(&self) -> &IntegrationCommon {
        match self {
            IntegrationV2Dto::SensorA(v) => &v.common,
            IntegrationV2Dto::CloudSecurityAIntegrationApi(v) => &v.common,
            IntegrationV2Dto::SvcGeoIPCondition(v) => &v.common,
            IntegrationV2Dto::SvcTimeCondition(v) => &v.common,
        }
    }

    pub fn kind(&self) -> IntegrationType {
        match self {
            IntegrationV2Dto::SensorA(_) => IntegrationType::SensorA,
            IntegrationV2Dto::CloudSecurityAIntegrationApi(_) => IntegrationType::CloudSecurityAIntegrationApi,
            IntegrationV2Dto::SvcGeoIPCondition(_) => IntegrationType::SvcGeoIPCondition,
            IntegrationV2Dto::SvcTimeCondition(_) => IntegrationType::SvcTimeCondition,
        }
    }
}

/// What every `IntegrationV2DTO` variant has.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IntegrationCommon {
    #[serde(flatten)]
    pub base: Base,
    /// The integration's resource set: the request's.
    pub resource_set: Option<Uuid>,
    /// Equals `integrationType`; either may be left out of a body and is filled from the other.
    #[serde(rename = "type")]
    pub kind: Option<IntegrationType>,
    /// How often the service signs in to the vendor (and records `lastSync`).
    #[schemars(range(min = 300, max = 3600))]
    pub sync_frequency_seconds: i32,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub last_sync: Option<Timestamp>,
    /// `Success` or what failed.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub last_sync_status: Option<String>,
    /// The vendor API's base URL (`builtin` for the built-in integrations).
    #[schemars(length(min = 1, max = 2048))]
    pub endpoint: String,
    /// Access conditions using the integration.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub access_conditions_count: i32,
}

/// `SensorAIntegrationDTO`: sensorA's device inventory (OAuth2 client credentials at
/// `tokenUrl`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "SensorAIntegrationDTO")]
pub struct SensorAIntegrationDto {
    #[serde(flatten)]
    pub common: IntegrationCommon,
    #[schemars(length(min = 1, max = 256))]
    pub client_id: String,
    /// Required on create; kept when absent on PUT.
    #[schemars(length(max = 4096), extend("writeOnly" = true))]
    pub client_secret: Option<String>,
    #[schemars(length(min = 1, max = 2048))]
    pub token_url: String,
    /// Unused by sensorA.
    #[schemars(length(max = 2048))]
    pub audience: Option<String>,
}

/// `CloudSecurityAIntegrationDTO`: cloudSecurityA's inventory (OAuth2 client credentials at
/// `tokenUrl` for `audience`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CloudSecurityAIntegrationDTO")]
pub struct CloudSecurityAIntegrationDto {
    #[serde(flatten)]
    pub common: IntegrationCommon,
    #[schemars(length(min = 1, max = 256))]
    pub client_id: String,
    /// Required on create; kept when absent on PUT.
    #[schemars(length(max = 4096), extend("writeOnly" = true))]
    pub client_secret: Option<String>,
    #[schemars(length(min = 1, max = 2048))]
    pub token_url: String,
    #[schemars(length(min = 1, max = 2048))]
    pub audience: String,
}

/// `GeoIPIntegrationDTO`: the built-in GeoIP integration.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "GeoIPIntegrationDTO")]
pub struct GeoIpIntegrationDto {
    #[serde(flatten)]
    pub common: IntegrationCommon,
}

/// `TimeIntegrationDTO`: the built-in time integration.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TimeIntegrationDTO")]
pub struct TimeIntegrationDto {
    #[serde(flatten)]
    pub common: IntegrationCommon,
}

/// `IntegrationDTO` (v1): the vendor fields in `integrationJSON`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "IntegrationDTO")]
pub struct IntegrationDto {
    #[serde(flatten)]
    pub base: Base,
    /// The integration's resource set: the request's.
    pub resource_set: Option<Uuid>,
    #[serde(rename = "type")]
    pub kind: IntegrationType,
    #[schemars(range(min = 300, max = 3600))]
    pub sync_frequency_seconds: i32,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub last_sync: Option<Timestamp>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub last_sync_status: Option<String>,
    #[schemars(length(min = 1, max = 2048))]
    pub endpoint: String,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub access_conditions_count: i32,
    /// The vendor fields of the v2 variant (`{}` for the built-in integrations).
    #[serde(rename = "integrationJSON")]
    pub integration_json: IntegrationJson,
}

/// `integrationJSON` of a v1 integration: `clientId` and `tokenUrl` are required for the vendor
/// types, `audience` for `CloudSecurityAIntegrationApi`; `clientSecret` is left out of answers.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "IntegrationJSON")]
pub struct IntegrationJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub client_id: Option<String>,
    /// Required on create; kept when absent on PUT.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096), extend("writeOnly" = true))]
    pub client_secret: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 2048))]
    pub token_url: Option<String>,
    /// Outer `None`: not shown (a built-in integration); `Some(None)`: `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>", length(max = 2048))]
    pub audience: Option<Option<String>>,
}

/// `IntegrationPatchDTO`: the `EntityPatchDTO` fields; `resourceSet` and the discriminator
/// (`integrationType`, or `type`) may repeat the stored values (a GET body sent back), never change
/// them.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "IntegrationPatchDTO")]
pub struct IntegrationPatchDto {
    #[serde(flatten)]
    pub patch: EntityPatch,
    pub resource_set: Option<Uuid>,
    pub integration_type: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
}
