//! Client and server workload records (contract §3.3, §3.4).

use serde::{Deserialize, Serialize};
use svc_api::common::KeyValue;
use uuid::Uuid;

use super::{Label, Meta};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Identity {
    /// Interned: one of the identity-type names (§4.6).
    #[serde(rename = "type")]
    pub kind: Label,
    pub value: String,
    pub key: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ClientWorkload {
    pub meta: Meta,
    pub identities: Vec<Identity>,
    pub enforce_sso: bool,
    pub sso_identity_providers: Vec<Uuid>,
    pub label: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ServiceAuth {
    pub method: String,
    pub scheme: String,
    pub config: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Endpoint {
    pub id: Uuid,
    pub seq: i32,
    pub host: String,
    /// Interned (as are `transport_protocol` and `tls_verification`): one of a few enum values
    /// in every server workload (docs/PERFORMANCE.md).
    pub app_protocol: Label,
    pub transport_protocol: Label,
    pub requested_port: i32,
    pub requested_tls: bool,
    pub port: i32,
    pub tls: bool,
    pub tls_verification: Label,
    /// Boxed: rarely set, and three strings inline in every server workload otherwise.
    pub auth: Option<Box<ServiceAuth>>,
    pub url_path: Option<String>,
    pub http_headers: Vec<KeyValue>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ServerWorkload {
    pub meta: Meta,
    pub endpoint: Endpoint,
    pub label: Option<String>,
}

impl ClientWorkload {
    /// See `Record::compact`.
    pub fn shrink_lists(&mut self) {
        self.meta.tags.shrink_to_fit();
        self.identities.shrink_to_fit();
        self.sso_identity_providers.shrink_to_fit();
    }
}

impl ServerWorkload {
    /// See `Record::compact`.
    pub fn shrink_lists(&mut self) {
        self.meta.tags.shrink_to_fit();
        self.endpoint.http_headers.shrink_to_fit();
    }
}
