//! `GET /api/openapi.json` (public, issue 22): the OpenAPI 3.1 document of the management and Edge
//! APIs, built from the operation table below. The table is maintained beside the routes:
//! `tests/it/ops/openapi.rs` fails when a route exists that the table lacks, or the reverse, and
//! `scripts/test.sh` validates the document and fuzzes the server against it (schemathesis).

use std::sync::OnceLock;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Map, Value, json};

use crate::app::App;

pub const PATH: &str = "/api/openapi.json";

pub fn routes() -> Router<App> {
    Router::new().route(PATH, get(serve))
}

async fn serve() -> Response {
    let mut r = document_text().to_string().into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    r
}

/// The document's text, built once.
pub fn document_text() -> &'static str {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| serde_json::to_string(&document()).expect("a JSON value serialises"))
}

/// Who may call an operation.
#[derive(Clone, Copy)]
enum Access {
    /// No token (§2.1).
    Public,
    /// A management token with the permission; `true`: the route reads `X-Svc-ResourceSet`.
    Perm(&'static str, bool),
    /// An Edge access token (`/edge/v1/credentials`).
    Edge,
}

/// What a success status carries.
#[derive(Clone, Copy)]
enum Body {
    /// A JSON body of this component schema.
    Json(&'static str),
    /// No body (`204`, or `204` + `Location`).
    Empty,
    /// A redirect (`Location`).
    Redirect,
    /// A PEM document (`application/x-pem-file`).
    Pem,
}

/// The query parameters an operation reads.
#[derive(Clone, Copy, PartialEq)]
enum Query {
    None,
    /// `page`, `per-page`, `filter`, `order`, `group-by` (§1.6).
    List,
    /// The event lists' parameters (§3.23–§3.26).
    Events,
    /// The OAuth / SSO callbacks: `code`, `state`, `error`, `error_description`.
    Callback,
}

struct Op {
    method: &'static str,
    path: String,
    summary: String,
    access: Access,
    request: Option<&'static str>,
    query: Query,
    ok: Vec<(u16, Body)>,
}

fn op(method: &'static str, path: &str, summary: &str, access: Access) -> Op {
    Op {
        method,
        path: path.to_string(),
        summary: summary.to_string(),
        access,
        request: None,
        query: Query::None,
        ok: Vec::new(),
    }
}

impl Op {
    fn body(mut self, schema: &'static str) -> Self {
        self.request = Some(schema);
        self
    }
    fn query(mut self, q: Query) -> Self {
        self.query = q;
        self
    }
    fn ok(mut self, status: u16, b: Body) -> Self {
        self.ok.push((status, b));
        self
    }
}

use Body::{Empty, Json, Pem, Redirect};

/// The shared CRUD layer's six operations (`http/resources/crud.rs`): list, create, replace at
/// the collection path; read, patch and (when `delete` is set) delete by id.
#[allow(clippy::too_many_arguments)]
fn crud(
    ops: &mut Vec<Op>,
    path: &str,
    name: &str,
    perm: &'static str,
    rs: bool,
    create: (u16, Body),
    missing: u16,
    delete: Option<u16>,
) {
    let a = Access::Perm(perm, rs);
    let id = format!("{path}/{{id}}");
    ops.push(
        op("get", path, &format!("List {name}"), a)
            .query(Query::List)
            .ok(200, Json("List")),
    );
    ops.push(
        op("post", path, &format!("Create a {name} entry"), a)
            .body("Entity")
            .ok(create.0, create.1),
    );
    ops.push(
        op("put", path, &format!("Replace a {name} entry"), a)
            .body("Entity")
            .ok(200, Json("Entity")),
    );
    let read = op("get", &id, &format!("Read a {name} entry"), a).ok(200, Json("Entity"));
    ops.push(if missing == 204 { read.ok(204, Empty) } else { read });
    ops.push(
        op("patch", &id, &format!("Patch a {name} entry"), a)
            .body("Entity")
            .ok(200, Json("Entity")),
    );
    if let Some(s) = delete {
        ops.push(op("delete", &id, &format!("Delete a {name} entry"), a).ok(s, Empty));
    }
}

/// Every operation the router serves, in the order of `http/resources/mod.rs`.
fn operations() -> Vec<Op> {
    use Access::{Edge, Perm, Public};
    let mut o = Vec::new();
    o.push(op("get", PATH, "This OpenAPI document", Public).ok(200, Json("Object")));
    o.push(
        op(
            "get",
            "/api/v1/health",
            "Health, and the caller of a valid token (§3.27)",
            Public,
        )
        .ok(200, Json("Health")),
    );
    o.push(
        op(
            "post",
            "/api/v1/login",
            "Sign in with e-mail and password (§2.2)",
            Public,
        )
        .body("Login")
        .ok(200, Json("Object")),
    );
    let me = Perm("Users", false);
    o.push(op("post", "/api/v1/me/totp", "Enrol a TOTP authenticator (§2.4)", me).ok(201, Json("TotpEnrolment")));
    o.push(
        op(
            "post",
            "/api/v1/me/totp/{id}/verify",
            "Verify a TOTP authenticator (§2.4)",
            me,
        )
        .body("Code")
        .ok(200, Json("Generic")),
    );
    let sp = Perm("Sign On Policy", false);
    o.push(op("get", "/api/v1/signin-policies", "Sign-in policies (§3.19)", sp).ok(200, Json("Object")));
    o.push(
        op(
            "put",
            "/api/v1/signin-policies/mfa",
            "Set the MFA sign-in policy (§3.19)",
            sp,
        )
        .body("Object")
        .ok(200, Json("Object")),
    );
    o.push(
        op(
            "put",
            "/api/v1/signin-policies/sso",
            "Set the SSO sign-in policy (§3.19)",
            sp,
        )
        .body("Object")
        .ok(200, Json("Object")),
    );
    let cs = Perm("Global Policy Compliance", false);
    o.push(op("get", "/api/v1/compliance-settings", "Compliance settings (§3.22)", cs).ok(200, Json("Array")));
    o.push(
        op(
            "put",
            "/api/v1/compliance-settings",
            "Change a compliance setting (§3.22)",
            cs,
        )
        .body("Object")
        .ok(200, Json("Object")),
    );
    let rs = Perm("Resource Sets", false);
    o.push(
        op("get", "/api/v1/resource-sets", "List resource sets (§3.15)", rs)
            .query(Query::List)
            .ok(200, Json("List")),
    );
    o.push(
        op("post", "/api/v1/resource-sets", "Create a resource set", rs)
            .body("Entity")
            .ok(201, Json("Entity")),
    );
    o.push(
        op("put", "/api/v1/resource-sets", "Replace a resource set", rs)
            .body("Entity")
            .ok(200, Json("Entity")),
    );
    o.push(
        op("get", "/api/v1/resource-sets/{id}", "Read a resource set", rs)
            .ok(200, Json("Entity"))
            .ok(204, Empty),
    );
    o.push(
        op("patch", "/api/v1/resource-sets/{id}", "Patch a resource set", rs)
            .body("Entity")
            .ok(200, Json("Entity")),
    );
    o.push(
        op(
            "delete",
            "/api/v1/resource-sets/{id}",
            "Delete a resource set and what it holds",
            rs,
        )
        .ok(204, Empty),
    );
    crud(
        &mut o,
        "/api/v1/roles",
        "roles (§3.16)",
        "Roles",
        false,
        (201, Json("Entity")),
        204,
        Some(204),
    );
    crud(
        &mut o,
        "/api/v1/routings",
        "routings (§3.17)",
        "Routings",
        false,
        (201, Json("Entity")),
        404,
        None,
    );
    for (path, name) in [
        ("/api/v2/integrations", "integrations (§3.11)"),
        ("/api/v1/integrations", "integrations, v1 view (§3.11)"),
    ] {
        crud(
            &mut o,
            path,
            name,
            "Integrations",
            true,
            (201, Json("Entity")),
            204,
            Some(200),
        );
    }
    for (path, name) in [
        ("/api/v2/access-conditions", "access conditions (§3.10)"),
        ("/api/v1/access-conditions", "access conditions, v1 view (§3.10)"),
    ] {
        crud(
            &mut o,
            path,
            name,
            "Access Conditions",
            true,
            (201, Json("Entity")),
            204,
            Some(204),
        );
    }
    crud(
        &mut o,
        "/api/v1/content-security",
        "content security (§3.13)",
        "Access Policies",
        false,
        (201, Json("Entity")),
        204,
        Some(204),
    );
    crud(
        &mut o,
        "/api/v1/discovery-integrations",
        "discovery integrations (§3.12)",
        "Discovery Integrations",
        false,
        (201, Json("Entity")),
        204,
        Some(200),
    );
    o.push(
        op(
            "post",
            "/api/v1/discovery-integrations/{id}/sync",
            "Start a discovery sync now (§3.12)",
            Perm("Discovery Integrations", false),
        )
        .ok(202, Json("Generic")),
    );
    let drafts = Perm("Server Workloads", false);
    o.push(
        op(
            "get",
            "/api/alpha/server-workload-drafts",
            "List server-workload drafts (§3.12)",
            drafts,
        )
        .query(Query::List)
        .ok(200, Json("List")),
    );
    o.push(
        op(
            "get",
            "/api/alpha/server-workload-drafts/{id}",
            "Read a server-workload draft (§3.12)",
            drafts,
        )
        .ok(200, Json("Entity"))
        .ok(204, Empty),
    );
    o.push(
        op(
            "post",
            "/api/v1/access-policies/evaluate",
            "Explain what /edge/v1/credentials would answer, step by step (ext)",
            Perm("Access Policies", true),
        )
        .body("Object")
        .ok(200, Json("Object")),
    );
    let ac = "/api/v1/agent-controllers";
    crud(
        &mut o,
        ac,
        "agent controllers (§3.21)",
        "Agent Controllers",
        false,
        (201, Json("Entity")),
        204,
        Some(201),
    );
    o.push(
        op(
            "post",
            "/api/v1/agent-controllers/{agentControllerExternalId}/device-code",
            "Issue a device code (§3.21)",
            Perm("Agent Controllers", false),
        )
        .ok(201, Json("Object")),
    );
    let idp = Perm("Identity Providers", false);
    crud(
        &mut o,
        "/api/v1/sso-idps",
        "SSO identity providers (§3.20)",
        "Identity Providers",
        false,
        (201, Json("Entity")),
        204,
        Some(204),
    );
    o.push(
        op(
            "get",
            "/api/v1/sso-idps/{id}/verification",
            "Verify an SSO identity provider (§3.20)",
            idp,
        )
        .ok(200, Json("Generic")),
    );
    crud(
        &mut o,
        "/api/v1/log-streams",
        "log streams (§3.14)",
        "Log Streams",
        false,
        (201, Json("Entity")),
        204,
        Some(204),
    );
    o.push(op("get", "/api/v1/sso/login/{idpId}", "Start SSO sign-in (§2.3)", Public).ok(302, Redirect));
    o.push(
        op("get", "/api/v1/sso/callback", "Finish SSO sign-in (§2.3)", Public)
            .query(Query::Callback)
            .ok(200, Json("Object"))
            .ok(302, Redirect),
    );
    o.push(
        op(
            "post",
            "/api/v1/sso/exchange",
            "Exchange a completed SSO sign-in's code (and a TOTP code it owes) for a token",
            Public,
        )
        .body("SsoExchange")
        .ok(200, Json("Object")),
    );
    let u = Perm("Users", false);
    o.push(
        op("get", "/api/v1/users", "List users (§3.18)", u)
            .query(Query::List)
            .ok(200, Json("List")),
    );
    o.push(
        op("post", "/api/v1/users", "Create a user", u)
            .body("Entity")
            .ok(201, Json("Entity")),
    );
    o.push(
        op("get", "/api/v1/users/{id}", "Read a user (201, as in the spec)", u)
            .ok(201, Json("Entity"))
            .ok(204, Empty),
    );
    o.push(
        op("put", "/api/v1/users/{id}", "Replace a user", u)
            .body("Entity")
            .ok(200, Json("Entity")),
    );
    o.push(
        op("patch", "/api/v1/users/{id}", "Patch a user", u)
            .body("Entity")
            .ok(200, Json("Entity")),
    );
    o.push(op("delete", "/api/v1/users/{id}", "Delete a user", u).ok(204, Empty));
    o.push(op("post", "/api/v1/users/{id}/unlock", "Unlock a user", u).ok(200, Json("Generic")));
    let al = Perm("Audit Logs", true);
    o.push(
        op("get", "/api/v1/audit-logs", "List audit entries (§3.23)", al)
            .query(Query::Events)
            .ok(200, Json("List")),
    );
    o.push(
        op("get", "/api/v1/audit-logs/{id}", "Read an audit entry", al)
            .ok(200, Json("Object"))
            .ok(204, Empty),
    );
    let ae = Perm("Access Authorization Events", true);
    o.push(
        op(
            "get",
            "/api/v1/authorization-events",
            "List authorization events (§3.24)",
            ae,
        )
        .query(Query::Events)
        .ok(200, Json("List")),
    );
    o.push(
        op(
            "get",
            "/api/v1/authorization-events/{id}",
            "Read an authorization event",
            ae,
        )
        .ok(200, Json("Object"))
        .ok(204, Empty),
    );
    let we = Perm("Workload Events", true);
    o.push(
        op("get", "/api/v1/workload-events", "List workload events (§3.25)", we)
            .query(Query::Events)
            .ok(200, Json("List")),
    );
    o.push(
        op("get", "/api/v1/workload-events/{id}", "Read a workload event", we)
            .ok(200, Json("Object"))
            .ok(204, Empty),
    );
    o.push(
        op(
            "get",
            "/.well-known/openid-configuration",
            "The issuer's discovery document (§5.1)",
            Public,
        )
        .ok(200, Json("Object")),
    );
    o.push(
        op(
            "get",
            "/.well-known/jwks.json",
            "The issuer's public keys (§5.1)",
            Public,
        )
        .ok(200, Json("Jwks")),
    );
    let tp = "/api/v1/trust-providers";
    crud(
        &mut o,
        tp,
        "trust providers (§3.1)",
        "Trust Providers",
        true,
        (200, Json("Entity")),
        204,
        Some(204),
    );
    let tpa = Perm("Trust Providers", true);
    o.push(
        op(
            "get",
            "/api/v1/trust-providers/{tpId}/secrets",
            "List a trust provider's secrets (§3.2)",
            tpa,
        )
        .query(Query::List)
        .ok(200, Json("List")),
    );
    o.push(
        op(
            "post",
            "/api/v1/trust-providers/{tpId}/secrets",
            "Add a trust-provider secret",
            tpa,
        )
        .body("Entity")
        .ok(200, Json("Entity")),
    );
    o.push(
        op(
            "get",
            "/api/v1/trust-providers/{tpId}/secrets/{secretId}",
            "Read a trust-provider secret",
            tpa,
        )
        .ok(200, Json("Entity"))
        .ok(204, Empty),
    );
    o.push(
        op(
            "delete",
            "/api/v1/trust-providers/{tpId}/secrets/{secretId}",
            "Delete a trust-provider secret",
            tpa,
        )
        .ok(204, Empty),
    );
    let cw = "/api/v1/client-workloads";
    crud(
        &mut o,
        cw,
        "client workloads (§3.3)",
        "Client Workloads",
        true,
        (204, Empty),
        204,
        Some(204),
    );
    o.push(
        op(
            "get",
            "/api/v1/client-workloads/identifiers",
            "The identity-type catalogue (§3.3)",
            Perm("Client Workloads", false),
        )
        .ok(200, Json("Array")),
    );
    let sw = "/api/v1/server-workloads";
    crud(
        &mut o,
        sw,
        "server workloads (§3.4)",
        "Server Workloads",
        true,
        (204, Empty),
        204,
        Some(204),
    );
    let cp = Perm("Credential Providers", true);
    for (v, create, put, patch) in [("v2", 201, 200, 200), ("v1", 201, 201, 201)] {
        let base = format!("/api/{v}/credential-providers");
        let id = format!("{base}/{{id}}");
        let sec = if v == "v2" { "§3.5" } else { "§3.6, deprecated" };
        o.push(
            op("get", &base, &format!("List credential providers ({sec})"), cp)
                .query(Query::List)
                .ok(200, Json("List")),
        );
        o.push(
            op("post", &base, "Create a credential provider", cp)
                .body("Entity")
                .ok(create, Json("Entity")),
        );
        o.push(
            op("put", &base, "Replace a credential provider", cp)
                .body("Entity")
                .ok(put, Json("Entity")),
        );
        o.push(
            op("get", &id, "Read a credential provider", cp)
                .ok(200, Json("Entity"))
                .ok(204, Empty),
        );
        o.push(
            op("patch", &id, "Patch a credential provider", cp)
                .body("Entity")
                .ok(patch, Json("Entity")),
        );
        o.push(op("delete", &id, "Delete a credential provider", cp).ok(204, Empty));
        o.push(
            op(
                "get",
                &format!("{id}/authorize"),
                "Start the admin consent (§3.5.4)",
                cp,
            )
            .ok(302, Redirect),
        );
    }
    o.push(
        op(
            "get",
            "/api/v2/credential-providers/{id}/verification",
            "Verify a credential provider",
            cp,
        )
        .ok(200, Json("Generic")),
    );
    o.push(
        op(
            "get",
            "/api/v1/credential-providers/{id}/callback",
            "The admin consent's callback (§3.5.4)",
            Public,
        )
        .query(Query::Callback)
        .ok(200, Json("Generic"))
        .ok(302, Redirect),
    );
    let ci = "/api/v1/credential-integrations";
    crud(
        &mut o,
        ci,
        "credential integrations (§3.7)",
        "Credential Providers",
        true,
        (201, Json("Entity")),
        204,
        Some(204),
    );
    let ap2 = Perm("Access Policies", false);
    o.push(
        op("get", "/api/v2/access-policies", "List access policies (§3.8)", ap2)
            .query(Query::List)
            .ok(200, Json("List")),
    );
    o.push(
        op("post", "/api/v2/access-policies", "Create an access policy", ap2)
            .body("Entity")
            .ok(200, Json("Entity")),
    );
    o.push(
        op("put", "/api/v2/access-policies", "Replace an access policy", ap2)
            .body("Entity")
            .ok(200, Json("Entity")),
    );
    let ap1 = Perm("Access Policies", true);
    for (v, a) in [("v2", ap2), ("v1", ap1)] {
        let base = format!("/api/{v}/access-policies");
        let by = format!("{base}/getByWorkloadIds/{{clientWorkloadId}}/{{serverWorkloadId}}");
        o.push(op("get", &by, "The policy between two workloads", a).ok(200, Json("Entity")));
        o.push(
            op("get", &format!("{base}/{{id}}"), "Read an access policy", a)
                .ok(200, Json("Entity"))
                .ok(204, Empty),
        );
        o.push(
            op("patch", &format!("{base}/{{id}}"), "Patch an access policy", a)
                .body("Entity")
                .ok(200, Json("Entity")),
        );
        o.push(op("delete", &format!("{base}/{{id}}"), "Delete an access policy", a).ok(204, Empty));
        o.push(
            op("post", &format!("{base}/{{id}}/notes"), "Add a note to a policy", a)
                .body("Note")
                .ok(201, Json("Object")),
        );
    }
    o.push(
        op(
            "get",
            "/api/v2/access-policies/{id}/notes",
            "A policy's notes, newest first",
            ap2,
        )
        .query(Query::List)
        .ok(200, Json("List")),
    );
    o.push(
        op(
            "get",
            "/api/v2/access-policies/{id}/credential-mappings",
            "A policy's credential mappings",
            ap2,
        )
        .query(Query::List)
        .ok(200, Json("List")),
    );
    o.push(
        op(
            "get",
            "/api/v1/access-policies",
            "List access policies (§3.9, deprecated)",
            ap1,
        )
        .query(Query::List)
        .ok(200, Json("List")),
    );
    o.push(
        op("post", "/api/v1/access-policies", "Create an access policy", ap1)
            .body("Entity")
            .ok(200, Json("Entity")),
    );
    o.push(
        op("put", "/api/v1/access-policies", "Replace an access policy", ap1)
            .body("Entity")
            .ok(200, Json("Entity")),
    );
    let ca = Perm("Standalone Certificate Authorities", false);
    o.push(op("get", "/api/v1/root-ca", "The X.509 CA certificate (§3.28)", ca).ok(200, Pem));
    o.push(
        op("post", "/edge/v1/auth", "Authenticate a workload (§4.4)", Public)
            .body("EdgeAuth")
            .ok(200, Json("EdgeToken")),
    );
    o.push(
        op(
            "post",
            "/edge/v1/credentials",
            "A credential for a workload (§4.8)",
            Edge,
        )
        .body("EdgeCredentialsRequest")
        .ok(200, Json("EdgeCredentials"))
        .ok(404, Json("EdgeCredentials")),
    );
    o
}

/// The operations as `(METHOD, path)` pairs, upper-case methods (for the coverage test).
pub fn operation_keys() -> Vec<(String, String)> {
    operations()
        .into_iter()
        .map(|o| (o.method.to_uppercase(), o.path))
        .collect()
}

/// The key of a list's items (§1.6: the resource's own name, else `entities`).
fn items_key(path: &str) -> &'static str {
    match path {
        "/api/v1/trust-providers" => "trustProviders",
        "/api/v1/client-workloads" => "clientWorkloads",
        "/api/v1/server-workloads" => "serverWorkloads",
        "/api/v1/credential-providers" | "/api/v2/credential-providers" => "credentialProviders",
        "/api/v1/access-policies" => "accessPolicies",
        "/api/v1/roles" => "roles",
        "/api/v1/users" => "users",
        "/api/v1/agent-controllers" => "agentControllers",
        "/api/v1/log-streams" => "logStreams",
        "/api/v1/integrations" | "/api/v2/integrations" | "/api/v1/discovery-integrations" => "integrations",
        "/api/v1/access-conditions" | "/api/v2/access-conditions" => "accessConditions",
        "/api/alpha/server-workload-drafts" => "serverWorkloadDrafts",
        "/api/v1/audit-logs" => "auditLogs",
        "/api/v1/authorization-events" => "authorizationEvents",
        "/api/v1/workload-events" => "workloadEvents",
        _ => "entities",
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No content (an unknown id on reads, §1.7; or a write that answers no body)",
        302 => "Redirect",
        400 => "Validation failed (§1.8)",
        401 => "Not authenticated",
        403 => "Forbidden",
        404 => "Not found",
        405 => "Method not allowed",
        429 => "Rate limited (`Retry-After`)",
        503 => "The request's events could not be stored: nothing was handed out (`Retry-After`)",
        _ => "Internal error",
    }
}

fn error_ref() -> Value {
    json!({"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
}

fn operation(o: &Op) -> Value {
    let mut params = Vec::new();
    let mut path_rest = o.path.as_str();
    while let Some(i) = path_rest.find('{') {
        let j = path_rest[i..].find('}').expect("balanced braces") + i;
        let name = &path_rest[i + 1..j];
        params.push(
            json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}}),
        );
        path_rest = &path_rest[j + 1..];
    }
    let rs_header = matches!(o.access, Access::Perm(_, true)) || o.path.starts_with("/edge/");
    if rs_header {
        params.push(json!({"name": "X-Svc-ResourceSet", "in": "header", "required": false,
            "description": "The resource set of the request (§1.4); the default set when absent.",
            "schema": {"type": "string", "format": "uuid"}}));
    }
    let q = |name: &str, schema: Value| json!({"name": name, "in": "query", "required": false, "schema": schema});
    match o.query {
        Query::None => {}
        Query::List => {
            params.push(q(
                "page",
                json!({"type": "integer", "minimum": 1, "maximum": 2147483647}),
            ));
            params.push(q("per-page", json!({"type": "integer", "minimum": 1, "maximum": 1000})));
            params.push(q("filter", json!({"type": "string"})));
            params.push(q("order", json!({"type": "string"})));
            params.push(q("group-by", json!({"type": "string"})));
        }
        Query::Events => {
            params.push(q(
                "page",
                json!({"type": "integer", "minimum": 1, "maximum": 2147483647}),
            ));
            params.push(q("per-page", json!({"type": "integer", "minimum": 1, "maximum": 1000})));
            params.push(q("order", json!({"type": "string"})));
            params.push(q("search", json!({"type": "string"})));
            params.push(q(
                "span-last-minutes",
                json!({"type": "integer", "minimum": 0, "maximum": 2147483647}),
            ));
            params.push(q("start-date", json!({"type": "string", "format": "date-time"})));
            params.push(q("end-date", json!({"type": "string", "format": "date-time"})));
            params.push(q("severity", json!({"type": "string"})));
        }
        Query::Callback => {
            for n in ["code", "state", "error", "error_description"] {
                params.push(q(n, json!({"type": "string"})));
            }
        }
    }
    let mut responses = Map::new();
    for (status, body) in &o.ok {
        let v = match body {
            Json("List") => {
                let key = items_key(&o.path);
                json!({"description": reason(*status),
                "content": {"application/json": {"schema": {
                    "allOf": [{"$ref": "#/components/schemas/List"}],
                    "required": [key],
                    "properties": {key: {"type": "array", "items": {"type": "object"}}}
                }}}})
            }
            Json(s) => json!({"description": reason(*status),
                "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{s}")}}}}),
            Empty => json!({"description": reason(*status)}),
            Redirect => json!({"description": reason(*status),
                "headers": {"Location": {"schema": {"type": "string"}}}}),
            Pem => json!({"description": reason(*status),
                "content": {"application/x-pem-file": {"schema": {"type": "string"}}}}),
        };
        responses.insert(status.to_string(), v);
    }
    // §1.7: 400, 401/403 on protected routes, 404, 500 are always possible; the Edge API's own
    // statuses are §4.9's.
    let mut errors: Vec<u16> = vec![400, 404, 500];
    match o.access {
        Access::Perm(..) => errors.extend([401, 403]),
        Access::Edge => errors.extend([401, 403, 429, 503]),
        Access::Public if o.path == "/edge/v1/auth" => errors.extend([401, 429, 503]),
        Access::Public if o.path == "/api/v1/login" => errors.extend([401, 403, 429]),
        Access::Public if o.path.starts_with("/api/v1/sso/") => errors.extend([401, 429]),
        Access::Public => {}
    }
    for s in errors {
        let e = responses
            .entry(s.to_string())
            .or_insert_with(|| json!({"description": reason(s)}));
        if e.get("content").is_none() {
            e["content"] = error_ref()["content"].clone();
        }
    }
    let mut v = json!({
        "operationId": operation_id(o),
        "summary": o.summary,
        "tags": [tag(&o.path)],
        "responses": responses,
    });
    if !params.is_empty() {
        v["parameters"] = Value::Array(params);
    }
    if let Some(s) = o.request {
        v["requestBody"] = json!({"required": true,
            "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{s}")}}}});
    }
    let (security, description) = match o.access {
        Access::Public => (json!([]), "Public (§2.1).".to_string()),
        Access::Perm(perm, _) => (json!([{"bearer": []}]), format!("Permission `{perm}` (§2.7).")),
        Access::Edge => (json!([{"edgeToken": []}]), "An Edge access token (§4.7).".to_string()),
    };
    v["security"] = security;
    v["description"] = json!(description);
    v
}

/// `get_api_v1_trust_providers_id`: unique per operation.
fn operation_id(o: &Op) -> String {
    let mut s = o.method.to_string();
    for part in o.path.split('/').filter(|p| !p.is_empty()) {
        s.push('_');
        s.extend(
            part.chars()
                .filter(|c| !matches!(c, '{' | '}'))
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }),
        );
    }
    s
}

fn tag(path: &str) -> String {
    let mut parts = path.split('/').filter(|p| !p.is_empty());
    match (parts.next(), parts.next(), parts.next()) {
        (Some("edge"), ..) => "Edge API".into(),
        (Some(".well-known"), ..) => "OIDC issuer".into(),
        (Some("api"), Some(v), Some(r)) if v.starts_with('v') => r.to_string(),
        _ => "meta".into(),
    }
}

fn schemas() -> Value {
    let entity = json!({"type": "object", "description": "An entity DTO of the resource (§3); secrets are `null`.",
    "properties": {
        "externalId": {"type": ["string", "null"], "format": "uuid"},
        "name": {"type": ["string", "null"]},
        "description": {"type": ["string", "null"]},
        "isActive": {"type": ["boolean", "null"]}
    }});
    json!({
        "Error": {"type": "object", "description": "GenericResponseDTO (§1.8, §4.9).",
            "required": ["success", "message", "id"],
            "properties": {
                "success": {"type": "boolean", "const": false},
                "message": {"type": ["string", "null"]},
                "id": {"type": "integer", "const": 0}
            }},
        "Generic": {"type": "object", "description": "GenericResponseDTO in its success form.",
            "required": ["success", "id"],
            "properties": {
                "success": {"type": "boolean"},
                "message": {"type": ["string", "null"]},
                "id": {"type": "integer"}
            }},
        "Entity": entity,
        "List": {"type": "object", "description": "A list wrapper (§1.6): the items under the resource's key, with paging fields.",
            "required": ["page", "perPage", "order", "statusCode", "recordsTotal"],
            "properties": {
                "page": {"type": "integer"},
                "perPage": {"type": "integer"},
                "order": {"type": ["string", "null"]},
                "statusCode": {"type": "integer"},
                "recordsTotal": {"type": "integer"},
                "recordsTotalEstimated": {"type": "boolean", "const": true,
                    "description": "Event lists only (audit logs, authorization and workload events): present when more than 10,000 records match and `recordsTotal` is an estimate."}
            }},
        "Object": {"type": "object"},
        "Array": {"type": "array", "items": {"type": "object"}},
        "Health": {"type": "object", "required": ["status"],
            "properties": {"status": {"enum": ["Healthy", "Unhealthy"]}}},
        "Login": {"type": "object", "required": ["email", "password"],
            "properties": {"email": {"type": "string"}, "password": {"type": "string"}, "totpCode": {"type": "string"}}},
        "Code": {"type": "object", "required": ["code"], "properties": {"code": {"type": "string"}}},
        "SsoExchange": {"type": "object", "required": ["ssoCode"],
            "properties": {"ssoCode": {"type": "string"}, "totpCode": {"type": "string"}}},
        "Note": {"type": "object", "required": ["note"], "properties": {"note": {"type": "string"}}},
        "TotpEnrolment": {"type": "object", "required": ["id", "secret", "otpauthUri"],
            "properties": {"id": {"type": "string", "format": "uuid"}, "secret": {"type": "string"}, "otpauthUri": {"type": "string"}}},
        "Jwks": {"type": "object", "required": ["keys"], "properties": {"keys": {"type": "array", "items": {"type": "object"}}}},
        "EdgeAuth": {"type": "object", "description": "AuthRequest (§4.1).", "required": ["clientId", "client"],
            "properties": {"clientId": {"type": "string"}, "client": {"type": "object"}}},
        "EdgeToken": {"type": "object", "description": "TokenDTO (§4.1).", "required": ["accessToken", "tokenType", "expiresIn"],
            "properties": {
                "accessToken": {"type": "string"},
                "refreshToken": {"type": ["string", "null"]},
                "tokenType": {"type": "string"},
                "expiresIn": {"type": "integer"}
            }},
        "EdgeCredentialsRequest": {"type": "object", "description": "ApiCredentialsRequest (§4.1).",
            "required": ["client", "server", "credentialType"],
            "properties": {
                "client": {"type": "object"},
                "server": {"type": "object", "properties": {
                    "host": {"type": ["string", "null"]}, "port": {"type": "integer"}, "transportProtocol": {"type": "string"}}},
                "credentialType": {"type": "string"},
                "connectionMetadata": {"type": ["object", "null"]},
                "certSigningRequest": {"type": ["string", "null"]}
            }},
        "EdgeCredentials": {"type": "object", "description": "ApiCredentialsResponse (§4.1, §4.10).",
            "required": ["credentialType", "expiresAt", "data"],
            "properties": {
                "credentialType": {"type": "string"},
                "expiresAt": {"type": ["string", "null"]},
                "data": {"type": "object"}
            }}
    })
}

/// The whole document.
pub fn document() -> Value {
    let mut paths = Map::new();
    for o in operations() {
        let entry = paths.entry(o.path.clone()).or_insert_with(|| json!({}));
        entry[o.method] = operation(&o);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Svc",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The management API (`/api/...`), the Edge API (`/edge/v1/...`) and the OIDC issuer documents of Svc, a workload credential service. Every error body is the GenericResponseDTO of §1.8 (`Error`).",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"}
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": schemas(),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "A management token (§2.5): sign-in, CLI or workload token."},
                "edgeToken": {"type": "http", "scheme": "bearer", "description": "An Edge access token from `/edge/v1/auth` (§4.7)."}
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_are_unique() {
        let mut ids: Vec<String> = operations().iter().map(operation_id).collect();
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n);
    }
}
