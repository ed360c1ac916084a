//! The registry of credential-provider types: what each accepts, keeps secret, fills in, issues.
//! Each type's fields are its DTO in `svc_api::mgmt` (`…Fields`); what their schema cannot state
//! is the type's own [`check_fields`] arm, and how a stored provider is shown its [`fields_of`]
//! arm.

use serde_json::{Map, Value};
use svc_api::FieldError;
use svc_api::edge::CredentialType;
use svc_api::mgmt::{CredentialProviderFields, CredentialProviderType};

use super::Backend;
use crate::config::Config;
use crate::credential::Lookup;
use crate::domain::credential::CredentialProvider;
use crate::error::Error;

/// Checks a complete provider against the state and configuration (references, cross-field rules).
pub type CheckFn = fn(&CredentialProvider, &dyn Lookup, &Config) -> Result<(), Error>;
/// Fills server-made fields before the provider is stored (generated keys, derived values).
pub type CompleteFn = fn(&mut CredentialProvider) -> Result<(), Error>;

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
    pub check: CheckFn,
    pub complete: CompleteFn,
    pub compile: fn(&CredentialProvider) -> Backend,
}

pub fn no_check(_: &CredentialProvider, _: &dyn Lookup, _: &Config) -> Result<(), Error> {
    Ok(())
}

pub fn no_complete(_: &mut CredentialProvider) -> Result<(), Error> {
    Ok(())
}

/// The `lifetime` (seconds) of the cloud federation types when none is stored (shown so).
pub const FEDERATION_LIFETIME: i64 = 3600;

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

/// The checks of a type's fields that their schema cannot state (patterns, dynamic expressions,
/// SPIFFE IDs, reserved names), and their stored form (an optional text given as `""` is absent,
/// a list item's `valueType` filled in). Errors name the field by its path among the type's
/// fields (the caller puts `providerDetailJSON.` before it where the fields came from there).
pub fn check_fields(fields: &mut CredentialProviderFields) -> Result<(), FieldError> {
    use CredentialProviderFields as F;
    match fields {
        F::SvcAccessToken(_) | F::UsernamePassword(_) => Ok(()),
        F::ApiKey(f) => super::apikey::check_fields(f),
        F::OAuthAuthorizationCode(f) => super::authorization_code::check_fields(f),
        F::CloudASts(f) => super::clouda_sts::check_fields(f),
        F::OAuthClientCredential(f) => super::oauth::check_fields(f),
        F::SignedJwt(f) => super::signed_jwt::check_fields(f),
        F::VaultClientToken(f) => super::vault::check_fields(f),
        F::OidcIdToken(f) => super::issued_jwt::check_fields(f, false),
        F::JwtSvidToken(f) => super::issued_jwt::check_fields(f, true),
        F::X509Svid(f) => super::x509svid::check_fields(f),
        F::AiAWif(f) => super::ai_wif::check_fields_a(f),
        F::AiBWif(f) => super::ai_wif::check_fields_b(f),
        F::CloudCIdentityFederation(f) => super::cloudc_wif::check_fields(f),
        F::CloudBDirectoryFederation(f) => super::cloudb::check_directory_fields(f),
        F::CloudBKeyVaultValue(f) => super::cloudb::check_key_vault_fields(f),
        F::CiBManagedAccount(f) => super::cib_account::check_fields(f),
    }
}

/// The stored form of checked fields: the variant map (absent values left out) and the secrets
/// given (an empty one is not given: the stored one stays, §1.9).
pub fn stored(fields: &CredentialProviderFields, spec: &TypeSpec) -> (Map<String, Value>, Vec<(&'static str, String)>) {
    let Ok(Value::Object(mut m)) = serde_json::to_value(fields) else {
        return (Map::new(), Vec::new());
    };
    let mut secrets = Vec::new();
    for s in spec.secret_fields {
        if let Some(Value::String(v)) = m.remove(*s)
            && !v.is_empty()
        {
            secrets.push((*s, v));
        }
    }
    m.retain(|_, v| !v.is_null());
    (m, secrets)
}

/// A stored provider's fields as its DTOs show them: the stored values, the computed ones and
/// the defaults of what was left out (§3.5.2); secrets `None`.
pub fn fields_of(p: &CredentialProvider, cfg: &Config) -> CredentialProviderFields {
    use CredentialProviderFields as F;
    // A stored provider's type is one this version writes (a newer schema is refused at start).
    let kind = CredentialProviderType::parse(&p.cp_type).expect("a stored provider's type is known");
    let mut fields = CredentialProviderFields::from_stored(kind, Value::Object(p.config.clone())).unwrap_or_else(|e| {
        tracing::warn!(provider = %p.meta.id, error = %e, "a stored credential provider's fields cannot be read");
        CredentialProviderFields::empty(kind)
    });
    match &mut fields {
        F::SvcAccessToken(_) | F::ApiKey(_) | F::UsernamePassword(_) => {}
        F::CloudBDirectoryFederation(_) | F::AiAWif(_) | F::AiBWif(_) | F::CiBManagedAccount(_) => {}
        F::OAuthAuthorizationCode(f) => super::authorization_code::present(f, p, cfg),
        F::CloudASts(f) => {
            f.lifetime.get_or_insert(FEDERATION_LIFETIME as i32);
        }
        F::OAuthClientCredential(f) => super::oauth::present(f),
        F::SignedJwt(f) => super::signed_jwt::present(f, p),
        F::VaultClientToken(f) => super::vault::present(f, cfg),
        F::OidcIdToken(f) | F::JwtSvidToken(f) => super::issued_jwt::present(f, cfg),
        F::X509Svid(f) => super::x509svid::present(f),
        F::CloudCIdentityFederation(f) => {
            f.lifetime.get_or_insert(FEDERATION_LIFETIME as i32);
        }
        F::CloudBKeyVaultValue(f) => {
            f.private_network_access.get_or_insert(false);
        }
    }
    fields
}

/// Reads an optional string field of the variant config.
pub fn cfg_str<'a>(c: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    c.get(k).and_then(Value::as_str)
}

/// An upstream URL field: [`crate::upstream::check_url_field`].
pub fn check_url(field: &str, url: &str, cfg: &Config) -> Result<(), Error> {
    crate::upstream::check_url_field(field, url, cfg)
}

/// `v` must pass `ok`, else `<field>: must match <pattern>`.
pub fn matching(field: &str, v: &str, ok: fn(&str) -> bool, pattern: &str) -> Result<(), FieldError> {
    if ok(v) {
        Ok(())
    } else {
        Err(FieldError::new(field, format!("must match {pattern}")))
    }
}

/// An optional text where `""` (or blanks, `blank`) means absent.
pub fn non_empty(v: &mut Option<String>, blank: bool) {
    if v.as_deref()
        .is_some_and(|s| if blank { s.trim().is_empty() } else { s.is_empty() })
    {
        *v = None;
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry and the DTOs' `type` list the same types in the same order (the order of
    /// `type: must be one of …`).
    #[test]
    fn every_type_has_its_dto_variant_in_the_same_order() {
        let dto: Vec<&str> = CredentialProviderType::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(names(), dto);
        for t in CredentialProviderType::ALL {
            assert_eq!(CredentialProviderType::parse(t.as_str()), Some(t));
            assert_eq!(CredentialProviderFields::empty(t).kind(), t);
        }
    }

    /// What a type's fields store: no secret, no absent value; secrets given apart, an empty
    /// one not at all.
    #[test]
    fn stored_fields_keep_secrets_apart() {
        let fields = CredentialProviderFields::UsernamePassword(svc_api::mgmt::UsernamePasswordFields {
            username: "u".into(),
            password: Some("pw".into()),
        });
        let (m, secrets) = stored(&fields, spec("username-password").expect("registered"));
        assert_eq!(Value::Object(m), serde_json::json!({"username": "u"}));
        assert_eq!(secrets, vec![("password", "pw".to_string())]);
        let fields = CredentialProviderFields::ApiKey(svc_api::mgmt::ApiKeyFields {
            api_key: Some(String::new()),
        });
        let (m, secrets) = stored(&fields, spec("apikey").expect("registered"));
        assert!(m.is_empty() && secrets.is_empty());
    }
}
