//! Client and server workload records (contract §3.3, §3.4).

use serde::{Deserialize, Serialize};
use svc_api::common::KeyValue;
use uuid::Uuid;

use super::Meta;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Identity {
    #[serde(rename = "type")]
    pub kind: String,
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
    pub app_protocol: String,
    pub transport_protocol: String,
    pub requested_port: i32,
    pub requested_tls: bool,
    pub port: i32,
    pub tls: bool,
    pub tls_verification: String,
    pub auth: Option<ServiceAuth>,
    pub url_path: Option<String>,
    pub http_headers: Vec<KeyValue>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ServerWorkload {
    pub meta: Meta,
    pub endpoint: Endpoint,
    pub label: Option<String>,
}
