//! Integrations (contract §3.11) and access conditions (§3.10): one stored record each, shown
//! through a v1 and a v2 view. An integration's `clientSecret` lives in the sealed bundle; a
//! condition keeps its variant's fields typed, so the edge evaluates them without parsing.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::credential::SecretFields;
use super::{Meta, Timestamp};

/// The integration types of §3.11, in their documented order.
pub const INTEGRATION_TYPES: [&str; 4] = [SENSOR_A, CLOUD_SECURITY_A, GEOIP, TIME];
pub const SENSOR_A: &str = "SensorA";
pub const CLOUD_SECURITY_A: &str = "CloudSecurityAIntegrationApi";
pub const GEOIP: &str = "SvcGeoIPCondition";
pub const TIME: &str = "SvcTimeCondition";

/// Whether a type is one of the built-in ones every resource set holds (`GeoIP`, `Time`).
pub fn builtin_type(t: &str) -> bool {
    t == GEOIP || t == TIME
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Integration {
    pub meta: Meta,
    #[serde(rename = "type")]
    pub int_type: String,
    pub sync_frequency_seconds: i32,
    pub endpoint: String,
    /// Vendor types: `clientId`, `tokenUrl`, `audience` (wire names); empty for built-ins.
    pub config: serde_json::Map<String, serde_json::Value>,
    pub builtin: bool,
    pub last_sync: Option<Timestamp>,
    pub last_sync_status: Option<String>,
    /// `clientSecret`.
    #[serde(skip)]
    pub secrets: SecretFields,
}

impl Integration {
    pub fn config_str(&self, key: &str) -> Option<&str> {
        self.config.get(key).and_then(|v| v.as_str())
    }

    /// A vendor integration's `clientSecret` goes to `tokenUrl`, the token it buys to
    /// `endpoint`.
    pub fn secret_home(&self) -> super::SecretHome {
        super::SecretHome {
            fields: vec![
                ("tokenUrl", self.config_str("tokenUrl").unwrap_or_default().to_string()),
                ("endpoint", self.endpoint.clone()),
            ],
            given: &["clientSecret"],
            held: self.secrets.stamps(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AccessCondition {
    pub meta: Meta,
    pub integration: Uuid,
    pub max_last_seen_seconds: Option<i32>,
    pub spec: ConditionSpec,
}

impl AccessCondition {
    pub fn int_type(&self) -> &'static str {
        self.spec.int_type()
    }

    pub fn shrink_lists(&mut self) {
        self.meta.tags.shrink_to_fit();
    }
}

/// The variant fields of a condition (§3.10).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind")]
pub enum ConditionSpec {
    SensorA {
        match_local_ip: bool,
        match_hostname: bool,
        match_mac_address: bool,
        match_serial_number: bool,
        prevent_restricted_functionality_mode: bool,
    },
    CloudSecurityA {
        serverless: bool,
        container_cluster_connected: bool,
    },
    GeoIp {
        locations: Vec<Location>,
    },
    Time {
        schedule: Vec<Window>,
        timezone: Timezone,
    },
}

impl ConditionSpec {
    pub fn int_type(&self) -> &'static str {
        match self {
            ConditionSpec::SensorA { .. } => SENSOR_A,
            ConditionSpec::CloudSecurityA { .. } => CLOUD_SECURITY_A,
            ConditionSpec::GeoIp { .. } => GEOIP,
            ConditionSpec::Time { .. } => TIME,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Location {
    pub short_name: String,
    /// ISO 3166-1 alpha-2, upper case.
    pub alpha2_code: Option<String>,
    pub subdivisions: Vec<Subdivision>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Subdivision {
    pub name: String,
    pub alpha2_code: Option<String>,
    /// ISO 3166-2 (`US-TX`), upper case.
    pub subdivision_code: Option<String>,
}

impl Subdivision {
    /// The ISO 3166-2 code this entry names: `subdivisionCode`, else the location's country and
    /// the entry's `alpha2Code` (`US` + `TX`).
    pub fn code(&self, country: Option<&str>) -> Option<String> {
        match (&self.subdivision_code, &self.alpha2_code, country) {
            (Some(c), _, _) => Some(c.clone()),
            (None, Some(a), Some(cc)) => Some(format!("{cc}-{a}")),
            _ => None,
        }
    }
}

/// One schedule entry: `start` ≤ t < `end` (minutes after midnight) on `weekday` (Sunday = 0).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Window {
    pub weekday: u8,
    pub start: u16,
    pub end: u16,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Timezone {
    pub timezone: String,
    pub group: Option<String>,
    pub label: Option<String>,
}

pub const WEEKDAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// A content-security entry (contract §3.13): stored, referenced by policies and reported in
/// authorization events; it changes no decision.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ContentSecurity {
    pub meta: Meta,
    #[serde(rename = "type")]
    pub cs_type: String,
    pub base_url: String,
    pub fail_open: bool,
    pub timeout_ms: i32,
    pub max_retries: i32,
    /// `encryptedToken`.
    #[serde(skip)]
    pub secrets: SecretFields,
}

/// A discovery integration (contract §3.12): reads the cloud-security inventory and keeps one
/// server-workload draft per discovered (host, port).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DiscoveryIntegration {
    pub meta: Meta,
    #[serde(rename = "type")]
    pub dtype: String,
    pub sync_frequency_seconds: i32,
    pub endpoint: String,
    /// `tokenUrl`, `clientId`, `audience` (the non-secret part of `discoveryIntegrationJSON`).
    pub config: serde_json::Map<String, serde_json::Value>,
    pub last_sync: Option<Timestamp>,
    pub last_sync_status: Option<String>,
    /// `clientSecret`.
    #[serde(skip)]
    pub secrets: SecretFields,
}

/// A server workload found by a discovery integration: read-only, never matched by the edge.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ServerWorkloadDraft {
    pub meta: Meta,
    pub integration: Uuid,
    pub host: String,
    pub port: i32,
    pub provider_unique_id: String,
    pub last_seen_at: Option<Timestamp>,
}

impl ContentSecurity {
    /// `encryptedToken` is the vendor API's at `baseUrl`.
    pub fn secret_home(&self) -> super::SecretHome {
        super::SecretHome {
            fields: vec![("baseUrl", self.base_url.clone())],
            given: &["encryptedToken"],
            held: self.secrets.stamps(),
        }
    }
}

impl DiscoveryIntegration {
    /// `clientSecret` goes to `tokenUrl`, the token it buys to `endpoint`.
    pub fn secret_home(&self) -> super::SecretHome {
        let token_url = self.config.get("tokenUrl").and_then(|v| v.as_str()).unwrap_or_default();
        super::SecretHome {
            fields: vec![("tokenUrl", token_url.to_string()), ("endpoint", self.endpoint.clone())],
            given: &["clientSecret"],
            held: self.secrets.stamps(),
        }
    }
}
