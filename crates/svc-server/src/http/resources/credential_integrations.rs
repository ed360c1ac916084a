//! Credential provider integrations (contract §3.7, ext): the `CiB` administrator connection used by
//! `ciB-managed-account` providers and the `CloudBDirectoryFederation` connection used by
//! `cloudB-key-vault-value` providers. `personalAccessToken` is write-only. An integration that a
//! credential provider references cannot be deleted (§1.10 rule 4).

use serde_json::{Map, Value, json};
use svc_api::{FieldError, Obj};
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_json, parse_base};
use super::crud::{self, Resource};
use crate::app::App;
use crate::config::Config;
use crate::credential::cloudb::{tenant_text, vault_name};
use crate::credential::types::uuid_text;
use crate::domain::Meta;
use crate::domain::credential::{CredentialIntegration, CredentialProvider, SecretFields};
use crate::error::{Error, Result};
use crate::http::api::{Api, Untyped};
use crate::http::list::{Base, ListSpec, field_filter};
use crate::service::write::{Author, Write};
use crate::state::State as Snapshot;
const KINDS: &[&str] = &["CiB", "CloudBDirectoryFederation"];
const RO: &[&str] = &["tokenExpiration", "lastOperationTimestamp", "status", "errorMessage"];

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

/// Variant fields of a kind; `full` requires the required ones.
fn parse_variant(
    o: &mut Obj,
    kind: &str,
    full: bool,
    cfg: &Config,
) -> std::result::Result<(Map<String, Value>, Option<String>), FieldError> {
    let mut m = Map::new();
    let s = |o: &mut Obj, k: &str, max: usize| {
        if full {
            o.req_str_len(k, 1, max).map(Some)
        } else {
            o.opt_str_len(k, 1, max)
        }
    };
    let check =
        |o: &Obj, m: &mut Map<String, Value>, k: &str, v: Option<String>, ok: &dyn Fn(&str) -> bool, rule: &str| {
            if let Some(v) = v {
                if !ok(&v) {
                    return Err(FieldError::new(o.path(k), rule));
                }
                m.insert(k.to_string(), json!(v));
            }
            Ok(())
        };
    let mut secret = None;
    match kind {
        "CiB" => {
            let url = s(o, "url", 2048)?;
            check(
                o,
                &mut m,
                "url",
                url,
                &|u| cib_url(u, cfg),
                r"must match ^https://[a-zA-Z0-9\-.]+\.[a-zA-Z]{2,}(:\d+)?(/\S*)?$",
            )?;
            secret = o.opt_str("personalAccessToken")?.filter(|t| !t.is_empty());
            for k in ["userId", "topLevelGroupId"] {
                if let Some(v) = o.opt_str_len(k, 0, 256)? {
                    m.insert(k.into(), json!(v));
                }
            }
        }
        _ => {
            let v = s(o, "audience", 2048)?;
            check(
                o,
                &mut m,
                "audience",
                v,
                &|a| !a.chars().any(char::is_whitespace),
                r"must match ^\S+$",
            )?;
            let v = s(o, "subject", 2048)?;
            check(o, &mut m, "subject", v, &|_| true, "")?;
            let v = s(o, "cloudBTenant", 36)?;
            check(
                o,
                &mut m,
                "cloudBTenant",
                v,
                &|t| uuid_text(t) && tenant_text(t),
                "must be a UUID",
            )?;
            let v = s(o, "clientId", 36)?;
            check(o, &mut m, "clientId", v, &uuid_text, "must be a UUID")?;
            let v = s(o, "keyVaultName", 24)?;
            check(
                o,
                &mut m,
                "keyVaultName",
                v,
                &vault_name,
                "must match ^[a-zA-Z](?!.*--)[a-zA-Z0-9-]{1,22}[a-zA-Z0-9]$",
            )?;
            if let Some(b) = o.opt_bool("fetchSecretNames")? {
                m.insert("fetchSecretNames".into(), json!(b));
            }
        }
    }
    o.ignore(RO);
    Ok((m, secret))
}

pub struct Input {
    kind: Option<String>,
    config: Map<String, Value>,
    secret: Option<String>,
}

fn parse(body: Value, mode: Mode, stored_kind: Option<&str>, cfg: &Config) -> Result<(BaseInput, Input)> {
    let mut o = Obj::root(body)?;
    let base = parse_base(&mut o, mode, true)?;
    let kind = o.opt_str("type")?;
    o.ignore(super::common::BASE_RO);
    let k = match (mode, kind.as_deref(), stored_kind) {
        // §1.5: a discriminator cannot change; the stored one may be repeated (a GET sent back).
        (Mode::Patch, Some(k), Some(s)) if k != s => return Err(Error::field("type", "cannot be changed")),
        (Mode::Patch, _, Some(s)) => s.to_string(),
        (_, None, _) => return Err(Error::field("type", "is required")),
        (_, Some(k), _) if !KINDS.contains(&k) => {
            return Err(Error::field("type", format!("must be one of {}", KINDS.join(", "))));
        }
        (_, Some(k), Some(s)) if k != s => return Err(Error::field("type", "cannot be changed")),
        (_, Some(k), _) => k.to_string(),
    };
    let (config, secret) = if mode == Mode::Patch {
        (Map::new(), None)
    } else {
        parse_variant(&mut o, &k, true, cfg)?
    };
    o.finish()?;
    let input = Input {
        kind: Some(k),
        config,
        secret,
    };
    Ok((base, input))
}

fn to_json(i: &CredentialIntegration) -> Value {
    let mut o = Map::new();
    o.insert("type".into(), json!(i.int_type));
    o.extend(base_json(&i.meta, true));
    o.extend(i.config.clone());
    if i.int_type == "CiB" {
        o.insert("personalAccessToken".into(), Value::Null);
        for k in ["userId", "topLevelGroupId"] {
            o.entry(k).or_insert(Value::Null);
        }
    } else {
        o.entry("fetchSecretNames").or_insert(json!(false));
    }
    o.insert("tokenExpiration".into(), json!(i.token_expiration));
    o.insert("lastOperationTimestamp".into(), json!(i.last_operation));
    o.insert("status".into(), json!(i.status));
    o.insert("errorMessage".into(), json!(i.error_message));
    Value::Object(o)
}

impl Resource for CredentialIntegrations {
    type Record = CredentialIntegration;
    type Input = Input;
    type Dto = Untyped;
    type Patch = Untyped;
    const NAME: &'static str = "credential-provider integrations";
    const LIST: ListSpec = SPEC;
    // The variant's fields depend on the stored `type`.
    const PATCH_NEEDS_STORED: bool = true;

    fn parse(
        app: &App,
        body: Untyped,
        mode: Mode,
        stored: Option<&CredentialIntegration>,
    ) -> Result<(BaseInput, Input)> {
        parse(body.0, mode, stored.map(|i| i.int_type.as_str()), &app.cfg)
    }

    fn parse_patch(app: &App, body: Untyped, stored: Option<&CredentialIntegration>) -> Result<(BaseInput, Input)> {
        Self::parse(app, body, Mode::Patch, stored)
    }

    fn create(_: &mut Write<'_>, input: Input, meta: Meta) -> Result<CredentialIntegration> {
        let mut secrets = SecretFields::default();
        if let Some(t) = input.secret {
            secrets.set("personalAccessToken", t);
        }
        Ok(CredentialIntegration {
            meta,
            int_type: input.kind.unwrap_or_default(),
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
        if i.int_type == "CiB" && i.secrets.get("personalAccessToken").is_none() {
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

    fn render(_: &App, _: &Snapshot, i: &CredentialIntegration) -> Untyped {
        Untyped(to_json(i))
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
