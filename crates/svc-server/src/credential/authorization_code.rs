//! `oauth-authorization-code` (contract §3.5.2, §3.5.4): an administrator consents once through
//! `…/authorize` (302 to the authorization server, PKCE when required); the public callback exchanges
//! the code and stores the tokens (write-only, sealed). At issuance the stored access token is reused
//! while it has at least 60 s left; otherwise the refresh token gets a new one, and a rotated
//! refresh token is persisted at once. Before consent, or after `lifetimeExpiration`, there is no
//! credential to give (200 `Unknown`).

use serde_json::{Map, Value, json};
use svc_api::edge::{CredentialType, EdgeCredentials};
use svc_api::{FieldError, Obj, Timestamp};
use uuid::Uuid;

use super::oauth::{custom_parameters, parse_custom_parameters};
use super::types::{Mode, TypeSpec, cfg_str, check_url, field_str, put};
use super::upstream_call::{access_token, basic, post_form};
use super::{Backend, IssueCx, IssueError, Issued};
use crate::app::App;
use crate::config::Config;
use crate::domain::credential::CredentialProvider;
use crate::error::Error;
use crate::service::write::{Author, Write};
use crate::state::State;

pub const TYPE: &str = "oauth-authorization-code";
pub const STATE_PURPOSE: &str = "oauth-authorization-code";
const REUSE_MARGIN_MS: i64 = 60_000;

#[derive(Debug)]
pub struct AuthorizationCode {
    id: Uuid,
}

/// The token-endpoint settings of a stored provider.
struct Endpoint<'a> {
    token_url: &'a str,
    client_id: &'a str,
    secret: &'a str,
}

fn endpoint(p: &CredentialProvider) -> Option<Endpoint<'_>> {
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
fn store_tokens(p: &mut CredentialProvider, answer: &Value, access: &str, expires_in: Option<i64>, now: Timestamp) {
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
        let lookup = |st: &State| st.credential_providers.get(&self.id).cloned();
        let current = lookup(&cx.app.state()).ok_or_else(|| IssueError("provider no longer exists".into()))?;
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
        let _g = super::renewal_lock(cx.app, self.id).await?;
        let current = lookup(&cx.app.state()).ok_or_else(|| IssueError("provider no longer exists".into()))?;
        if let Some((token, exp)) = stored_access(&current, crate::clock::now_millis()) {
            return Ok(credential(token, exp));
        }
        let ep = endpoint(&current).ok_or_else(|| IssueError("provider configuration incomplete".into()))?;
        let refresh = current.secrets.get("refreshToken").unwrap_or_default().to_string();
        let f = post_form(
            cx.app,
            ep.token_url,
            &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
            Some(&basic(ep.client_id, ep.secret)),
        )
        .await?;
        let (access, expires_in, answer) = access_token("token endpoint (refresh)", &f)?;
        let mut w = Write::begin_system(cx.app)
            .await
            .map_err(|e| IssueError(format!("storing the refreshed token failed: {e}")))?;
        let Some(latest) = w.st.credential_providers.get(&self.id).cloned() else {
            return Err(IssueError("provider no longer exists".into()));
        };
        let mut p = (*latest).clone();
        let now = crate::clock::now();
        store_tokens(&mut p, &answer, &access, expires_in, now);
        let exp = expires_in.map(|s| now.plus_secs(s));
        w.put(p);
        w.commit()
            .await
            .map_err(|e| IssueError(format!("storing the refreshed token failed: {e}")))?;
        Ok(credential(access, exp))
    }
}

/// The `authorize` redirect (§3.5.4 step 1): the URL, after storing the single-use state.
pub async fn authorize_url(app: &App, p: &CredentialProvider, author: &Author) -> Result<String, Error> {
    let auth_url =
        cfg_str(&p.config, "authorizationUrl").ok_or_else(|| Error::field("authorizationUrl", "is required"))?;
    let mut url = url::Url::parse(auth_url).map_err(|_| Error::field("authorizationUrl", "is not a URL"))?;
    let state = crate::crypto::random_token();
    let pkce = p.config.get("isPkceRequired") == Some(&Value::Bool(true));
    let verifier = pkce.then(crate::crypto::random_token);
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code");
        q.append_pair("client_id", cfg_str(&p.config, "clientID").unwrap_or_default());
        q.append_pair("redirect_uri", &callback_url(&app.cfg, p.meta.id));
        if let Some(s) = cfg_str(&p.config, "scope").filter(|s| !s.is_empty()) {
            q.append_pair("scope", s);
        }
        q.append_pair("state", &state);
        for (k, v) in custom_parameters(p.config.get("customParameters")) {
            q.append_pair(&k, &v);
        }
        if let Some(v) = &verifier {
            q.append_pair(
                "code_challenge",
                &crate::crypto::b64url(&crate::crypto::sha256(v.as_bytes())),
            );
            q.append_pair("code_challenge_method", "S256");
        }
    }
    let (email, name) = match &author.actor {
        crate::domain::Actor::User {
            email,
            display_name,
            id,
        } => (Some(email.clone()), Some((id.to_string(), display_name.clone()))),
        _ => (None, None),
    };
    let data = json!({"cp": p.meta.id, "verifier": verifier, "email": email, "user": name.map(|(id, n)| json!({"id": id, "name": n}))});
    let expires = crate::clock::now_millis() + 10 * 60 * 1000;
    app.store
        .put_pending(&state, STATE_PURPOSE, &data.to_string(), expires)
        .await?;
    Ok(url.to_string())
}

pub fn callback_url(cfg: &Config, id: Uuid) -> String {
    format!("{}/api/v1/credential-providers/{id}/callback", cfg.public_url)
}

/// The callback (§3.5.4 step 2): exchanges the code and stores the tokens. Returns the provider's
/// `finalCallbackUrl`, if any.
/// The IdP answered the consent with an `error`: the `state` is spent all the same (single use,
/// §3.5.4), so a later callback cannot complete that authorization.
pub async fn abandon_authorization(app: &App, id: Uuid, state: &str) -> Result<(), Error> {
    take_state(app, id, state).await.map(|_| ())
}

/// Spends a consent `state` (single use) and returns what was stored with it, if it exists,
/// has not expired and was issued for provider `id`.
async fn take_state(app: &App, id: Uuid, state: &str) -> Result<Value, Error> {
    let data = app
        .store
        .take_pending(state, STATE_PURPOSE, crate::clock::now_millis())
        .await?
        .ok_or_else(|| Error::field("state", "unknown or expired"))?;
    let data: Value = serde_json::from_str(&data).map_err(Error::internal)?;
    if data.get("cp").and_then(Value::as_str) != Some(id.to_string().as_str()) {
        return Err(Error::field("state", "belongs to another provider"));
    }
    Ok(data)
}

pub async fn complete_authorization(
    app: &App,
    id: Uuid,
    code: &str,
    state: &str,
    client: crate::events::audit::ClientInfo,
) -> Result<Option<String>, Error> {
    let data = take_state(app, id, state).await?;
    let p = app
        .state()
        .credential_providers
        .get(&id)
        .cloned()
        .ok_or(Error::NotFound)?;
    let ep = endpoint(&p).ok_or_else(|| Error::bad("provider configuration incomplete"))?;
    let redirect = callback_url(&app.cfg, id);
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", redirect.as_str()),
    ];
    let verifier = data.get("verifier").and_then(Value::as_str).map(str::to_string);
    if let Some(v) = &verifier {
        form.push(("code_verifier", v));
    }
    let f = post_form(app, ep.token_url, &form, Some(&basic(ep.client_id, ep.secret)))
        .await
        .map_err(|e| Error::bad(format!("Authorization failed: {}", e.0)))?;
    let (access, expires_in, answer) =
        access_token("token endpoint", &f).map_err(|e| Error::bad(format!("Authorization failed: {}", e.0)))?;
    let actor = match (data.get("email").and_then(Value::as_str), data.get("user")) {
        (Some(email), Some(u)) => crate::domain::Actor::User {
            id: u
                .get("id")
                .and_then(Value::as_str)
                .and_then(|s| Uuid::parse_str(s).ok())
                .unwrap_or_default(),
            email: email.to_string(),
            display_name: u.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
        },
        _ => crate::domain::Actor::System,
    };
    let author = Author { actor, client };
    let mut w = Write::begin_system(app).await?;
    let mut p = (**w.st.credential_providers.get(&id).ok_or(Error::NotFound)?).clone();
    let now = w.now;
    store_tokens(&mut p, &answer, &access, expires_in, now);
    p.lifetime_expiration = Some(now.plus_secs(p.lifetime_time_span_seconds as i64));
    let rs = p.meta.scope();
    let final_url = cfg_str(&p.config, "finalCallbackUrl").map(str::to_string);
    w.put(p);
    w.audit(
        &author,
        rs,
        "CredentialProviders",
        crate::events::audit::Activity::Authorized,
        id,
    );
    w.commit().await?;
    Ok(final_url)
}

fn parse(o: &mut Obj, mode: Mode) -> Result<Map<String, Value>, FieldError> {
    let mut m = Map::new();
    put(&mut m, "clientID", field_str(o, mode, "clientID", 1, 1024)?);
    put(&mut m, "scope", o.opt_str_len("scope", 0, 4096)?);
    if let Some(p) = parse_custom_parameters(o)? {
        m.insert("customParameters".into(), p);
    }
    for k in ["oAuthUrl", "authorizationUrl", "tokenUrl"] {
        put(&mut m, k, field_str(o, mode, k, 1, 2048)?);
    }
    put(&mut m, "introspectionUrl", o.opt_str_len("introspectionUrl", 0, 2048)?);
    put(&mut m, "isPkceRequired", o.opt_bool("isPkceRequired")?);
    put(&mut m, "finalCallbackUrl", o.opt_str_len("finalCallbackUrl", 0, 2048)?);
    Ok(m)
}

fn check(p: &CredentialProvider, _: &State, cfg: &Config) -> Result<(), Error> {
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

fn present(p: &CredentialProvider, cfg: &Config, out: &mut Map<String, Value>) {
    out.remove("accessTokenExpiresAt");
    out.remove("accessTokenExpiryStated");
    out.insert("callBackUrl".into(), json!(callback_url(cfg, p.meta.id)));
    out.insert(
        "userAuthorizationUrl".into(),
        json!(format!(
            "{}/api/v2/credential-providers/{}/authorize",
            cfg.public_url, p.meta.id
        )),
    );
    out.insert("state".into(), Value::Null);
    out.entry("isPkceRequired").or_insert(Value::Bool(false));
    for k in ["scope", "introspectionUrl", "finalCallbackUrl"] {
        out.entry(k).or_insert(Value::Null);
    }
    // An empty list is `[]` (§1.1).
    out.entry("customParameters").or_insert(Value::Array(vec![]));
}

fn compile(p: &CredentialProvider) -> Backend {
    Backend::AuthorizationCode(AuthorizationCode { id: p.meta.id })
}

pub const SPEC: TypeSpec = TypeSpec {
    name: TYPE,
    credential_type: |_| CredentialType::OAuthToken,
    secret_fields: &["clientSecret"],
    required_secrets: &[],
    ro_fields: &["callBackUrl", "userAuthorizationUrl", "state"],
    lifetime: Some((86400, i32::MAX, 2_592_000)),
    parse,
    check,
    complete: super::types::no_complete,
    present,
    compile,
};
