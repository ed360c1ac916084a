//! Access policy records (contract §3.8, §3.9): the v2 shape; v1 is a view of it.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Meta, Timestamp};

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum MappingType {
    None,
    AccountName,
    HttpHeader,
    HttpBody,
    AccessKeyId,
}

impl MappingType {
    pub const ALL: [MappingType; 5] = [
        MappingType::None,
        MappingType::AccountName,
        MappingType::HttpHeader,
        MappingType::HttpBody,
        MappingType::AccessKeyId,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MappingType::None => "None",
            MappingType::AccountName => "AccountName",
            MappingType::HttpHeader => "HttpHeader",
            MappingType::HttpBody => "HttpBody",
            MappingType::AccessKeyId => "AccessKeyId",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// The selector values of a mapping (§3.8), all optional and nearly always all absent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selectors {
    pub access_key_id: Option<String>,
    pub account_name: Option<String>,
    pub header_name: Option<String>,
    pub header_value: Option<String>,
    pub body_field_path: Option<String>,
    pub body_field_value: Option<String>,
}

static NO_SELECTORS: Selectors = Selectors {
    access_key_id: None,
    account_name: None,
    header_name: None,
    header_value: None,
    body_field_path: None,
    body_field_value: None,
};

impl Selectors {
    fn is_empty(&self) -> bool {
        *self == NO_SELECTORS
    }
}

/// One credential provider of a policy with its selector. The selectors are boxed, and only
/// when one is set: six empty `Option<String>` inline were 144 bytes in every policy (~14 MB at
/// 100,000 policies, docs/PERFORMANCE.md). Stored (serde) in the flat form of [`MappingWire`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "MappingWire", into = "MappingWire")]
pub struct Mapping {
    pub credential_provider: Uuid,
    pub mapping_type: MappingType,
    selectors: Option<Box<Selectors>>,
}

impl Mapping {
    pub fn new(credential_provider: Uuid, mapping_type: MappingType, selectors: Selectors) -> Mapping {
        Mapping {
            credential_provider,
            mapping_type,
            selectors: (!selectors.is_empty()).then(|| Box::new(selectors)),
        }
    }

    pub fn selectors(&self) -> &Selectors {
        self.selectors.as_deref().unwrap_or(&NO_SELECTORS)
    }
}

/// The stored form of a [`Mapping`]: its fields side by side.
#[derive(Serialize, Deserialize)]
struct MappingWire {
    credential_provider: Uuid,
    mapping_type: MappingType,
    access_key_id: Option<String>,
    account_name: Option<String>,
    header_name: Option<String>,
    header_value: Option<String>,
    body_field_path: Option<String>,
    body_field_value: Option<String>,
}

impl From<MappingWire> for Mapping {
    fn from(w: MappingWire) -> Mapping {
        Mapping::new(
            w.credential_provider,
            w.mapping_type,
            Selectors {
                access_key_id: w.access_key_id,
                account_name: w.account_name,
                header_name: w.header_name,
                header_value: w.header_value,
                body_field_path: w.body_field_path,
                body_field_value: w.body_field_value,
            },
        )
    }
}

impl From<Mapping> for MappingWire {
    fn from(m: Mapping) -> MappingWire {
        let s = m.selectors.map(|b| *b).unwrap_or_default();
        MappingWire {
            credential_provider: m.credential_provider,
            mapping_type: m.mapping_type,
            access_key_id: s.access_key_id,
            account_name: s.account_name,
            header_name: s.header_name,
            header_value: s.header_value,
            body_field_path: s.body_field_path,
            body_field_value: s.body_field_value,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Note {
    pub note: String,
    pub created_at: Timestamp,
    pub created_by: Option<super::Label>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Policy {
    pub meta: Meta,
    pub client_workload: Uuid,
    pub server_workload: Uuid,
    pub mappings: Vec<Mapping>,
    pub trust_providers: Vec<Uuid>,
    pub access_conditions: Vec<Uuid>,
    pub content_security: Vec<Uuid>,
    pub notes: Vec<Note>,
}

impl Policy {
    /// See `Record::compact`.
    pub fn shrink_lists(&mut self) {
        self.meta.tags.shrink_to_fit();
        self.mappings.shrink_to_fit();
        self.trust_providers.shrink_to_fit();
        self.access_conditions.shrink_to_fit();
        self.content_security.shrink_to_fit();
        self.notes.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_keeps_its_flat_stored_form_and_boxes_only_set_selectors() {
        let mut stored = serde_json::json!({
            "credential_provider": Uuid::from_u128(7),
            "mapping_type": "None",
            "access_key_id": null,
            "account_name": null,
            "header_name": null,
            "header_value": null,
            "body_field_path": null,
            "body_field_value": null,
        });
        let m: Mapping = serde_json::from_value(stored.clone()).unwrap();
        assert!(m.selectors.is_none(), "no selector, no box");
        assert_eq!(m.selectors(), &Selectors::default());
        assert_eq!(serde_json::to_value(&m).unwrap(), stored);

        stored["mapping_type"] = "AccessKeyId".into();
        stored["access_key_id"] = "AKIA1".into();
        let m: Mapping = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(m.selectors().access_key_id.as_deref(), Some("AKIA1"));
        assert_eq!(serde_json::to_value(&m).unwrap(), stored);
    }
}
