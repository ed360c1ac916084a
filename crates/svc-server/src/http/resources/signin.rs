//! Sign-in policies (contract §3.19): `GET /api/v1/signin-policies`, `PUT …/mfa`, `PUT …/sso`.

use axum::extract::State;
use axum::response::Response;
use serde_json::json;
use svc_api::Obj;

use crate::app::App;
use crate::domain::records::Settings;
use crate::domain::{DEFAULT_RESOURCE_SET, Perm};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::api::{Api, Op, Untyped};
use crate::http::extract::JsonBody;
use crate::http::guard::{Ctx, Scope};
use crate::http::ok;
use crate::service::write::{Author, Write};

const CATEGORY: &str = "SignOnPolicy";

pub fn register(api: &mut Api<'_>) {
    let (p, g) = (Perm::SignOnPolicy, Scope::Global);
    api.guarded("/api/v1/signin-policies", p, g)
        .get(read, Op::new("Sign-in policies (§3.19)").ok::<Untyped>(200));
    api.guarded("/api/v1/signin-policies/mfa", p, g).put(
        put_mfa,
        Op::new("Set the MFA sign-in policy (§3.19)")
            .body::<Untyped>()
            .ok::<Untyped>(200),
    );
    api.guarded("/api/v1/signin-policies/sso", p, g).put(
        put_sso,
        Op::new("Set the SSO sign-in policy (§3.19)")
            .body::<Untyped>()
            .ok::<Untyped>(200),
    );
}

async fn read(State(app): State<App>) -> Result<Response> {
    let s = app.state().settings();
    Ok(ok(
        json!({"ssoRequired": s.sso_required, "mfaRequired": s.mfa_required}),
    ))
}

/// The PUT's one flag: not required by its DTO, so absent or `null` is its default, `false`
/// (§1.1, §1.5: a PUT sets absent optional fields to their defaults).
fn flag(body: serde_json::Value, name: &str) -> Result<bool> {
    let mut o = Obj::root(body)?;
    let v = o.opt_bool(name)?.unwrap_or(false);
    o.finish()?;
    Ok(v)
}

async fn put_mfa(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let required = flag(body, "mfaRequired")?;
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
    Ok(ok(json!({"mfaRequired": required})))
}

async fn put_sso(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let required = flag(body, "ssoRequired")?;
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
    Ok(ok(json!({"ssoRequired": required})))
}

/// Stores the changed settings: one `Updated` entry whose target names the setting.
async fn store(mut w: Write<'_>, author: &Author, mut s: Settings, target: &str) -> Result<()> {
    s.modified_at = w.now;
    w.put(s);
    w.audit(author, DEFAULT_RESOURCE_SET, CATEGORY, Activity::Updated, target);
    w.commit().await?;
    Ok(())
}
