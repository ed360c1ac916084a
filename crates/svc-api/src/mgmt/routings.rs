//! Routings (contract §3.17): an HTTP(S) proxy for the upstream calls of one resource set.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::Base;

/// `RoutingDTO`: the base block without `resourceSet`; the routing's set is `resourceSetId`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "RoutingDTO")]
pub struct RoutingDto {
    #[serde(flatten)]
    pub base: Base,
    /// The resource set whose upstream calls (credential providers, integrations, trust-provider
    /// discovery) go through the proxy; an existing one. At most one active routing per set.
    pub resource_set_id: Uuid,
    /// The proxy, `http(s)://host:port` (CONNECT for https).
    #[schemars(length(min = 1, max = 255))]
    pub proxy_url: String,
}
