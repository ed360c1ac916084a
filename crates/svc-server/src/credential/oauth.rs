//! `oauth-client-credential` (RFC 6749 §4.4; contract §3.5.2, §5.3): the token endpoint's access
//! token for the configured client, with HTTP Basic (`authHeader`, default) or form (`postBody`)
//! client authentication, scopes and custom parameters.

use serde_json::Value;
use svc_api::FieldError;
use svc_api::edge::CredentialType;
use svc_api::mgmt::{CredentialStyle, CustomParameterDto, LiteralValueType, OAuthClientCredentialFields};

use super::types::{self, TypeSpec, cfg_str, check_url};
use super::upstream_call::{basic, oauth_credential, post_form};
use super::{Backend, IssueCx, IssueError, Issued};
use crate::config::Config;
use crate::credential::Lookup;
use crate::domain::Secret;
use crate::domain::credential::CredentialProvider;
use crate::error::Error;

/// Protocol parameters the service sets itself; a custom parameter cannot add a second value.
const RESERVED_PARAMETERS: &[&str] = &[
    "grant_type",
    "client_id",
    "client_secret",
    "client_assertion",
    "client_assertion_type",
    "scope",
    "code",
    "code_verifier",
    "code_challenge",
    "code_challenge_method",
    "redirect_uri",
    "refresh_token",
    "response_type",
    "state",
];

/// `CPTypeOAuth2CustomParameters[]`: no protocol parameter; `valueType` stored as `literal`.
pub fn check_custom_parameters(list: &mut Option<Vec<CustomParameterDto>>) -> Result<(), FieldError> {
    for (i, c) in list.iter_mut().flatten().enumerate() {
        if RESERVED_PARAMETERS.contains(&c.key.as_str()) {
            return Err(FieldError::new(
                format!("customParameters[{i}].key"),
                format!("{} is set by the service", c.key),
            ));
        }
        c.value_type = Some(LiteralValueType::Literal);
    }
    Ok(())
}

pub fn custom_parameters(v: Option<&Value>) -> Vec<(String, String)> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|c| {
                    Some((
                        c.get("key")?.as_str()?.to_string(),
                        c.get("value")?.as_str()?.to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

pub struct ClientCredentials {
    url: String,
    client_id: String,
    secret: Secret<String>,
    scope: Option<String>,
    params: Vec<(String, String)>,
    post_body: bool,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientCredentials({}, {}, secret ***)", self.url, self.client_id)
    }
}

impl ClientCredentials {
    pub async fn issue(&self, cx: &IssueCx<'_>) -> Result<Issued, IssueError> {
        let mut form: Vec<(&str, &str)> = vec![("grant_type", "client_credentials")];
        if let Some(s) = &self.scope {
            form.push(("scope", s));
        }
        for (k, v) in &self.params {
            form.push((k, v));
        }
        let auth = if self.post_body {
            form.push(("client_id", &self.client_id));
            form.push(("client_secret", self.secret.expose()));
            None
        } else {
            Some(basic(&self.client_id, self.secret.expose()))
        };
        let f = post_form(&cx.svc, &self.url, &form, auth.as_deref()).await?;
        oauth_credential("token endpoint", &f)
    }
}

pub fn check_fields(f: &mut OAuthClientCredentialFields) -> Result<(), FieldError> {
    check_custom_parameters(&mut f.custom_parameters)
}

fn check(p: &CredentialProvider, _: &dyn Lookup, cfg: &Config) -> Result<(), Error> {
    check_url("url", cfg_str(&p.config, "url").unwrap_or_default(), cfg)
}

/// Defaults and empty lists as the contract states them (§3.5.2, §1.1).
pub fn present(f: &mut OAuthClientCredentialFields) {
    f.custom_parameters.get_or_insert_with(Vec::new);
    f.credential_style.get_or_insert(CredentialStyle::AuthHeader);
}

fn compile(p: &CredentialProvider) -> Backend {
    let (Some(url), Some(client_id)) = (cfg_str(&p.config, "url"), cfg_str(&p.config, "clientID")) else {
        return Backend::Broken("url or clientID missing".into());
    };
    Backend::OAuthClientCredentials(ClientCredentials {
        url: url.to_string(),
        client_id: client_id.to_string(),
        secret: Secret::new(p.secrets.get("clientSecret").unwrap_or_default().to_string()),
        scope: cfg_str(&p.config, "scope")
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        params: custom_parameters(p.config.get("customParameters")),
        post_body: cfg_str(&p.config, "credentialStyle") == Some("postBody"),
    })
}

pub const SPEC: TypeSpec = TypeSpec {
    name: "oauth-client-credential",
    credential_type: |_| CredentialType::OAuthToken,
    secret_fields: &["clientSecret"],
    secret_destination: &["url"],
    required_secrets: &[],
    ro_fields: &[],
    lifetime: None,
    check,
    complete: types::no_complete,
    compile,
};
