//! `POST /api/v1/login` (contract §2.2): public password sign-in.

use axum::extract::State;
use axum::response::Response;

use crate::app::App;
use crate::error::Result;
use crate::http::api::{Api, Op, Untyped};
use crate::http::extract::{Client, JsonBody};

pub fn register(api: &mut Api<'_>) {
    api.public("/api/v1/login").post(
        login,
        Op::new("Sign in with e-mail and password (§2.2)")
            .body::<Untyped>()
            .ok::<Untyped>(200)
            .errors(&[401, 403, 429, 503]),
    );
}

async fn login(State(app): State<App>, Client(client): Client, JsonBody(body): JsonBody) -> Result<Response> {
    let resp = crate::service::login::login(&app, body, &client).await?;
    Ok(crate::http::ok(
        serde_json::to_value(resp).map_err(crate::error::Error::internal)?,
    ))
}
