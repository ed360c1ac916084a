//! Client workloads (contract §3.3), with the identity-type catalogue, and server workloads
//! (§3.4) with their service endpoint.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Base, TlsVerification};
use crate::Tag;
use crate::common::KeyValue;

/// `ClientWorkloadExternalDTO`: a workload that asks for credentials, recognised by its
/// identities (§4.8 step 5).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ClientWorkloadExternalDTO")]
pub struct ClientWorkloadDto {
    #[serde(flatten)]
    pub base: Base,
    /// The workload's resource set: the request's.
    pub resource_set: Option<Uuid>,
    /// How a request is recognised: every identity type must match, values of one type are
    /// ORed. A workload without identities never matches. At most 50.
    pub identities: Option<Vec<ClientWorkloadIdentityDto>>,
    /// Stored; no effect in this version.
    #[serde(default)]
    pub enforce_sso: bool,
    /// Existing SSO identity providers; stored, no effect in this version.
    pub sso_identity_providers: Option<Vec<Uuid>>,
    /// A free label.
    #[serde(rename = "type")]
    #[schemars(length(max = 64))]
    pub label: Option<String>,
    /// Access policies naming the workload.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub access_policy_count: i32,
}

/// `ClientWorkloadIdentityDTO`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ClientWorkloadIdentityDTO")]
pub struct ClientWorkloadIdentityDto {
    /// An identity type of the catalogue (`GET /api/v1/client-workloads/identifiers`).
    #[serde(rename = "type")]
    #[schemars(length(min = 1, max = 255))]
    pub kind: String,
    /// Compared with the fact the type names (`sourceIPAddress`: an IP address or a CIDR).
    #[schemars(length(min = 1, max = 1024))]
    pub value: String,
    /// The claim name: required for `oidcIdToken`, refused for the other types.
    #[schemars(length(max = 255))]
    pub key: Option<String>,
}

/// `ClientWorkloadPatchDTO`: the EntityPatchDTO fields and `identities` (which replace all);
/// `resourceSet` may repeat the workload's, not change it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ClientWorkloadPatchDTO")]
pub struct ClientWorkloadPatchDto {
    /// May repeat the path's id, not change it.
    pub external_id: Option<Uuid>,
    #[schemars(length(min = 1, max = 128))]
    pub name: Option<String>,
    #[schemars(length(max = 1024))]
    pub description: Option<String>,
    pub is_active: Option<bool>,
    /// Replaces all tags.
    pub tags: Option<Vec<Tag>>,
    pub resource_set: Option<Uuid>,
    /// Replaces all identities.
    pub identities: Option<Vec<ClientWorkloadIdentityDto>>,
}

/// `ClientIdentifierExternalDTO`: an identity type of the catalogue.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ClientIdentifierExternalDTO")]
pub struct ClientIdentifierDto {
    /// The identity type (`ClientWorkloadIdentityDTO.type`).
    pub name: String,
    pub display_name: String,
    /// Where the compared value comes from (`os.environment.CLIENT_WORKLOAD_ID`, a verified
    /// claim, …).
    pub environment_path: String,
    /// True for every type of this version.
    pub is_supported: bool,
}

/// `ServerWorkloadExternalDTO`: a target workloads ask credentials for.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ServerWorkloadExternalDTO")]
pub struct ServerWorkloadDto {
    #[serde(flatten)]
    pub base: Base,
    /// The workload's resource set: the request's.
    pub resource_set: Option<Uuid>,
    /// Changes only through PUT (its `externalId` and `id` are kept).
    pub service_endpoint: WorkloadServiceEndpointDto,
    /// A free label.
    #[serde(rename = "type")]
    #[schemars(length(max = 64))]
    pub label: Option<String>,
    /// Access policies naming the workload.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub access_policy_count: i32,
}

/// `ServerWorkloadPatchDTO`: the EntityPatchDTO fields (the endpoint changes only through PUT);
/// `resourceSet` may repeat the workload's, not change it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ServerWorkloadPatchDTO")]
pub struct ServerWorkloadPatchDto {
    /// May repeat the path's id, not change it.
    pub external_id: Option<Uuid>,
    #[schemars(length(min = 1, max = 128))]
    pub name: Option<String>,
    #[schemars(length(max = 1024))]
    pub description: Option<String>,
    pub is_active: Option<bool>,
    /// Replaces all tags.
    pub tags: Option<Vec<Tag>>,
    pub resource_set: Option<Uuid>,
}

/// The application protocols of a service endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AppProtocol {
    #[serde(rename = "CloudA Warehouse")]
    CloudAWarehouse,
    #[serde(rename = "HTTP")]
    Http,
    #[serde(rename = "MCP")]
    Mcp,
    MySQL,
    OAuth,
    #[serde(rename = "Oracle Database")]
    OracleDatabase,
    PostgreSQL,
    Redis,
    DataWarehouseA,
}

impl AppProtocol {
    pub const ALL: [AppProtocol; 9] = [
        AppProtocol::CloudAWarehouse,
        AppProtocol::Http,
        AppProtocol::Mcp,
        AppProtocol::MySQL,
        AppProtocol::OAuth,
        AppProtocol::OracleDatabase,
        AppProtocol::PostgreSQL,
        AppProtocol::Redis,
        AppProtocol::DataWarehouseA,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            AppProtocol::CloudAWarehouse => "CloudA Warehouse",
            AppProtocol::Http => "HTTP",
            AppProtocol::Mcp => "MCP",
            AppProtocol::MySQL => "MySQL",
            AppProtocol::OAuth => "OAuth",
            AppProtocol::OracleDatabase => "Oracle Database",
            AppProtocol::PostgreSQL => "PostgreSQL",
            AppProtocol::Redis => "Redis",
            AppProtocol::DataWarehouseA => "DataWarehouseA",
        }
    }

    pub fn parse(s: &str) -> Option<AppProtocol> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// The transport protocols of a service endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum TransportProtocol {
    #[serde(rename = "TCP")]
    Tcp,
}

/// How a proxy injects the credential (`WorkloadServiceAuthenticationDTO.method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AuthMethod {
    #[serde(rename = "API Key")]
    ApiKey,
    #[serde(rename = "HTTP Authentication")]
    HttpAuthentication,
    #[serde(rename = "JWT Token Authentication")]
    JwtTokenAuthentication,
    #[serde(rename = "OAuth Client Authentication")]
    OAuthClientAuthentication,
    #[serde(rename = "Password Authentication")]
    PasswordAuthentication,
    #[serde(rename = "mTLS Authentication")]
    MtlsAuthentication,
}

impl AuthMethod {
    /// The wire name and the schemes the method takes.
    pub fn spec(self) -> (&'static str, &'static [&'static str]) {
        match self {
            AuthMethod::ApiKey => ("API Key", &["Header", "Query Parameter"]),
            AuthMethod::HttpAuthentication => (
                "HTTP Authentication",
                &["Basic", "Bearer", "Header", "CloudA Signature v4"],
            ),
            AuthMethod::JwtTokenAuthentication => ("JWT Token Authentication", &["DataWarehouseA JWT"]),
            AuthMethod::OAuthClientAuthentication => ("OAuth Client Authentication", &["POST Body"]),
            AuthMethod::PasswordAuthentication => ("Password Authentication", &["Password"]),
            AuthMethod::MtlsAuthentication => ("mTLS Authentication", &["x509 Certificate"]),
        }
    }

    pub const ALL: [AuthMethod; 6] = [
        AuthMethod::ApiKey,
        AuthMethod::HttpAuthentication,
        AuthMethod::JwtTokenAuthentication,
        AuthMethod::OAuthClientAuthentication,
        AuthMethod::PasswordAuthentication,
        AuthMethod::MtlsAuthentication,
    ];

    pub fn parse(s: &str) -> Option<AuthMethod> {
        Self::ALL.into_iter().find(|m| m.spec().0 == s)
    }
}

/// `WorkloadServiceEndpointDTO`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "WorkloadServiceEndpointDTO")]
pub struct WorkloadServiceEndpointDto {
    /// The endpoint's id.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub external_id: Option<Uuid>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub id: i32,
    /// A host name, an FQDN, an IPv4 or IPv6 literal, or `*.<suffix>` with a suffix of at least
    /// two labels; compared case-insensitively.
    #[schemars(length(min = 1, max = 253))]
    pub host: String,
    pub app_protocol: AppProtocol,
    pub transport_protocol: TransportProtocol,
    /// The port the client workload asks for, matched against the edge request.
    #[schemars(range(min = 1, max = 65535))]
    pub requested_port: i32,
    /// TLS as the client requests it.
    pub requested_tls: bool,
    /// The port an edge proxy connects to (`MCP`: equal to `requestedPort`).
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// TLS an edge proxy uses (`MCP`: equal to `requestedTls`).
    pub tls: bool,
    pub tls_verification: TlsVerification,
    pub workload_service_authentication: Option<WorkloadServiceAuthenticationDto>,
    /// Only with `appProtocol` `OAuth`.
    #[schemars(length(max = 2048))]
    pub url_path: Option<String>,
    /// Static headers for proxies.
    pub http_headers: Option<Vec<KeyValue>>,
}

/// `WorkloadServiceAuthenticationDTO`: metadata for edge components (the service does not use
/// it).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "WorkloadServiceAuthenticationDTO")]
pub struct WorkloadServiceAuthenticationDto {
    pub method: AuthMethod,
    /// One of the method's schemes: `API Key`: `Header`, `Query Parameter`; `HTTP
    /// Authentication`: `Basic`, `Bearer`, `Header`, `CloudA Signature v4`; `JWT Token
    /// Authentication`: `DataWarehouseA JWT`; `OAuth Client Authentication`: `POST Body`;
    /// `Password Authentication`: `Password`; `mTLS Authentication`: `x509 Certificate`.
    pub scheme: String,
    /// The header or query-parameter name: required for the schemes `Header` and `Query
    /// Parameter`.
    #[schemars(length(max = 256))]
    pub config: Option<String>,
}
