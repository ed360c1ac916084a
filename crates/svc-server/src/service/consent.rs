//! The consent of an `oauth-authorization-code` credential provider (contract §3.5.4), a
//! management use case: `…/authorize` stores a single-use `state` and answers the authorization
//! server's URL; the public callback spends the `state`, exchanges the code and stores the tokens
//! in a write of the service's own, audited as `Authorized`.

use serde_json::{Value, json};
use uuid::Uuid;

use crate::app::App;
use crate::credential::authorization_code::{STATE_PURPOSE, callback_url, endpoint, store_tokens};
use crate::credential::oauth::custom_parameters;
use crate::credential::types::cfg_str;
use crate::credential::upstream_call::{access_token, basic, post_form};
use crate::domain::credential::CredentialProvider;
use crate::error::Error;
use crate::service::write::{Author, Write};

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
    crate::service::pending::put(app, &state, STATE_PURPOSE, &data, expires).await?;
    Ok(url.to_string())
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
    let data = crate::service::pending::take(app, state, STATE_PURPOSE, crate::clock::now_millis())
        .await?
        .ok_or_else(|| Error::field("state", "unknown or expired"))?;
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
    let up = app.upstream_for(p.meta.scope());
    let f = post_form(
        &app.services_via(&up),
        ep.token_url,
        &form,
        Some(&basic(ep.client_id, ep.secret)),
    )
    .await
    .map_err(|e| Error::bad(format!("Authorization failed: {}", e.told())))?;
    let (access, expires_in, answer) =
        access_token("token endpoint", &f).map_err(|e| Error::bad(format!("Authorization failed: {}", e.told())))?;
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
    // A management write like any other (§1.3: `modifiedAt` updated by every write).
    w.touch_meta(&mut p.meta, &author);
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
