//! `oauth-authorization-code` (contract §3.5.2, §3.5.4): an administrator consents once through
//! `…/authorize` (302 to the authorization server, PKCE when required); the public callback exchanges
//! the code and stores the tokens (write-only, sealed). At issuance the stored access token is reused
//! while it has at least 60 s left; otherwise the refresh token gets a new one, and a rotated
//! refresh token is persisted at once. Before consent, or after `lifetimeExpiration`, there is no
//! credential to give (200 `Unknown`).

use serde_json::{Value, json};
use svc_api::edge::{CredentialType, EdgeCredentials};
use svc_api::mgmt::OAuthAuthorizationCodeFields;
use svc_api::{FieldError, Timestamp};
use uuid::Uuid;

use super::oauth::check_custom_parameters;
use super::types::{TypeSpec, cfg_str, check_url};
use super::upstream_call::{access_token, basic, post_form};
use super::{Backend, IssueCx, IssueError, Issued};
use crate::config::Config;
use crate::credential::Lookup;
use crate::domain::credential::CredentialProvider;
use crate::error::Error;

pub const TYPE: &str = "oauth-authorization-code";
pub const STATE_PURPOSE: &str = "oauth-authorization-code";
const REUSE_MARGIN_MS: i64 = 60_000;

#[derive(Debug)]
pub struct AuthorizationCode {
    id: Uuid,
}

/// The token-endpoint settings of a stored provider.
pub(crate) struct Endpoint<'a> {
    pub token_url: &'a str,
    pub client_id: &'a str,
    pub secret: &'a str,
}

pub(crate) fn endpoint(p: &CredentialProvider) -> Option<Endpoint<'_>> {
    Some(Endpoint {
        token_url: cfg_str(&p.config, "tokenUrl")?,
        client_id: cfg_str(&p.config, "clientID")?,
        secret: p.secrets.get("clientSecret").unwrap_or_default(),
    })
}

/// The stored access token while it is reusable, with its stated expiry (`None` when the token
/// endpoint stated none: it is then reused for an assumed hour but reported without expiry).
fn stored_access(p: &CredentialProvider, now: i64) -> Option<(String, Option<Timestamp>)> {
    let exp = p.config.get("accessTokenExpiresAt").and_then(Value::as_i64)?;
    let token = p.secrets.get("accessToken")?;
    let stated = p.config.get("accessTokenExpiryStated") != Some(&Value::Bool(false));
    (exp - REUSE_MARGIN_MS > now).then(|| (token.to_string(), stated.then_some(Timestamp(exp))))
}

fn credential(token: String, exp: Option<Timestamp>) -> Issued {
    Issued::Credential {
        credential_type: CredentialType::OAuthToken,
        data: EdgeCredentials(vec![("token", Some(token))]),
        expires_at: exp,
    }
}

/// Stores a token answer on the provider: access token, its expiry, and a rotated refresh token.
pub(crate) fn store_tokens(
    p: &mut CredentialProvider,
    answer: &Value,
    access: &str,
    expires_in: Option<i64>,
    now: Timestamp,
) {
    p.secrets.set("accessToken", access.to_string());
    let exp = now.plus_secs(expires_in.unwrap_or(3600));
    p.config.insert("accessTokenExpiresAt".into(), json!(exp.millis()));
    p.config
        .insert("accessTokenExpiryStated".into(), json!(expires_in.is_some()));
    if let Some(rt) = answer
        .get("refresh_token")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
    {
        p.secrets.set("refreshToken", rt.to_string());
    }
}

impl AuthorizationCode {
    pub async fn issue(&self, cx: &IssueCx<'_>) -> Result<Issued, IssueError> {
        let now = crate::clock::now_millis();
        let lookup = |st: std::sync::Arc<dyn Lookup>| st.credential_provider(&self.id).cloned();
        let current = lookup(cx.svc.renewals.current()).ok_or_else(|| IssueError::new("provider no longer exists"))?;
        if current.lifetime_expiration.is_some_and(|e| e.millis() <= now) {
            return Ok(Issued::Nothing("the authorization has expired: authorize again".into()));
        }
        if let Some((token, exp)) = stored_access(&current, now) {
            return Ok(credential(token, exp));
        }
        if current.secrets.get("refreshToken").is_none() {
            return Ok(Issued::Nothing(
                "not authorized yet: an administrator must complete …/authorize".into(),
            ));
        }
        // One refresh at a time: a rotated refresh token must not be spent twice.
        let _g = cx.svc.renewals.lock(self.id).await?;
        let current = lookup(cx.svc.renewals.current()).ok_or_else(|| IssueError::new("provider no longer exists"))?;
        if let Some((token, exp)) = stored_access(&current, crate::clock::now_millis()) {
            return Ok(credential(token, exp));
        }
        let ep = endpoint(&current).ok_or_else(|| IssueError::new("provider configuration incomplete"))?;
        let refresh = current.secrets.get("refreshToken").unwrap_or_default().to_string();
        let f = post_form(
            &cx.svc,
            ep.token_url,
            &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
            Some(&basic(ep.client_id, ep.secret)),
        )
        .await?;
        let (access, expires_in, answer) = access_token("token endpoint (refresh)", &f)?;
        let now = crate::clock::now();
        let (stored_access, stored_answer) = (access.clone(), answer.clone());
        cx.svc
            .renewals
            .update(
                self.id,
                Box::new(move |p| store_tokens(p, &stored_answer, &stored_access, expires_in, now)),
            )
            .await?;
        let exp = expires_in.map(|s| now.plus_secs(s));
        Ok(credential(access, exp))
    }
}

pub fn callback_url(cfg: &Config, id: Uuid) -> String {
    format!("{}/api/v1/credential-providers/{id}/callback", cfg.public_url)
}

pub fn check_fields(f: &mut OAuthAuthorizationCodeFields) -> Result<(), FieldError> {
    check_custom_parameters(&mut f.custom_parameters)
}

fn check(p: &CredentialProvider, _: &dyn Lookup, cfg: &Config) -> Result<(), Error> {
    for k in ["authorizationUrl", "tokenUrl"] {
        check_url(k, cfg_str(&p.config, k).unwrap_or_default(), cfg)?;
    }
    if let Some(u) = cfg_str(&p.config, "finalCallbackUrl").filter(|u| !u.is_empty())
        && url::Url::parse(u).map(|u| matches!(u.scheme(), "https" | "http")) != Ok(true)
    {
        return Err(Error::field("finalCallbackUrl", "must be an absolute http(s) URL"));
    }
    Ok(())
}

/// The URLs of the consent, and the defaults (§3.5.2; an empty list is `[]`, §1.1).
pub fn present(f: &mut OAuthAuthorizationCodeFields, p: &CredentialProvider, cfg: &Config) {
    f.call_back_url = Some(callback_url(cfg, p.meta.id));
    f.user_authorization_url = Some(format!(
        "{}/api/v2/credential-providers/{}/authorize",
        cfg.public_url, p.meta.id
    ));
    f.state = None;
    f.is_pkce_required.get_or_insert(false);
    f.custom_parameters.get_or_insert_with(Vec::new);
}

fn compile(p: &CredentialProvider) -> Backend {
    Backend::AuthorizationCode(AuthorizationCode { id: p.meta.id })
}

pub const SPEC: TypeSpec = TypeSpec {
    name: TYPE,
    credential_type: |_| CredentialType::OAuthToken,
    secret_fields: &["clientSecret"],
    secret_destination: &["tokenUrl"],
    required_secrets: &[],
    ro_fields: &["callBackUrl", "userAuthorizationUrl", "state"],
    lifetime: Some((86400, i32::MAX, 2_592_000)),
    check,
    complete: super::types::no_complete,
    compile,
};
