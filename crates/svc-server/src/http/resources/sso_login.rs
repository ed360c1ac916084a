//! SSO sign-in routes (contract §2.3, public): `GET /api/v1/sso/providers` lists the identity
//! providers a sign-in page offers (names only), `GET /api/v1/sso/login/{idpId}` redirects to the
//! identity provider, `GET /api/v1/sso/callback` completes the sign-in (service/sso.rs).

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::app::App;
use crate::error::{Error, Result};
use crate::http::extract::{Client, Ids, QueryPairs};

pub fn routes() -> Router<App> {
    Router::new()
        .route("/api/v1/sso/providers", get(providers))
        .route("/api/v1/sso/login/{idpId}", get(login))
        .route("/api/v1/sso/callback", get(callback))
}

/// The identity providers users may sign in through (§2.3: active, `OIDCv1`, `userAccessEnabled`),
/// by name, for a sign-in page's buttons; public, since nobody is signed in yet. Only `externalId`
/// and `name`: nothing of the configuration (docs/API-CONVENTIONS.md).
async fn providers(State(app): State<App>) -> Response {
    let st = app.state();
    let mut list: Vec<_> = st.sso_idps.values().filter(|i| i.offers_sign_in()).collect();
    list.sort_by_key(|a| (a.meta.name.to_lowercase(), a.meta.id));
    let providers: Vec<_> = list
        .iter()
        .map(|i| serde_json::json!({"externalId": i.meta.id, "name": i.meta.name}))
        .collect();
    let mut r = crate::http::ok(serde_json::json!({ "providers": providers }));
    r.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    r
}

async fn login(State(app): State<App>, ids: Ids) -> Result<Response> {
    let url = crate::service::sso::start(&app, ids.one()).await?;
    let mut r = StatusCode::FOUND.into_response();
    let v = axum::http::HeaderValue::from_str(&url).map_err(Error::internal)?;
    r.headers_mut().insert(axum::http::header::LOCATION, v);
    r.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    Ok(r)
}

async fn callback(State(app): State<App>, Client(client): Client, q: QueryPairs) -> Result<Response> {
    let get = |k: &str| q.get(k).map(str::to_string);
    let resp = crate::service::sso::callback(&app, get("code"), get("state"), get("error"), &client).await?;
    Ok(crate::http::ok(serde_json::to_value(resp).map_err(Error::internal)?))
}
