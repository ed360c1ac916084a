//! SSO sign-in routes (contract §2.3, public): `GET /api/v1/sso/providers` lists the identity
//! providers a sign-in page offers (names only), `GET /api/v1/sso/login/{idpId}` redirects to the
//! identity provider, `GET /api/v1/sso/callback` completes the sign-in, and
//! `POST /api/v1/sso/exchange` turns a completed sign-in's code into a token (the console's
//! flow, or a TOTP code owed: docs/sso.md). Every answer that carries a token or a code is
//! `Cache-Control: no-store`.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use svc_api::mgmt::{LoginResponseDto, SsoExchangeDto, SsoProviderDto, SsoProviderListDto, SsoTotpRequiredDto};

use crate::app::App;
use crate::error::{Error, Result};
use crate::http::api::{Api, Op, Query};
use crate::http::extract::{Client, Ids, JsonBody, QueryPairs};
use crate::http::resources::crud::to_json;
use crate::service::sso::{BINDING_COOKIE, CONSOLE_RETURN, Finished, Return};

pub fn register(api: &mut Api<'_>) {
    api.public("/api/v1/sso/providers").get(
        providers,
        Op::new("The identity providers a sign-in page offers, by name (ext)").ok::<SsoProviderListDto>(200),
    );
    api.public("/api/v1/sso/login/{idpId}")
        .get(login, Op::new("Start SSO sign-in (§2.3)").redirect().errors(&[429]));
    api.public("/api/v1/sso/callback").get(
        callback,
        Op::new("Finish SSO sign-in (§2.3)")
            .query(Query::Callback)
            .ok::<LoginResponseDto>(200)
            .ok::<SsoTotpRequiredDto>(401)
            .redirect()
            .errors(&[401, 429]),
    );
    api.public("/api/v1/sso/exchange").post(
        exchange,
        Op::new("Exchange a completed SSO sign-in's code (and a TOTP code it owes) for a token")
            .body::<SsoExchangeDto>()
            .ok::<LoginResponseDto>(200)
            .errors(&[401, 429]),
    );
}

/// The identity providers users may sign in through (§2.3: active, `OIDCv1`, `userAccessEnabled`),
/// by name, for a sign-in page's buttons; public, since nobody is signed in yet. Only `externalId`
/// and `name`: nothing of the configuration (docs/API-CONVENTIONS.md).
async fn providers(State(app): State<App>) -> Response {
    let st = app.state();
    let mut list: Vec<_> = st.sso_idps.values().filter(|i| i.offers_sign_in()).collect();
    list.sort_by_key(|a| (a.meta.name.to_lowercase(), a.meta.id));
    let providers = list
        .iter()
        .map(|i| SsoProviderDto {
            external_id: i.meta.id,
            name: i.meta.name.clone(),
        })
        .collect();
    let mut r = crate::http::ok(to_json(&SsoProviderListDto { providers }));
    r.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    r
}

/// An answer no cache may keep (a bearer token, a one-time code, a redirect carrying one).
fn no_store(mut r: Response) -> Response {
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn found(location: &str) -> Result<Response> {
    let mut r = StatusCode::FOUND.into_response();
    let v = HeaderValue::from_str(location).map_err(Error::internal)?;
    r.headers_mut().insert(header::LOCATION, v);
    Ok(no_store(r))
}

/// `?redirect=console`: the sign-in ends in the console (any other value is refused: the return
/// is never a URL the caller names), bound to this browser by a cookie (`BINDING_COOKIE`).
async fn login(State(app): State<App>, Client(client): Client, ids: Ids, q: QueryPairs) -> Result<Response> {
    let ret = match q.get("redirect") {
        None => Return::Api,
        Some("console") => Return::Console,
        Some(_) => return Err(Error::field("redirect", "must be console")),
    };
    let binding = (ret == Return::Console).then(crate::crypto::random_token);
    let url = crate::service::sso::start(&app, ids.one(), ret, &client, binding.as_deref()).await?;
    let mut r = found(&url)?;
    if let Some(b) = binding {
        set_binding(&app, &mut r, &b, 600)?;
    }
    Ok(r)
}

/// Sets (or, with `max_age` 0, clears) the browser binding of a console sign-in: HttpOnly, only
/// for the SSO routes, sent on the identity provider's redirect back (`SameSite=Lax`), `Secure`
/// when the service is reached over https.
fn set_binding(app: &App, r: &mut Response, value: &str, max_age: u32) -> Result<()> {
    let secure = if app.cfg.public_url.starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    let cookie =
        format!("{BINDING_COOKIE}={value}; Path=/api/v1/sso; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}");
    let v = HeaderValue::from_str(&cookie).map_err(Error::internal)?;
    r.headers_mut().append(header::SET_COOKIE, v);
    Ok(())
}

/// The request's `BINDING_COOKIE`, if it sent one.
fn binding_of(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == BINDING_COOKIE)
        .map(|(_, v)| v)
}

fn fragment(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

async fn callback(
    State(app): State<App>,
    Client(client): Client,
    headers: HeaderMap,
    q: QueryPairs,
) -> Result<Response> {
    let get = |k: &str| q.get(k).map(str::to_string);
    let binding = binding_of(&headers);
    let done = crate::service::sso::callback(&app, get("code"), get("state"), get("error"), &client, binding).await?;
    match (done.ret, done.result) {
        (Return::Api, Ok(Finished::Token(t))) => Ok(no_store(crate::http::ok(to_json(&t)))),
        // The API's caller owes a TOTP code: the code to exchange with it.
        (Return::Api, Ok(Finished::Code { code, .. })) => {
            let body = SsoTotpRequiredDto {
                success: false,
                message: Some(crate::service::login::TOTP_REQUIRED.to_string()),
                id: 0,
                sso_code: code,
            };
            Ok(no_store((StatusCode::UNAUTHORIZED, axum::Json(body)).into_response()))
        }
        (Return::Api, Err(e)) => Err(e),
        (Return::Console, Ok(Finished::Code { code, .. })) => {
            found(&format!("{CONSOLE_RETURN}#sso-code={}", fragment(&code)))
        }
        (Return::Console, Ok(Finished::Token(_))) => Err(Error::internal("a console sign-in minted a token")),
        (Return::Console, Err(e)) => {
            let message = crate::http::error::public_message(&e);
            found(&format!("{CONSOLE_RETURN}#sso-error={}", fragment(&message)))
        }
    }
}

async fn exchange(
    State(app): State<App>,
    Client(client): Client,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Result<Response> {
    let req: SsoExchangeDto = svc_api::schema::read(body)?;
    let binding = binding_of(&headers);
    let t = crate::service::sso::exchange_code(&app, req, &client, binding).await?;
    let mut r = no_store(crate::http::ok(to_json(&t)));
    if binding.is_some() {
        set_binding(&app, &mut r, "", 0)?;
    }
    Ok(r)
}
