//! `GET /api/openapi.json` (public): the OpenAPI 3.1 document of the management and Edge APIs,
//! made from the route table (`http::api`: every route registers its entry where it is declared)
//! and the types of its bodies (their JSON Schemas, from `schemars`, under
//! `components/schemas`). `tests/it/ops/openapi.rs` fails when a route exists that the document
//! lacks, or the reverse, and `scripts/test.sh` validates the document and fuzzes the server
//! against it (schemathesis).

use std::sync::OnceLock;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::http::api::{Access, Api, Body, Op, OpDoc, Query, SchemaFn};

pub const PATH: &str = "/api/openapi.json";

/// The document's own route.
pub fn register(api: &mut Api<'_>) {
    api.public(PATH)
        .get(serve, Op::new("This OpenAPI document").ok::<OpenApiDocument>(200));
}

/// The schema of this document's own answer: an OpenAPI 3.1 document (its members are
/// described by the OpenAPI specification, not here).
pub struct OpenApiDocument;

impl schemars::JsonSchema for OpenApiDocument {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "OpenAPIDocument".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "description": "An OpenAPI 3.1 document (https://spec.openapis.org/oas/v3.1.0).",
            "required": ["openapi", "info", "paths"],
            "properties": {
                "openapi": {"type": "string"},
                "info": {"type": "object"},
                "servers": {"type": "array", "items": {"type": "object"}},
                "paths": {"type": "object"},
                "components": {"type": "object"}
            }
        })
    }
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

/// Every registered operation, in registration order.
fn operations() -> Vec<OpDoc> {
    let mut api = Api::entries_only();
    crate::http::resources::register(&mut api);
    register(&mut api);
    api.finish().1
}

/// The operations as `(METHOD, path)` pairs, upper-case methods (for the coverage test).
pub fn operation_keys() -> Vec<(String, String)> {
    operations()
        .into_iter()
        .map(|o| (o.method.to_uppercase(), o.path))
        .collect()
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
        503 => {
            "The database cannot serve the request now (unreachable, or its disk full), or an edge request's events could not be stored: nothing was changed or handed out (`Retry-After`)"
        }
        _ => "Internal error",
    }
}

fn error_ref() -> Value {
    json!({"content": {"application/json": {"schema": {"$ref": "#/components/schemas/GenericResponseDTO"}}}})
}

/// A schema of the document: its `$ref` when the type is a component (registered in `g`).
fn schema_of(g: &mut schemars::SchemaGenerator, f: SchemaFn) -> Value {
    f(g).to_value()
}

/// A list wrapper's schema: the paging fields and the items under their key.
fn list_schema(items: &str, item: Value) -> Value {
    json!({"type": "object",
    "description": "A list wrapper: the items under the resource's key, with paging fields.",
    "required": ["page", "perPage", "order", "statusCode", "recordsTotal", items],
    "properties": {
        "page": {"type": "integer", "format": "int32"},
        "perPage": {"type": "integer", "format": "int32"},
        "order": {"type": ["string", "null"]},
        "statusCode": {"type": "integer", "format": "int32"},
        "recordsTotal": {"type": "integer", "format": "int32"},
        "recordsTotalEstimated": {"type": "boolean", "const": true,
            "description": "Event lists only (audit logs, authorization and workload events): present when more than 10,000 records match and `recordsTotal` is an estimate."},
        items: {"type": "array", "items": item}
    }})
}

fn operation(o: &OpDoc, g: &mut schemars::SchemaGenerator) -> Value {
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
            "description": "The resource set of the request; the default set when absent.",
            "schema": {"type": "string", "format": "uuid"}}));
    }
    let q = |name: &str, schema: Value| json!({"name": name, "in": "query", "required": false, "schema": schema});
    let paging = |params: &mut Vec<Value>| {
        params.push(q(
            "page",
            json!({"type": "integer", "minimum": 1, "maximum": 2147483647}),
        ));
        params.push(q("per-page", json!({"type": "integer", "minimum": 1, "maximum": 1000})));
    };
    match o.op.query {
        Query::None => {}
        Query::List => {
            paging(&mut params);
            params.push(q("filter", json!({"type": "string"})));
            params.push(q("order", json!({"type": "string"})));
            params.push(q("group-by", json!({"type": "string"})));
        }
        Query::Events => {
            paging(&mut params);
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
    for (status, body) in &o.op.responses {
        let v = match body {
            Body::Json(f) => json!({"description": reason(*status),
                "content": {"application/json": {"schema": schema_of(g, *f)}}}),
            Body::List(items, f) => {
                let item = schema_of(g, *f);
                json!({"description": reason(*status),
                    "content": {"application/json": {"schema": list_schema(items, item)}}})
            }
            Body::Empty => json!({"description": reason(*status)}),
            Body::Redirect => json!({"description": reason(*status),
                "headers": {"Location": {"schema": {"type": "string"}}}}),
            Body::Pem => json!({"description": reason(*status),
                "content": {"application/x-pem-file": {"schema": {"type": "string"}}}}),
        };
        responses.insert(status.to_string(), v);
    }
    // 400, 401/403 where a token is needed, 404 and 500 are always possible; an operation adds
    // its own (429, 503, …).
    let mut errors: Vec<u16> = vec![400, 404, 500];
    if matches!(o.access, Access::Perm(..) | Access::User | Access::Edge) {
        errors.extend([401, 403]);
    }
    // Issue 32: a management operation answers 503 while the database cannot be used.
    if matches!(o.access, Access::Perm(..) | Access::User) {
        errors.push(503);
    }
    errors.extend(o.op.errors.iter().copied());
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
        "summary": o.op.summary,
        "tags": [tag(&o.path)],
        "responses": responses,
    });
    if !params.is_empty() {
        v["parameters"] = Value::Array(params);
    }
    if let Some(f) = o.op.request {
        v["requestBody"] = json!({"required": true,
            "content": {"application/json": {"schema": schema_of(g, f)}}});
    }
    let (security, description) = match o.access {
        Access::Public => (json!([]), "Public.".to_string()),
        Access::Perm(perm, _) => (json!([{"bearer": []}]), format!("Permission `{}`.", perm.name())),
        Access::User => (json!([{"bearer": []}]), "Any signed-in user.".to_string()),
        Access::Edge => (json!([{"edgeToken": []}]), "An Edge access token.".to_string()),
    };
    v["security"] = security;
    v["description"] = json!(description);
    v
}

/// `get_api_v1_trust_providers_id`: unique per operation.
fn operation_id(o: &OpDoc) -> String {
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

/// The whole document.
pub fn document() -> Value {
    let mut g = svc_api::schema::generator();
    // The error body of every operation.
    let _ = g.subschema_for::<svc_api::GenericResponse>();
    let mut paths = Map::new();
    for o in operations() {
        let op = operation(&o, &mut g);
        let entry = paths.entry(o.path.clone()).or_insert_with(|| json!({}));
        entry[o.method] = op;
    }
    let mut schemas = g.take_definitions(true);
    svc_api::schema::tag_variants(&mut schemas);
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Svc",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The management API (`/api/...`), the Edge API (`/edge/v1/...`) and the OIDC issuer documents of Svc, a workload credential service. Every error body is the `GenericResponseDTO`.",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"}
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "A management token: sign-in, CLI or workload token."},
                "edgeToken": {"type": "http", "scheme": "bearer", "description": "An Edge access token from `/edge/v1/auth`."}
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tagged_unions_variants_carry_their_tag() {
        let doc = document();
        let s = &doc["components"]["schemas"];
        let platform = &s["PlatformTrustProviderDTO"];
        assert!(platform["required"].as_array().unwrap().contains(&json!("provider")));
        let values = platform["properties"]["provider"]["enum"].as_array().unwrap();
        assert!(values.contains(&json!("CloudARole")), "{values:?}");
        assert!(!values.contains(&json!("OidcIdToken")), "{values:?}");
    }

    #[test]
    fn operation_ids_are_unique() {
        let mut ids: Vec<String> = operations().iter().map(operation_id).collect();
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n);
    }
}
