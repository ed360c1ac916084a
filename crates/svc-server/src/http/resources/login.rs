//! `POST /api/v1/login` (contract §2.2): public password sign-in.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;

use crate::app::App;
use crate::error::Result;
use crate::http::extract::{Client, JsonBody};

pub fn routes() -> Router<App> {
    Router::new().route("/api/v1/login", post(login))
}

async fn login(State(app): State<App>, Client(client): Client, JsonBody(body): JsonBody) -> Result<Response> {
    let resp = crate::service::login::login(&app, body, &client).await?;
    Ok(crate::http::ok(
        serde_json::to_value(resp).map_err(crate::error::Error::internal)?,
    ))
}
