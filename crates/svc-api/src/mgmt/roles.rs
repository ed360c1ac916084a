//! Roles (contract §3.16, §2.6): permissions granted in resource sets.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Base, ResourceSetCounts};
use crate::{Tag, Timestamp};

/// `RoleDTO`: the base block without `resourceSet`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "RoleDTO")]
pub struct RoleDto {
    #[serde(flatten)]
    pub base: Base,
    /// Users holding the role.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub users_count: i32,
    /// `svc-access-token` credential providers whose tokens carry the role.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub credential_providers_count: i32,
    /// `SuperAdmin` and `Auditor`: they cannot be changed or deleted.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub is_system: bool,
    /// The permissions granted; answers list all of them, in the documented order, those not
    /// granted as `No Access`. Each name at most once.
    pub permissions: Option<Vec<PermissionDto>>,
    /// The resource sets the permissions hold in (on input only each `externalId` is read);
    /// absent or empty: the default resource set.
    pub resource_sets: Option<Vec<RoleResourceSetDto>>,
}

/// `PermissionDTO`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "PermissionDTO")]
pub struct PermissionDto {
    /// A permission name (`Access Policies`, `Trust Providers`, …, `Workload Events`).
    pub name: String,
    #[serde(default)]
    pub read: bool,
    /// Implies `read`; refused for a read-only permission (`isWritable` false).
    #[serde(default)]
    pub write: bool,
    /// Always true.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub is_readable: bool,
    /// False for the read-only permissions (`Audit Logs`, the event lists, the compliance report).
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub is_writable: bool,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub access_level: AccessLevel,
}

/// What a permission grants, as a label.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AccessLevel {
    #[default]
    #[serde(rename = "No Access")]
    NoAccess,
    #[serde(rename = "Read-Only")]
    ReadOnly,
    #[serde(rename = "Read/Write")]
    ReadWrite,
}

/// A resource set inside a `RoleDTO`: the `ResourceSetDTO` fields (its `roles`, `rolesDetails`
/// and `users` left empty, not expanded again); on input only `externalId` is read, the other
/// fields are ignored.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "RoleResourceSetDTO", extend("additionalProperties" = true))]
pub struct RoleResourceSetDto {
    /// An existing resource set.
    pub external_id: Uuid,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub name: String,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub description: Option<String>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub is_active: bool,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub tags: Option<Vec<Tag>>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub created_at: Timestamp,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub modified_at: Option<Timestamp>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub created_by: Option<String>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub modified_by: Option<String>,
    #[serde(flatten)]
    pub counts: ResourceSetCounts,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub roles: Vec<Uuid>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub roles_details: Vec<RoleDto>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub users: Vec<String>,
}
