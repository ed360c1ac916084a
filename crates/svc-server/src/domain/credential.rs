//! Credential provider and credential-provider integration records (contract §3.5–§3.7). The
//! variant fields of each type are kept as a JSON object (validated on write by the type's
//! module); secret fields live in the sealed bundle.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Meta, Secret, Timestamp};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CredentialProvider {
    pub meta: Meta,
    #[serde(rename = "type")]
    pub cp_type: String,
    pub lifetime_time_span_seconds: i32,
    pub lifetime_expiration: Option<Timestamp>,
    /// Non-secret variant fields, JSON names as on the wire.
    pub config: serde_json::Map<String, serde_json::Value>,
    #[serde(skip)]
    pub secrets: SecretFields,
}

/// Secret fields by wire name (`apiKey`, `password`, `clientSecret`, …, stored OAuth tokens).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SecretFields(#[serde(with = "secret_map")] pub BTreeMap<String, Secret<String>>);

impl SecretFields {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(|s| s.expose().as_str())
    }
    pub fn set(&mut self, name: &str, value: String) {
        self.0.insert(name.to_string(), Secret::new(value));
    }
    pub fn remove(&mut self, name: &str) {
        self.0.remove(name);
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Each secret's name and stamp ([`super::SecretHome::held`]).
    pub fn stamps(&self) -> Vec<(String, u64)> {
        self.0.iter().map(|(k, v)| (k.clone(), v.stamp())).collect()
    }
}

mod secret_map {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Secret;

    pub fn serialize<S: Serializer>(m: &BTreeMap<String, Secret<String>>, s: S) -> Result<S::Ok, S::Error> {
        let plain: BTreeMap<&String, &String> = m.iter().map(|(k, v)| (k, v.expose())).collect();
        plain.serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, Secret<String>>, D::Error> {
        let plain = BTreeMap::<String, String>::deserialize(d)?;
        Ok(plain.into_iter().map(|(k, v)| (k, Secret::stored(v))).collect())
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CredentialIntegration {
    pub meta: Meta,
    #[serde(rename = "type")]
    pub int_type: String,
    pub config: serde_json::Map<String, serde_json::Value>,
    pub token_expiration: Option<Timestamp>,
    pub last_operation: Option<Timestamp>,
    pub status: Option<String>,
    pub error_message: Option<String>,
    #[serde(skip)]
    pub secrets: SecretFields,
}

impl CredentialIntegration {
    /// A ciB administrator token goes to the integration's `url` (`PRIVATE-TOKEN`).
    pub fn secret_home(&self) -> super::SecretHome {
        let url = self.config.get("url").and_then(|v| v.as_str()).unwrap_or_default();
        super::SecretHome {
            fields: vec![("url", url.to_string())],
            given: &["personalAccessToken"],
            held: self.secrets.stamps(),
        }
    }
}
