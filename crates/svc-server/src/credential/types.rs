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
    /// The variant fields naming where its secrets are sent (issue 31: a secret stays with the
    /// URL it was stored with); empty when they are handed to workloads or used here.
    pub secret_destination: &'static [&'static str],
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

/// The `lifetime` (seconds) of the cloud federation types when none is stored.
const FEDERATION_LIFETIME: i64 = 3600;

/// `PresentFn` of the cloud federation types: `lifetime` shows its default when none is stored.
pub fn present_lifetime(_: &CredentialProvider, _: &Config, out: &mut Map<String, Value>) {
    out.entry("lifetime").or_insert(Value::from(FEDERATION_LIFETIME));
}

/// The stored `lifetime` of a cloud federation type, or its default.
pub fn cfg_lifetime(c: &Map<String, Value>) -> i64 {
    c.get("lifetime").and_then(Value::as_i64).unwrap_or(FEDERATION_LIFETIME)
}

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
    super::ai_wif::AIA_SPEC,
    super::ai_wif::AIB_SPEC,
    super::cloudc_wif::SPEC,
    super::cloudb::DIRECTORY_SPEC,
    super::cloudb::KEY_VAULT_SPEC,
    super::cib_account::SPEC,
];

/// Stored fields a PUT or PATCH body cannot change: read-only server state, internal bookkeeping
/// and create-only fields. They are carried over from the stored provider.
pub fn kept_fields(spec: &TypeSpec) -> impl Iterator<Item = &'static str> {
    let extra: &[&str] = match spec.name {
        "ciB-managed-account" => &["username"],
        "oauth-authorization-code" => &["accessTokenExpiresAt", "accessTokenExpiryStated"],
        "signed-jwt" => &["derivedIssuer"],
        _ => &[],
    };
    spec.ro_fields.iter().chain(extra).copied()
}

/// Restores the [`kept_fields`] of `old` into `new` (removing them where `old` has none).
pub fn keep_fields(spec: &TypeSpec, old: &Map<String, Value>, new: &mut Map<String, Value>) {
    for k in kept_fields(spec) {
        match old.get(k) {
            Some(v) => new.insert(k.to_string(), v.clone()),
            None => new.remove(k),
        };
    }
}

/// Where a provider's secrets go ([`crate::domain::SecretHome`]): its type's
/// `secret_destination` fields. Secrets beyond its `secret_fields` (stored OAuth tokens, a
/// minted ciB token) are the service's own.
pub fn secret_home(p: &CredentialProvider) -> crate::domain::SecretHome {
    let Some(spec) = spec(&p.cp_type) else {
        return crate::domain::SecretHome::nowhere();
    };
    crate::domain::SecretHome {
        fields: spec
            .secret_destination
            .iter()
            .map(|f| (*f, cfg_str(&p.config, f).unwrap_or_default().to_string()))
            .collect(),
        given: spec.secret_fields,
        held: p.secrets.stamps(),
    }
}

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

/// An upstream URL field: [`crate::upstream::check_url_field`].
pub fn check_url(field: &str, url: &str, cfg: &Config) -> Result<(), Error> {
    crate::upstream::check_url_field(field, url, cfg)
}

/// A string field that must satisfy `ok` (described by `pattern` in the error). Required fields
/// are required in Full mode only; an optional field given as `""` counts as absent.
pub fn field_match(
    o: &mut Obj,
    mode: Mode,
    required: bool,
    k: &str,
    max: usize,
    ok: fn(&str) -> bool,
    pattern: &str,
) -> Result<Option<String>, FieldError> {
    let v = if required && mode == Mode::Full {
        Some(o.req_str_len(k, 1, max)?)
    } else {
        o.opt_str_len(k, 0, max)?.filter(|s| !s.is_empty() || required)
    };
    if let Some(s) = &v
        && !ok(s)
    {
        return Err(FieldError::new(o.path(k), format!("must match {pattern}")));
    }
    Ok(v)
}

/// `prefix` followed by at least one character.
pub fn prefixed(s: &str, prefix: &str) -> bool {
    s.len() > prefix.len() && s.starts_with(prefix)
}

/// UUID text (any case, hyphenated).
pub fn uuid_text(s: &str) -> bool {
    s.len() == 36 && uuid::Uuid::parse_str(s).is_ok()
}

/// A plausible e-mail address: `local@domain.tld` with the usual characters only (so it is safe
/// in a URL path).
pub fn email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    let local_ok = |c: char| c.is_ascii_alphanumeric() || "._%+-".contains(c);
    let domain_ok = |c: char| c.is_ascii_alphanumeric() || ".-".contains(c);
    !local.is_empty()
        && local.chars().all(local_ok)
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && domain.chars().all(domain_ok)
}
