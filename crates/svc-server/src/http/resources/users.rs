//! Users (contract §3.18): management of sign-in accounts, unlock, and the rules that keep at least
//! one active SuperAdmin and stop callers from deleting or deactivating themselves.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use svc_api::mgmt::{UserDto, UserPatchDto, UserSsoIdentityDto, UserTokensDto};
use uuid::Uuid;

use super::common::{check_patch_id, check_tags};
use super::crud::to_json;
use crate::app::App;
use crate::domain::records::{SUPER_ADMIN_ROLE, User, UserSecrets};
use crate::domain::{DEFAULT_RESOURCE_SET, Kind, Perm, Secret, Tag};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::api::{Api, Op, Query};
use crate::http::extract::{Ids, JsonBody, QueryPairs, RawIds};
use crate::http::guard::{Ctx, Scope};
use crate::http::list::{Base, Filter, ListParams, ListSpec, field_filter, respond};
use crate::http::{created, no_content, ok};
use crate::service::write::{Author, Write, new_external_id};
use crate::state::State as Snapshot;
use svc_api::GenericResponse;

const CATEGORY: &str = "Users";

pub fn register(api: &mut Api<'_>) {
    let (p, g) = (Perm::Users, Scope::Global);
    api.guarded("/api/v1/users", p, g)
        .get(
            list,
            Op::new("List users (§3.18)")
                .query(Query::List)
                .list::<UserDto>("users"),
        )
        .post(create, Op::new("Create a user").body::<UserDto>().ok::<UserDto>(201));
    api.guarded("/api/v1/users/{id}", p, g)
        .get(
            read,
            Op::new("Read a user (201, as in the spec)")
                .ok::<UserDto>(201)
                .empty(204),
        )
        .put(replace, Op::new("Replace a user").body::<UserDto>().ok::<UserDto>(200))
        .patch(patch, Op::new("Patch a user").body::<UserPatchDto>().ok::<UserDto>(200))
        .delete(remove, Op::new("Delete a user").empty(204));
    api.guarded("/api/v1/users/{id}/unlock", p, g)
        .post(unlock, Op::new("Unlock a user (§3.18)").ok::<GenericResponse>(200));
}

const SPEC: ListSpec = ListSpec::new("users", Base::None)
    .fields(&[
        "externalId",
        "email",
        "firstName",
        "lastName",
        "phoneNumber",
        "createdAt",
        "isActive",
        "twoFactorEnabled",
        "isLocked",
    ])
    .order("email", false)
    .filters(&[
        field_filter("email"),
        ("role", Filter::Field("roles")),
        field_filter("isLocked"),
    ]);

/// `UserDTO`; never any secret (`password` is always null).
pub fn user_dto(st: &Snapshot, u: &User) -> UserDto {
    let roles_details = u
        .roles
        .iter()
        .filter_map(|id| st.roles.get(id))
        .map(|r| super::roles::role_dto(st, r))
        .collect();
    UserDto {
        external_id: Some(u.id),
        email: u.email.clone(),
        first_name: u.first_name.clone(),
        last_name: u.last_name.clone(),
        phone_number: u.phone_number.clone(),
        roles: Some(u.roles.clone()),
        roles_details,
        created_at: u.created_at,
        modified_at: Some(u.modified_at),
        is_active: u.active,
        two_factor_enabled: Some(u.has_verified_totp()),
        is_locked: u.is_locked(crate::clock::now_millis()),
        tags: Some(u.tags.clone()),
        user_tokens: u
            .tokens
            .iter()
            .map(|t| UserTokensDto {
                id: t.id,
                name: Some(t.name.clone()),
                verified: t.verified,
                created_at: t.created_at,
            })
            .collect(),
        // Read-only (ext, issue 31): the identity-provider accounts this user signs in as.
        sso_identities: u
            .sso_links
            .iter()
            .map(|l| UserSsoIdentityDto {
                identity_provider_id: l.idp,
                issuer: l.issuer.clone(),
                subject: l.subject.clone(),
            })
            .collect(),
        password: None,
    }
}

#[derive(Default)]
struct UserInput {
    external_id: Option<Uuid>,
    email: Option<String>,
    first_name: Option<String>,
    last_name: Option<String>,
    phone_number: Option<String>,
    roles: Option<Vec<Uuid>>,
    is_active: Option<bool>,
    two_factor: Option<bool>,
    tags: Option<Vec<Tag>>,
    password: Option<String>,
}

/// A POST or PUT body (its schema checked): an e-mail address, existing roles, the tags' rules.
fn parse(st: &Snapshot, d: UserDto) -> Result<UserInput> {
    check_email(&d.email)?;
    if let Some(roles) = &d.roles {
        for (i, r) in roles.iter().enumerate() {
            if !st.roles.contains_key(r) {
                return Err(Error::field(format!("roles[{i}]"), "unknown role"));
            }
        }
    }
    check_tags(d.tags.as_deref())?;
    Ok(UserInput {
        external_id: d.external_id,
        email: Some(d.email),
        first_name: Some(d.first_name),
        last_name: Some(d.last_name),
        phone_number: d.phone_number,
        roles: d.roles,
        is_active: Some(d.is_active),
        two_factor: d.two_factor_enabled,
        tags: d.tags,
        password: d.password,
    })
}

/// A PATCH body (its schema checked): the e-mail syntax.
fn parse_patch(d: UserPatchDto) -> Result<UserInput> {
    if let Some(e) = &d.email {
        check_email(e)?;
    }
    Ok(UserInput {
        external_id: d.external_id,
        email: d.email,
        first_name: d.first_name,
        last_name: d.last_name,
        phone_number: d.phone_number,
        is_active: d.is_active,
        password: d.password,
        ..Default::default()
    })
}

fn check_email(e: &str) -> Result<()> {
    if crate::util::is_email(e) {
        Ok(())
    } else {
        Err(Error::field("email", "must be an e-mail address"))
    }
}

fn email_taken(st: &Snapshot, email: &str, except: Option<Uuid>) -> bool {
    st.user_by_email(email).is_some_and(|u| Some(u.id) != except)
}

/// Whether removing `id` from the active SuperAdmins would leave none.
fn last_super_admin(st: &Snapshot, id: Uuid) -> bool {
    st.users
        .values()
        .filter(|u| u.active && u.roles.contains(&SUPER_ADMIN_ROLE))
        .all(|u| u.id == id)
        && st
            .users
            .get(&id)
            .is_some_and(|u| u.active && u.roles.contains(&SUPER_ADMIN_ROLE))
}

async fn hash(password: Option<String>) -> Result<Option<Secret<String>>> {
    match password {
        None => Ok(None),
        Some(p) => Ok(Some(Secret::new(
            tokio::task::spawn_blocking(move || crate::crypto::password::hash(&p))
                .await
                .map_err(Error::internal)?,
        ))),
    }
}

async fn list(State(app): State<App>, q: QueryPairs) -> Result<Response> {
    let p = ListParams::parse(&q)?;
    let st = app.state();
    let items = st.users.values().map(|u| to_json(&user_dto(&st, u))).collect();
    Ok(ok(respond(items, &p, &SPEC)?))
}

async fn read(State(app): State<App>, ids: Ids) -> Result<Response> {
    let st = app.state();
    Ok(match st.users.get(&ids.one()) {
        // 201 is what the spec lists for this GET.
        Some(u) => (StatusCode::CREATED, axum::Json(user_dto(&st, u))).into_response(),
        None => no_content(),
    })
}

async fn create(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let input = parse(&app.state(), svc_api::schema::read(body)?)?;
    if input.two_factor == Some(true) {
        return Err(Error::field(
            "twoFactorEnabled",
            "can only be enabled by enrolling an authenticator",
        ));
    }
    let password_hash = hash(input.password.clone()).await?;
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let email = input.email.clone().expect("required");
    if email_taken(&w.st, &email, None) {
        return Err(Error::field("email", "already exists"));
    }
    let roles = dedup(input.roles.unwrap_or_default());
    // A caller can grant only what it holds (issue 22).
    crate::service::escalation::check_roles_given(&ctx.caller, &w.st, &roles)?;
    let id = new_external_id(input.external_id, |id| w.st.users.contains_key(id))?;
    let seq = w.next_seq(Kind::User).await?;
    let now = w.now;
    let user = User {
        id,
        seq,
        email,
        first_name: input.first_name.expect("required"),
        last_name: input.last_name.expect("required"),
        phone_number: input.phone_number,
        roles,
        active: input.is_active.unwrap_or(true),
        locked: false,
        failed_logins: 0,
        source_locks: vec![],
        sso_links: vec![],
        tags: input.tags.unwrap_or_default(),
        tokens: vec![],
        created_at: now,
        modified_at: now,
        created_by: author.actor.label(),
        modified_by: author.actor.label(),
        mfa_grace_from: now,
        session_epoch: 0,
        totp_last_step: 0,
        secrets: UserSecrets {
            password_hash,
            totp: vec![],
        },
    };
    w.put(user);
    w.audit(&author, DEFAULT_RESOURCE_SET, CATEGORY, Activity::Created, id);
    let st = w.commit().await?;
    Ok(created(
        StatusCode::CREATED,
        format!("/api/v1/users/{id}"),
        to_json(&user_dto(&st, &st.users[&id])),
    ))
}

fn dedup(mut v: Vec<Uuid>) -> Vec<Uuid> {
    let mut seen = std::collections::HashSet::new();
    v.retain(|x| seen.insert(*x));
    v
}

fn is_self(ctx: &Ctx, id: Uuid) -> bool {
    ctx.caller.user().is_some_and(|u| u.id == id)
}

async fn replace(State(app): State<App>, ctx: Ctx, raw: RawIds, JsonBody(body): JsonBody) -> Result<Response> {
    // The path id is typed as a plain string: a non-UUID names no user (404).
    let id = raw
        .0
        .first()
        .and_then(|s| svc_api::reader::parse_uuid(s))
        .ok_or(Error::NotFound)?;
    let input = parse(&app.state(), svc_api::schema::read(body)?)?;
    if input.external_id.is_some_and(|e| e != id) {
        return Err(Error::field("externalId", "must equal the id in the path"));
    }
    let password_hash = hash(input.password.clone()).await?;
    let author = ctx.author();
    let w = Write::begin(&app).await?;
    let mut u = (**w.st.users.get(&id).ok_or(Error::NotFound)?).clone();
    crate::service::escalation::check_may_act_on(&ctx.caller, &w.st, &u)?;
    let email = input.email.clone().expect("required");
    if email_taken(&w.st, &email, Some(id)) {
        return Err(Error::field("email", "already exists"));
    }
    let roles = dedup(input.roles.unwrap_or_default());
    let active = input.is_active.unwrap_or(true);
    // The self check first, as PATCH does: one message for one mistake.
    if is_self(&ctx, id) && !active {
        return Err(Error::field("isActive", "you cannot deactivate yourself"));
    }
    if last_super_admin(&w.st, id) && (!active || !roles.contains(&SUPER_ADMIN_ROLE)) {
        return Err(Error::bad(
            "user: the last active SuperAdmin cannot be deactivated or lose SuperAdmin",
        ));
    }
    let added: Vec<Uuid> = roles.iter().filter(|r| !u.roles.contains(r)).copied().collect();
    crate::service::escalation::check_roles_given(&ctx.caller, &w.st, &added)?;
    if input.two_factor == Some(true) && !u.has_verified_totp() {
        return Err(Error::field(
            "twoFactorEnabled",
            "can only be enabled by enrolling an authenticator",
        ));
    }
    if input.two_factor == Some(false) {
        u.tokens.clear();
        u.secrets.totp.clear();
    }
    // A password change, a deactivation or a role change ends the user's sessions (issue 22).
    let same_roles = roles.len() == u.roles.len() && roles.iter().all(|r| u.roles.contains(r));
    if password_hash.is_some() || (u.active && !active) || !same_roles {
        u.end_sessions();
    }
    u.email = email;
    u.first_name = input.first_name.expect("required");
    u.last_name = input.last_name.expect("required");
    u.phone_number = input.phone_number;
    u.roles = roles;
    u.active = active;
    u.tags = input.tags.unwrap_or_default();
    finish_update(w, &author, u, password_hash, Activity::Updated).await
}

async fn patch(State(app): State<App>, ctx: Ctx, ids: Ids, JsonBody(body): JsonBody) -> Result<Response> {
    let id = ids.one();
    let input = parse_patch(svc_api::schema::read(body)?)?;
    let password_hash = hash(input.password.clone()).await?;
    let author = ctx.author();
    let w = Write::begin(&app).await?;
    let mut u = (**w.st.users.get(&id).ok_or(Error::NotFound)?).clone();
    check_patch_id(input.external_id, id)?;
    crate::service::escalation::check_may_act_on(&ctx.caller, &w.st, &u)?;
    if let Some(e) = input.email {
        if email_taken(&w.st, &e, Some(id)) {
            return Err(Error::field("email", "already exists"));
        }
        u.email = e;
    }
    if input.is_active == Some(false) {
        if is_self(&ctx, id) {
            return Err(Error::field("isActive", "you cannot deactivate yourself"));
        }
        if last_super_admin(&w.st, id) {
            return Err(Error::bad(
                "user: the last active SuperAdmin cannot be deactivated or lose SuperAdmin",
            ));
        }
    }
    if let Some(v) = input.first_name {
        u.first_name = v;
    }
    if let Some(v) = input.last_name {
        u.last_name = v;
    }
    if let Some(v) = input.phone_number {
        u.phone_number = Some(v);
    }
    // A password change or a deactivation ends the user's sessions (issue 22).
    if password_hash.is_some() || (u.active && input.is_active == Some(false)) {
        u.end_sessions();
    }
    if let Some(v) = input.is_active {
        u.active = v;
    }
    finish_update(w, &author, u, password_hash, Activity::Patched).await
}

/// The end of a PUT or PATCH: the new password (if any), the stamp, the audit entry, the
/// commit, `200` with the user.
async fn finish_update(
    mut w: Write<'_>,
    author: &Author,
    mut u: User,
    password_hash: Option<Secret<String>>,
    activity: Activity,
) -> Result<Response> {
    if let Some(h) = password_hash {
        u.secrets.password_hash = Some(h);
    }
    u.modified_at = w.now;
    u.modified_by = author.actor.label();
    let id = u.id;
    w.put(u);
    w.audit(author, DEFAULT_RESOURCE_SET, CATEGORY, activity, id);
    let st = w.commit().await?;
    Ok(ok(to_json(&user_dto(&st, &st.users[&id]))))
}

async fn remove(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let id = ids.one();
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let Some(target) = w.st.users.get(&id).cloned() else {
        return Ok(no_content());
    };
    crate::service::escalation::check_may_act_on(&ctx.caller, &w.st, &target)?;
    if is_self(&ctx, id) {
        return Err(Error::bad("user: you cannot delete yourself"));
    }
    if last_super_admin(&w.st, id) {
        return Err(Error::bad("user: the last active SuperAdmin cannot be deleted"));
    }
    w.remove::<User>(&id);
    w.audit(&author, DEFAULT_RESOURCE_SET, CATEGORY, Activity::Deleted, id);
    w.commit().await?;
    Ok(no_content())
}

async fn unlock(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let id = ids.one();
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let mut u = (**w.st.users.get(&id).ok_or(Error::NotFound)?).clone();
    crate::service::escalation::check_may_act_on(&ctx.caller, &w.st, &u)?;
    u.unlock();
    u.mfa_grace_from = w.now;
    w.put(u);
    w.audit(&author, DEFAULT_RESOURCE_SET, CATEGORY, Activity::Unlocked, id);
    w.commit().await?;
    Ok(ok(to_json(&GenericResponse {
        success: true,
        message: Some("User unlocked.".into()),
        id: 0,
    })))
}
