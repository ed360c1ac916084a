//! Edge API wire types (contract §4.1). Unknown properties are ignored here (SDK forward
//! compatibility); the server validates what it needs and answers with the §4.9 messages.
//! Their JSON Schemas (named as the contract names the DTOs) are the OpenAPI document's; the edge
//! does not check bodies against them (no `schema::read` on the hot path: [`parse_body`] reads
//! them with serde directly).

use std::collections::BTreeMap;

use schemars::JsonSchema;
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
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(rename = "AuthRequest", extend("required" = ["clientId", "client"]))]
pub struct AuthRequest {
    /// The trust provider's `edgeSdkClientId`: `svc:<stack>:<tenant>:identity:<type>:<id>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The attestation evidence of the provider's kind.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientWorkloadDetails>,
}

/// `TokenDTO`
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TokenDTO", extend("required" = ["accessToken", "refreshToken", "tokenType", "expiresIn"]))]
pub struct TokenDto {
    /// The Edge access token (a JWT) for `/edge/v1/credentials`.
    pub access_token: String,
    /// Always `null`.
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// `Bearer`.
    pub token_type: String,
    /// Seconds until the token expires (`SVC_EDGE_TOKEN_TTL_SECONDS`).
    pub expires_in: i32,
}

/// Body of `POST /edge/v1/credentials`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(rename = "ApiCredentialsRequest", extend("required" = ["client", "server", "credentialType"]))]
pub struct ApiCredentialsRequest {
    /// The same identity context as for `/auth`.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientWorkloadDetails>,
    /// The target.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerWorkloadDetails>,
    /// The requested type: one of `CredentialProviderTypes` (read as text: another value is the
    /// §4.9 answer to an invalid body, not a parse failure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential_type: Option<String>,
    /// Selects one credential mapping of a multi-provider policy.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_metadata: Option<ConnectionMetadata>,
    /// A PEM PKCS#10 CSR: required for `X509Svid`, ignored otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cert_signing_request: Option<String>,
}

/// `ServerWorkloadDetails`: the target of a credential request.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(rename = "ServerWorkloadDetails", extend("required" = ["host", "port"]))]
pub struct ServerWorkloadDetails {
    /// `TCP` (the default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport_protocol: Option<String>,
    /// A host name, an IP address or an FQDN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// 1..65535 (read as any integer: another is the §4.9 answer to an invalid body).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<i32>", range(min = 1, max = 65535))]
    pub port: Option<i64>,
}

/// `ConnectionMetadata`: which mapping of a multi-provider policy answers.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(rename = "ConnectionMetadata")]
pub struct ConnectionMetadata {
    /// Selects an `AccessKeyId` mapping (`^[A-Z0-9]+$`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_key_id: Option<String>,
    /// Selects an `AccountName` mapping.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_name: Option<String>,
    /// With `headerValue`: selects an `HttpHeader` mapping.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_name: Option<String>,
    /// With `headerName`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_value: Option<String>,
    /// With `httpBodyFieldValue`: selects an `HttpBody` mapping.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_body_field_path: Option<String>,
    /// With `httpBodyFieldPath`.
    #[serde(skip_serializing_if = "Option::is_none")]
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
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(rename = "ClientWorkloadDetails")]
pub struct ClientWorkloadDetails {
    /// The workload's IP as it reports it: honoured only from trusted proxies.
    #[serde(rename = "sourceIP")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_ip: Option<String>,
    /// CloudA evidence: the instance identity document, or a signed `GetCallerIdentity`.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cloud_a: Option<CloudA>,
    /// CloudB evidence: the attested document.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cloud_b: Option<CloudB>,
    /// CloudC evidence: the identity token.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cloud_c: Option<CloudC>,
    /// The self-reported environment.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os: Option<Os>,
    /// The orchestrator's service-account token.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orchestrator: Option<Orchestrator>,
    /// Self-reported host facts.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
    /// A CiA job's identity token.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci_a: Option<IdentityToken>,
    /// A CiB job's identity token.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci_b: Option<IdentityToken>,
    /// A CiC job's identity token.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci_c: Option<IdentityToken>,
    /// A generic OIDC ID token.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oidc: Option<IdentityToken>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(rename = "CloudADetails")]
pub struct CloudA {
    /// Base64 of the instance identity document's bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_identity_document: Option<String>,
    /// Base64 signature of those bytes (raw RSA or PKCS#7).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_identity_document_signature: Option<String>,
    /// Self-reported.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lambda: Option<Lambda>,
    /// Self-reported.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecs: Option<Ecs>,
    /// A signed `GetCallerIdentity` request.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sts_get_caller_identity: Option<StsGetCallerIdentity>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(rename = "LambdaDetails")]
pub struct Lambda {
    /// The function's ARN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arn: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(rename = "EcsDetails")]
pub struct Ecs {
    /// JSON text of the container metadata document.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_metadata: Option<String>,
    /// JSON text of the task metadata document.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_metadata: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(rename = "StsGetCallerIdentityDetails")]
pub struct StsGetCallerIdentity {
    /// The signed request's headers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, Option<String>>>,
    /// The region the request was signed for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(rename = "CloudBDetails")]
pub struct CloudB {
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attested_document: Option<AttestedDocument>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(rename = "AttestedDocumentDetails")]
pub struct AttestedDocument {
    /// `pkcs7`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// Base64 DER PKCS#7 SignedData.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The nonce used when fetching the document.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(rename = "CloudCDetails")]
pub struct CloudC {
    /// The identity token (a JWT).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity_token: Option<String>,
    /// Base64 instance document; not used for verification.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_document: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(rename = "OsDetails")]
pub struct Os {
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment: Option<OsEnvironment>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(rename = "OsEnvironmentDetails")]
pub struct OsEnvironment {
    #[serde(rename = "ORCH_POD_NAME")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orch_pod_name: Option<String>,
    #[serde(rename = "CLIENT_WORKLOAD_ID")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_workload_id: Option<String>,
    #[serde(rename = "ORCH_PROVIDER_ID")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orch_provider_id: Option<String>,
    #[serde(rename = "SVC_RESOURCE_SET_ID")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub svc_resource_set_id: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(rename = "OrchestratorDetails")]
pub struct Orchestrator {
    /// The service-account JWT.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_account_token: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(rename = "HostDetails")]
pub struct Host {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_serial_number: Option<String>,
    /// The process asking.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<Process>,
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sensors: Option<Sensors>,
    #[serde(deserialize_with = "map_only_list")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_interfaces: Option<Vec<NetworkInterface>>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(rename = "ProcessDTO")]
pub struct Process {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The process id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i64>,
    /// The process's user id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exe_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exe_hash: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(rename = "SensorsDetails")]
pub struct Sensors {
    /// For SensorA access conditions.
    #[serde(deserialize_with = "map_only")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sensor_a: Option<SensorA>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(rename = "SensorADetails")]
pub struct SensorA {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(rename = "NetworkInterfacesDTO")]
pub struct NetworkInterface {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv4_addresses: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv6_addresses: Option<Vec<String>>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(rename = "IdentityTokenAttestationDTO")]
pub struct IdentityToken {
    /// The token (a JWT).
    #[serde(skip_serializing_if = "Option::is_none")]
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

impl JsonSchema for CredentialType {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CredentialProviderTypes".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = CredentialType::ALL.iter().map(|t| t.as_str()).collect();
        schemars::json_schema!({"type": "string", "enum": names})
    }
}

impl Serialize for CredentialType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Reads one of the enumeration's strings; any other value is an error.
impl<'de> Deserialize<'de> for CredentialType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        CredentialType::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown credentialType {s:?}")))
    }
}

/// `EdgeCredentials`: exactly the keys of the issued type (§4.10), values possibly null.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EdgeCredentials(pub Vec<(&'static str, Option<String>)>);

impl EdgeCredentials {
    /// Every `data` key of §4.10, so a read response can name its keys with `&'static str`.
    pub const KEYS: [&'static str; 8] = [
        "apiKey",
        "username",
        "password",
        "token",
        "cloudAAccessKeyId",
        "cloudASecretAccessKey",
        "cloudASessionToken",
        "certificateChain",
    ];

    /// The value of `key`, when present and not null.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| *k == key).and_then(|(_, v)| v.as_deref())
    }
}

/// Reads a `data` object: the keys of §4.10 in their received order; a key this version does not
/// know is skipped (a client keeps the raw body when it must pass everything on).
impl<'de> Deserialize<'de> for EdgeCredentials {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = EdgeCredentials;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of string or null values")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<EdgeCredentials, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    let v: Option<String> = m.next_value()?;
                    if let Some(key) = EdgeCredentials::KEYS.iter().find(|n| **n == k) {
                        out.push((*key, v));
                    }
                }
                Ok(EdgeCredentials(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// An object of [`EdgeCredentials::KEYS`], each a string or `null`, and no other key.
impl JsonSchema for EdgeCredentials {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "EdgeCredentials".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let props: serde_json::Map<String, serde_json::Value> = EdgeCredentials::KEYS
            .iter()
            .map(|k| (k.to_string(), serde_json::json!({"type": ["string", "null"]})))
            .collect();
        schemars::json_schema!({
            "description": "Exactly the keys of the issued type (§4.10); `{}` for `Unknown`.",
            "type": "object",
            "properties": props,
            "additionalProperties": false,
        })
    }
}

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
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ApiCredentialsResponse", extend("required" = ["credentialType", "expiresAt", "data"]))]
pub struct ApiCredentialsResponse {
    pub credential_type: CredentialType,
    #[serde(default)]
    pub expires_at: Option<Timestamp>,
    #[serde(default)]
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

    /// A value written by `Serialize` reads back through `parse_body` (the server's reader) and
    /// writes the same JSON again: the types work both ways, for the client and the tests.
    fn round_trip<T: Serialize + for<'de> Deserialize<'de>>(json: &str) -> serde_json::Value {
        let v: T = parse_body(json.as_bytes()).unwrap();
        let once = serde_json::to_value(&v).unwrap();
        let back: T = parse_body(once.to_string().as_bytes()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), once, "{json}");
        once
    }

    #[test]
    fn requests_round_trip_and_omit_absent_fields() {
        let auth = r#"{"clientId":"svc:local:default:identity:oidc_idtoken:00000000-0000-0000-0000-000000000001","client":{"oidc":{"identityToken":"t"}}}"#;
        let v = round_trip::<AuthRequest>(auth);
        assert_eq!(v, serde_json::from_str::<serde_json::Value>(auth).unwrap());
        let every = r#"{"sourceIP":"10.0.0.1",
            "cloudA":{"instanceIdentityDocument":"ZA==","instanceIdentityDocumentSignature":"cw==","lambda":{"arn":"a"},
                      "ecs":{"containerMetadata":"{}","taskMetadata":"{}"},
                      "stsGetCallerIdentity":{"headers":{"Authorization":"x","X-Amz-Security-Token":null},"region":"us-east-1"}},
            "cloudB":{"attestedDocument":{"encoding":"pkcs7","signature":"c2ln","nonce":"1700000000"}},
            "cloudC":{"identityToken":"j","instanceDocument":"ZA=="},
            "os":{"environment":{"ORCH_POD_NAME":"p","CLIENT_WORKLOAD_ID":"c","ORCH_PROVIDER_ID":"o","SVC_RESOURCE_SET_ID":"r"}},
            "orchestrator":{"serviceAccountToken":"s"},
            "host":{"hostname":"h","domainName":"d","systemSerialNumber":"n",
                    "process":{"name":"n","pid":1,"userId":0,"userName":"root","exePath":"/x","commandLine":"x","exeHash":"ab"},
                    "sensors":{"sensorA":{"agentId":"a"}},
                    "networkInterfaces":[{"name":"eth0","macAddress":"m","ipv4Addresses":["10.0.0.1"],"ipv6Addresses":[]}]},
            "ciA":{"identityToken":"a"},"ciB":{"identityToken":"b"},"ciC":{"identityToken":"c"},"oidc":{"identityToken":"o"}}"#;
        let body = format!(
            r#"{{"client":{every},"server":{{"transportProtocol":"TCP","host":"h","port":443}},"credentialType":"X509Svid",
               "connectionMetadata":{{"accessKeyId":"AK","accountName":"a","headerName":"h","headerValue":"v",
               "httpBodyFieldPath":"p","httpBodyFieldValue":"v"}},"certSigningRequest":"csr"}}"#
        );
        let v = round_trip::<ApiCredentialsRequest>(&body);
        assert_eq!(v, serde_json::from_str::<serde_json::Value>(&body).unwrap());
        // Nothing set: nothing written (no nulls for the server to read as present).
        let empty = serde_json::to_value(ApiCredentialsRequest::default()).unwrap();
        assert_eq!(empty, serde_json::json!({}));
    }

    #[test]
    fn responses_round_trip() {
        let tok = r#"{"accessToken":"a.b.c","refreshToken":null,"tokenType":"Bearer","expiresIn":3600}"#;
        let t: TokenDto = serde_json::from_str(tok).unwrap();
        assert_eq!(serde_json::to_string(&t).unwrap(), tok);
        for body in [
            r#"{"credentialType":"ApiKey","expiresAt":null,"data":{"apiKey":"k"}}"#,
            r#"{"credentialType":"CloudAStsFederation","expiresAt":"2026-11-21T10:15:30.000Z","data":{"cloudAAccessKeyId":"AK","cloudASecretAccessKey":"s","cloudASessionToken":null}}"#,
            r#"{"credentialType":"Unknown","expiresAt":null,"data":{}}"#,
            r#"{"credentialType":"X509Svid","expiresAt":"2026-11-21T10:15:30.123Z","data":{"certificateChain":"-----BEGIN CERTIFICATE-----"}}"#,
        ] {
            let r: ApiCredentialsResponse = serde_json::from_str(body).unwrap();
            assert_eq!(serde_json::to_string(&r).unwrap(), body);
        }
        let r: ApiCredentialsResponse =
            serde_json::from_str(r#"{"credentialType":"OAuthToken","data":{"token":"t","future":"x"}}"#).unwrap();
        assert_eq!(r.data.get("token"), Some("t"));
        assert_eq!(r.data.0.len(), 1, "unknown keys are skipped");
        assert!(r.expires_at.is_none());
        assert!(serde_json::from_str::<ApiCredentialsResponse>(r#"{"credentialType":"Nope","data":{}}"#).is_err());
        for t in CredentialType::ALL {
            let j = serde_json::to_string(&t).unwrap();
            assert_eq!(serde_json::from_str::<CredentialType>(&j).unwrap(), t);
        }
    }
}
