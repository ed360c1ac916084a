//! A TOTP code is accepted at most once (RFC 6238 §5.2): not the enrolment's code at sign-in,
//! not the same code twice, and not on another node (the last accepted time-step is kept in the
//! user record through the write unit).

use serde_json::json;

use crate::support::harness::{TestApp, totp_now, totp_step_offset, use_postgres};

const PW: &str = "a-long-enough-password";
const EMAIL: &str = "once@acme.test";

#[tokio::test]
async fn a_totp_code_is_accepted_at_most_once() {
    let t = TestApp::start().await;
    // The user may set the sign-in policy, so it can require MFA once it has an authenticator.
    let tok = t
        .user_with_role(EMAIL, json!([{"name": "SignOn Policy", "write": true}]))
        .await;
    let e = t.post_as(&tok, "/api/v1/me/totp", json!({})).await.expect(201).clone();
    let (secret, tid) = (e["secret"].as_str().unwrap(), e["id"].as_str().unwrap());
    let enrolment_code = totp_now(secret);
    t.post_as(
        &tok,
        &format!("/api/v1/me/totp/{tid}/verify"),
        json!({"code": enrolment_code}),
    )
    .await
    .expect(200);
    t.call(
        reqwest::Method::PUT,
        "/api/v1/signin-policies/mfa",
        Some(&tok),
        Some(json!({"mfaRequired": true})),
    )
    .await
    .expect(200);
    let login = |code: String| json!({"email": EMAIL, "password": PW, "totpCode": code});

    // The enrolment's code is spent.
    t.post_anon("/api/v1/login", login(enrolment_code.clone()))
        .await
        .expect_error(401, "A valid TOTP code is required.");
    // A fresh code signs in once, and only once.
    let fresh = totp_step_offset(secret, 1);
    t.post_anon("/api/v1/login", login(fresh.clone())).await.expect(200);
    t.post_anon("/api/v1/login", login(fresh.clone()))
        .await
        .expect_error(401, "A valid TOTP code is required.");
    // Nor on another node sharing the database.
    if use_postgres() {
        let node2 = t.join().await;
        node2
            .post_anon("/api/v1/login", login(fresh.clone()))
            .await
            .expect_error(401, "A valid TOTP code is required.");
    } else {
        eprintln!("a_totp_code_is_accepted_at_most_once: the second node runs in the PostgreSQL pass");
    }
    // The replays were recorded as failed sign-ins with their reason.
    let failed = t.audit("").await;
    assert!(
        failed
            .iter()
            .any(|a| a["activity"] == "LoginFailed" && a["outcome"]["reason"] == "TOTP code already used"),
        "{failed:?}"
    );
}
