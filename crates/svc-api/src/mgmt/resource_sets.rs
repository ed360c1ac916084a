//! Resource sets (contract §3.15, §1.4): the partitions every scoped entity lives in.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Base, RoleDto};

/// `ResourceSetDTO`: the base block without `resourceSet`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ResourceSetDTO")]
pub struct ResourceSetDto {
    #[serde(flatten)]
    pub base: Base,
    #[serde(flatten)]
    pub counts: ResourceSetCounts,
    /// The roles whose resource sets include this one.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub roles: Vec<Uuid>,
    /// Those roles.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub roles_details: Vec<RoleDto>,
    /// E-mails of the users holding one of those roles.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub users: Vec<String>,
}

/// What a resource set holds, counted (read-only).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSetCounts {
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub server_workload_count: i32,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub client_workload_count: i32,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub access_policy_count: i32,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub trust_provider_count: i32,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub access_condition_count: i32,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub credential_provider_count: i32,
}
