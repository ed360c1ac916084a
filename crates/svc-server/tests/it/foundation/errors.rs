//! Every error is the GenericResponseDTO (contract §1.8), never plain text; every response has
//! `X-Request-Id`.

use serde_json::json;

use crate::support::harness::TestApp;

#[tokio::test]
async fn unknown_path_is_404_generic() {
    let t = TestApp::start().await;
    t.get("/api/v1/does-not-exist").await.expect_error(404, "Not found.");
    t.call(reqwest::Method::GET, "/nothing/here", None, None)
        .await
        .expect_error(404, "Not found.");
}

#[tokio::test]
async fn wrong_method_is_405_generic() {
    let t = TestApp::start().await;
    t.call(reqwest::Method::DELETE, "/api/v1/health", None, None)
        .await
        .expect_error(405, "Method not allowed.");
    t.call(reqwest::Method::PATCH, "/api/v1/roles", Some(&t.token), Some(json!({})))
        .await
        .expect_error(405, "Method not allowed.");
}

#[tokio::test]
async fn missing_or_bad_token_is_401() {
    let t = TestApp::start().await;
    t.call(reqwest::Method::GET, "/api/v1/roles", None, None)
        .await
        .expect_error(401, "Not authenticated.");
    t.call(reqwest::Method::GET, "/api/v1/roles", Some("not-a-jwt"), None)
        .await
        .expect_error(401, "Not authenticated.");
    // A token signed with HS256 under some other key.
    let forged = "eyJhbGciOiJIUzI1NiIsImtpZCI6ImhzLTAwMDAiLCJ0eXAiOiJKV1QifQ.eyJzdWIiOiJ4In0.c2lnbmF0dXJl";
    t.call(reqwest::Method::GET, "/api/v1/roles", Some(forged), None)
        .await
        .expect_error(401, "Not authenticated.");
    // Basic scheme instead of Bearer.
    let r = t
        .send(t.client.get(t.url("/api/v1/roles")).basic_auth("admin", Some("x")))
        .await;
    r.expect_error(401, "Not authenticated.");
}

#[tokio::test]
async fn malformed_json_and_wrong_content_type_are_400() {
    let t = TestApp::start().await;
    let r = t
        .send(
            t.client
                .post(t.url("/api/v1/roles"))
                .bearer_auth(&t.token)
                .header("content-type", "application/json")
                .body("{\"name\": "),
        )
        .await;
    r.expect_error_prefix(400, "body: malformed JSON");
    let r = t
        .send(
            t.client
                .post(t.url("/api/v1/roles"))
                .bearer_auth(&t.token)
                .header("content-type", "text/plain")
                .body("{}"),
        )
        .await;
    r.expect_error(400, "body: Content-Type must be application/json");
    let r = t
        .send(
            t.client
                .post(t.url("/api/v1/roles"))
                .bearer_auth(&t.token)
                .header("content-type", "application/json"),
        )
        .await;
    r.expect_error(400, "body: is required");
    t.post("/api/v1/roles", json!([1, 2]))
        .await
        .expect_error(400, "body: must be a JSON object, not an array");
}

#[tokio::test]
async fn unknown_fields_wrong_types_and_bad_uuids_are_400() {
    let t = TestApp::start().await;
    t.post(
        "/api/v1/roles",
        json!({"name": "r", "isActive": true, "colour": "blue"}),
    )
    .await
    .expect_error(400, "colour: unknown property");
    t.post("/api/v1/roles", json!({"name": 5, "isActive": true}))
        .await
        .expect_error(400, "name: must be a string, not a number");
    t.post("/api/v1/roles", json!({"name": "r", "isActive": "yes"}))
        .await
        .expect_error(400, "isActive: must be a boolean, not a string");
    t.post("/api/v1/roles", json!({"isActive": true}))
        .await
        .expect_error(400, "name: is required");
    t.post("/api/v1/roles", json!({"name": "", "isActive": true}))
        .await
        .expect_error(400, "name: must be 1..128 characters");
    t.post(
        "/api/v1/roles",
        json!({"name": "r", "isActive": true, "permissions": [{"name": "Nope"}]}),
    )
    .await
    .expect_error(400, "permissions[0].name: unknown permission 'Nope'");
    t.get("/api/v1/roles/not-a-uuid")
        .await
        .expect_error(400, "id: must be a UUID");
    t.get("/api/v1/roles?per-page=0")
        .await
        .expect_error(400, "per-page: must be an integer in 1..1000");
    t.get("/api/v1/roles?page=0")
        .await
        .expect_error(400, "page: must be an integer ≥ 1");
    t.get("/api/v1/roles?page=99999999999")
        .await
        .expect_error(400, "page: must be an integer in 1..2147483647");
    // A path id that is not even UTF-8 is no UUID; the users' PUT takes any text (unknown → 404).
    t.get("/api/v1/roles/%ff").await.expect_error(400, "id: must be a UUID");
    t.put(
        "/api/v1/users/%ff",
        json!({"email": "x@acme.test", "firstName": "Xx", "lastName": "Yy"}),
    )
    .await
    .expect_error(404, "Not found.");
    // Nothing was stored by any of these.
    let r = t.get("/api/v1/roles?filter=isSystem:false").await;
    assert_eq!(r.expect(200)["recordsTotal"], 0);
}

/// A body that cannot be read (a malformed chunk) is not reported as a body over the limit.
#[tokio::test]
async fn an_unreadable_body_is_named_as_such() {
    use tokio::io::AsyncReadExt;
    let t = TestApp::start().await;
    let req = format!(
        "POST /api/v1/roles HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n{{}}\r\n0\r\n\r\n",
        t.token
    );
    let mut s = t.raw_connection(req.as_bytes()).await;
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    assert!(out.contains("body: could not be read"), "{out}");
}

/// A client that never finishes its request headers loses its connection after
/// SVC_HTTP_HEADER_TIMEOUT_SECONDS (it held the connection and its task for ever), while others
/// are served meanwhile.
#[tokio::test]
async fn slow_request_headers_are_cut_off() {
    use tokio::io::AsyncReadExt;
    let t = TestApp::start_with(|env| {
        env.insert("SVC_HTTP_HEADER_TIMEOUT_SECONDS".into(), "1".into());
    })
    .await;
    let mut slow = t.raw_connection(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n").await;
    t.get("/api/v1/health").await.expect(200);
    let mut buf = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(10), slow.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "the connection was still open after 10 s");
    assert!(!String::from_utf8_lossy(&buf).contains("200 OK"));
}

#[tokio::test]
async fn bodies_over_one_mebibyte_are_400() {
    let t = TestApp::start().await;
    let big = "x".repeat(1024 * 1024 + 10);
    let r = t
        .post(
            "/api/v1/roles",
            json!({"name": "r", "isActive": true, "description": big}),
        )
        .await;
    r.expect_error(400, "body: larger than the 1024 KiB limit");
}

#[tokio::test]
async fn every_response_has_a_request_id_and_echoes_a_uuid() {
    let t = TestApp::start().await;
    let r = t.send(t.client.get(t.url("/api/v1/health"))).await;
    let id = r.header("x-request-id").expect("x-request-id");
    assert!(uuid::Uuid::parse_str(id).is_ok());
    let mine = "5b1f0c3e-2d4a-4c6b-8e9f-0a1b2c3d4e5f";
    let r = t.send(t.client.get(t.url("/nope")).header("x-request-id", mine)).await;
    assert_eq!(r.header("x-request-id"), Some(mine));
    // Exactly as sent: an upper-case UUID is not rewritten.
    let upper = mine.to_uppercase();
    let r = t
        .send(t.client.get(t.url("/api/v1/health")).header("x-request-id", &upper))
        .await;
    assert_eq!(r.header("x-request-id"), Some(upper.as_str()));
    let r = t
        .send(
            t.client
                .get(t.url("/api/v1/health"))
                .header("x-request-id", "not-a-uuid"),
        )
        .await;
    assert_ne!(r.header("x-request-id"), Some("not-a-uuid"));
}

#[tokio::test]
async fn json_responses_say_charset_utf_8() {
    let t = TestApp::start().await;
    let ok = t.send(t.client.get(t.url("/api/v1/health"))).await;
    assert_eq!(ok.header("content-type"), Some("application/json; charset=utf-8"));
    let not_found = t.send(t.client.get(t.url("/nope"))).await;
    assert_eq!(
        not_found.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    let edge = t.send(t.client.post(t.url("/edge/v1/auth")).body("{")).await;
    assert_eq!(edge.header("content-type"), Some("application/json; charset=utf-8"));
}

#[tokio::test]
async fn health_is_public_and_names_the_user_of_a_valid_token() {
    let t = TestApp::start().await;
    let anon = t.send(t.client.get(t.url("/api/v1/health"))).await;
    let b = anon.expect(200);
    assert_eq!(b["status"], "Healthy");
    assert_eq!(b["tenant"], "default");
    assert_eq!(b["user"], serde_json::Value::Null);
    assert_eq!(b["version"], env!("CARGO_PKG_VERSION"));
    assert!(b["host"].as_str().unwrap().starts_with("127.0.0.1:"));
    let me = t.get("/api/v1/health").await;
    let b = me.expect(200);
    assert_eq!(b["user"], crate::support::harness::ADMIN_EMAIL);
    assert_eq!(b["userFullName"], "Bootstrap Admin");
    assert!(b["sessionExpiresAt"].as_str().unwrap().ends_with('Z'));
    // An invalid token is ignored here.
    let r = t.get_as("garbage", "/api/v1/health").await;
    assert_eq!(r.expect(200)["user"], serde_json::Value::Null);
}
