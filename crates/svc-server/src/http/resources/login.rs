//! `POST /api/v1/login` (contract §2.2): public password sign-in.

use axum::extract::State;
use axum::response::Response;

use crate::app::App;
use crate::error::Result;
use svc_api::mgmt::{LoginRequestDto, LoginResponseDto};

use crate::http::api::{Api, Op};
use crate::http::extract::{Client, JsonBody};

pub fn register(api: &mut Api<'_>) {
    api.public("/api/v1/login").post(
        login,
        Op::new("Sign in with e-mail and password (§2.2)")
            .body::<LoginRequestDto>()
            .ok::<LoginResponseDto>(200)
            .errors(&[401, 403, 429, 503]),
    );
}

async fn login(State(app): State<App>, Client(client): Client, JsonBody(body): JsonBody) -> Result<Response> {
    let req: LoginRequestDto = svc_api::schema::read(body)?;
    let resp = crate::service::login::login(&app, req, &client).await?;
    Ok(crate::http::ok(super::crud::to_json(&resp)))
}
