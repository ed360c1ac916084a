//! Access conditions (contract §3.10): one stored condition, shown as `AccessConditionV2DTO`
//! (variants by `integrationType`, their fields at the top level) and as `AccessConditionDTO`
//! (v1: the variant's fields in `conditions`, the variant chosen by the integration's type).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Base, EntityPatch, IntegrationDto, IntegrationV2Dto};

/// `AccessConditionV2DTO`: its variant, by `integrationType`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "integrationType")]
#[schemars(rename = "AccessConditionV2DTO")]
pub enum AccessConditionV2Dto {
    SensorA(SensorAAccessConditionDto),
    CloudSecurityAIntegrationApi(CloudSecurityAAccessConditionDto),
    SvcGeoIPCondition(GeoIpAccessConditionDto),
    SvcTimeCondition(TimeAccessConditionDto),
}

/// What every `AccessConditionV2DTO` variant has.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessConditionCommon {
    #[serde(flatten)]
    pub base: Base,
    /// The condition's resource set: the request's.
    pub resource_set: Option<Uuid>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub id: i32,
    /// An integration of the condition's type in its resource set; for the GeoIP and time
    /// conditions the resource set's built-in one when absent.
    #[serde(rename = "integrationID")]
    pub integration_id: Option<Uuid>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub integration: Option<IntegrationV2Dto>,
    /// Access policies referring to the condition.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub access_policy_count: i32,
}

/// `SensorAAccessConditionDTO`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "SensorAAccessConditionDTO")]
pub struct SensorAAccessConditionDto {
    #[serde(flatten)]
    pub common: AccessConditionCommon,
    #[serde(flatten)]
    pub fields: SensorAConditionFields,
}

/// `CloudSecurityAAccessConditionDTO`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CloudSecurityAAccessConditionDTO")]
pub struct CloudSecurityAAccessConditionDto {
    #[serde(flatten)]
    pub common: AccessConditionCommon,
    #[serde(flatten)]
    pub fields: CloudSecurityAConditionFields,
}

/// `GeoIPAccessConditionDTO`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "GeoIPAccessConditionDTO")]
pub struct GeoIpAccessConditionDto {
    #[serde(flatten)]
    pub common: AccessConditionCommon,
    #[serde(flatten)]
    pub fields: GeoIpConditionFields,
}

/// `TimeAccessConditionDTO`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "TimeAccessConditionDTO")]
pub struct TimeAccessConditionDto {
    #[serde(flatten)]
    pub common: AccessConditionCommon,
    #[serde(flatten)]
    pub fields: TimeConditionFields,
}

/// sensorA: the device of `client.host.sensors.sensorA.agentId` was seen lately and matches
/// what each enabled flag compares.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SensorAConditionFields {
    /// Required: the device was seen at most this long ago (seconds).
    #[schemars(range(min = 1, max = 31449600))]
    pub max_last_seen_seconds: Option<i32>,
    /// One of the device's local IPs is one of the client's.
    #[serde(default, rename = "matchLocalIP")]
    pub match_local_ip: bool,
    #[serde(default)]
    pub match_hostname: bool,
    #[serde(default)]
    pub match_mac_address: bool,
    #[serde(default)]
    pub match_serial_number: bool,
    /// The device is not in reduced-functionality mode.
    #[serde(default)]
    pub prevent_restricted_functionality_mode: bool,
}

/// cloudSecurityA: the cloud resource the verified facts name is in the inventory, seen lately.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloudSecurityAConditionFields {
    /// Required: the resource was seen at most this long ago (seconds).
    #[schemars(range(min = 1, max = 31449600))]
    pub max_last_seen_seconds: Option<i32>,
    /// The resource is the function of `client.cloudA.lambda.arn`.
    #[serde(default)]
    pub serverless: bool,
    /// The resource's cluster is reported connected.
    #[serde(default)]
    pub container_cluster_connected: bool,
}

/// GeoIP: the request's source address is in one of the locations.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GeoIpConditionFields {
    /// Unused by this type.
    #[schemars(range(min = 1, max = 31449600))]
    pub max_last_seen_seconds: Option<i32>,
    /// At least one.
    pub locations: Option<Vec<GeoIpLocationDto>>,
}

/// Time: now, in `timezone`, falls in one of the schedule's windows.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimeConditionFields {
    /// Unused by this type.
    #[schemars(range(min = 1, max = 31449600))]
    pub max_last_seen_seconds: Option<i32>,
    /// At least one.
    pub schedule: Option<Vec<ScheduleDto>>,
    pub timezone: TimezoneDto,
}

/// `GeoIPAccessConditionLocationDTO`: a country, or some of its subdivisions.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "GeoIPAccessConditionLocationDTO")]
pub struct GeoIpLocationDto {
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub id: i32,
    /// The country's name; compared when `alpha2Code` is absent.
    #[schemars(length(min = 1, max = 128))]
    pub short_name: String,
    /// ISO 3166-1 alpha-2.
    pub alpha2_code: Option<String>,
    /// When given, the address must be in one of them.
    pub subdivisions: Option<Vec<GeoIpSubdivisionDto>>,
    #[serde(default, rename = "geoIPAccessConditionId")]
    #[schemars(extend("readOnly" = true))]
    pub geoip_access_condition_id: i32,
}

/// `GeoIPAccessConditionSubdivisionDTO`: `subdivisionCode`, or `alpha2Code` with the location's
/// country.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "GeoIPAccessConditionSubdivisionDTO")]
pub struct GeoIpSubdivisionDto {
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub id: i32,
    #[schemars(length(min = 1, max = 128))]
    pub name: String,
    /// The subdivision's own code (1 to 3 letters or digits, `TX`).
    pub alpha2_code: Option<String>,
    /// ISO 3166-2 (`US-TX`).
    pub subdivision_code: Option<String>,
    #[serde(default, rename = "geoIPAccessConditionLocationId")]
    #[schemars(extend("readOnly" = true))]
    pub geoip_access_condition_location_id: i32,
}

/// `TimeAccessConditionScheduleDTO`: `startTime` ≤ t < `endTime` on `weekDay` (a window does not
/// cross midnight: use two).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TimeAccessConditionScheduleDTO")]
pub struct ScheduleDto {
    /// `HH:mm`, 24 h.
    pub start_time: String,
    /// `HH:mm`, 24 h (`24:00` is the end of the day); after `startTime`.
    pub end_time: String,
    pub week_day: WeekDayDto,
}

/// `WeekDayDTO`: `name` or `ordinal` (Sunday = 0); both must agree.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "WeekDayDTO")]
pub struct WeekDayDto {
    pub name: Option<WeekDay>,
    #[schemars(range(min = 0, max = 6))]
    pub ordinal: Option<i32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum WeekDay {
    Sunday,
    Monday,
    Tuesday,
    Wednesday,
    Thursday,
    Friday,
    Saturday,
}

impl WeekDay {
    /// Sunday = 0.
    pub const ALL: [WeekDay; 7] = [
        WeekDay::Sunday,
        WeekDay::Monday,
        WeekDay::Tuesday,
        WeekDay::Wednesday,
        WeekDay::Thursday,
        WeekDay::Friday,
        WeekDay::Saturday,
    ];

    pub fn ordinal(self) -> u8 {
        Self::ALL.iter().position(|d| *d == self).expect("every day is listed") as u8
    }
}

/// `TimeAccessConditionTimezoneDTO`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TimeAccessConditionTimezoneDTO")]
pub struct TimezoneDto {
    /// An IANA time zone (`Europe/Berlin`).
    #[schemars(length(min = 1, max = 128))]
    pub timezone: String,
    #[schemars(length(max = 128))]
    pub group: Option<String>,
    #[schemars(length(max = 256))]
    pub label: Option<String>,
}

/// `AccessConditionDTO` (v1).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AccessConditionDTO")]
pub struct AccessConditionDto {
    #[serde(flatten)]
    pub base: Base,
    /// The condition's resource set: the request's.
    pub resource_set: Option<Uuid>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub id: i32,
    /// The condition's integration: its type chooses the variant of `conditions`. Optional for
    /// the built-in types, given by `integrationType`.
    #[serde(rename = "integrationID")]
    pub integration_id: Option<Uuid>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub integration: Option<IntegrationDto>,
    /// The fields of the v2 variant with `maxLastSeenSeconds`, as an object (the fields of
    /// `SensorAAccessConditionDTO`, `CloudSecurityAAccessConditionDTO`, `GeoIPAccessConditionDTO`
    /// or `TimeAccessConditionDTO` beyond the common ones).
    pub conditions: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub access_policy_count: i32,
    /// The integration's type. Read-only, except that without `integrationID` a built-in type
    /// names the resource set's built-in integration.
    pub integration_type: Option<String>,
}

/// `AccessConditionPatchDTO`: the `EntityPatchDTO` fields; `resourceSet` and `integrationType` may
/// repeat the stored values (a GET body sent back), never change them.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AccessConditionPatchDTO")]
pub struct AccessConditionPatchDto {
    #[serde(flatten)]
    pub patch: EntityPatch,
    pub resource_set: Option<Uuid>,
    pub integration_type: Option<String>,
}
