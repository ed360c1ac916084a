//! Access policies (contract §3.8, v2; §3.9, the deprecated v1 view of the same policies), their
//! notes and credential mappings.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{
    AccessConditionDto, Base, ClientWorkloadDto, ContentSecurityDto, CredentialProviderUiDto, EntityPatch,
    ServerWorkloadDto, TrustProviderDto, WorkloadServiceEndpointDto,
};
use crate::Timestamp;
use crate::common::EntityMeta;

/// How a policy's credential provider is chosen among several (§3.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "PolicyMappingType")]
pub enum MappingType {
    None,
    AccountName,
    HttpHeader,
    HttpBody,
    AccessKeyId,
}

/// `PolicyCredentialMappingDTO`: a provider of the policy and the selectors that choose it. The
/// selectors its `mappingType` does not use must be null or empty (answers show them as `""`);
/// the ones it uses are required.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "PolicyCredentialMappingDTO")]
pub struct PolicyCredentialMappingDto {
    /// An existing provider of the policy's resource set, once per policy.
    pub credential_provider_id: Uuid,
    pub mapping_type: MappingType,
    /// `^[A-Z0-9]*$`; `AccessKeyId`.
    #[schemars(length(max = 256))]
    pub access_key_id: Option<String>,
    /// `^[\p{L}a-zA-Z0-9][\p{L}a-zA-Z0-9._-]*$` (as the other selectors); `AccountName`.
    #[schemars(length(max = 256))]
    pub account_name: Option<String>,
    /// `HttpHeader`.
    #[schemars(length(max = 256))]
    pub header_name: Option<String>,
    /// `HttpHeader`.
    #[schemars(length(max = 256))]
    pub header_value: Option<String>,
    /// `HttpBody` (lower-case `b`, unlike the Edge request's `httpBodyFieldPath`).
    #[schemars(length(max = 256))]
    pub httpbody_field_path: Option<String>,
    /// `HttpBody`.
    #[schemars(length(max = 256))]
    pub httpbody_field_value: Option<String>,
}

/// `CreatePolicyDTO`: the v2 POST and PUT body and every v2 write's answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CreatePolicyDTO")]
pub struct CreatePolicyDto {
    #[serde(flatten)]
    pub base: Base,
    /// The policy's resource set; the default set when absent (§1.4 rule 5).
    pub resource_set: Option<Uuid>,
    /// Required on POST and PUT (checked after the body's other fields).
    pub client_workload: Option<Uuid>,
    /// Required on POST and PUT (checked after the body's other fields).
    pub server_workload: Option<Uuid>,
    /// The providers and the selectors that choose among them; several only of one type (§3.8).
    pub credential_providers: Option<Vec<PolicyCredentialMappingDto>>,
    /// At least one must attest the workload at issuance; none: no extra attestation.
    pub trust_providers: Option<Vec<Uuid>>,
    /// All must pass.
    pub access_conditions: Option<Vec<Uuid>>,
    pub content_security: Option<Vec<Uuid>>,
    /// Not part of a policy: accepted and ignored (a body copied from another resource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("readOnly" = true))]
    pub access_policy_count: Option<i32>,
}

/// `PatchPolicyV2DTO`: changes only the fields it names; a list replaces the stored one.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "PatchPolicyV2DTO")]
pub struct PatchPolicyV2Dto {
    #[serde(flatten)]
    pub patch: EntityPatch,
    /// May repeat the policy's own set, not change it.
    pub resource_set: Option<Uuid>,
    pub client_workload: Option<Uuid>,
    pub server_workload: Option<Uuid>,
    pub credential_providers: Option<Vec<PolicyCredentialMappingDto>>,
    pub trust_providers: Option<Vec<Uuid>>,
    pub access_conditions: Option<Vec<Uuid>>,
    pub content_security: Option<Vec<Uuid>>,
    #[serde(flatten)]
    pub read_only: PolicyReadOnly,
}

/// The read-only fields a GET body sent back in a PATCH carries: accepted and ignored.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyReadOnly {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("readOnly" = true))]
    pub created_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("readOnly" = true))]
    pub modified_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("readOnly" = true))]
    pub created_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("readOnly" = true))]
    pub modified_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("readOnly" = true))]
    pub access_policy_count: Option<i32>,
}

/// `GetPolicyDTO` (v2 reads): the referenced entities as `EntityMetaDTO` (an entity deleted
/// since: its id, no name, inactive).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "GetPolicyDTO")]
pub struct GetPolicyDto {
    #[serde(flatten)]
    pub base: Base,
    pub resource_set: Option<Uuid>,
    pub client_workload: EntityMeta,
    pub server_workload: EntityMeta,
    pub trust_providers: Vec<EntityMeta>,
    /// The mapped providers, in the mappings' order.
    pub credential_providers: Vec<EntityMeta>,
    pub access_conditions: Vec<EntityMeta>,
    pub content_security: Vec<EntityMeta>,
}

/// `PolicyNoteDTO`: a note on a policy, kept with who wrote it and when.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "PolicyNoteDTO")]
pub struct PolicyNoteDto {
    #[schemars(length(min = 1, max = 1024))]
    pub note: String,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub created_at: Timestamp,
    /// The author (an e-mail, or the token's label).
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub created_by: Option<String>,
}

// ---- v1 ------------------------------------------------------------------------------------------

/// `PolicyDTO` (v1 POST and PUT bodies, every v1 write's answer): at most one credential
/// provider (`credentialProvider` ⇔ a v2 mapping of type `None`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "PolicyDTO")]
pub struct PolicyDto {
    #[serde(flatten)]
    pub base: Base,
    /// The request's resource set.
    pub resource_set: Option<Uuid>,
    /// Required on POST and PUT (checked after the body's other fields).
    pub client_workload: Option<Uuid>,
    /// Required on POST and PUT (checked after the body's other fields).
    pub server_workload: Option<Uuid>,
    /// `null` when the policy has none, or several (then only `/api/v2` may change them).
    pub credential_provider: Option<Uuid>,
    pub trust_providers: Option<Vec<Uuid>>,
    pub access_conditions: Option<Vec<Uuid>>,
    pub content_security: Option<Vec<Uuid>>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub client_workload_details: Option<WorkloadExternalDto>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub server_workload_details: Option<WorkloadExternalDto>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub policy_notes: Option<Vec<PolicyNoteDto>>,
    /// Not part of a policy: accepted and ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("readOnly" = true))]
    pub access_policy_count: Option<i32>,
}

/// `PolicyPatchDTO` (v1 PATCH): `EntityPatchDTO` and the policy's references; `credentialProvider`
/// given replaces the provider (refused when the policy has several).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "PolicyPatchDTO")]
pub struct PolicyPatchDto {
    #[serde(flatten)]
    pub patch: EntityPatch,
    /// May repeat the policy's own set, not change it.
    pub resource_set: Option<Uuid>,
    pub client_workload: Option<Uuid>,
    pub server_workload: Option<Uuid>,
    pub credential_provider: Option<Uuid>,
    pub trust_providers: Option<Vec<Uuid>>,
    pub access_conditions: Option<Vec<Uuid>>,
    pub content_security: Option<Vec<Uuid>>,
    #[serde(flatten)]
    pub read_only: PolicyReadOnly,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("readOnly" = true))]
    pub client_workload_details: Option<WorkloadExternalDto>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("readOnly" = true))]
    pub server_workload_details: Option<WorkloadExternalDto>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("readOnly" = true))]
    pub policy_notes: Option<Vec<PolicyNoteDto>>,
}

/// `WorkloadExternalDTO`: a summary of one of a v1 policy's workloads, with the policy's trust
/// providers and (single) credential provider.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "WorkloadExternalDTO")]
pub struct WorkloadExternalDto {
    pub external_id: Uuid,
    /// `null` when the workload was deleted since.
    pub name: Option<String>,
    pub is_active: bool,
    /// The workload's free label.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// A server workload's endpoint (absent for a client workload, and for a server workload
    /// deleted since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_endpoint: Option<WorkloadServiceEndpointDto>,
    pub trust_providers: Vec<EntityRefDto>,
    pub credential_provider_id: Option<Uuid>,
    /// The credential provider's name.
    pub credential_provider_text: Option<String>,
}

/// An entity named by its id and name: what an answer shows of an embedded entity its reader may
/// not read by itself (our choice, issue 31), and a `WorkloadExternalDTO`'s trust providers.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EntityReferenceDTO")]
pub struct EntityRefDto {
    pub external_id: Uuid,
    pub name: Option<String>,
}

/// An embedded entity: in full when the reader may read its kind in its resource set, else its
/// `EntityReferenceDTO`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(inline)]
pub enum Readable<T> {
    Full(T),
    Reference(EntityRefDto),
}

/// `PolicyExternalDTO` (v1 reads): the referenced entities expanded (those the reader may not
/// read by themselves as their reference).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "PolicyExternalDTO")]
pub struct PolicyExternalDto {
    #[serde(flatten)]
    pub base: Base,
    pub resource_set: Option<Uuid>,
    /// `null` when deleted since.
    pub client_workload: Option<Readable<ClientWorkloadDto>>,
    /// `null` when deleted since.
    pub server_workload: Option<Readable<ServerWorkloadDto>>,
    pub trust_providers: Vec<Readable<TrustProviderDto>>,
    pub access_conditions: Vec<Readable<AccessConditionDto>>,
    pub content_security: Vec<Readable<ContentSecurityDto>>,
    /// `null` when the policy has none, or several.
    pub credential_provider: Option<Readable<CredentialProviderUiDto>>,
    pub policy_notes: Vec<PolicyNoteDto>,
}
