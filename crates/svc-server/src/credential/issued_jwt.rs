//! `oidc-id-token` and `jwt-svid-token` (contract §3.5.2, §5.2): JWTs the service signs with its
//! published issuer keys (ES256 by default, or RS256), for a configured audience, with a literal or
//! dynamic subject and custom claims. A JWT-SVID's subject must be a `spiffe://` id and carries no
//! `svc` claim.

use serde_json::{Map, Value, json};
use svc_api::edge::{CredentialType, EdgeCredentials};
use svc_api::mgmt::{IssuedJwtFields, JwtAlgorithm, JwtClaimDto, ValueType};
use svc_api::{FieldError, Timestamp};
use uuid::Uuid;

use super::assertion::{self, Alg};
use super::dynamic;
use super::types::{self, TypeSpec, cfg_str};
use super::{Backend, IssueCx, Issued, Prepared};
use crate::config::Config;
use crate::credential::Lookup;
use crate::domain::credential::CredentialProvider;
use crate::error::Error;

const RESERVED: &[&str] = &["iss", "iat", "exp", "nbf", "jti"];

/// One custom claim (`JWTClaimDTO`).
#[derive(Debug, Clone)]
pub struct Claim {
    pub key: String,
    pub value: String,
    pub dynamic: bool,
}

/// The rules of a `JWTClaimDTO[]` field (`name`): no reserved key, a dynamic value is a known
/// template; `valueType` stored as `literal` when absent.
pub fn check_claims(list: &mut Option<Vec<JwtClaimDto>>, name: &str) -> Result<(), FieldError> {
    for (i, c) in list.iter_mut().flatten().enumerate() {
        if RESERVED.contains(&c.key.as_str()) {
            return Err(FieldError::new(
                format!("{name}[{i}].key"),
                "cannot be iss, iat, exp, nbf or jti",
            ));
        }
        let vt = *c.value_type.get_or_insert(ValueType::Literal);
        if vt == ValueType::Dynamic {
            dynamic::check_template(&c.value).map_err(|e| FieldError::new(format!("{name}[{i}].value"), e))?;
        }
    }
    Ok(())
}

/// A subject (or other value) that is a template when `value_type` is `dynamic`: a known one;
/// else it must pass `literal`.
pub fn check_subject(
    field: &str,
    value: &str,
    value_type: Option<ValueType>,
    literal: impl FnOnce(&str) -> Result<(), String>,
) -> Result<(), FieldError> {
    let checked = if value_type == Some(ValueType::Dynamic) {
        dynamic::check_template(value)
    } else {
        literal(value)
    };
    checked.map_err(|e| FieldError::new(field, e))
}

pub fn claims_of(v: Option<&Value>) -> Vec<Claim> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|c| {
                    Some(Claim {
                        key: c.get("key")?.as_str()?.to_string(),
                        value: c.get("value")?.as_str()?.to_string(),
                        dynamic: c.get("valueType").and_then(Value::as_str) == Some("dynamic"),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `id` names an `oidc-id-token` provider: the one kind of JWT the service signs that a
/// workload may present back as evidence (`trust::check_own_issued`).
pub fn is_id_token_provider(st: &dyn Lookup, id: Uuid) -> bool {
    st.credential_provider(&id)
        .is_some_and(|p| p.cp_type == "oidc-id-token")
}

/// Resolves a subject and custom claims into `prepared` (`subject`, `claim.<key>`); a dynamic
/// subject's values pass through `subject_value` (see [`dynamic::resolve_with`]).
pub fn resolve_into(
    p: &mut Prepared,
    (subject, subject_dynamic): (&str, bool),
    subject_value: fn(&str) -> String,
    claims: &[Claim],
    cx: &IssueCx<'_>,
) -> Result<(), String> {
    let s = if subject_dynamic {
        dynamic::resolve_with(subject, cx.values, subject_value)?
    } else {
        subject.to_string()
    };
    p.0.insert("subject".into(), s);
    for c in claims {
        let v = if c.dynamic {
            dynamic::resolve(&c.value, cx.values)?
        } else {
            c.value.clone()
        };
        p.0.insert(format!("claim.{}", c.key), v);
    }
    // The `sub` the JWT will carry: a custom `sub` claim, else the subject.
    let sub = p.get("claim.sub").or(p.get("subject")).unwrap_or_default().to_string();
    assertion::check_subject(cx, &sub)
}

/// Write-time [`assertion::reserved_subject`] of a literal subject and a literal custom `sub`
/// claim (a dynamic one is checked when it is resolved, at issuance).
pub fn check_literal_subjects(p: &CredentialProvider, st: &dyn Lookup, claims_field: &str) -> Result<(), Error> {
    let literal = |k: &str| cfg_str(&p.config, k).filter(|_| cfg_str(&p.config, "subjectType") != Some("dynamic"));
    if let Some(s) = literal("subject")
        && let Some(why) = assertion::reserved_subject(st, s, None)
    {
        return Err(Error::field("subject", why));
    }
    for (i, c) in claims_of(p.config.get(claims_field)).iter().enumerate() {
        if c.key == "sub"
            && !c.dynamic
            && let Some(why) = assertion::reserved_subject(st, &c.value, None)
        {
            return Err(Error::field(format!("{claims_field}[{i}].value"), why));
        }
    }
    Ok(())
}

/// Applies resolved custom claims onto JWT claims (they cannot override the reserved ones).
pub fn apply_claims(target: &mut Map<String, Value>, claims: &[Claim], prepared: &Prepared) {
    for c in claims {
        if let Some(v) = prepared.get(&format!("claim.{}", c.key)) {
            target.insert(c.key.clone(), json!(v));
        }
    }
}

#[derive(Debug)]
pub struct IssuedJwt {
    svid: bool,
    subject: String,
    subject_dynamic: bool,
    audience: String,
    alg: Alg,
    lifetime: i64,
    claims: Vec<Claim>,
}

impl IssuedJwt {
    pub fn prepare(&self, cx: &IssueCx<'_>) -> Result<Prepared, String> {
        let mut p = Prepared::default();
        // A JWT-SVID's subject is a SPIFFE id: values cannot add path segments to it.
        let subject_value = if self.svid {
            super::x509svid::spiffe_value
        } else {
            str::to_string
        };
        resolve_into(
            &mut p,
            (&self.subject, self.subject_dynamic),
            subject_value,
            &self.claims,
            cx,
        )?;
        if self.svid
            && let Err(e) = super::x509svid::check_spiffe_id(p.get("subject").unwrap_or_default())
        {
            return Err(format!("{} (not a SPIFFE ID: {e})", self.subject));
        }
        Ok(p)
    }

    pub fn issue(&self, prepared: &Prepared, cx: &IssueCx<'_>) -> Issued {
        let sub = prepared.get("subject").unwrap_or(&self.subject);
        let (mut c, exp) = assertion::claims(cx, sub, &self.audience, self.lifetime, !self.svid);
        apply_claims(&mut c, &self.claims, prepared);
        if self.svid {
            // A JWT-SVID's `sub` is its SPIFFE ID, whatever custom claims an older record holds.
            c.insert("sub".into(), json!(sub));
        }
        let token = assertion::sign(&cx.svc, self.alg, &c);
        Issued::Credential {
            credential_type: CredentialType::OAuthToken,
            data: EdgeCredentials(vec![("token", Some(token))]),
            expires_at: Some(Timestamp::from_secs(exp)),
        }
    }
}

pub fn check_fields(f: &mut IssuedJwtFields, svid: bool) -> Result<(), FieldError> {
    check_subject("subject", &f.subject, f.subject_type, |s| {
        if svid {
            super::x509svid::check_spiffe_id(s)
        } else {
            Ok(())
        }
    })?;
    check_claims(&mut f.custom_claims, "customClaims")?;
    // A JWT-SVID's `sub` is its SPIFFE ID: a custom claim may not replace it.
    if svid && let Some(i) = f.custom_claims.iter().flatten().position(|c| c.key == "sub") {
        return Err(FieldError::new(
            format!("customClaims[{i}].key"),
            "cannot be sub in a JWT-SVID",
        ));
    }
    Ok(())
}

/// The issuer, and the defaults and empty list as the contract states them (§3.5.2, §1.1).
pub fn present(f: &mut IssuedJwtFields, cfg: &Config) {
    f.issuer = Some(cfg.issuer().to_string());
    f.subject_type.get_or_insert(ValueType::Literal);
    f.algorithm_type.get_or_insert(JwtAlgorithm::ES256);
    f.custom_claims.get_or_insert_with(Vec::new);
}

fn compile(p: &CredentialProvider, svid: bool) -> Backend {
    let (Some(subject), Some(audience)) = (cfg_str(&p.config, "subject"), cfg_str(&p.config, "audience")) else {
        return Backend::Broken("subject or audience missing".into());
    };
    Backend::IssuedJwt(IssuedJwt {
        svid,
        subject: subject.to_string(),
        subject_dynamic: cfg_str(&p.config, "subjectType") == Some("dynamic"),
        audience: audience.to_string(),
        alg: if cfg_str(&p.config, "algorithmType") == Some("RS256") {
            Alg::RS256
        } else {
            Alg::ES256
        },
        lifetime: p.lifetime_time_span_seconds.max(60) as i64,
        claims: claims_of(p.config.get("customClaims")),
    })
}

fn check(p: &CredentialProvider, st: &dyn Lookup, _: &Config) -> Result<(), Error> {
    check_literal_subjects(p, st, "customClaims")
}

pub const OIDC_SPEC: TypeSpec = TypeSpec {
    name: "oidc-id-token",
    credential_type: |_| CredentialType::OAuthToken,
    secret_fields: &[],
    secret_destination: &[],
    required_secrets: &[],
    ro_fields: &["issuer"],
    lifetime: Some((60, 86400, 3600)),
    check,
    complete: types::no_complete,
    compile: |p| compile(p, false),
};

pub const SVID_SPEC: TypeSpec = TypeSpec {
    name: "jwt-svid-token",
    credential_type: |_| CredentialType::OAuthToken,
    secret_fields: &[],
    secret_destination: &[],
    required_secrets: &[],
    ro_fields: &["issuer"],
    lifetime: Some((60, 86400, 3600)),
    check,
    complete: types::no_complete,
    compile: |p| compile(p, true),
};
