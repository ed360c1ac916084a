//! What one run of the decision found, entity by entity: the variable parts of an authorization
//! event (docs/edge-api.md, events), which `decide` fills, `explain` reads and `edge::events`
//! writes. Plain serialisable data, so `policy` needs nothing of `edge`.

use serde::Serialize;
use uuid::Uuid;

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct EntityResult {
    pub id: Uuid,
    pub name: String,
    pub result: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matches: Option<Vec<Uuid>>,
}

#[derive(Serialize, Default, Clone)]
#[serde(rename_all = "camelCase")]
pub struct AttestationResult {
    pub id: Uuid,
    pub name: String,
    pub result: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matches: Option<Vec<Uuid>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_values: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_value: Option<String>,
    /// A refused trust provider's failed check in one line (ext; only on refusals, never the
    /// evidence): `policy::decide::trust_result`. The event APIs show it as stored (absent
    /// otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct CpResult {
    pub id: Uuid,
    pub name: String,
    pub result: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matches: Option<Vec<Uuid>>,
    #[serde(rename = "type")]
    pub cp_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The variable parts of one authorization event.
#[derive(Default)]
pub struct Parts {
    pub client_workload: Option<EntityResult>,
    pub server_workload: Option<EntityResult>,
    pub access_policy: Option<EntityResult>,
    pub client_workloads: Vec<EntityResult>,
    pub server_workloads: Vec<EntityResult>,
    pub access_policies: Vec<EntityResult>,
    pub trust_providers: Vec<AttestationResult>,
    pub access_conditions: Vec<AttestationResult>,
    pub content_security: Vec<AttestationResult>,
    pub credential_provider: Option<CpResult>,
}
