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

/// One credential provider of a policy with its selector.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Mapping {
    pub credential_provider: Uuid,
    pub mapping_type: MappingType,
    pub access_key_id: Option<String>,
    pub account_name: Option<String>,
    pub header_name: Option<String>,
    pub header_value: Option<String>,
    pub body_field_path: Option<String>,
    pub body_field_value: Option<String>,
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
