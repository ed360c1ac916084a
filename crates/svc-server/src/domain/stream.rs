//! Log streams (contract §3.14): what a stream delivers (`dataType`), where (one of four
//! destinations) and its write-only secret (`authenticationToken` of a logAnalyticsA collector,
//! `apiKey` of a sensorA one), sealed at rest.

use serde::{Deserialize, Serialize};

use super::Meta;
use super::credential::SecretFields;

/// The records a stream carries.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Hash)]
pub enum DataType {
    AuditLogs,
    AccessAuthorizationEvents,
    WorkloadEvents,
}

impl DataType {
    pub const ALL: [DataType; 3] = [
        DataType::AuditLogs,
        DataType::AccessAuthorizationEvents,
        DataType::WorkloadEvents,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DataType::AuditLogs => "AuditLogs",
            DataType::AccessAuthorizationEvents => "AccessAuthorizationEvents",
            DataType::WorkloadEvents => "WorkloadEvents",
        }
    }

    pub fn parse(s: &str) -> Option<DataType> {
        DataType::ALL.into_iter().find(|d| d.as_str() == s)
    }
}

/// An HTTP event collector (both HEC variants).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Hec {
    /// `hecHostPort`: `host:port`.
    pub host_port: String,
    /// `hecSourceName`: each event's `source`.
    pub source_name: String,
    /// `false`: plain `http`.
    pub tls: bool,
    /// `tlsVerification: full` (`true`) or `none`.
    pub verify: bool,
}

/// An objectStorageA bucket.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct BucketA {
    pub region: String,
    pub bucket: String,
    pub prefix: Option<String>,
}

/// An objectStorageC bucket and the identity that writes to it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct BucketC {
    pub bucket: Option<String>,
    pub prefix: Option<String>,
    pub audience: Option<String>,
    pub service_account_email: Option<String>,
    /// Seconds.
    pub token_lifetime: i32,
}

/// Where a stream delivers.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type")]
pub enum Destination {
    ObjectStorageABucket(BucketA),
    ObjectStorageCBucket(BucketC),
    LogAnalyticsAHttpEventCollector(Hec),
    SensorAHttpEventCollector(Hec),
}

impl Destination {
    /// The `type` discriminator.
    pub fn type_name(&self) -> &'static str {
        match self {
            Destination::ObjectStorageABucket(_) => "ObjectStorageABucket",
            Destination::ObjectStorageCBucket(_) => "ObjectStorageCBucket",
            Destination::LogAnalyticsAHttpEventCollector(_) => "LogAnalyticsAHttpEventCollector",
            Destination::SensorAHttpEventCollector(_) => "SensorAHttpEventCollector",
        }
    }

    /// The write-only field of the variant, if it has one.
    pub fn secret_field(&self) -> Option<&'static str> {
        match self {
            Destination::LogAnalyticsAHttpEventCollector(_) => Some("authenticationToken"),
            Destination::SensorAHttpEventCollector(_) => Some("apiKey"),
            _ => None,
        }
    }

    pub fn hec(&self) -> Option<&Hec> {
        match self {
            Destination::LogAnalyticsAHttpEventCollector(h) | Destination::SensorAHttpEventCollector(h) => Some(h),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LogStream {
    /// Global: `meta.rs` is `None`; `meta.seq` is the DTO's int `id`.
    pub meta: Meta,
    pub data_type: DataType,
    pub dest: Destination,
    /// `authenticationToken` or `apiKey`, by wire name.
    #[serde(skip)]
    pub secrets: SecretFields,
}

impl LogStream {
    /// An HTTP event collector's token goes to its host and port, over TLS verified as it was
    /// stored (turning TLS or its verification off is a move as much as another host: issue
    /// 31); the object-storage destinations keep no secret of their own.
    pub fn secret_home(&self) -> super::SecretHome {
        let given: &'static [&'static str] = match &self.dest {
            Destination::LogAnalyticsAHttpEventCollector(_) => &["authenticationToken"],
            Destination::SensorAHttpEventCollector(_) => &["apiKey"],
            _ => &[],
        };
        match self.dest.hec() {
            Some(h) => super::SecretHome {
                fields: vec![
                    ("hecHostPort", h.host_port.clone()),
                    ("tls", h.tls.to_string()),
                    ("tlsVerification", h.verify.to_string()),
                ],
                given,
                held: self.secrets.stamps(),
            },
            None => super::SecretHome::nowhere(),
        }
    }

    /// The collector's token or key (HEC variants).
    pub fn secret(&self) -> Option<&str> {
        self.dest.secret_field().and_then(|f| self.secrets.get(f))
    }
}
