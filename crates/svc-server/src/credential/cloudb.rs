//! cloudB credential types (contract §3.5.2, §5.3). `cloudB-directory-federation`: the directory's
//! client-credentials grant with a federation assertion signed by this service as the client
//! assertion. `cloudB-key-vault-value`: the same grant through a `CloudBDirectoryFederation`
//! integration (§3.7) for the key-vault scope, then one or two secrets read from the vault; a
//! missing secret is "no credential" (200 `Unknown`).

use serde_json::{Map, Value};
use svc_api::FieldError;
use svc_api::edge::{CredentialType, EdgeCredentials};
use svc_api::mgmt::{CloudBDirectoryFederationFields, CloudBKeyVaultValueFields};
use uuid::Uuid;

use super::types::{self, TypeSpec, cfg_str};
use super::upstream_call::{access_token, get_bearer, json_body, oauth_credential, post_form, status_error};
use super::{Backend, IssueCx, IssueError, Issued, assertion};
use crate::config::Config;
use crate::credential::Lookup;
use crate::domain::credential::CredentialProvider;
use crate::error::Error;
use crate::upstream::Configured;

pub const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
pub const DIRECTORY: &str = "cloudB-directory-federation";
pub const KEY_VAULT: &str = "cloudB-key-vault-value";
pub const INTEGRATION_KIND: &str = "CloudBDirectoryFederation";

/// A tenant id or verified domain: letters, digits, `.` and `-` (it becomes a URL path segment).
pub fn tenant_text(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
}

/// Key-vault secret names: `^[0-9a-zA-Z-]{1,127}$`.
pub fn secret_name(s: &str) -> bool {
    (1..=127).contains(&s.len()) && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// Key-vault names: `^[a-zA-Z](?!.*--)[a-zA-Z0-9-]{1,22}[a-zA-Z0-9]$`.
pub fn vault_name(s: &str) -> bool {
    let b = s.as_bytes();
    (3..=24).contains(&b.len())
        && b[0].is_ascii_alphabetic()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        && !s.contains("--")
}

/// Who asks the directory for a token: tenant, application, and the assertion's `sub`/`aud`.
#[derive(Debug, Clone)]
pub struct DirectoryClient {
    pub tenant: String,
    pub client_id: String,
    pub subject: String,
    pub audience: String,
}

impl DirectoryClient {
    /// The client-credentials token request with our assertion (§5.3).
    pub async fn token(&self, cx: &IssueCx<'_>, scope: &str) -> Result<crate::upstream::Fetched, IssueError> {
        assertion::check_subject(cx, &self.subject).map_err(IssueError::new)?;
        let jwt = assertion::federation(cx, &self.subject, &self.audience);
        let url = format!(
            "{}/{}/oauth2/v2.0/token",
            cx.svc.cfg.cloudb_login_url.trim_end_matches('/'),
            self.tenant
        );
        let form = [
            ("client_id", self.client_id.as_str()),
            ("scope", scope),
            ("grant_type", "client_credentials"),
            ("client_assertion_type", JWT_BEARER),
            ("client_assertion", jwt.as_str()),
        ];
        post_form(&cx.svc, &Configured(&url), &form, None).await
    }

    pub fn from_config(c: &Map<String, Value>) -> Option<DirectoryClient> {
        Some(DirectoryClient {
            tenant: cfg_str(c, "cloudBTenant")?.to_string(),
            client_id: cfg_str(c, "clientId")?.to_string(),
            subject: cfg_str(c, "subject")?.to_string(),
            audience: cfg_str(c, "audience")?.to_string(),
        })
    }
}

// ---- cloudB-directory-federation ------------------------------------------------------------------

#[derive(Debug)]
pub struct DirectoryFederation {
    client: DirectoryClient,
    scope: String,
}

impl DirectoryFederation {
    pub async fn issue(&self, cx: &IssueCx<'_>) -> Result<Issued, IssueError> {
        let f = self.client.token(cx, &self.scope).await?;
        oauth_credential("directory token endpoint", &f)
    }
}

pub fn check_directory_fields(f: &mut CloudBDirectoryFederationFields) -> Result<(), FieldError> {
    types::matching("cloudBTenant", &f.cloud_b_tenant, tenant_text, "^[A-Za-z0-9.-]+$")
}

/// The subject is literal: it may not be one the service's own assertions carry (issue 31).
fn check_directory(p: &CredentialProvider, st: &dyn Lookup, _: &Config) -> Result<(), Error> {
    match cfg_str(&p.config, "subject").and_then(|s| assertion::reserved_subject(st, s, None)) {
        Some(why) => Err(Error::field("subject", why)),
        None => Ok(()),
    }
}

fn compile_directory(p: &CredentialProvider) -> Backend {
    match (DirectoryClient::from_config(&p.config), cfg_str(&p.config, "scope")) {
        (Some(client), Some(scope)) => Backend::CloudBDirectory(DirectoryFederation {
            client,
            scope: scope.to_string(),
        }),
        _ => Backend::Broken("directory fields missing".into()),
    }
}

pub const DIRECTORY_SPEC: TypeSpec = TypeSpec {
    name: DIRECTORY,
    credential_type: |_| CredentialType::OAuthToken,
    secret_fields: &[],
    secret_destination: &[],
    required_secrets: &[],
    ro_fields: &[],
    lifetime: None,
    check: check_directory,
    complete: types::no_complete,
    compile: compile_directory,
};

// ---- cloudB-key-vault-value -----------------------------------------------------------------------

#[derive(Debug)]
pub struct KeyVaultValue {
    integration: Uuid,
    secret1: String,
    secret2: Option<String>,
}

impl KeyVaultValue {
    pub async fn issue(&self, cx: &IssueCx<'_>) -> Result<Issued, IssueError> {
        // The integration is read at issuance: its changes apply to the next request.
        let integ = cx
            .svc
            .renewals
            .current()
            .credential_integration(&self.integration)
            .cloned()
            .filter(|i| i.int_type == INTEGRATION_KIND)
            .ok_or_else(|| IssueError::new("the credential provider integration no longer exists"))?;
        if !integ.meta.active {
            return Ok(Issued::Nothing(format!(
                "the integration '{}' is inactive",
                integ.meta.name
            )));
        }
        let client = DirectoryClient::from_config(&integ.config)
            .ok_or_else(|| IssueError::new("the integration's directory fields are incomplete"))?;
        let vault = cfg_str(&integ.config, "keyVaultName").unwrap_or_default().to_string();
        // Keyed like every reused credential (§4.8): the assertion names the policy and workloads.
        let key = format!(
            "kv-token:{}:{}:{}:{}:{}:{}:{}",
            integ.meta.id,
            integ.meta.modified_at.millis(),
            cx.credential_provider,
            cx.access_policy,
            cx.server_workload,
            cx.trust_provider,
            assertion::default_subject(cx)
        );
        let bearer = match cx.svc.cache.get(&key) {
            Some(Issued::Credential { data, .. }) => data.0[0].1.clone().unwrap_or_default(),
            _ => {
                let f = client.token(cx, &cx.svc.cfg.cloudb_keyvault_scope).await?;
                let (token, expires_in, _) = access_token("directory token endpoint", &f)?;
                if let Some(s) = expires_in {
                    let exp = crate::clock::now().plus_secs(s);
                    let cached = Issued::Credential {
                        credential_type: CredentialType::OAuthToken,
                        data: EdgeCredentials(vec![("token", Some(token.clone()))]),
                        expires_at: Some(exp),
                    };
                    cx.svc.cache.put(key, cached, exp.millis());
                }
                token
            }
        };
        let base = cx.svc.cfg.cloudb_keyvault_url_template.replace("{vault}", &vault);
        let mut values = Vec::new();
        for name in std::iter::once(&self.secret1).chain(self.secret2.as_ref()) {
            let url = format!("{}/secrets/{name}?api-version=7.4", base.trim_end_matches('/'));
            let f = get_bearer(&cx.svc, &Configured(&url), &bearer).await?;
            if f.status == 404 {
                return Ok(Issued::Nothing(format!("secret {name} not found in key vault {vault}")));
            }
            if !(200..300).contains(&f.status) {
                return Err(status_error("key vault", &f));
            }
            let v = json_body("key vault", &f)?;
            let value = v
                .get("value")
                .and_then(Value::as_str)
                .ok_or_else(|| IssueError::upstream(format!("key vault answer for {name} has no value"), None))?;
            values.push(value.to_string());
        }
        let mut values = values.into_iter();
        let first = values.next();
        Ok(Issued::Credential {
            credential_type: if self.secret2.is_some() {
                CredentialType::UsernamePassword
            } else {
                CredentialType::ApiKey
            },
            data: match values.next() {
                Some(password) => EdgeCredentials(vec![("username", first), ("password", Some(password))]),
                None => EdgeCredentials(vec![("apiKey", first)]),
            },
            expires_at: None,
        })
    }
}

pub fn check_key_vault_fields(f: &mut CloudBKeyVaultValueFields) -> Result<(), FieldError> {
    let pattern = "^[0-9a-zA-Z-]{1,127}$";
    types::matching("secretName1", &f.secret_name1, secret_name, pattern)?;
    types::non_empty(&mut f.secret_name2, false);
    if let Some(s) = &f.secret_name2 {
        types::matching("secretName2", s, secret_name, pattern)?;
    }
    Ok(())
}

/// The referenced integration exists in the provider's resource set and has the needed kind.
pub fn check_integration(p: &CredentialProvider, st: &dyn Lookup, kind: &str) -> Result<(), Error> {
    let field = "credentialProviderIntegrationExternalId";
    let id = cfg_str(&p.config, field)
        .and_then(|s| Uuid::parse_str(s).ok())
        .ok_or_else(|| Error::field(field, "is required"))?;
    match st.credential_integration(&id) {
        Some(i) if i.meta.scope() == p.meta.scope() && i.int_type == kind => Ok(()),
        Some(i) if i.meta.scope() == p.meta.scope() => Err(Error::field(
            field,
            format!("must be a {kind} integration, not {}", i.int_type),
        )),
        _ => Err(Error::field(field, "unknown integration in this resource set")),
    }
}

fn check_key_vault(p: &CredentialProvider, st: &dyn Lookup, _: &Config) -> Result<(), Error> {
    check_integration(p, st, INTEGRATION_KIND)
}

fn compile_key_vault(p: &CredentialProvider) -> Backend {
    let integ = cfg_str(&p.config, "credentialProviderIntegrationExternalId").and_then(|s| Uuid::parse_str(s).ok());
    match (integ, cfg_str(&p.config, "secretName1")) {
        (Some(integration), Some(s1)) => Backend::CloudBKeyVault(KeyVaultValue {
            integration,
            secret1: s1.to_string(),
            secret2: cfg_str(&p.config, "secretName2").map(str::to_string),
        }),
        _ => Backend::Broken("integration or secretName1 missing".into()),
    }
}

pub const KEY_VAULT_SPEC: TypeSpec = TypeSpec {
    name: KEY_VAULT,
    credential_type: |c| {
        if cfg_str(c, "secretName2").is_some() {
            CredentialType::UsernamePassword
        } else {
            CredentialType::ApiKey
        }
    },
    secret_fields: &[],
    secret_destination: &[],
    required_secrets: &[],
    ro_fields: &[],
    lifetime: None,
    check: check_key_vault,
    complete: types::no_complete,
    compile: compile_key_vault,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(vault_name("my-vault1") && vault_name("abc"));
        assert!(!vault_name("ab") && !vault_name("1vault") && !vault_name("my--vault") && !vault_name("vault-"));
        assert!(!vault_name(&"a".repeat(25)));
        assert!(secret_name("db-password") && !secret_name("a/b") && !secret_name("") && !secret_name("a?b"));
        assert!(tenant_text("contoso.onmicrosoft.com") && !tenant_text("a/b") && !tenant_text(""));
    }
}
