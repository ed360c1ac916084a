//! Strict request bodies, management and Edge API alike: JSON that repeats a key, a charset other
//! than UTF-8, or a body without a JSON content type is refused with 400; NUL characters in names
//! and free text are refused.

use serde_json::json;

use crate::support::cred::Rig;
use crate::support::harness::{Resp, TestApp};

async fn raw(t: &TestApp, path: &str, token: Option<&str>, content_type: Option<&str>, body: &str) -> Resp {
    let mut req = t.client.post(t.url(path)).body(body.to_string());
    if let Some(tok) = token {
        req = req.bearer_auth(tok);
    }
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    t.send(req).await
}

const JSON: Option<&str> = Some("application/json");

#[tokio::test]
async fn bodies_that_repeat_a_key_name_another_charset_or_no_json_type_are_refused() {
    let t = TestApp::start().await;
    let tok = Some(t.token.as_str());
    let role = r#"{"name":"a","isActive":true}"#;
    // Management: the same role body passes only as JSON in UTF-8 with unique keys.
    raw(
        &t,
        "/api/v1/roles",
        tok,
        JSON,
        r#"{"name":"a","name":"b","isActive":true}"#,
    )
    .await
    .expect_error(400, "name: duplicate key");
    raw(
        &t,
        "/api/v1/roles",
        tok,
        JSON,
        r#"{"name":"a","isActive":true,"tags":[{"key":"k","key":"k2","value":"v"}]}"#,
    )
    .await
    .expect_error(400, "tags[0].key: duplicate key");
    raw(
        &t,
        "/api/v1/roles",
        tok,
        Some("application/json; charset=iso-8859-1"),
        role,
    )
    .await
    .expect_error(400, "body: charset must be utf-8");
    raw(&t, "/api/v1/roles", tok, None, role)
        .await
        .expect_error(400, "body: Content-Type must be application/json");
    raw(&t, "/api/v1/roles", tok, None, "")
        .await
        .expect_error(400, "body: is required");
    raw(
        &t,
        "/api/v1/roles",
        tok,
        Some("application/json; charset=\"UTF-8\""),
        role,
    )
    .await
    .expect(201);
    // A refused body stored nothing.
    let roles = t.get("/api/v1/roles?filter=name:b").await;
    assert_eq!(roles.expect(200)["recordsTotal"], 0);

    // Edge: the operation's own 400, and its event says InvalidRequest.
    let rig = Rig::new(&t).await;
    let auth = format!(
        r#"{{"clientId":"{}","clientId":"{}","client":{{"oidc":{{"identityToken":"{}"}}}}}}"#,
        rig.client_id, rig.client_id, rig.id_token
    );
    raw(&t, "/edge/v1/auth", None, JSON, &auth)
        .await
        .expect_error(400, "The authentication request is invalid.");
    let good = json!({"clientId": rig.client_id, "client": {"oidc": {"identityToken": rig.id_token}}}).to_string();
    raw(&t, "/edge/v1/auth", None, None, &good)
        .await
        .expect_error(400, "The authentication request is invalid.");
    raw(
        &t,
        "/edge/v1/auth",
        None,
        Some("application/json; charset=utf-16"),
        &good,
    )
    .await
    .expect_error(400, "The authentication request is invalid.");
    raw(&t, "/edge/v1/auth", None, JSON, &good).await.expect(200);
    let creds = format!(
        r#"{{"client":{{"oidc":{{"identityToken":"{}"}}}},"server":{{"host":"{}","port":443,"port":444}},"credentialType":"ApiKey"}}"#,
        rig.id_token, rig.host
    );
    raw(&t, "/edge/v1/credentials", Some(&rig.access), JSON, &creds)
        .await
        .expect_error(400, "The credentials request is invalid.");
    let ev = crate::support::edge::authz_events(&t, "&event-type=access.request").await;
    assert_eq!(ev[0]["outcome"]["reason"], "InvalidRequest", "{}", ev[0]);
}

#[tokio::test]
async fn nul_characters_in_names_and_free_text_are_refused() {
    let t = TestApp::start().await;
    t.post("/api/v1/roles", json!({"name": "a\u{0}b", "isActive": true}))
        .await
        .expect_error(400, "name: must not contain NUL characters");
    t.post(
        "/api/v1/roles",
        json!({"name": "ok", "description": "free\u{0}text", "isActive": true}),
    )
    .await
    .expect_error(400, "description: must not contain NUL characters");
    t.post(
        "/api/v1/users",
        json!({"email": "n@acme.test", "firstName": "Nu\u{0}l", "lastName": "User"}),
    )
    .await
    .expect_error(400, "firstName: must not contain NUL characters");
    t.post(
        "/api/v1/roles",
        json!({"name": "ok", "isActive": true, "tags": [{"key": "k", "value": "v\u{0}"}]}),
    )
    .await
    .expect_error(400, "tags[0].value: must not contain NUL characters");
}
