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

#[tokio::test]
async fn a_stranger_cannot_keep_the_owner_locked_out_from_the_owners_own_address() {
    let t = TestApp::start_with(|env| {
        env.insert("SVC_TRUSTED_PROXIES".into(), "127.0.0.1/32".into());
    })
    .await;
    const STRANGER: &str = "203.0.113.66";
    const OWNER: &str = "198.51.100.20";
    // The stranger renews the lock-out each time it ends, from wherever it is.
    for _ in 0..3 {
        for _ in 0..5 {
            t.send(via_proxy(&t, STRANGER, ADMIN_EMAIL, "wrong-password-here"))
                .await
                .expect(401);
        }
        t.send(via_proxy(&t, STRANGER, ADMIN_EMAIL, ADMIN_PASSWORD))
            .await
            .expect_error(401, "The account is locked.");
        // The owner, from its own address, signs in all along.
        t.send(via_proxy(&t, OWNER, ADMIN_EMAIL, ADMIN_PASSWORD))
            .await
            .expect(200);
        t.advance_clock(3_600_000);
    }
}

#[tokio::test]
async fn rotating_ipv6_addresses_of_one_prefix_does_not_escape_the_sign_in_throttle() {
    let t = TestApp::start_with(|env| {
        env.insert("SVC_LOGIN_FAILURES_PER_MINUTE".into(), "4".into());
        env.insert("SVC_TRUSTED_PROXIES".into(), "127.0.0.1/32".into());
    })
    .await;
    for i in 0..4 {
        let xff = format!("2001:db8:7:9::{:x}", i + 1);
        t.send(via_proxy(&t, &xff, &format!("user{i}@acme.test"), "Winter2026!xyz"))
            .await
            .expect(401);
    }
    t.send(via_proxy(&t, "2001:db8:7:9:ffff::1", ADMIN_EMAIL, ADMIN_PASSWORD))
        .await
        .expect_error(429, "Too many requests. Please try again later.");
    // Another /64 is another source.
    t.send(via_proxy(&t, "2001:db8:7:a::1", ADMIN_EMAIL, ADMIN_PASSWORD))
        .await
        .expect(200);
}

#[tokio::test]
async fn a_proxy_that_writes_ports_or_names_does_not_put_every_client_in_one_bucket() {
    let t = TestApp::start_with(|env| {
        env.insert("SVC_LOGIN_FAILURES_PER_MINUTE".into(), "4".into());
        env.insert("SVC_TRUSTED_PROXIES".into(), "127.0.0.1/32".into());
    })
    .await;
    // One stranger's failures, its address written with a port.
    for i in 0..4 {
        t.send(via_proxy(
            &t,
            &format!("203.0.113.7:{}", 40000 + i),
            "x@acme.test",
            "Winter2026!xyz",
        ))
        .await
        .expect(401);
    }
    t.send(via_proxy(&t, "203.0.113.7:41000", ADMIN_EMAIL, ADMIN_PASSWORD))
        .await
        .expect(429);
    // Other clients of the same proxy, with a port or an obfuscated name, are not throttled.
    t.send(via_proxy(&t, "198.51.100.30:5555", ADMIN_EMAIL, ADMIN_PASSWORD))
        .await
        .expect(200);
    t.send(via_proxy(&t, "[2001:db8::5]:443", ADMIN_EMAIL, ADMIN_PASSWORD))
        .await
        .expect(200);
    t.send(via_proxy(&t, "_hidden-client", ADMIN_EMAIL, ADMIN_PASSWORD))
        .await
        .expect(200);
}

#[tokio::test]
async fn addresses_do_not_evict_their_own_lock_outs() {
    let t = TestApp::start_with(|env| {
        env.insert("SVC_TRUSTED_PROXIES".into(), "127.0.0.1/32".into());
    })
    .await;
    let via = |xff: String, pw: &str| {
        t.client
            .post(t.url("/api/v1/login"))
            .header("x-forwarded-for", xff)
            .json(&json!({"email": ADMIN_EMAIL, "password": pw}))
    };
    // 33 addresses (more than an account remembers: an IPv6 /58 holds 64 /64s), five wrong
    // passwords each, three rounds without waiting: each address is locked out once and stays
    // so; the 33rd shares one lock-out with every address beyond those remembered.
    let addr = |i: u32| format!("2001:db8:{i:x}::1");
    let mut checked = 0;
    for round in 0..3 {
        for i in 0..33 {
            for _ in 0..5 {
                let r = t.send(via(addr(i), "wrong-password-here")).await;
                assert_eq!(r.status, 401, "round {round} address {i}: {}", r.text);
                if r.body["message"] == "Invalid email or password." {
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 33 * 5);
    // Another new address shares the 33rd's lock-out for now...
    t.send(via(addr(40), ADMIN_PASSWORD)).await.expect(401);
    // ...and once the addresses have been quiet for the longest lock-out, it has its own.
    t.advance_clock(3_600_000);
    t.send(via(addr(41), ADMIN_PASSWORD)).await.expect(200);
}
