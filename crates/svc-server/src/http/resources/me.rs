//! The signed-in user's own routes: TOTP enrolment (contract §2.4, `POST /api/v1/me/totp` and
//! `POST /api/v1/me/totp/{id}/verify`) and sign-out (`POST /api/v1/me/sign-out`, ext,
//! docs/API-CONVENTIONS.md). Workload and CLI tokens are refused (403).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use svc_api::mgmt::{TotpEnrolmentDto, TotpVerificationDto};

use crate::app::App;
use crate::crypto::totp;
use crate::domain::records::{TotpSeed, UserToken};
use crate::domain::{DEFAULT_RESOURCE_SET, Perm, Secret};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::api::{Api, Op};
use crate::http::extract::{Ids, JsonBody};
use crate::http::guard::{Ctx, Scope};
use crate::http::resources::crud::to_json;
use crate::service::write::Write;
use svc_api::GenericResponse;

pub fn register(api: &mut Api<'_>) {
    // The permission is not consulted for Scope::Me; any signed-in user may enrol.
    api.guarded("/api/v1/me/totp", Perm::Users, Scope::Me).post(
        enrol,
        Op::new("Enrol a TOTP authenticator (§2.4)").ok::<TotpEnrolmentDto>(201),
    );
    api.guarded("/api/v1/me/totp/{id}/verify", Perm::Users, Scope::Me).post(
        verify,
        Op::new("Verify a TOTP authenticator (§2.4)")
            .body::<TotpVerificationDto>()
            .ok::<GenericResponse>(200),
    );
    api.guarded("/api/v1/me/sign-out", Perm::Users, Scope::Me).post(
        sign_out,
        Op::new("Sign out: end every session of the caller (ext)").empty(204),
    );
}

/// Ends every session of the caller (`User::end_sessions`, as a password change does): this
/// token and every other management token the user holds are refused from now on. Tokens are
/// not tracked one by one, so signing out of one browser signs out of all of them.
async fn sign_out(State(app): State<App>, ctx: Ctx) -> Result<Response> {
    let user = ctx.caller.user().cloned().ok_or(Error::Forbidden)?;
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let mut u = (**w.st.users.get(&user.id).ok_or(Error::Unauthenticated)?).clone();
    u.end_sessions();
    w.put(u.clone());
    w.audit(&author, DEFAULT_RESOURCE_SET, "Users", Activity::Updated, u.id);
    w.commit().await?;
    Ok(crate::http::no_content())
}

async fn enrol(State(app): State<App>, ctx: Ctx) -> Result<Response> {
    let user = ctx.caller.user().cloned().ok_or(Error::Forbidden)?;
    let seed = crate::crypto::random_bytes::<20>();
    let secret = totp::base32_encode(&seed);
    let id = uuid::Uuid::new_v4();
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let mut u = (**w.st.users.get(&user.id).ok_or(Error::Unauthenticated)?).clone();
    u.tokens.push(UserToken {
        id,
        name: "TOTP".into(),
        verified: false,
        created_at: w.now,
    });
    u.secrets.totp.push(TotpSeed {
        id,
        secret: Secret::new(secret.clone()),
    });
    w.put(u.clone());
    w.audit(&author, DEFAULT_RESOURCE_SET, "Users", Activity::Updated, u.id);
    w.commit().await?;
    let label: String = url::form_urlencoded::byte_serialize(format!("Svc:{}", u.email).as_bytes()).collect();
    let uri = format!("otpauth://totp/{label}?secret={secret}&issuer=Svc&algorithm=SHA1&digits=6&period=30");
    // §1.5: every create names what it created (there is no read of one authenticator).
    Ok(crate::http::created(
        StatusCode::CREATED,
        format!("/api/v1/me/totp/{id}"),
        to_json(&TotpEnrolmentDto {
            id,
            secret,
            otpauth_uri: uri,
        }),
    ))
}

async fn verify(State(app): State<App>, ctx: Ctx, ids: Ids, JsonBody(body): JsonBody) -> Result<Response> {
    let user = ctx.caller.user().cloned().ok_or(Error::Forbidden)?;
    let code = svc_api::schema::read::<TotpVerificationDto>(body)?.code;
    let token_id = ids.one();
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let mut u = (**w.st.users.get(&user.id).ok_or(Error::Unauthenticated)?).clone();
    let seed = u
        .secrets
        .totp
        .iter()
        .find(|s| s.id == token_id)
        .ok_or(Error::NotFound)?;
    let seed =
        totp::base32_decode(seed.secret.expose()).ok_or_else(|| Error::internal("stored TOTP seed unreadable"))?;
    let Some(step) = totp::matched_step(&seed, code.trim(), crate::clock::now_secs()) else {
        return Err(Error::field("code", "is not a valid TOTP code"));
    };
    // The enrolment code is spent: it does not sign in afterwards (RFC 6238 §5.2, issue 22).
    u.totp_last_step = u.totp_last_step.max(step);
    if let Some(t) = u.tokens.iter_mut().find(|t| t.id == token_id) {
        t.verified = true;
    }
    u.modified_at = w.now;
    w.put(u.clone());
    w.audit(&author, DEFAULT_RESOURCE_SET, "Users", Activity::Updated, u.id);
    w.commit().await?;
    Ok(crate::http::ok(to_json(&GenericResponse::ok(
        "TOTP authenticator verified.",
    ))))
}
