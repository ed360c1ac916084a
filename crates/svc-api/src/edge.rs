//! Edge API wire types (contract §4.1). Unknown properties are ignored here (SDK forward
//! compatibility); the server validates what it needs and answers with the §4.9 messages.

use std::collections::BTreeMap;

use serde::de::Visitor;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Timestamp;

/// Parses an Edge API body (`AuthRequest`, `ApiCredentialsRequest`): its objects only as JSON
/// objects. serde's derived structs also accept an array of their fields in order, so
/// `{"client": []}` or `{"oidc": ["<token>"]}` would be read as if they were objects.
pub fn parse_body<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, serde_json::Error> {
    let mut d = serde_json::Deserializer::from_slice(bytes);
    let v = T::deserialize(MapOnly(&mut d))?;
    d.end()?;
    Ok(v)
}

/// A deserializer that reads a struct only from a map (see [`parse_body`]).
struct MapOnly<D>(D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for MapOnly<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(v)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(v)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// A struct read through [`MapOnly`].
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(MapOnly(d)).map(Object)
    }
}

/// An optional object field: a JSON object or `null`.
fn map_only<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Ok(Option::<Object<T>>::deserialize(d)?.map(|o| o.0))
}

/// An optional list of objects.
fn map_only_list<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Vec<T>>, D::Error> {
    Ok(Option::<Vec<Object<T>>>::deserialize(d)?.map(|l| l.into_iter().map(|o| o.0).collect()))
}

/// Body of `POST /edge/v1/auth`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AuthRequest {
    pub client_id: Option<String>,
    #[serde(deserialize_with = "map_only")]
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
    #[serde(deserialize_with = "map_only")]
    pub client: Option<ClientWorkloadDetails>,
    #[serde(deserialize_with = "map_only")]
    pub server: Option<ServerWorkloadDetails>,
    pub credential_type: Option<String>,
    #[serde(deserialize_with = "map_only")]
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
    #[serde(deserialize_with = "map_only")]
    pub cloud_a: Option<CloudA>,
    #[serde(deserialize_with = "map_only")]
    pub cloud_b: Option<CloudB>,
    #[serde(deserialize_with = "map_only")]
    pub cloud_c: Option<CloudC>,
    #[serde(deserialize_with = "map_only")]
    pub os: Option<Os>,
    #[serde(deserialize_with = "map_only")]
    pub orchestrator: Option<Orchestrator>,
    #[serde(deserialize_with = "map_only")]
    pub host: Option<Host>,
    #[serde(deserialize_with = "map_only")]
    pub ci_a: Option<IdentityToken>,
    #[serde(deserialize_with = "map_only")]
    pub ci_b: Option<IdentityToken>,
    #[serde(deserialize_with = "map_only")]
    pub ci_c: Option<IdentityToken>,
    #[serde(deserialize_with = "map_only")]
    pub oidc: Option<IdentityToken>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CloudA {
    pub instance_identity_document: Option<String>,
    pub instance_identity_document_signature: Option<String>,
    #[serde(deserialize_with = "map_only")]
    pub lambda: Option<Lambda>,
    #[serde(deserialize_with = "map_only")]
    pub ecs: Option<Ecs>,
    #[serde(deserialize_with = "map_only")]
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
    #[serde(deserialize_with = "map_only")]
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
    #[serde(deserialize_with = "map_only")]
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
    #[serde(deserialize_with = "map_only")]
    pub process: Option<Process>,
    #[serde(deserialize_with = "map_only")]
    pub sensors: Option<Sensors>,
    #[serde(deserialize_with = "map_only_list")]
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
    #[serde(deserialize_with = "map_only")]
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Objects of the Edge API are JSON objects only: serde's derived structs also take an array
    /// of their fields in order, which must not pass for evidence or a target.
    #[test]
    fn edge_objects_are_never_read_from_arrays() {
        let ok: AuthRequest =
            parse_body(br#"{"clientId":"c","client":{"oidc":{"identityToken":"t"}},"extra":[1]}"#).unwrap();
        assert_eq!(ok.client.unwrap().oidc.unwrap().identity_token.as_deref(), Some("t"));
        for bad in [
            r#"["c", {"oidc": {"identityToken": "t"}}]"#,
            r#"{"clientId":"c","client":[]}"#,
            r#"{"clientId":"c","client":{"oidc":["t"]}}"#,
            r#"{"clientId":"c","client":{"host":{"networkInterfaces":[["eth0"]]}}}"#,
        ] {
            assert!(parse_body::<AuthRequest>(bad.as_bytes()).is_err(), "{bad}");
        }
        assert!(parse_body::<ApiCredentialsRequest>(br#"{"server":["TCP","h",443]}"#).is_err());
        let null: ApiCredentialsRequest = parse_body(br#"{"server":null,"client":{"oidc":null}}"#).unwrap();
        assert!(null.server.is_none());
        assert!(parse_body::<AuthRequest>(br#"{"clientId":"c"} x"#).is_err());
    }
}
