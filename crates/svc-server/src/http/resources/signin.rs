//! Sign-in policies (contract §3.19): `GET /api/v1/signin-policies`, `PUT …/mfa`, `PUT …/sso`.

use axum::extract::State;
use axum::response::Response;
use svc_api::mgmt::{GetSignInPolicyDto, MfaSignInPolicyDto, SsoSignInPolicyDto};

use crate::app::App;
use crate::domain::records::Settings;
use crate::domain::{DEFAULT_RESOURCE_SET, Perm};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::api::{Api, Op};
use crate::http::extract::JsonBody;
use crate::http::guard::{Ctx, Scope};
use crate::http::ok;
use crate::http::resources::crud::to_json;
use crate::service::write::{Author, Write};

const CATEGORY: &str = "SignOnPolicy";

pub fn register(api: &mut Api<'_>) {
    let (p, g) = (Perm::SignOnPolicy, Scope::Global);
    api.guarded("/api/v1/signin-policies", p, g)
        .get(read, Op::new("Sign-in policies (§3.19)").ok::<GetSignInPolicyDto>(200));
    api.guarded("/api/v1/signin-policies/mfa", p, g).put(
        put_mfa,
        Op::new("Set the MFA sign-in policy (§3.19)")
            .body::<MfaSignInPolicyDto>()
            .ok::<MfaSignInPolicyDto>(200),
    );
    api.guarded("/api/v1/signin-policies/sso", p, g).put(
        put_sso,
        Op::new("Set the SSO sign-in policy (§3.19)")
            .body::<SsoSignInPolicyDto>()
            .ok::<SsoSignInPolicyDto>(200),
    );
}

async fn read(State(app): State<App>) -> Result<Response> {
    let s = app.state().settings();
    let dto = GetSignInPolicyDto {
        sso_required: s.sso_required,
        mfa_required: s.mfa_required,
    };
    Ok(ok(to_json(&dto)))
}

async fn put_mfa(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    // Not required by its DTO: absent or `null` is its default, `false` (§1.1, §1.5: a PUT sets
    // absent optional fields to their defaults).
    let required = svc_api::schema::read::<MfaSignInPolicyDto>(body)?.mfa_required;
    // A user who turns MFA on must already have a verified authenticator (no self lock-out).
    if required && ctx.caller.user().is_some_and(|u| !u.has_verified_totp()) {
        return Err(Error::ForbiddenMsg(
            "Enrol and verify a TOTP authenticator before requiring MFA.".into(),
        ));
    }
    let author = ctx.author();
    let w = Write::begin(&app).await?;
    let mut s = (*w.st.settings()).clone();
    if required && !s.mfa_required {
        s.mfa_enabled_at = Some(w.now);
    }
    s.mfa_required = required;
    store(w, &author, s, "mfa").await?;
    Ok(ok(to_json(&MfaSignInPolicyDto { mfa_required: required })))
}

async fn put_sso(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let required = svc_api::schema::read::<SsoSignInPolicyDto>(body)?.sso_required;
    let author = ctx.author();
    let w = Write::begin(&app).await?;
    // Requiring SSO needs an identity provider users can sign in through (else every
    // non-SuperAdmin would be locked out); checked in the unit, against every node's writes.
    if required && !w.st.sso_idps.values().any(|i| i.offers_sign_in()) {
        return Err(Error::field(
            "ssoRequired",
            "requires an active OIDCv1 identity provider with userAccessEnabled",
        ));
    }
    let mut s = (*w.st.settings()).clone();
    s.sso_required = required;
    store(w, &author, s, "sso").await?;
    Ok(ok(to_json(&SsoSignInPolicyDto { sso_required: required })))
}

/// Stores the changed settings: one `Updated` entry whose target names the setting.
async fn store(mut w: Write<'_>, author: &Author, mut s: Settings, target: &str) -> Result<()> {
    s.modified_at = w.now;
    w.put(s);
    w.audit(author, DEFAULT_RESOURCE_SET, CATEGORY, Activity::Updated, target);
    w.commit().await?;
    Ok(())
}
