//! Sign-in throttling per source address across accounts (password spraying), in addition to the
//! per-account lock-out: an address that failed too often gets 429 for every account, the right
//! password included, while other addresses and the accounts themselves are unaffected.

use serde_json::json;

use crate::support::harness::{ADMIN_EMAIL, ADMIN_PASSWORD, TestApp};

#[tokio::test]
async fn sign_in_is_throttled_per_source_address_across_accounts() {
    // The loopback peer is a trusted proxy, so `X-Forwarded-For` names the source address.
    let t = TestApp::start_with(|env| {
        env.insert("SVC_LOGIN_FAILURES_PER_MINUTE".into(), "10".into());
        env.insert("SVC_TRUSTED_PROXIES".into(), "127.0.0.1/32".into());
    })
    .await;
    let login = |from: &'static str, email: String, password: &'static str| {
        t.client
            .post(t.url("/api/v1/login"))
            .header("x-forwarded-for", from)
            .json(&json!({"email": email, "password": password}))
    };
    const SPRAYER: &str = "203.0.113.5";
    // Ten accounts, one wrong password each: 401, as before.
    for i in 0..10 {
        t.send(login(SPRAYER, format!("user{i}@acme.test"), "Winter2026!xyz"))
            .await
            .expect_error(401, "Invalid email or password.");
    }
    // Then every sign-in from that address waits, whichever account, whatever the password.
    let r = t.send(login(SPRAYER, ADMIN_EMAIL.to_string(), ADMIN_PASSWORD)).await;
    r.expect_error(429, "Too many requests. Please try again later.");
    let wait: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=6).contains(&wait), "one failure drains in 6 s: {wait}");
    t.send(login(SPRAYER, "user0@acme.test".to_string(), "Winter2026!xyz"))
        .await
        .expect(429);
    // Another address signs in; the administrator's account counted none of it.
    t.send(login("198.51.100.7", ADMIN_EMAIL.to_string(), ADMIN_PASSWORD))
        .await
        .expect(200);
    let admin = t.get(&format!("/api/v1/users?filter=email:{ADMIN_EMAIL}")).await;
    assert_eq!(admin.expect(200)["users"][0]["isLocked"], false);
    // The per-account lock-out still applies below the address limit: five failures lock.
    t.create_user("target@acme.test", "a-long-enough-password", &[]).await;
    for _ in 0..5 {
        t.send(login("198.51.100.8", "target@acme.test".into(), "wrong-password-xx"))
            .await
            .expect(401);
    }
    t.send(login(
        "198.51.100.8",
        "target@acme.test".into(),
        "a-long-enough-password",
    ))
    .await
    .expect_error(401, "The account is locked.");
    // For that address only (issue 31): the owner signs in from its own.
    t.send(login(
        "198.51.100.9",
        "target@acme.test".into(),
        "a-long-enough-password",
    ))
    .await
    .expect(200);
    // Once the address's failures drain, it signs in again.
    tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
    t.send(login(SPRAYER, ADMIN_EMAIL.to_string(), ADMIN_PASSWORD))
        .await
        .expect(200);
}
