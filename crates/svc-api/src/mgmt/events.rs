//! The audit log (contract §3.23) and the events of the Edge API (§3.24, §3.25), read-only: what
//! the service recorded, in the shape the lists and log streams show (every documented member
//! present, `null` when it has no value).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::Timestamp;

/// `AuditLogDTO`: one management write, sign-in or lock-out.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AuditLogDTO")]
pub struct AuditLogDto {
    pub external_id: Uuid,
    /// The entity's resource set; the default one for global entities and sign-ins.
    pub resource_set_id: Uuid,
    /// The entity family (`TrustProviders`, …) or `Authentication`.
    pub category: Option<String>,
    pub actor: AuditActorDto,
    /// `Created`, `Updated`, `Patched`, `Deleted`, `LoginSucceeded`, …
    pub activity: Option<String>,
    /// The entity's `externalId` (a failed sign-in's e-mail for an unknown user).
    pub target: Option<String>,
    pub client: AuditClientDto,
    pub outcome: AuditOutcomeDto,
    /// `null` in this version.
    pub trust_provider: Option<EventResultDto>,
    /// `Info`, or `Warning` for deletions, failed sign-ins and lock-outs.
    pub severity: Option<String>,
    pub created_at: Timestamp,
}

/// `AuditActorDTO`: who wrote.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AuditActorDTO")]
pub struct AuditActorDto {
    /// `User`, `Role` (a workload's token) or `System` (CLI tokens, the service's jobs).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub display_name: Option<String>,
    pub user_name: Option<String>,
    pub email: Option<String>,
    /// `Role` actors: the `svc-access-token` credential provider that issued the token.
    pub credential_provider_id: Option<String>,
    /// `Role` actors: the access policy that allowed it.
    pub access_policy_id: Option<String>,
}

/// `AuditClientDTO`: where the request came from.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AuditClientDTO")]
pub struct AuditClientDto {
    /// The effective source address.
    pub ip_address: Option<String>,
    pub user_agent: AuditUserAgentDto,
}

/// The request's `User-Agent`, and what it names (best effort).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AuditUserAgentDTO")]
pub struct AuditUserAgentDto {
    pub browser: Option<String>,
    pub operating_system: Option<String>,
    pub raw: Option<String>,
}

/// `AuditOutcomeDTO`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AuditOutcomeDTO")]
pub struct AuditOutcomeDto {
    pub reason: Option<String>,
    /// `Success` or `Failure`.
    pub result: Option<String>,
}

/// `EventResultDTO`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EventResultDTO")]
pub struct EventResultDto {
    pub reason: Option<String>,
    pub attribute: Option<String>,
    pub expected_value: Option<String>,
    pub actual_value: Option<String>,
}

/// `AuthorizationEventDTO`: one step of an Edge API request (`access.authentication`,
/// `access.request`, `access.authorization`, `access.credential`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AuthorizationEventDTO")]
pub struct AuthorizationEventDto {
    /// Always empty in this version.
    pub authorization_chain: Vec<String>,
    pub meta: AuthorizationEventMetaDto,
    pub outcome: AuthorizationEventOutcomeDto,
    pub client_request: ClientRequestDto,
    pub environment: EnvironmentDto,
    pub client_workload: Option<EntityResultDto>,
    pub server_workload: Option<EntityResultDto>,
    pub access_policy: Option<EntityResultDto>,
    /// Every candidate, when several matched.
    pub client_workloads: Vec<EntityResultDto>,
    pub server_workloads: Vec<EntityResultDto>,
    pub access_policies: Vec<EntityResultDto>,
    pub trust_providers: Vec<AttestationResultDto>,
    pub access_conditions: Vec<AttestationResultDto>,
    pub content_security: Vec<AttestationResultDto>,
    pub credential_provider: Option<CredentialProviderResultDto>,
    /// `null`.
    pub user: Option<String>,
}

/// An authorization event's `meta`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AuthorizationEventMetaDTO")]
pub struct AuthorizationEventMetaDto {
    #[serde(rename = "clientIP")]
    pub client_ip: Option<String>,
    pub timestamp: Timestamp,
    pub event_type: String,
    /// The `{id}` of `GET /api/v1/authorization-events/{id}`.
    pub event_id: Uuid,
    pub resource_set_id: Uuid,
    /// Shared by the events of one request.
    pub context_id: Uuid,
    /// Equals `contextId` in this version.
    pub directive_id: Uuid,
    /// `Info`, `Warning` or `Error`.
    pub severity: String,
}

/// An authorization event's `outcome`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AuthorizationEventOutcomeDTO")]
pub struct AuthorizationEventOutcomeDto {
    /// `Authorized`, `Unauthorized`, `Error`, or `Received` (`access.request`).
    pub result: String,
    pub reason: Option<String>,
    /// (ext) An `access.request` refused before the decision (`InvalidToken`, `InvalidRequest`):
    /// the check that refused it, in a few words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The Edge API request an authorization event belongs to.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ClientRequestDTO")]
pub struct ClientRequestDto {
    /// `edge/v1`.
    pub version: String,
    pub network: ClientRequestNetworkDto,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ClientRequestNetworkDTO")]
pub struct ClientRequestNetworkDto {
    #[serde(rename = "sourceIP")]
    pub source_ip: Option<String>,
    pub source_port: i32,
    /// `TCP`.
    pub transport_protocol: String,
    /// `0`.
    pub proxy_port: i32,
    pub target_host: Option<String>,
    pub target_port: i32,
}

/// Verified and reported facts of the request (never evidence, tokens or credentials).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EnvironmentDTO")]
pub struct EnvironmentDto {
    pub network: EnvNetworkDto,
    pub host: EnvHostDto,
    pub process: EnvProcessDto,
    pub svc: EnvSvcDto,
    #[serde(rename = "cloudA")]
    pub cloud_a: EnvCloudADto,
    #[serde(rename = "cloudC")]
    pub cloud_c: EnvCloudCDto,
    #[serde(rename = "cloudB")]
    pub cloud_b: EnvCloudBDto,
    pub orchestrator: EnvOrchestratorDto,
    #[serde(rename = "ciB")]
    pub ci_b: EnvCiBDto,
    #[serde(rename = "ciA")]
    pub ci_a: EnvCiADto,
    pub oidc: EnvOidcDto,
    #[serde(rename = "ciC")]
    pub ci_c: EnvCiCDto,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "EnvironmentNetworkDTO")]
pub struct EnvNetworkDto {
    #[serde(rename = "sourceIP")]
    pub source_ip: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "EnvironmentHostDTO")]
pub struct EnvHostDto {
    pub hostname: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EnvironmentProcessDTO")]
pub struct EnvProcessDto {
    pub name: Option<String>,
    pub user_name: Option<String>,
    pub exe_path: Option<String>,
    pub command_line: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EnvironmentSvcDTO")]
pub struct EnvSvcDto {
    pub client_id: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EnvironmentCloudADTO")]
pub struct EnvCloudADto {
    pub account_id: Option<String>,
    pub instance_id: Option<String>,
    pub region: Option<String>,
    pub ecs: EnvEcsDto,
    pub lambda: EnvLambdaDto,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EnvironmentEcsDTO")]
pub struct EnvEcsDto {
    pub task_family: Option<String>,
    pub service_name: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "EnvironmentLambdaDTO")]
pub struct EnvLambdaDto {
    pub arn: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EnvironmentCloudCDTO")]
pub struct EnvCloudCDto {
    pub service_account: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EnvironmentCloudBDTO")]
pub struct EnvCloudBDto {
    pub vm_id: Option<String>,
    pub subscription_id: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EnvironmentOrchestratorDTO")]
pub struct EnvOrchestratorDto {
    pub namespace: Option<String>,
    pub pod_name: Option<String>,
    pub service_account_name: Option<String>,
    #[serde(rename = "serviceAccountUID")]
    pub service_account_uid: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EnvironmentCiBDTO")]
pub struct EnvCiBDto {
    pub namespace_path: Option<String>,
    pub project_path: Option<String>,
    pub ref_path: Option<String>,
    pub subject: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "EnvironmentCiADTO")]
pub struct EnvCiADto {
    pub repository: Option<String>,
    pub subject: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "EnvironmentOidcDTO")]
pub struct EnvOidcDto {
    pub sub: Option<String>,
    pub aud: Option<String>,
    pub iss: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EnvironmentCiCDTO")]
pub struct EnvCiCDto {
    pub workspace_id: Option<String>,
    pub organization_id: Option<String>,
    pub project_id: Option<String>,
}

/// `EntityResult`: a workload or policy an event names.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EntityResultDTO")]
pub struct EntityResultDto {
    pub id: Option<Uuid>,
    pub name: Option<String>,
    /// `Identified`.
    pub result: Option<String>,
    /// The ids of every candidate, only when several matched.
    pub matches: Option<Vec<Uuid>>,
}

/// `AttestationResult`: a trust provider, access condition or content-security entry checked.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AttestationResultDTO")]
pub struct AttestationResultDto {
    pub id: Option<Uuid>,
    pub name: Option<String>,
    pub result: Option<String>,
    pub matches: Option<Vec<Uuid>>,
    pub reason: Option<String>,
    /// The compared fact's name.
    pub attribute: Option<String>,
    pub expected_value: Option<String>,
    pub expected_values: Option<Vec<String>>,
    /// Only the compared fact, never evidence.
    pub actual_value: Option<String>,
    /// (ext) A refused trust provider's failed check in one line, never the evidence; absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// `CPResult`: the credential provider an event names.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CredentialProviderResultDTO")]
pub struct CredentialProviderResultDto {
    pub id: Option<Uuid>,
    pub name: Option<String>,
    pub result: Option<String>,
    pub matches: Option<Vec<Uuid>>,
    /// The provider's type.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub reason: Option<String>,
}

/// `EventDTO`: a workload event, one per `/edge/v1/credentials` request that identified a
/// server workload.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EventDTO")]
pub struct EventDto {
    pub meta: EventMetaDto,
    pub network: EventNetworkDto,
    pub outcome: EventOutcomeDto,
}

/// A workload event's `meta`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EventMetaDTO")]
pub struct EventMetaDto {
    pub timestamp: Timestamp,
    /// `workload.credential`.
    pub event_type: String,
    /// The `{id}` of `GET /api/v1/workload-events/{id}`.
    pub event_id: Uuid,
    pub resource_set_id: Uuid,
    pub policy_id: Option<String>,
    /// `CredentialIssued`, `CredentialDenied` or `CredentialError`.
    pub action: String,
    /// The request's `contextId`.
    pub connection_id: Option<Uuid>,
    pub severity: String,
    pub client_workload_id: Option<Uuid>,
    pub server_workload_id: Option<Uuid>,
    pub application_protocol: Option<String>,
    /// `null`.
    pub user_id: Option<String>,
}

/// A workload event's `network`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EventNetworkDTO")]
pub struct EventNetworkDto {
    #[serde(rename = "clientWorkloadIP")]
    pub client_workload_ip: Option<String>,
    pub client_workload_port: i32,
    /// `null`.
    #[serde(rename = "serverWorkloadIP")]
    pub server_workload_ip: Option<String>,
    pub server_workload_port: Option<i32>,
    /// `null`.
    pub proxy_port: Option<i32>,
}

/// A workload event's `outcome`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "EventOutcomeDTO")]
pub struct EventOutcomeDto {
    /// `Success` or `Failure`.
    pub result: String,
}
