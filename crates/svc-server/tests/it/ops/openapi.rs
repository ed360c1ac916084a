//! `GET /api/openapi.json`: public, OpenAPI 3.1, and exactly the router's operations. The routes
//! are found where they are declared: every path literal of `src/http` and `src/edge` (the path
//! a CRUD resource is registered with, `crud::routes::<R>(app, path)`, also serves
//! `{path}/{id}`), and for each path the methods the router answers, from the `Allow` header of
//! its 405 to a method no route takes.

use std::collections::BTreeSet;
use std::path::Path;

use crate::support::harness::TestApp;

const PROBE_ID: &str = "0191f2a4-7b5c-7d1e-9f00-1234567890ab";

fn rust_files(dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(std::fs::read_to_string(&p).unwrap());
        }
    }
}

/// Every path template that a source line of the HTTP layer names as a literal.
fn declared_paths() -> BTreeSet<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut texts = Vec::new();
    rust_files(&src.join("http"), &mut texts);
    rust_files(&src.join("edge"), &mut texts);
    let mut out = BTreeSet::new();
    for text in &texts {
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("//") || code.contains("format!") {
                continue;
            }
            let mut rest = line;
            while let Some(i) = rest.find('"') {
                let after = &rest[i + 1..];
                let Some(j) = after.find('"') else { break };
                let lit = &after[..j];
                rest = &after[j + 1..];
                let routed = ["/api/", "/edge/", "/.well-known/"].iter().any(|p| lit.starts_with(p));
                if routed && !lit.contains(['?', ' ', '%']) {
                    out.insert(lit.to_string());
                    if code.contains("crud::register") {
                        out.insert(format!("{lit}/{{id}}"));
                    }
                }
            }
        }
    }
    out
}

fn concrete(template: &str) -> String {
    let mut s = String::new();
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        let j = rest[i..].find('}').unwrap() + i;
        s.push_str(&rest[..i]);
        s.push_str(PROBE_ID);
        rest = &rest[j + 1..];
    }
    s.push_str(rest);
    s
}

/// `(METHOD, template)` of every route the running router serves.
async fn routed(t: &TestApp) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for path in declared_paths() {
        let r = t
            .send(t.client.request(reqwest::Method::OPTIONS, t.url(&concrete(&path))))
            .await;
        if r.status == 404 {
            continue; // a literal that is no route (a Location, a message)
        }
        assert_eq!(
            r.status, 405,
            "OPTIONS {path}: no route takes OPTIONS, so the router must answer 405"
        );
        let allow = r
            .header("allow")
            .unwrap_or_else(|| panic!("405 of {path} without Allow"));
        for m in allow
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty() && *m != "HEAD")
        {
            out.insert((m.to_string(), path.clone()));
        }
    }
    out
}

#[tokio::test]
async fn the_document_lists_exactly_the_routers_operations() {
    let t = TestApp::start().await;
    let routes = routed(&t).await;
    assert!(
        routes.len() > 100,
        "route discovery found only {} operations",
        routes.len()
    );
    let doc: BTreeSet<(String, String)> = svc_server::http::openapi::operation_keys().into_iter().collect();
    let missing: Vec<_> = routes.difference(&doc).collect();
    let extra: Vec<_> = doc.difference(&routes).collect();
    assert!(
        missing.is_empty(),
        "routes the OpenAPI document lacks (register them through http::api with their entry): {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "operations in the OpenAPI document that no route serves: {extra:?}"
    );
}

#[tokio::test]
async fn the_document_is_public_openapi_3_1_with_the_error_body() {
    let t = TestApp::start().await;
    let r = t.send(t.client.get(t.url("/api/openapi.json"))).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json; charset=utf-8"));
    assert_eq!(r.body["openapi"], "3.1.0");
    assert_eq!(r.body, svc_server::http::openapi::document());
    let error = &r.body["components"]["schemas"]["GenericResponseDTO"];
    assert_eq!(error["required"], serde_json::json!(["success", "message", "id"]));
    // Every operation documents its error statuses with the §1.8 body.
    for (path, item) in r.body["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            for s in ["400", "500"] {
                let content = &op["responses"][s]["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(
                    content, "#/components/schemas/GenericResponseDTO",
                    "{method} {path} {s}"
                );
            }
        }
    }
}
