//! Edge API wire types (contract §4.1). Unknown properties are ignored here (SDK forward
//! compatibility); the server validates what it needs and answers with the §4.9 messages.

use std::collections::BTreeMap;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use crate::Timestamp;

/// Body of `POST /edge/v1/auth`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AuthRequest {
    pub client_id: Option<String>,
    pub client: Option<ClientWorkloadDetails>,
}

/// `TokenDTO`
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenDto {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub token_type: String,
    pub expires_in: i32,
}

/// Body of `POST /edge/v1/credentials`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ApiCredentialsRequest {
    pub client: Option<ClientWorkloadDetails>,
    pub server: Option<ServerWorkloadDetails>,
    pub credential_type: Option<String>,
    pub connection_metadata: Option<ConnectionMetadata>,
    pub cert_signing_request: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServerWorkloadDetails {
    pub transport_protocol: Option<String>,
    pub host: Option<String>,
    pub port: Option<i64>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConnectionMetadata {
    pub access_key_id: Option<String>,
    pub account_name: Option<String>,
    pub header_name: Option<String>,
    pub header_value: Option<String>,
    pub http_body_field_path: Option<String>,
    pub http_body_field_value: Option<String>,
}

impl ConnectionMetadata {
    pub fn is_empty(&self) -> bool {
        self.access_key_id.is_none()
            && self.account_name.is_none()
            && self.header_name.is_none()
            && self.header_value.is_none()
            && self.http_body_field_path.is_none()
            && self.http_body_field_value.is_none()
    }
}

/// `ClientWorkloadDetails`: attestation evidence and self-reported context.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClientWorkloadDetails {
    #[serde(rename = "sourceIP")]
    pub source_ip: Option<String>,
    pub cloud_a: Option<CloudA>,
    pub cloud_b: Option<CloudB>,
    pub cloud_c: Option<CloudC>,
    pub os: Option<Os>,
    pub orchestrator: Option<Orchestrator>,
    pub host: Option<Host>,
    pub ci_a: Option<IdentityToken>,
    pub ci_b: Option<IdentityToken>,
    pub ci_c: Option<IdentityToken>,
    pub oidc: Option<IdentityToken>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CloudA {
    pub instance_identity_document: Option<String>,
    pub instance_identity_document_signature: Option<String>,
    pub lambda: Option<Lambda>,
    pub ecs: Option<Ecs>,
    pub sts_get_caller_identity: Option<StsGetCallerIdentity>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Lambda {
    pub arn: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Ecs {
    pub container_metadata: Option<String>,
    pub task_metadata: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct StsGetCallerIdentity {
    pub headers: Option<BTreeMap<String, Option<String>>>,
    pub region: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CloudB {
    pub attested_document: Option<AttestedDocument>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct AttestedDocument {
    pub encoding: Option<String>,
    pub signature: Option<String>,
    pub nonce: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CloudC {
    pub identity_token: Option<String>,
    pub instance_document: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Os {
    pub environment: Option<OsEnvironment>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct OsEnvironment {
    #[serde(rename = "ORCH_POD_NAME")]
    pub orch_pod_name: Option<String>,
    #[serde(rename = "CLIENT_WORKLOAD_ID")]
    pub client_workload_id: Option<String>,
    #[serde(rename = "ORCH_PROVIDER_ID")]
    pub orch_provider_id: Option<String>,
    #[serde(rename = "SVC_RESOURCE_SET_ID")]
    pub svc_resource_set_id: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Orchestrator {
    pub service_account_token: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Host {
    pub hostname: Option<String>,
    pub domain_name: Option<String>,
    pub system_serial_number: Option<String>,
    pub process: Option<Process>,
    pub sensors: Option<Sensors>,
    pub network_interfaces: Option<Vec<NetworkInterface>>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Process {
    pub name: Option<String>,
    pub pid: Option<i64>,
    pub user_id: Option<i64>,
    pub user_name: Option<String>,
    pub exe_path: Option<String>,
    pub command_line: Option<String>,
    pub exe_hash: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Sensors {
    pub sensor_a: Option<SensorA>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SensorA {
    pub agent_id: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NetworkInterface {
    pub name: Option<String>,
    pub mac_address: Option<String>,
    pub ipv4_addresses: Option<Vec<String>>,
    pub ipv6_addresses: Option<Vec<String>>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct IdentityToken {
    pub identity_token: Option<String>,
}

/// `CredentialProviderTypes`
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CredentialType {
    Unknown,
    ApiKey,
    UsernamePassword,
    CloudCWorkloadIdentityFederation,
    OAuthToken,
    CloudAStsFederation,
    X509Svid,
}

impl CredentialType {
    pub const ALL: [CredentialType; 7] = [
        CredentialType::Unknown,
        CredentialType::ApiKey,
        CredentialType::UsernamePassword,
        CredentialType::CloudCWorkloadIdentityFederation,
        CredentialType::OAuthToken,
        CredentialType::CloudAStsFederation,
        CredentialType::X509Svid,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CredentialType::Unknown => "Unknown",
            CredentialType::ApiKey => "ApiKey",
            CredentialType::UsernamePassword => "UsernamePassword",
            CredentialType::CloudCWorkloadIdentityFederation => "CloudCWorkloadIdentityFederation",
            CredentialType::OAuthToken => "OAuthToken",
            CredentialType::CloudAStsFederation => "CloudAStsFederation",
            CredentialType::X509Svid => "X509Svid",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

impl Serialize for CredentialType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// `EdgeCredentials`: exactly the keys of the issued type (§4.10), values possibly null.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EdgeCredentials(pub Vec<(&'static str, Option<String>)>);

impl Serialize for EdgeCredentials {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// `ApiCredentialsResponse`
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiCredentialsResponse {
    pub credential_type: CredentialType,
    pub expires_at: Option<Timestamp>,
    pub data: EdgeCredentials,
}

impl ApiCredentialsResponse {
    /// `{"credentialType":"Unknown","expiresAt":null,"data":{}}`
    pub fn unknown() -> Self {
        ApiCredentialsResponse {
            credential_type: CredentialType::Unknown,
            expires_at: None,
            data: EdgeCredentials::default(),
        }
    }
}
