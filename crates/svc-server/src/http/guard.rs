//! The one RBAC mechanism (contract §2.1, §2.6): every protected route declares its permission and
//! scope; this layer authenticates the bearer token (401), resolves and checks the resource set
//! (400), checks the permission (403) and hands the handler a [`Ctx`]. Handlers of routes whose
//! resource set is only known from the entity call [`Ctx::check`], the same rule.

use axum::Router;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use uuid::Uuid;

use crate::app::App;
use crate::domain::{DEFAULT_RESOURCE_SET, Perm};
use crate::error::{Error, Result};
use crate::events::audit::ClientInfo;
use crate::service::admission::{ADMITTED, Admitted, check};
pub use crate::service::admission::{Guard, Scope};
use crate::service::auth::{Caller, bearer};
use crate::service::write::Author;
use crate::state::State as Snapshot;

pub const RS_HEADER: &str = "x-svc-resourceset";

/// The request context a guarded handler receives.
#[derive(Clone, Debug)]
pub struct Ctx {
    pub caller: Caller,
    pub perm: Perm,
    pub write: bool,
    /// The request resource set (RS routes) or the default one.
    pub rs: Uuid,
    pub client: ClientInfo,
}

impl Ctx {
    pub fn author(&self) -> Author {
        Author {
            actor: self.caller.actor.clone(),
            client: self.client.clone(),
        }
    }

    /// Checks the route's permission in `rs` (entity-scoped routes).
    pub fn check(&self, st: &Snapshot, rs: Uuid) -> Result<()> {
        if self.caller.can(st, self.perm, self.write, rs) {
            Ok(())
        } else {
            Err(Error::Forbidden)
        }
    }

    /// Checks another permission (e.g. read access to a referenced entity).
    pub fn check_perm(&self, st: &Snapshot, perm: Perm, write: bool, rs: Uuid) -> Result<()> {
        if self.caller.can(st, perm, write, rs) {
            Ok(())
        } else {
            Err(Error::Forbidden)
        }
    }

    pub fn readable_sets(&self, st: &Snapshot) -> Vec<Uuid> {
        self.caller.readable_sets(st, self.perm)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Ctx {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self> {
        parts
            .extensions
            .get::<Ctx>()
            .cloned()
            .ok_or_else(|| Error::internal("route without guard"))
    }
}

/// Parses `X-Svc-ResourceSet`: absent → default; malformed or unknown → 400.
pub fn request_rs(headers: &HeaderMap, st: &Snapshot) -> Result<Uuid> {
    let Some(v) = headers.get(RS_HEADER) else {
        return Ok(DEFAULT_RESOURCE_SET);
    };
    let s = v
        .to_str()
        .map_err(|_| Error::bad("X-Svc-ResourceSet: must be a UUID"))?
        .trim();
    let id = svc_api::reader::parse_uuid(s).ok_or_else(|| Error::bad("X-Svc-ResourceSet: must be a UUID"))?;
    if !st.resource_set_exists(&id) {
        return Err(Error::bad("X-Svc-ResourceSet: unknown resource set"));
    }
    Ok(id)
}

#[derive(Clone)]
struct GuardState {
    app: App,
    guard: Guard,
}

async fn guard_layer(State(gs): State<GuardState>, mut req: Request, next: Next) -> Response {
    // Only a request whose token is one of ours (signed, unexpired) catches up with other
    // nodes' changes; anything else is refused without a database read.
    let ours = bearer(
        req.headers()
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok()),
    )
    .is_some_and(|t| gs.app.keys().verify_internal(t, crate::clock::now_millis()).is_some());
    if ours {
        crate::service::load::catch_up(&gs.app).await;
    }
    match admit(&gs, &req) {
        Ok((ctx, admitted)) => {
            req.extensions_mut().insert(ctx);
            ADMITTED.scope(admitted, next.run(req)).await
        }
        Err(e) => e.into_response(),
    }
}

fn admit(gs: &GuardState, req: &Request) -> Result<(Ctx, Admitted)> {
    let app = &gs.app;
    let token = bearer(
        req.headers()
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok()),
    )
    .ok_or(Error::Unauthenticated)?;
    let st = app.state();
    let write = gs
        .guard
        .write
        .unwrap_or(!matches!(*req.method(), Method::GET | Method::HEAD));
    let rs = match gs.guard.scope {
        Scope::Rs => match request_rs(req.headers(), &st) {
            Ok(rs) => rs,
            // A caller that does not authenticate learns nothing about resource sets: 401 first.
            Err(e) => {
                crate::service::auth::authenticate(app, &st, token)?;
                return Err(e);
            }
        },
        _ => DEFAULT_RESOURCE_SET,
    };
    let admitted = Admitted {
        token: token.to_string(),
        guard: gs.guard,
        write,
        rs,
    };
    let caller = check(app, &st, &admitted)?;
    let client = crate::http::extract::client_info(app, req.extensions(), req.headers());
    Ok((
        Ctx {
            caller,
            perm: gs.guard.perm,
            write,
            rs,
            client,
        },
        admitted,
    ))
}

/// Protects a method router with a permission and scope.
pub fn guarded(app: &App, perm: Perm, scope: Scope, r: MethodRouter<App>) -> MethodRouter<App> {
    let gs = GuardState {
        app: app.clone(),
        guard: Guard {
            perm,
            scope,
            write: None,
        },
    };
    r.route_layer(axum::middleware::from_fn_with_state(gs, guard_layer))
}

/// A route table guarded alike: each `(path, handlers)` by `perm` in `scope`.
pub fn guarded_routes<'p>(
    app: &App,
    perm: Perm,
    scope: Scope,
    routes: impl IntoIterator<Item = (&'p str, MethodRouter<App>)>,
) -> Router<App> {
    routes.into_iter().fold(Router::new(), |r, (path, m)| {
        r.route(path, guarded(app, perm, scope, m))
    })
}

/// Like [`guarded`], with the access level fixed (e.g. `authorize` is a write though it is a GET).
pub fn guarded_as(app: &App, perm: Perm, scope: Scope, write: bool, r: MethodRouter<App>) -> MethodRouter<App> {
    let gs = GuardState {
        app: app.clone(),
        guard: Guard {
            perm,
            scope,
            write: Some(write),
        },
    };
    r.route_layer(axum::middleware::from_fn_with_state(gs, guard_layer))
}
