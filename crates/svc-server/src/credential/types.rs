//! The registry of credential-provider types: what each accepts, keeps secret, fills in, issues.

use serde_json::{Map, Value};
use svc_api::edge::CredentialType;
use svc_api::{FieldError, Obj};

use super::Backend;
use crate::config::Config;
use crate::domain::credential::CredentialProvider;
use crate::error::Error;
use crate::state::State;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// POST / PUT: required fields must be present.
    Full,
    /// PATCH (`providerDetailJSON` keys replace fields): everything optional.
    Patch,
}

/// Reads a type's non-secret variant fields.
pub type ParseFn = fn(&mut Obj, Mode) -> Result<Map<String, Value>, FieldError>;
/// Checks a complete provider against the state and configuration (references, cross-field rules).
pub type CheckFn = fn(&CredentialProvider, &State, &Config) -> Result<(), Error>;
/// Fills server-made fields before the provider is stored (generated keys, derived values).
pub type CompleteFn = fn(&mut CredentialProvider) -> Result<(), Error>;
/// Adds computed output fields (URLs that depend on the public base URL).
pub type PresentFn = fn(&CredentialProvider, &Config, &mut Map<String, Value>);

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
    /// `lifetimeTimeSpanSeconds`: (min, max, default) for types that use it; others store 0.
    pub lifetime: Option<(i32, i32, i32)>,
    pub parse: ParseFn,
    pub check: CheckFn,
    pub complete: CompleteFn,
    pub present: PresentFn,
    pub compile: fn(&CredentialProvider) -> Backend,
}

pub fn no_check(_: &CredentialProvider, _: &State, _: &Config) -> Result<(), Error> {
    Ok(())
}

pub fn no_complete(_: &mut CredentialProvider) -> Result<(), Error> {
    Ok(())
}

pub fn no_present(_: &CredentialProvider, _: &Config, _: &mut Map<String, Value>) {}

pub const TYPES: &[TypeSpec] = &[
    super::access_token::SPEC,
    super::apikey::SPEC,
    super::authorization_code::SPEC,
    super::clouda_sts::SPEC,
    super::oauth::SPEC,
    super::signed_jwt::SPEC,
    super::username_password::SPEC,
    super::vault::SPEC,
    super::issued_jwt::OIDC_SPEC,
    super::issued_jwt::SVID_SPEC,
    super::x509svid::SPEC,
];

pub fn spec(name: &str) -> Option<&'static TypeSpec> {
    TYPES.iter().find(|t| t.name == name)
}

pub fn names() -> Vec<&'static str> {
    TYPES.iter().map(|t| t.name).collect()
}

/// Reads an optional string field of the variant config.
pub fn cfg_str<'a>(c: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    c.get(k).and_then(Value::as_str)
}

/// Copies a parsed optional value into the variant map (absent stays absent).
pub fn put(m: &mut Map<String, Value>, k: &str, v: Option<impl Into<Value>>) {
    if let Some(v) = v {
        m.insert(k.to_string(), v.into());
    }
}

/// A required field in Full mode, optional in Patch mode.
pub fn field_str(o: &mut Obj, mode: Mode, k: &str, min: usize, max: usize) -> Result<Option<String>, FieldError> {
    match mode {
        Mode::Full => o.req_str_len(k, min, max).map(Some),
        Mode::Patch => o.opt_str_len(k, min, max),
    }
}

/// An upstream URL field: absolute `https` (or `http` when allowed, checked by `check`).
pub fn check_url(field: &str, url: &str, cfg: &Config) -> Result<(), Error> {
    let ok = url::Url::parse(url)
        .is_ok_and(|u| u.scheme() == "https" || (u.scheme() == "http" && cfg.allow_insecure_upstream));
    if ok {
        Ok(())
    } else {
        Err(Error::field(field, "must be an https URL"))
    }
}
