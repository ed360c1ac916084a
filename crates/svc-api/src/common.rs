//! Shapes shared by many resources: the error body, tags, entity summaries, list wrappers.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// `GenericResponseDTO`: the body of every error response (and of a few success actions).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[schemars(rename = "GenericResponseDTO", extend("required" = ["success", "message", "id"]))]
pub struct GenericResponse {
    pub success: bool,
    pub message: Option<String>,
    pub id: i32,
}

impl GenericResponse {
    pub fn error(message: impl Into<String>) -> Self {
        GenericResponse {
            success: false,
            message: Some(message.into()),
            id: 0,
        }
    }
    pub fn ok(message: impl Into<String>) -> Self {
        GenericResponse {
            success: true,
            message: Some(message.into()),
            id: 0,
        }
    }
}

/// `TagDTO`
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, Hash, schemars::JsonSchema)]
#[schemars(rename = "TagDTO")]
pub struct Tag {
    #[schemars(length(min = 1, max = 128))]
    pub key: String,
    #[schemars(length(min = 1, max = 256))]
    pub value: String,
}

/// `EntityMetaDTO`: the reference summary used inside other DTOs.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[schemars(rename = "EntityMetaDTO")]
#[serde(rename_all = "camelCase")]
pub struct EntityMeta {
    pub external_id: Uuid,
    pub name: Option<String>,
    pub is_active: bool,
    pub tags: Vec<Tag>,
}

/// `StringStringKeyValuePair`
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[schemars(rename = "StringStringKeyValuePair")]
pub struct KeyValue {
    pub key: Option<String>,
    pub value: Option<String>,
}

/// Builds a list wrapper (§1.6): `{page, perPage, order, statusCode, recordsTotal, <items>}`.
pub fn list_wrapper(
    items_key: &str,
    items: Vec<serde_json::Value>,
    page: i32,
    per_page: i32,
    order: Option<String>,
    total: usize,
) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    m.insert("page".into(), page.into());
    m.insert("perPage".into(), per_page.into());
    m.insert("order".into(), order.map(Into::into).unwrap_or(serde_json::Value::Null));
    m.insert("statusCode".into(), 200.into());
    m.insert("recordsTotal".into(), (total.min(i32::MAX as usize) as i32).into());
    m.insert(items_key.into(), serde_json::Value::Array(items));
    serde_json::Value::Object(m)
}
