//! Issue 31, findings 5 and 6: whoever sends wrong passwords cannot lock an account for good,
//! end its owner's sessions, escape the per-address throttle by rotating `X-Forwarded-For`, or
//! throttle a victim by naming the victim's address in it.

use serde_json::json;

use crate::support::harness::{ADMIN_EMAIL, ADMIN_PASSWORD, TestApp};

const PW: &str = "a-long-enough-password";

async fn fail_five(t: &TestApp, email: &str) {
    for _ in 0..5 {
        t.post_anon(
            "/api/v1/login",
            json!({"email": email, "password": "wrong-password-here"}),
        )
        .await
        .expect_error(401, "Invalid email or password.");
    }
}

#[tokio::test]
async fn wrong_passwords_lock_an_account_only_for_a_growing_while() {
    let t = TestApp::start().await;
    let id = t.create_user("owner@acme.test", PW, &[]).await;
    let session = t.login("owner@acme.test", PW).await;
    let probe = "/api/v1/me/totp";
    fail_five(&t, "owner@acme.test").await;
    // Locked: the right password is refused, the account shows it, the lock is audited.
    t.post_anon("/api/v1/login", json!({"email": "owner@acme.test", "password": PW}))
        .await
        .expect_error(401, "The account is locked.");
    assert_eq!(t.get(&format!("/api/v1/users/{id}")).await.body["isLocked"], true);
    // The owner's session is not the stranger's to end.
    assert_ne!(t.post_as(&session, probe, json!({})).await.status, 401);
    // A minute later the lock has ended by itself.
    t.advance_clock(61_000);
    assert_eq!(t.get(&format!("/api/v1/users/{id}")).await.body["isLocked"], false);
    // Five more failures lock it again, for twice as long.
    fail_five(&t, "owner@acme.test").await;
    t.advance_clock(61_000);
    t.post_anon("/api/v1/login", json!({"email": "owner@acme.test", "password": PW}))
        .await
        .expect_error(401, "The account is locked.");
    t.advance_clock(60_000);
    t.login("owner@acme.test", PW).await;
    // A success starts the delays over: the next lock-out lasts a minute again.
    fail_five(&t, "owner@acme.test").await;
    t.advance_clock(61_000);
    t.login("owner@acme.test", PW).await;
    let locks = t
        .audit("&category=Users")
        .await
        .into_iter()
        .filter(|a| a["activity"] == "Locked" && a["target"] == id.as_str())
        .count();
    assert_eq!(locks, 3);
}

#[tokio::test]
async fn the_only_super_admin_cannot_be_locked_out_for_good() {
    let t = TestApp::start().await;
    fail_five(&t, ADMIN_EMAIL).await;
    t.post_anon(
        "/api/v1/login",
        json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}),
    )
    .await
    .expect_error(401, "The account is locked.");
    // The harness's session, signed in before, still administers.
    t.get("/api/v1/users").await.expect(200);
    t.advance_clock(61_000);
    t.login(ADMIN_EMAIL, ADMIN_PASSWORD).await;
}

/// Behind a trusted proxy: the proxy appends the address it saw to `X-Forwarded-For`.
fn via_proxy(t: &TestApp, xff: &str, email: &str, password: &str) -> reqwest::RequestBuilder {
    t.client
        .post(t.url("/api/v1/login"))
        .header("x-forwarded-for", xff)
        .json(&json!({"email": email, "password": password}))
}

#[tokio::test]
async fn rotating_x_forwarded_for_does_not_escape_the_sign_in_throttle() {
    let t = TestApp::start_with(|env| {
        env.insert("SVC_LOGIN_FAILURES_PER_MINUTE".into(), "4".into());
        env.insert("SVC_TRUSTED_PROXIES".into(), "127.0.0.1/32, 10.0.0.0/8".into());
    })
    .await;
    const ATTACKER: &str = "203.0.113.5";
    // The attacker writes a new left-most entry each time; our proxies (10.x) append the
    // attacker's real address and their own.
    for i in 0..4 {
        let xff = format!("198.51.100.{i}, {ATTACKER}, 10.0.0.1");
        t.send(via_proxy(&t, &xff, &format!("user{i}@acme.test"), "Winter2026!xyz"))
            .await
            .expect_error(401, "Invalid email or password.");
    }
    let xff = format!("198.51.100.77, {ATTACKER}, 10.0.0.1");
    t.send(via_proxy(&t, &xff, ADMIN_EMAIL, ADMIN_PASSWORD))
        .await
        .expect_error(429, "Too many requests. Please try again later.");
}

#[tokio::test]
async fn naming_a_victims_address_does_not_throttle_the_victim() {
    let t = TestApp::start_with(|env| {
        env.insert("SVC_LOGIN_FAILURES_PER_MINUTE".into(), "4".into());
        env.insert("SVC_TRUSTED_PROXIES".into(), "127.0.0.1/32".into());
    })
    .await;
    const VICTIM: &str = "198.51.100.9";
    for i in 0..6 {
        let xff = format!("{VICTIM}, 203.0.113.5");
        let r = t
            .send(via_proxy(&t, &xff, &format!("user{i}@acme.test"), "Winter2026!xyz"))
            .await;
        assert!(matches!(r.status, 401 | 429), "{}", r.text);
    }
    // The victim, whose own request reaches the proxy from its address, signs in.
    t.send(via_proxy(&t, VICTIM, ADMIN_EMAIL, ADMIN_PASSWORD))
        .await
        .expect(200);
    // Audit entries still show the effective source IP of §4.3 (the left-most entry).
    let audit = t.audit("&category=Authentication").await;
    assert!(audit.iter().any(|a| a["client"]["ipAddress"] == VICTIM));
}
