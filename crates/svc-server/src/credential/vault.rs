//! `vaultClientToken` (contract §3.5.2, §5.3): JWT login to a vault server — `POST
//! {http|https}://<vaultHost>:<port>/v1/<authenticationPath>/login` with `{jwt, role}` — where the
//! JWT is signed by this service's issuer (RS256) for the vault's audience, with a literal or
//! dynamic subject and custom claims. The vault's `client_token` is the credential.

use serde_json::{Value, json};
use svc_api::FieldError;
use svc_api::edge::{CredentialType, EdgeCredentials};
use svc_api::mgmt::{ValueType, VaultClientTokenFields};

use super::assertion::{self, Alg};
use super::issued_jwt::{Claim, apply_claims, check_claims, check_subject, claims_of, resolve_into};
use super::types::{TypeSpec, cfg_str};
use super::upstream_call::{json_body, post_json};
use super::{Backend, IssueCx, IssueError, Issued, Prepared};
use crate::config::Config;
use crate::credential::Lookup;
use crate::domain::credential::CredentialProvider;
use crate::error::Error;

#[derive(Debug)]
pub struct Vault {
    base: String,
    path: String,
    namespace: Option<String>,
    role: Option<String>,
    subject: String,
    subject_dynamic: bool,
    lifetime: i64,
    claims: Vec<Claim>,
    default_audience: String,
}

impl Vault {
    pub fn prepare(&self, cx: &IssueCx<'_>) -> Result<Prepared, String> {
        let mut p = Prepared::default();
        resolve_into(
            &mut p,
            (&self.subject, self.subject_dynamic),
            str::to_string,
            &self.claims,
            cx,
        )?;
        p.0.insert("clientWorkload".into(), assertion::default_subject(cx));
        Ok(p)
    }

    pub async fn issue(&self, prepared: &Prepared, cx: &IssueCx<'_>) -> Result<Issued, IssueError> {
        let sub = prepared.get("subject").unwrap_or(&self.subject);
        // `aud` is the vault the JWT goes to, whatever a custom claim says (issue 31): a JWT
        // whose `aud` named another vault would follow a moved `vaultHost` to whoever moved it,
        // ready to be replayed at that other vault.
        let aud = self.default_audience.clone();
        let (mut c, _) = assertion::claims(cx, sub, &aud, self.lifetime, true);
        apply_claims(&mut c, &self.claims, prepared);
        c.insert("aud".into(), json!(aud));
        let jwt = assertion::sign(&cx.svc, Alg::RS256, &c);
        let mut body = json!({"jwt": jwt});
        if let Some(r) = &self.role {
            body["role"] = json!(r);
        }
        let url = format!("{}/v1/{}/login", self.base, self.path);
        let ns: Vec<(&str, &str)> = self
            .namespace
            .iter()
            .map(|n| ("X-Vault-Namespace", n.as_str()))
            .collect();
        let f = post_json(&cx.svc, &url, &body, None, &ns).await?;
        // Vault's `{"errors": [...]}` texts are the body's: the log has them, the event only the
        // status (issue 31).
        let v = json_body("vault login", &f)?;
        let auth = v
            .get("auth")
            .ok_or_else(|| IssueError::upstream("vault login answer has no auth", None))?;
        let token = auth
            .get("client_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| IssueError::upstream("vault login answer has no client_token", None))?;
        let lease = auth.get("lease_duration").and_then(Value::as_i64).unwrap_or(0);
        Ok(Issued::Credential {
            credential_type: CredentialType::OAuthToken,
            data: EdgeCredentials(vec![("token", Some(token.to_string()))]),
            expires_at: (lease > 0).then(|| crate::clock::now().plus_secs(lease)),
        })
    }
}

pub fn check_fields(f: &mut VaultClientTokenFields) -> Result<(), FieldError> {
    check_subject("subject", &f.subject, f.subject_type, |_| Ok(()))?;
    check_claims(&mut f.custom_claim_names, "customClaimNames")?;
    f.authentication_path = f.authentication_path.trim_matches('/').to_string();
    Ok(())
}

fn check(p: &CredentialProvider, st: &dyn Lookup, cfg: &Config) -> Result<(), Error> {
    super::issued_jwt::check_literal_subjects(p, st, "customClaimNames")?;
    // The login JWT's `aud` is the vault's own address (issue 31): a custom `aud` may only say so.
    if let Backend::Vault(v) = compile(p) {
        for (i, c) in claims_of(p.config.get("customClaimNames")).iter().enumerate() {
            if c.key == "aud" && (c.dynamic || c.value != v.default_audience) {
                return Err(Error::field(
                    format!("customClaimNames[{i}].value"),
                    format!(
                        "must be the vault's address {} (the login JWT's aud)",
                        v.default_audience
                    ),
                ));
            }
        }
    }
    if let Some(i) = cfg_str(&p.config, "issuer")
        && i.trim_end_matches('/') != cfg.issuer()
    {
        return Err(Error::field(
            "issuer",
            format!("must be this service's issuer {}", cfg.issuer()),
        ));
    }
    if p.config.get("tls") == Some(&Value::Bool(false)) && !cfg.allow_insecure_upstream {
        return Err(Error::field("tls", "plain http needs SVC_ALLOW_INSECURE_UPSTREAM=true"));
    }
    if let Some(h) = cfg_str(&p.config, "vaultHost")
        && h.contains(['/', ':', '@', ' '])
    {
        return Err(Error::field("vaultHost", "must be a host name"));
    }
    Ok(())
}

/// The issuer, and the defaults and empty list as the contract states them (§3.5.2, §1.1).
pub fn present(f: &mut VaultClientTokenFields, cfg: &Config) {
    f.issuer = Some(cfg.issuer().to_string());
    f.tls.get_or_insert(true);
    f.subject_type.get_or_insert(ValueType::Literal);
    f.custom_claim_names.get_or_insert_with(Vec::new);
    f.private_network_access.get_or_insert(false);
}

fn compile(p: &CredentialProvider) -> Backend {
    let c = &p.config;
    let (Some(host), Some(port), Some(path), Some(subject)) = (
        cfg_str(c, "vaultHost"),
        c.get("port").and_then(Value::as_i64),
        cfg_str(c, "authenticationPath"),
        cfg_str(c, "subject"),
    ) else {
        return Backend::Broken("vault configuration incomplete".into());
    };
    let scheme = if c.get("tls") == Some(&Value::Bool(false)) {
        "http"
    } else {
        "https"
    };
    let base = format!("{scheme}://{host}:{port}");
    Backend::Vault(Vault {
        default_audience: base.clone(),
        base,
        path: path.to_string(),
        namespace: cfg_str(c, "namespace").filter(|n| !n.is_empty()).map(str::to_string),
        role: cfg_str(c, "role").filter(|r| !r.is_empty()).map(str::to_string),
        subject: subject.to_string(),
        subject_dynamic: cfg_str(c, "subjectType") == Some("dynamic"),
        lifetime: c.get("lifetime").and_then(Value::as_i64).unwrap_or(60),
        claims: claims_of(c.get("customClaimNames")),
    })
}

pub const SPEC: TypeSpec = TypeSpec {
    name: "vaultClientToken",
    credential_type: |_| CredentialType::OAuthToken,
    secret_fields: &[],
    secret_destination: &[],
    required_secrets: &[],
    ro_fields: &[],
    lifetime: None,
    check,
    complete: super::types::no_complete,
    compile,
};
