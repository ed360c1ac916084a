//! The base block every configuration entity carries (contract §1.3) and the PATCH body of
//! entities that change only it (`EntityPatchDTO`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{Tag, Timestamp};

/// The base fields, flattened into each entity's DTO (`#[serde(flatten)] pub base: Base`).
/// `resourceSet` is the DTO's own field where the entity has one (§1.3 lists where).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Base {
    /// The public id, the `{id}` of every path; generated on POST when absent, required on PUT.
    pub external_id: Option<Uuid>,
    #[schemars(length(min = 1, max = 128))]
    pub name: String,
    #[schemars(length(max = 1024))]
    pub description: Option<String>,
    /// Inactive entities are stored but ignored by credential issuance.
    pub is_active: bool,
    /// At most 50, keys unique.
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
}

/// `EntityPatchDTO`: a PATCH changes only the fields it names (`null` and absent alike leave a
/// field as it is); `tags` replaces all tags.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EntityPatchDTO")]
pub struct EntityPatch {
    /// May repeat the path's id (a GET body sent back), not change it.
    pub external_id: Option<Uuid>,
    #[schemars(length(min = 1, max = 128))]
    pub name: Option<String>,
    #[schemars(length(max = 1024))]
    pub description: Option<String>,
    pub is_active: Option<bool>,
    pub tags: Option<Vec<Tag>>,
}
