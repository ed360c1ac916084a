//! The API's route table: every route is registered with its handler, its guard and its document
//! entry together ([`Api`], [`Op`]), so the OpenAPI document (`http/openapi.rs`) is made from the
//! routes that exist and the types their bodies are — no second list to keep in step. A resource
//! on the shared CRUD layer registers all its routes and their entries at once
//! (`crud::register`).

use axum::Router;
use axum::handler::Handler;
use axum::routing::MethodRouter;
use schemars::{JsonSchema, SchemaGenerator};

use crate::app::App;
use crate::domain::Perm;
use crate::http::guard::{Scope, guarded, guarded_as};

/// A schema of the document: a type's, registered in the components when it is named.
pub type SchemaFn = fn(&mut SchemaGenerator) -> schemars::Schema;

/// The schema of `T`.
pub fn schema<T: JsonSchema>(g: &mut SchemaGenerator) -> schemars::Schema {
    g.subschema_for::<T>()
}

/// The query parameters an operation reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    None,
    /// `page`, `per-page`, `filter`, `order`, `group-by` (docs/API-CONVENTIONS.md, Lists).
    List,
    /// The event lists' parameters.
    Events,
    /// The OAuth and SSO callbacks: `code`, `state`, `error`, `error_description`.
    Callback,
}

/// What a success status carries.
#[derive(Clone, Copy)]
pub enum Body {
    /// A JSON body of this schema.
    Json(SchemaFn),
    /// A list wrapper whose items, under this key, have this schema.
    List(&'static str, SchemaFn),
    /// No body (`204`, or `204` + `Location`).
    Empty,
    /// A redirect (`Location`).
    Redirect,
    /// A PEM document (`application/x-pem-file`).
    Pem,
}

/// Who may call an operation.
#[derive(Clone, Copy, Debug)]
pub enum Access {
    /// No token.
    Public,
    /// A management token holding the permission; `true`: the route reads `X-Svc-ResourceSet`.
    Perm(Perm, bool),
    /// Any signed-in user (`/api/v1/me/*`).
    User,
    /// An Edge access token.
    Edge,
}

/// One operation's document entry: a summary, the request body, the query and the answers. The
/// statuses every operation may give (400, 401/403 where a token is needed, 404, 500) are added
/// by the document; [`Op::errors`] adds others.
#[derive(Clone)]
pub struct Op {
    pub summary: String,
    pub request: Option<SchemaFn>,
    pub query: Query,
    pub responses: Vec<(u16, Body)>,
    pub errors: Vec<u16>,
}

impl Op {
    pub fn new(summary: impl Into<String>) -> Op {
        Op {
            summary: summary.into(),
            request: None,
            query: Query::None,
            responses: Vec::new(),
            errors: Vec::new(),
        }
    }
    /// The request body is a `T`.
    pub fn body<T: JsonSchema>(mut self) -> Op {
        self.request = Some(schema::<T>);
        self
    }
    pub fn query(mut self, q: Query) -> Op {
        self.query = q;
        self
    }
    /// `status` with a `T`.
    pub fn ok<T: JsonSchema>(mut self, status: u16) -> Op {
        self.responses.push((status, Body::Json(schema::<T>)));
        self
    }
    /// `200` with a list wrapper of `T` under `items`.
    pub fn list<T: JsonSchema>(mut self, items: &'static str) -> Op {
        self.responses.push((200, Body::List(items, schema::<T>)));
        self
    }
    /// `status` without a body.
    pub fn empty(mut self, status: u16) -> Op {
        self.responses.push((status, Body::Empty));
        self
    }
    /// `302` with a `Location`.
    pub fn redirect(mut self) -> Op {
        self.responses.push((302, Body::Redirect));
        self
    }
    /// `200` with a PEM document.
    pub fn pem(mut self) -> Op {
        self.responses.push((200, Body::Pem));
        self
    }
    /// Error statuses beyond the ones every operation may give.
    pub fn errors(mut self, statuses: &[u16]) -> Op {
        self.errors.extend_from_slice(statuses);
        self
    }
}

/// A registered operation.
#[derive(Clone)]
pub struct OpDoc {
    pub method: &'static str,
    pub path: String,
    pub access: Access,
    pub op: Op,
}

/// The router being built and the operations registered on it.
pub struct Api<'a> {
    /// `None`: only the document entries are collected (`openapi::document` needs no service).
    app: Option<&'a App>,
    /// Each path's handlers; a path registered twice (methods guarded differently) merges.
    routes: Vec<(String, MethodRouter<App>)>,
    ops: Vec<OpDoc>,
}

impl<'a> Api<'a> {
    pub fn new(app: &'a App) -> Api<'a> {
        Api {
            app: Some(app),
            routes: Vec::new(),
            ops: Vec::new(),
        }
    }

    /// A table that collects the document entries only.
    pub fn entries_only() -> Api<'static> {
        Api {
            app: None,
            routes: Vec::new(),
            ops: Vec::new(),
        }
    }

    /// A public route (no token).
    pub fn public(&mut self, path: &str) -> Route<'_, 'a> {
        self.route(path, Access::Public, None)
    }

    /// A route of the Edge API (its own token scheme, checked by the handler).
    pub fn edge(&mut self, path: &str) -> Route<'_, 'a> {
        self.route(path, Access::Edge, None)
    }

    /// A route guarded by `perm` in `scope` (`http::guard`).
    pub fn guarded(&mut self, path: &str, perm: Perm, scope: Scope) -> Route<'_, 'a> {
        let access = match scope {
            Scope::Me => Access::User,
            Scope::Rs => Access::Perm(perm, true),
            _ => Access::Perm(perm, false),
        };
        self.route(
            path,
            access,
            Some(Guarding {
                perm,
                scope,
                write: None,
            }),
        )
    }

    fn route(&mut self, path: &str, access: Access, guard: Option<Guarding>) -> Route<'_, 'a> {
        Route {
            api: self,
            path: path.to_string(),
            access,
            guard,
            methods: Some(MethodRouter::new()),
            ops: Vec::new(),
        }
    }

    /// The router and every registered operation, in registration order.
    pub fn finish(self) -> (Router<App>, Vec<OpDoc>) {
        let router = self
            .routes
            .into_iter()
            .fold(Router::new(), |r, (path, m)| r.route(&path, m));
        (router, self.ops)
    }
}

#[derive(Clone, Copy)]
struct Guarding {
    perm: Perm,
    scope: Scope,
    write: Option<bool>,
}

/// One path's handlers and their entries, registered when it goes out of scope.
pub struct Route<'r, 'a> {
    api: &'r mut Api<'a>,
    path: String,
    access: Access,
    guard: Option<Guarding>,
    methods: Option<MethodRouter<App>>,
    ops: Vec<(&'static str, Op)>,
}

macro_rules! method {
    ($name:ident, $verb:literal) => {
        pub fn $name<H, T>(mut self, handler: H, op: Op) -> Self
        where
            H: Handler<T, App>,
            T: 'static,
        {
            let m = self.methods.take().expect("a route is built once");
            self.methods = Some(m.$name(handler));
            self.ops.push(($verb, op));
            self
        }
    };
}

impl Route<'_, '_> {
    method!(get, "get");
    method!(post, "post");
    method!(put, "put");
    method!(patch, "patch");
    method!(delete, "delete");

    /// Handlers already made into a method router (with layers of their own), with the entry of
    /// the one method they serve.
    pub fn methods(mut self, m: MethodRouter<App>, method: &'static str, op: Op) -> Self {
        let mine = self.methods.take().expect("a route is built once");
        self.methods = Some(mine.merge(m));
        self.ops.push((method, op));
        self
    }

    /// Fixes the access level the guard checks (a GET that writes, a POST that reads).
    pub fn as_write(mut self, write: bool) -> Self {
        if let Some(g) = &mut self.guard {
            g.write = Some(write);
        }
        self
    }
}

impl Drop for Route<'_, '_> {
    fn drop(&mut self) {
        let Some(methods) = self.methods.take() else { return };
        if let Some(app) = self.api.app {
            let methods = match self.guard {
                None => methods,
                Some(g) => match g.write {
                    None => guarded(app, g.perm, g.scope, methods),
                    Some(w) => guarded_as(app, g.perm, g.scope, w, methods),
                },
            };
            match self.api.routes.iter_mut().find(|(p, _)| *p == self.path) {
                Some((_, m)) => *m = std::mem::take(m).merge(methods),
                None => self.api.routes.push((self.path.clone(), methods)),
            }
        }
        for (method, op) in self.ops.drain(..) {
            self.api.ops.push(OpDoc {
                method,
                path: self.path.clone(),
                access: self.access,
                op,
            });
        }
    }
}
