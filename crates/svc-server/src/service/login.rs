//! Password sign-in (contract §2.2): argon2id verification, a lock-out after five consecutive
//! failures that ends by itself (a minute, doubling up to an hour: issue 31), SSO-required and
//! MFA rules, one audit entry per attempt.

use svc_api::mgmt::LoginRequestDto;

use crate::app::App;
use crate::domain::records::{SUPER_ADMIN_ROLE, Settings, User};
use crate::domain::{Actor, DEFAULT_RESOURCE_SET};
use crate::error::{Error, Result};
use crate::events::audit::{Activity, AuditEntry, ClientInfo};
use crate::service::auth::{LoginResponse, mint_user_token};
use crate::service::write::{Author, Write};

pub const INVALID: &str = "Invalid email or password.";
pub const LOCKED: &str = "The account is locked.";
pub const TOTP_REQUIRED: &str = "A valid TOTP code is required.";
pub const SSO_REQUIRED: &str = "Sign-in with SSO is required.";
pub const MAX_FAILURES: u32 = 5;
pub const MFA_GRACE_MS: i64 = 24 * 3600 * 1000;
const CATEGORY: &str = "Authentication";

struct LoginRequest {
    email: String,
    password: String,
    totp: Option<String>,
}

fn parse(body: LoginRequestDto) -> Result<LoginRequest> {
    let LoginRequestDto {
        email,
        password,
        totp_code: totp,
    } = body;
    // §2.2: the field is 6 digits; anything else is an invalid body (400, first in the order),
    // never a failed attempt that counts towards locking the account.
    if totp
        .as_deref()
        .is_some_and(|c| c.len() != 6 || !c.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(Error::field("totpCode", "must be 6 digits"));
    }
    Ok(LoginRequest { email, password, totp })
}

fn user_author(u: &User, client: &ClientInfo) -> Author {
    Author {
        actor: Actor::User {
            id: u.id,
            email: u.email.clone(),
            display_name: u.display_name(),
        },
        client: client.clone(),
    }
}

enum Outcome {
    Success,
    /// Counts as a failed attempt (may lock the account).
    Failure(&'static str, &'static str),
    /// Locks the account immediately (MFA grace period over).
    Lock(&'static str),
    /// Refused without counting (locked account, SSO required).
    Refused(Error, &'static str),
}

pub async fn login(app: &App, body: LoginRequestDto, client: &ClientInfo) -> Result<LoginResponse> {
    // Sign-in decides on the user as every node now knows it (a lock-out, a deactivation, a new
    // password or a new user through another node).
    crate::service::load::catch_up(app).await;
    let req = parse(body)?;
    // Password spraying (issue 22): an address that failed too often waits, whichever account
    // it tries; nothing is verified, recorded or counted for the account meanwhile.
    let address = client.source.as_deref();
    app.login_throttle
        .check(address, crate::clock::now_millis())
        .map_err(Error::TooManyRequests)?;
    let result = login_checked(app, req, client).await;
    if result.is_err() {
        app.login_throttle.failed(address, crate::clock::now_millis());
    }
    result
}

async fn login_checked(app: &App, req: LoginRequest, client: &ClientInfo) -> Result<LoginResponse> {
    let st = app.state_full();
    let user = st.user_by_email(&req.email).cloned();
    let Some(user) = user.filter(|u| u.active && u.secrets.password_hash.is_some()) else {
        // Spend the same time as a real verification, then record the attempt.
        let pw = req.password.clone();
        let _ = tokio::task::spawn_blocking(move || {
            crate::crypto::password::verify(&pw, crate::crypto::password::dummy_hash())
        })
        .await;
        let actor = Actor::Anonymous {
            email: Some(req.email.clone()),
        };
        let target = st
            .user_by_email(&req.email)
            .map(|u| u.id.to_string())
            .unwrap_or_else(|| req.email.clone());
        audit_failed_sign_in(app, target, &actor, client, "unknown or inactive user".into()).await?;
        return Err(Error::LoginRejected(INVALID));
    };

    // The TOTP time-step of the code that passed (kept in the unit, so it passes once).
    let mut totp_step: Option<i64> = None;
    let source = client.source.as_deref();
    let outcome = if user.is_locked_for(source, crate::clock::now_millis()) {
        Outcome::Refused(Error::LoginRejected(LOCKED), "account locked")
    } else {
        let hash = user
            .secrets
            .password_hash
            .as_ref()
            .map(|h| h.expose().clone())
            .unwrap_or_default();
        let pw = req.password.clone();
        let ok = tokio::task::spawn_blocking(move || crate::crypto::password::verify(&pw, &hash))
            .await
            .map_err(Error::internal)?;
        let settings = st.settings();
        let now = crate::clock::now_millis();
        if !ok {
            Outcome::Failure(INVALID, "wrong password")
        } else if settings.sso_required && !user.roles.contains(&SUPER_ADMIN_ROLE) {
            Outcome::Refused(Error::ForbiddenMsg(SSO_REQUIRED.into()), "SSO required")
        } else {
            match mfa_needed(&settings, &user, now) {
                Mfa::NotNeeded => Outcome::Success,
                Mfa::Totp => {
                    totp_step = req.totp.as_deref().and_then(|code| matched_totp(&user, code, now));
                    if totp_step.is_some() {
                        Outcome::Success
                    } else {
                        Outcome::Failure(TOTP_REQUIRED, "TOTP code missing or wrong")
                    }
                }
                Mfa::GraceOver => Outcome::Lock("MFA not enrolled after the grace period"),
            }
        }
    };
    drop(st);

    let author = user_author(&user, client);
    let target = user.id.to_string();
    let mut w = Write::begin_system(app).await?;
    // Re-read the user inside the unit: another attempt may have changed the counter.
    let Some(current) = w.st.users.get(&user.id).cloned() else {
        return Err(Error::LoginRejected(INVALID));
    };
    let mut u = (*current).clone();
    // The password was checked against the user as the node knew it; the unit has caught up
    // with every node. A success stands only if nothing it rested on changed meanwhile (a new
    // password, a deactivation, a lock-out, through any node).
    fn hash(x: &User) -> Option<&String> {
        x.secrets.password_hash.as_ref().map(|h| h.expose())
    }
    let outcome = match outcome {
        Outcome::Success
            if hash(&current) != hash(&user) || !current.active || current.is_locked_for(source, w.now.millis()) =>
        {
            Outcome::Refused(Error::LoginRejected(INVALID), "the user changed while signing in")
        }
        // RFC 6238 §5.2: a code is accepted at most once, whichever node it reached first (the
        // unit has caught up with every node's sign-ins).
        Outcome::Success if totp_step.is_some_and(|s| s <= current.totp_last_step) => {
            Outcome::Failure(TOTP_REQUIRED, "TOTP code already used")
        }
        o => o,
    };
    let result = match outcome {
        Outcome::Success => {
            if u.failed_logins != 0
                || u.source_locks.iter().any(|l| Some(l.source.as_str()) == source)
                || totp_step.is_some()
            {
                u.succeeded_from(source);
                if let Some(s) = totp_step {
                    u.totp_last_step = s;
                }
                w.put(u.clone());
            }
            w.audit(
                &author,
                DEFAULT_RESOURCE_SET,
                CATEGORY,
                Activity::LoginSucceeded,
                &target,
            );
            Ok(mint_user_token(app, &u, "password"))
        }
        Outcome::Refused(err, reason) => {
            w.audit_failure(
                &author,
                DEFAULT_RESOURCE_SET,
                CATEGORY,
                Activity::LoginFailed,
                &target,
                reason,
            );
            Err(err)
        }
        Outcome::Failure(msg, reason) => {
            w.audit_failure(
                &author,
                DEFAULT_RESOURCE_SET,
                CATEGORY,
                Activity::LoginFailed,
                &target,
                reason,
            );
            // Locked for a while and for this address only, and the user's sessions stay (issue
            // 31): whoever knows an e-mail address can fail five sign-ins, and must not shut its
            // owner out.
            if u.failed_from(source, w.now.millis(), MAX_FAILURES) {
                w.audit(&author, DEFAULT_RESOURCE_SET, "Users", Activity::Locked, &target);
            }
            w.put(u);
            Err(Error::LoginRejected(msg))
        }
        Outcome::Lock(reason) => {
            u.locked = true;
            u.end_sessions();
            w.audit_failure(
                &author,
                DEFAULT_RESOURCE_SET,
                CATEGORY,
                Activity::LoginFailed,
                &target,
                reason,
            );
            w.audit(&author, DEFAULT_RESOURCE_SET, "Users", Activity::Locked, &target);
            w.put(u);
            Err(Error::LoginRejected(LOCKED))
        }
    };
    w.commit().await?;
    result
}

/// What the sign-in policy asks of a user who proved the first factor (§2.2; SSO sign-ins
/// whose ID token names no second factor alike, issue 31).
#[derive(Debug, PartialEq, Eq)]
pub enum Mfa {
    NotNeeded,
    /// A code of one of the user's verified authenticators.
    Totp,
    /// `mfaRequired`, no verified authenticator, and the grace period is over: locked.
    GraceOver,
}

pub fn mfa_needed(settings: &Settings, user: &User, now_ms: i64) -> Mfa {
    if !settings.mfa_required {
        return Mfa::NotNeeded;
    }
    if user.has_verified_totp() {
        return Mfa::Totp;
    }
    let from = [
        settings.mfa_enabled_at.map(|t| t.millis()).unwrap_or(0),
        user.created_at.millis(),
        user.mfa_grace_from.millis(),
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    if now_ms > from + MFA_GRACE_MS {
        Mfa::GraceOver
    } else {
        Mfa::NotNeeded
    }
}

/// The time-step of `code` when it is the current code (±1 step) of one of the user's verified
/// authenticators. Whether the step was spent already is the write unit's to check
/// (`User::totp_last_step`).
pub fn matched_totp(user: &User, code: &str, now_ms: i64) -> Option<i64> {
    user.tokens.iter().filter(|t| t.verified).find_map(|t| {
        user.secrets.totp.iter().find(|s| s.id == t.id).and_then(|s| {
            crate::crypto::totp::base32_decode(s.secret.expose())
                .and_then(|seed| crate::crypto::totp::matched_step(&seed, code, now_ms.div_euclid(1000)))
        })
    })
}

/// A `LoginFailed` audit entry (category `Authentication`) stored at once, outside any write
/// unit: a refused sign-in changes nothing else (password and SSO sign-in alike).
pub async fn audit_failed_sign_in(
    app: &App,
    target: String,
    actor: &Actor,
    client: &ClientInfo,
    reason: String,
) -> Result<()> {
    let row = AuditEntry {
        rs: DEFAULT_RESOURCE_SET,
        category: CATEGORY,
        activity: Activity::LoginFailed,
        target: Some(target),
        actor,
        client,
        failure: Some(reason),
    }
    .to_row(crate::clock::now());
    app.store.insert_audit_now(&[row]).await?;
    Ok(())
}
