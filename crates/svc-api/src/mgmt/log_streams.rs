//! Log streams (contract §3.14): where the audit log or the events are delivered, one variant per
//! destination, chosen by `type`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Base;

/// `LogStreamDTO`: its destination variant, by `type`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
#[schemars(rename = "LogStreamDTO")]
pub enum LogStreamDto {
    ObjectStorageABucket(LogStreamObjectStorageADestinationDto),
    ObjectStorageCBucket(LogStreamObjectStorageCDestinationDto),
    LogAnalyticsAHttpEventCollector(LogStreamLogAnalyticsADestinationDto),
    SensorAHttpEventCollector(LogStreamSensorADestinationDto),
}

impl LogStreamDto {
    /// The fields every variant has.
    pub fn common(&self) -> &LogStreamCommon {
        match self {
            LogStreamDto::ObjectStorageABucket(v) => &v.common,
            LogStreamDto::ObjectStorageCBucket(v) => &v.common,
            LogStreamDto::LogAnalyticsAHttpEventCollector(v) => &v.common,
            LogStreamDto::SensorAHttpEventCollector(v) => &v.common,
        }
    }
}

/// What every `LogStreamDTO` variant has: the base block without `resourceSet` (a log stream is
/// global and carries the records of every resource set).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogStreamCommon {
    #[serde(flatten)]
    pub base: Base,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub id: i32,
    pub data_type: LogStreamDataType,
    /// Transactions under way.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub in_prog_transaction_count: i32,
    /// Transactions the destination accepted.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub completed_transaction_count: i32,
    /// Transactions that failed (retried the next cycle, given up after 24 h).
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub errored_transaction_count: i32,
}

/// The records a stream delivers: the `AuditLogDTO`, `AuthorizationEventDTO` or `EventDTO` of
/// each, every 60 s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum LogStreamDataType {
    AuditLogs,
    AccessAuthorizationEvents,
    WorkloadEvents,
}

/// `LogStreamObjectStorageADestinationDTO`: objects in an objectStorageA bucket.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "LogStreamObjectStorageADestinationDTO")]
pub struct LogStreamObjectStorageADestinationDto {
    #[serde(flatten)]
    pub common: LogStreamCommon,
    /// `^[a-z\-\d]+$`.
    #[serde(rename = "objectStorageABucketRegion")]
    #[schemars(length(min = 8, max = 30))]
    pub region: String,
    /// `^[a-z\d]+[a-z\-\.\d]*[a-z\d]+$`.
    #[serde(rename = "objectStorageABucketName")]
    #[schemars(length(min = 3, max = 63))]
    pub bucket: String,
    /// 3..800 characters, no backslash, braces, caret, percent, backtick, quotes, tilde, hash,
    /// square or angle brackets, pipe, or characters beyond ASCII.
    #[serde(rename = "objectStorageAPathPrefix")]
    pub prefix: Option<String>,
}

fn token_lifetime() -> i32 {
    3600
}

/// `LogStreamObjectStorageCDestinationDTO`: objects in an objectStorageC bucket, written with a
/// token of `serviceAccountEmail` obtained through the service's workload identity federation.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "LogStreamObjectStorageCDestinationDTO")]
pub struct LogStreamObjectStorageCDestinationDto {
    #[serde(flatten)]
    pub common: LogStreamCommon,
    /// `^[a-z\-_\d]{3,63}$` or `^(?=.*\.)[a-z\-\._\d]{3,222}$`.
    #[serde(rename = "objectStorageCBucketName")]
    pub bucket: Option<String>,
    /// No `# [ ] * ? : " < >` or pipe.
    #[serde(rename = "objectStorageCPathPrefix")]
    #[schemars(length(max = 256))]
    pub prefix: Option<String>,
    #[schemars(length(max = 256))]
    pub audience: Option<String>,
    #[schemars(length(max = 90))]
    pub service_account_email: Option<String>,
    /// Seconds.
    #[serde(default = "token_lifetime")]
    #[schemars(range(min = 15, max = 3600))]
    pub token_lifetime: i32,
}

fn yes() -> bool {
    true
}

/// Whether the collector's certificate is verified.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TlsVerification {
    #[default]
    Full,
    None,
}

/// `LogStreamLogAnalyticsADestinationDTO`: logAnalyticsA's HTTP event collector.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "LogStreamLogAnalyticsADestinationDTO")]
pub struct LogStreamLogAnalyticsADestinationDto {
    #[serde(flatten)]
    pub common: LogStreamCommon,
    /// `^[a-zA-Z0-9\-\.]+:[0-9]{1,5}$`, a port in 1..65535.
    #[schemars(length(min = 1, max = 260))]
    pub hec_host_port: String,
    /// The collector's token, a GUID; required on create, kept when absent on PUT.
    #[schemars(extend("writeOnly" = true))]
    pub authentication_token: Option<String>,
    #[schemars(length(min = 1, max = 256))]
    pub hec_source_name: String,
    /// HTTPS (default); plain HTTP only with insecure upstreams allowed.
    #[serde(default = "yes")]
    pub tls: bool,
    #[serde(default)]
    pub tls_verification: TlsVerification,
}

/// `LogStreamSensorADestinationDTO`: sensorA's HTTP event collector.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "LogStreamSensorADestinationDTO")]
pub struct LogStreamSensorADestinationDto {
    #[serde(flatten)]
    pub common: LogStreamCommon,
    /// `^[a-zA-Z0-9\-\.]+:[0-9]{1,5}$`, a port in 1..65535.
    #[schemars(length(min = 1, max = 260))]
    pub hec_host_port: String,
    /// `^[a-zA-Z0-9-]{32,40}$`; required on create, kept when absent on PUT.
    #[schemars(extend("writeOnly" = true))]
    pub api_key: Option<String>,
    #[schemars(length(min = 1, max = 256))]
    pub hec_source_name: String,
    /// HTTPS (default); plain HTTP only with insecure upstreams allowed.
    #[serde(default = "yes")]
    pub tls: bool,
    #[serde(default)]
    pub tls_verification: TlsVerification,
}
