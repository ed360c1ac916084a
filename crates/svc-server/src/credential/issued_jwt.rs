//! `oidc-id-token` and `jwt-svid-token` (contract §3.5.2, §5.2): JWTs the service signs with its
//! published issuer keys (ES256 by default, or RS256), for a configured audience, with a literal or
//! dynamic subject and custom claims. A JWT-SVID's subject must be a `spiffe://` id and carries no
//! `svc` claim.

use serde_json::{Map, Value, json};
use svc_api::edge::{CredentialType, EdgeCredentials};
use svc_api::{FieldError, Obj, Timestamp};
use uuid::Uuid;

use super::assertion::{self, Alg};
use super::dynamic;
use super::types::{self, Mode, TypeSpec, cfg_str, field_str, put};
use super::{Backend, IssueCx, Issued, Prepared};
use crate::config::Config;
use crate::domain::credential::CredentialProvider;
use crate::error::Error;
use crate::state::State;

const RESERVED: &[&str] = &["iss", "iat", "exp", "nbf", "jti"];

/// One custom claim (`JWTClaimDTO`).
#[derive(Debug, Clone)]
pub struct Claim {
    pub key: String,
    pub value: String,
    pub dynamic: bool,
}

/// Reads a `JWTClaimDTO[]` field into its stored JSON form.
pub fn parse_claims(o: &mut Obj, name: &str) -> Result<Option<Value>, FieldError> {
    let list = o.opt_obj_list(name, |c| {
        let key = c.req_str_len("key", 1, 256)?;
        if RESERVED.contains(&key.as_str()) {
            return Err(FieldError::new(c.path("key"), "cannot be iss, iat, exp, nbf or jti"));
        }
        let value = c.req_str_len("value", 0, 4096)?;
        let vt = c
            .opt_enum("valueType", &["literal", "dynamic"])?
            .unwrap_or_else(|| "literal".into());
        if vt == "dynamic" {
            dynamic::check_template(&value).map_err(|e| FieldError::new(c.path("value"), e))?;
        }
        Ok(json!({"key": key, "value": value, "valueType": vt}))
    })?;
    Ok(list.map(Value::Array))
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
pub fn is_id_token_provider(st: &State, id: Uuid) -> bool {
    st.credential_providers
        .get(&id)
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
pub fn check_literal_subjects(p: &CredentialProvider, st: &State, claims_field: &str) -> Result<(), Error> {
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

fn parse(o: &mut Obj, mode: Mode, svid: bool) -> Result<Map<String, Value>, FieldError> {
    let mut m = Map::new();
    let subject = field_str(o, mode, "subject", 1, 2048)?;
    let subject_type = o.opt_enum("subjectType", &["literal", "dynamic"])?;
    // In a PATCH without `subjectType` the stored type decides; the merged re-check catches it.
    if let Some(s) = subject
        .as_ref()
        .filter(|_| mode == Mode::Full || subject_type.is_some())
    {
        if subject_type.as_deref() == Some("dynamic") {
            dynamic::check_template(s).map_err(|e| FieldError::new(o.path("subject"), e))?;
        } else if svid {
            super::x509svid::check_spiffe_id(s).map_err(|e| FieldError::new(o.path("subject"), e))?;
        }
    }
    put(&mut m, "subject", subject);
    put(&mut m, "subjectType", subject_type);
    put(&mut m, "audience", field_str(o, mode, "audience", 1, 2048)?);
    put(
        &mut m,
        "algorithmType",
        o.opt_enum("algorithmType", &["ES256", "RS256"])?,
    );
    if let Some(c) = parse_claims(o, "customClaims")? {
        // A JWT-SVID's `sub` is its SPIFFE ID: a custom claim may not replace it.
        if svid && let Some(i) = c.as_array().and_then(|a| a.iter().position(|c| c["key"] == "sub")) {
            return Err(FieldError::new(
                format!("{}[{i}].key", o.path("customClaims")),
                "cannot be sub in a JWT-SVID",
            ));
        }
        m.insert("customClaims".into(), c);
    }
    Ok(m)
}

fn present(_: &CredentialProvider, cfg: &Config, out: &mut Map<String, Value>) {
    out.insert("issuer".into(), json!(cfg.issuer()));
    // Defaults and an empty list as the contract states them (§3.5.2, §1.1).
    out.entry("subjectType").or_insert(Value::from("literal"));
    out.entry("algorithmType").or_insert(Value::from("ES256"));
    out.entry("customClaims").or_insert(Value::Array(vec![]));
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

fn check(p: &CredentialProvider, st: &State, _: &Config) -> Result<(), Error> {
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
    parse: |o, m| parse(o, m, false),
    check,
    complete: types::no_complete,
    present,
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
    parse: |o, m| parse(o, m, true),
    check,
    complete: types::no_complete,
    present,
    compile: |p| compile(p, true),
};
