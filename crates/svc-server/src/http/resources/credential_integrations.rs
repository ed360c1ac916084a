//! Credential provider integrations (contract §3.7, ext): the `CiB` administrator connection used by
//! `ciB-managed-account` providers and the `CloudBDirectoryFederation` connection used by
//! `cloudB-key-vault-value` providers. `personalAccessToken` is write-only. An integration that a
//! credential provider references cannot be deleted (§1.10 rule 4).

use serde_json::{Map, Value};
use svc_api::mgmt::{
    CiBCredentialProviderIntegrationDto, CloudBDirectoryFederationCredentialProviderIntegrationDto,
    CredentialProviderIntegrationCommon, CredentialProviderIntegrationDto, CredentialProviderIntegrationPatchDto,
};
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_dto, base_input, patch_input};
use super::crud::{self, Resource};
use crate::app::App;
use crate::config::Config;
use crate::credential::cloudb::{tenant_text, vault_name};
use crate::credential::types::uuid_text;
use crate::domain::Meta;
use crate::domain::credential::{CredentialIntegration, CredentialProvider, SecretFields};
use crate::error::{Error, Result};
use crate::http::api::Api;
use crate::http::list::{Base, ListSpec, field_filter};
use crate::service::write::{Author, Write};
use crate::state::State as Snapshot;
const CIB: &str = "CiB";
const CLOUD_B: &str = "CloudBDirectoryFederation";
const KINDS: &[&str] = &[CIB, CLOUD_B];

/// `/api/v1/credential-integrations` on the shared CRUD layer.
pub struct CredentialIntegrations;

pub fn register(api: &mut Api<'_>) {
    crud::register::<CredentialIntegrations>(api, "/api/v1/credential-integrations");
}

const SPEC: ListSpec = ListSpec::new("entities", Base::Scoped)
    .fields(&[
        "type",
        "status",
        "tokenExpiration",
        "lastOperationTimestamp",
        "errorMessage",
    ])
    .filters(&[field_filter("type")]);

/// The `CiB` URL rule, exactly the contract's pattern (§3.7)
/// `^https://[a-zA-Z0-9\-.]+\.[a-zA-Z]{2,}(:\d+)?(/\S*)?$` (so no user info, which would be
/// shown in every GET). A query or fragment matches the pattern and is accepted, though the API
/// calls append `/api/v4/…` to the URL (docs/API-CONVENTIONS.md). With
/// `SVC_ALLOW_INSECURE_UPSTREAM` the scheme may be `http` and, besides the pattern's hosts, an IP
/// literal or `localhost` is accepted (so loopback servers can be used); a bare name such as
/// `https://gitlab` still is not.
fn cib_url(s: &str, cfg: &Config) -> bool {
    if cfg.allow_insecure_upstream {
        return url::Url::parse(s).is_ok_and(|u| {
            let host_ok = match u.host() {
                Some(url::Host::Domain(d)) => d == "localhost" || tld_host(d),
                Some(url::Host::Ipv4(_) | url::Host::Ipv6(_)) => true,
                None => false,
            };
            matches!(u.scheme(), "http" | "https") && host_ok && u.username().is_empty() && u.password().is_none()
        });
    }
    let Some(rest) = s.strip_prefix("https://") else {
        return false;
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (authority, None),
    };
    tld_host(host)
        && port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && !path.chars().any(char::is_whitespace)
}

/// The pattern's host: `[a-zA-Z0-9\-.]+\.[a-zA-Z]{2,}`.
fn tld_host(host: &str) -> bool {
    let Some((_, tld)) = host.rsplit_once('.') else {
        return false;
    };
    host.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        && host.len() > tld.len() + 1
        && tld.len() >= 2
        && tld.bytes().all(|b| b.is_ascii_alphabetic())
}

/// `v` must pass `ok`, else `<field>: <rule>`.
fn checked(field: &str, v: String, ok: impl Fn(&str) -> bool, rule: &str) -> Result<Value> {
    if !ok(&v) {
        return Err(Error::field(field, rule));
    }
    Ok(Value::String(v))
}

pub struct Input {
    kind: &'static str,
    config: Map<String, Value>,
    secret: Option<String>,
}

/// The variant's fields as stored (`config`) and the new secret: the rules their schema cannot
/// state.
fn parse(dto: CredentialProviderIntegrationDto, cfg: &Config) -> Result<(BaseInput, Input)> {
    let mut m = Map::new();
    let (kind, common, secret) = match dto {
        CredentialProviderIntegrationDto::CiB(d) => {
            let url_rule = r"must match ^https://[a-zA-Z0-9\-.]+\.[a-zA-Z]{2,}(:\d+)?(/\S*)?$";
            m.insert("url".into(), checked("url", d.url, |u| cib_url(u, cfg), url_rule)?);
            for (k, v) in [("userId", d.user_id), ("topLevelGroupId", d.top_level_group_id)] {
                if let Some(v) = v {
                    m.insert(k.into(), Value::String(v));
                }
            }
            (CIB, d.common, d.personal_access_token.filter(|t| !t.is_empty()))
        }
        CredentialProviderIntegrationDto::CloudBDirectoryFederation(d) => {
            let no_space = |a: &str| !a.chars().any(char::is_whitespace);
            m.insert(
                "audience".into(),
                checked("audience", d.audience, no_space, r"must match ^\S+$")?,
            );
            m.insert("subject".into(), Value::String(d.subject));
            let tenant = |t: &str| uuid_text(t) && tenant_text(t);
            m.insert(
                "cloudBTenant".into(),
                checked("cloudBTenant", d.cloud_b_tenant, tenant, "must be a UUID")?,
            );
            m.insert(
                "clientId".into(),
                checked("clientId", d.client_id, uuid_text, "must be a UUID")?,
            );
            let vault_rule = "must match ^[a-zA-Z](?!.*--)[a-zA-Z0-9-]{1,22}[a-zA-Z0-9]$";
            m.insert(
                "keyVaultName".into(),
                checked("keyVaultName", d.key_vault_name, vault_name, vault_rule)?,
            );
            if let Some(b) = d.fetch_secret_names {
                m.insert("fetchSecretNames".into(), Value::Bool(b));
            }
            (CLOUD_B, d.common, None)
        }
    };
    let base = base_input(common.base, common.resource_set)?;
    let input = Input {
        kind,
        config: m,
        secret,
    };
    Ok((base, input))
}

fn text(i: &CredentialIntegration, k: &str) -> Option<String> {
    i.config.get(k).and_then(Value::as_str).map(str::to_string)
}

/// `CredentialProviderIntegrationDTO` (its variant), `personalAccessToken` `null`.
pub fn integration_dto(i: &CredentialIntegration) -> CredentialProviderIntegrationDto {
    let common = CredentialProviderIntegrationCommon {
        base: base_dto(&i.meta),
        resource_set: Some(i.meta.scope()),
        token_expiration: i.token_expiration,
        last_operation_timestamp: i.last_operation,
        status: i.status.clone(),
        error_message: i.error_message.clone(),
    };
    let t = |k: &str| text(i, k).unwrap_or_default();
    if i.int_type == CIB {
        CredentialProviderIntegrationDto::CiB(CiBCredentialProviderIntegrationDto {
            common,
            url: t("url"),
            personal_access_token: None,
            user_id: text(i, "userId"),
            top_level_group_id: text(i, "topLevelGroupId"),
        })
    } else {
        CredentialProviderIntegrationDto::CloudBDirectoryFederation(
            CloudBDirectoryFederationCredentialProviderIntegrationDto {
                common,
                audience: t("audience"),
                subject: t("subject"),
                cloud_b_tenant: t("cloudBTenant"),
                client_id: t("clientId"),
                key_vault_name: t("keyVaultName"),
                fetch_secret_names: Some(
                    i.config
                        .get("fetchSecretNames")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                ),
            },
        )
    }
}

impl Resource for CredentialIntegrations {
    type Record = CredentialIntegration;
    type Input = Input;
    type Dto = CredentialProviderIntegrationDto;
    type Patch = CredentialProviderIntegrationPatchDto;
    const NAME: &'static str = "credential-provider integrations";
    const LIST: ListSpec = SPEC;
    // The variant's fields depend on the stored `type`.
    const PATCH_NEEDS_STORED: bool = true;

    fn prepare(body: &mut Value, stored: Option<&CredentialIntegration>) -> Result<()> {
        crud::discriminator_kept(body, "type", stored.map(|s| s.int_type.as_str()), KINDS)
    }

    fn parse(
        app: &App,
        dto: CredentialProviderIntegrationDto,
        _: Mode,
        _: Option<&CredentialIntegration>,
    ) -> Result<(BaseInput, Input)> {
        parse(dto, &app.cfg)
    }

    fn parse_patch(
        _: &App,
        p: CredentialProviderIntegrationPatchDto,
        stored: Option<&CredentialIntegration>,
    ) -> Result<(BaseInput, Input)> {
        crud::discriminator_repeated("type", p.kind.as_deref(), stored.map(|s| s.int_type.as_str()))?;
        let base = BaseInput {
            resource_set: p.resource_set,
            ..patch_input(p.patch)?
        };
        let input = Input {
            kind: CIB,
            config: Map::new(),
            secret: None,
        };
        Ok((base, input))
    }

    fn create(_: &mut Write<'_>, input: Input, meta: Meta) -> Result<CredentialIntegration> {
        let mut secrets = SecretFields::default();
        if let Some(t) = input.secret {
            secrets.set("personalAccessToken", t);
        }
        Ok(CredentialIntegration {
            meta,
            int_type: input.kind.to_string(),
            config: input.config,
            token_expiration: None,
            last_operation: None,
            status: None,
            error_message: None,
            secrets,
        })
    }

    fn replace(_: &mut Write<'_>, input: Input, i: &mut CredentialIntegration) -> Result<()> {
        i.config = input.config;
        if let Some(t) = input.secret {
            i.secrets.set("personalAccessToken", t);
        }
        Ok(())
    }

    fn check(_: &Write<'_>, i: &CredentialIntegration) -> Result<()> {
        if i.int_type == CIB && i.secrets.get("personalAccessToken").is_none() {
            return Err(Error::field("personalAccessToken", "is required"));
        }
        Ok(())
    }

    /// An integration a credential provider references cannot be deleted (§1.10 rule 4).
    fn before_delete(w: &mut Write<'_>, _: &Author, _: Uuid, id: Uuid) -> Result<()> {
        let field = "credentialProviderIntegrationExternalId";
        let user =
            w.st.credential_providers
                .values()
                .find(|p: &&std::sync::Arc<CredentialProvider>| {
                    p.config.get(field).and_then(Value::as_str) == Some(id.to_string().as_str())
                });
        match user {
            Some(p) => Err(Error::bad(format!(
                "credentialProviders: referenced by credential provider {}",
                p.meta.named()
            ))),
            None => Ok(()),
        }
    }

    fn render(_: &App, _: &Snapshot, i: &CredentialIntegration) -> CredentialProviderIntegrationDto {
        integration_dto(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cib_urls() {
        let cfg = Config::from_map(&Default::default()).unwrap();
        for ok in [
            "https://gitlab.example.com",
            "https://gitlab.example.com:8443/gl/",
            // The pattern's `/\S*` takes a query and a fragment.
            "https://gitlab.example.com/gl?x=1",
            "https://gitlab.example.com/#f",
        ] {
            assert!(cib_url(ok, &cfg), "{ok}");
        }
        for bad in [
            "http://gitlab.example.com",
            "https://localhost",
            "https://10.0.0.1",
            "ftp://x.example",
            "https://a.b1",
            "https://user:pass@gitlab.example.com",
            "https://gitlab.example.com:/x",
            "https://gitlab.example.com:84a3",
            "https://.com",
            "https://gitlab.example.com/a b",
            "https://gitlab.example.com?x=1",
        ] {
            assert!(!cib_url(bad, &cfg), "{bad}");
        }
        let open = Config::from_map(&[("SVC_ALLOW_INSECURE_UPSTREAM".to_string(), "true".to_string())].into()).unwrap();
        assert!(cib_url("http://127.0.0.1:8080", &open));
        assert!(cib_url("http://localhost:8080/gitlab", &open));
        assert!(cib_url("http://[::1]:8080", &open));
        assert!(cib_url("http://gitlab.example.com", &open));
        assert!(!cib_url("https://gitlab", &open));
        assert!(!cib_url("https://gitlab.c0m", &open));
        assert!(!cib_url("http://u:p@127.0.0.1:8080", &open));
        assert!(cib_url("http://127.0.0.1:8080/?x=1", &open));
    }
}
