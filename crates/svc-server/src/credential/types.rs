//! The registry of credential-provider types: what each accepts, keeps secret and issues.

use serde_json::{Map, Value};
use svc_api::edge::CredentialType;
use svc_api::{FieldError, Obj};

use super::Backend;
use crate::domain::credential::CredentialProvider;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// POST / PUT: required fields must be present.
    Full,
    /// PATCH (`providerDetailJSON` keys replace fields): everything optional.
    Patch,
}

/// Reads a type's non-secret variant fields.
pub type ParseFn = fn(&mut Obj, Mode) -> Result<Map<String, Value>, FieldError>;

pub struct TypeSpec {
    pub name: &'static str,
    /// The `credentialType` issued, given the stored variant fields.
    pub credential_type: fn(&Map<String, Value>) -> CredentialType,
    /// Write-only fields (returned as `null`).
    pub secret_fields: &'static [&'static str],
    /// Secrets required on create.
    pub required_secrets: &'static [&'static str],
    /// Server-filled fields accepted and ignored on input.
    pub ro_fields: &'static [&'static str],
    /// Reads the non-secret variant fields (secrets are read by the caller).
    pub parse: ParseFn,
    pub compile: fn(&CredentialProvider) -> Backend,
}

pub const TYPES: &[TypeSpec] = &[super::apikey::SPEC, super::username_password::SPEC];

pub fn spec(name: &str) -> Option<&'static TypeSpec> {
    TYPES.iter().find(|t| t.name == name)
}

pub fn names() -> Vec<&'static str> {
    TYPES.iter().map(|t| t.name).collect()
}
