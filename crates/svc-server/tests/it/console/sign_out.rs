//! `POST /api/v1/me/sign-out` (docs/API-CONVENTIONS.md): ends every session of the caller.

use serde_json::json;

use crate::support::harness::{ADMIN_EMAIL, ADMIN_PASSWORD, TestApp};

const PW: &str = "a-long-enough-password";

#[tokio::test]
async fn sign_out_ends_every_session_of_the_caller_and_no_other() {
    let t = TestApp::start().await;
    // No role: a user without roles may still sign in and use /api/v1/me/* (§2.6).
    t.create_user("ops@acme.test", PW, &[]).await;
    let first = t.login("ops@acme.test", PW).await;
    let second = t.login("ops@acme.test", PW).await;
    let admin = t.login(ADMIN_EMAIL, ADMIN_PASSWORD).await;
    let r = t.post_as(&first, "/api/v1/me/sign-out", json!({})).await;
    assert_eq!(r.status, 204, "{}", r.text);
    assert!(r.text.is_empty());
    for tok in [&first, &second] {
        t.post_as(tok, "/api/v1/me/totp", json!({}))
            .await
            .expect_error(401, "Not authenticated.");
    }
    // Signing out again with the ended token is 401, like any other call.
    t.post_as(&first, "/api/v1/me/sign-out", json!({}))
        .await
        .expect_error(401, "Not authenticated.");
    // Other users' sessions go on; a new sign-in works.
    t.get_as(&admin, "/api/v1/users").await.expect(200);
    let again = t.login("ops@acme.test", PW).await;
    t.post_as(&again, "/api/v1/me/totp", json!({})).await.expect(201);
    // One audit entry: the user's record changed (its session generation).
    let id = t.get("/api/v1/users?filter=email:ops@acme.test").await.expect(200)["users"][0]["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let entries: Vec<_> = t
        .audit("&category=Users")
        .await
        .into_iter()
        .filter(|a| a["target"] == id.as_str() && a["activity"] == "Updated")
        .collect();
    assert_eq!(entries.len(), 2, "sign-out and the TOTP enrolment: {entries:?}");
    assert!(entries.iter().all(|a| a["actor"]["email"] == "ops@acme.test"));
}

#[tokio::test]
async fn sign_out_takes_no_body_and_refuses_tokens_that_are_not_a_users() {
    let t = TestApp::start().await;
    t.post_anon("/api/v1/me/sign-out", json!({}))
        .await
        .expect_error(401, "Not authenticated.");
    // The CLI token (`svc admin token`) is the system's, not a user's session.
    let cli = cli_token(&t).await;
    t.post_as(&cli, "/api/v1/me/sign-out", json!({}))
        .await
        .expect_error(403, "Forbidden.");
    t.get_as(&cli, "/api/v1/users").await.expect(200);
    // GET is not sign-out.
    let r = t.get("/api/v1/me/sign-out").await;
    assert_eq!(r.status, 405);
    t.get("/api/v1/users").await.expect(200);
}

/// A SuperAdmin CLI token minted by the real binary against the test's database (as
/// foundation/auth.rs does).
async fn cli_token(t: &TestApp) -> String {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"));
    cmd.args(["admin", "token", "--role", "SuperAdmin", "--ttl", "600"]);
    cmd.env_clear();
    for (k, v) in &t.env {
        cmd.env(k, v);
    }
    if !crate::support::harness::use_postgres() {
        cmd.current_dir(&t.dir);
    }
    let out = cmd.output().await.expect("run svc admin token");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["accessToken"].as_str().unwrap().to_string()
}
