//! Issue 31: the ways an administrator of identity providers (or of users) could become another
//! user through SSO — each test is named after the attack and fails on the code before the
//! issue. A loopback IdP this test controls signs the ID tokens.

use serde_json::{Value, json};

use super::signin::{TestIdp, begin, finish, query, role, user_by_email};
use crate::support::harness::{ADMIN_EMAIL, Resp, TestApp, totp_step_offset};

const IDPS: &str = "/api/v1/sso-idps";

/// A user holding only `Identity Providers` read/write, signed in: the attacker of finding 1.
async fn idp_admin(t: &TestApp) -> String {
    t.user_with_role(
        "idp-admin@example.test",
        json!([{"name": "Identity Providers", "read": true, "write": true}]),
    )
    .await
}

/// One sign-in through `idp` (its id `id`) with `claims` changed by `edit`.
async fn sign_in(t: &TestApp, idp: &TestIdp, id: &str, email: &str, edit: impl FnOnce(&mut Value)) -> Resp {
    let (state, nonce, _) = begin(t, id).await;
    let mut c = idp.claims(&nonce, email);
    edit(&mut c);
    idp.answer_with(idp.sign(&c));
    finish(t, &state).await
}

/// The newest `LoginFailed` entry's reason (the audit log lists newest first).
fn last_failure(audit: &[Value]) -> String {
    audit
        .iter()
        .find(|a| a["activity"] == "LoginFailed")
        .map(|a| a["outcome"]["reason"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn an_identity_provider_admin_cannot_sign_in_as_the_super_admin() {
    let t = TestApp::start().await;
    let attacker = idp_admin(&t).await;
    let idp = TestIdp::start().await;
    // The attacker's own IdP, whose ID token names the SuperAdmin's e-mail (verified, even).
    let created = t.post_as(&attacker, IDPS, idp.body()).await;
    let id = created.expect(201)["externalId"].as_str().unwrap().to_string();
    sign_in(&t, &idp, &id, ADMIN_EMAIL, |_| {})
        .await
        .expect_error(401, "SSO sign-in failed.");
    assert!(
        last_failure(&t.audit("").await).contains("may not sign in an account it is not bound to"),
        "{}",
        last_failure(&t.audit("").await)
    );

    // Written again by the SuperAdmin, the same IdP binds the administrator's account.
    let mut body = t.get(&format!("{IDPS}/{id}")).await.body.clone();
    body["clientSecret"] = json!("s3cr:t /x");
    t.put(IDPS, body.clone()).await.expect(200);
    sign_in(&t, &idp, &id, ADMIN_EMAIL, |_| {}).await.expect(200);
    // Bound: another account at the IdP with the same e-mail is not the administrator.
    sign_in(&t, &idp, &id, ADMIN_EMAIL, |c| c["sub"] = json!("someone-else"))
        .await
        .expect_error(401, "SSO sign-in failed.");
    assert_eq!(
        last_failure(&t.audit("").await),
        "the account is bound to another account of this identity provider"
    );
    sign_in(&t, &idp, &id, ADMIN_EMAIL, |_| {}).await.expect(200);

    // The attacker moves the trusted IdP to a server it controls (with a secret of its own) and
    // mints the bound `sub` there: the binding was made at another server, and the IdP, written
    // by the attacker, no longer binds existing accounts.
    let evil = TestIdp::start().await;
    let mut moved = body.clone();
    moved["oidcBaseURL"] = json!(evil.url);
    moved["clientSecret"] = json!("attacker-secret");
    t.put_as(&attacker, IDPS, moved).await.expect(200);
    let (state, nonce, _) = begin(&t, &id).await;
    let mut c = evil.claims(&nonce, ADMIN_EMAIL);
    c["sub"] = json!(ADMIN_EMAIL.split('@').next().unwrap());
    evil.answer_with(evil.sign(&c));
    finish(&t, &state).await.expect_error(401, "SSO sign-in failed.");
}

#[tokio::test]
async fn an_identity_provider_admin_cannot_change_the_roles_of_accounts_it_did_not_create() {
    let t = TestApp::start().await;
    let idp = TestIdp::start().await;
    let viewer = role(&t, "viewer", json!([{"name": "Roles", "read": true}])).await;
    // The SuperAdmin configures the IdP; the administrator signs in through it (bound).
    let id = t.post(IDPS, idp.body()).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    sign_in(&t, &idp, &id, ADMIN_EMAIL, |_| {}).await.expect(200);
    // An IdP administrator (who also holds `viewer`) adds a mapping that would demote every
    // user of the IdP to `viewer`.
    let attacker = t
        .user_with_role(
            "idp-admin@example.test",
            json!([{"name": "Identity Providers", "read": true, "write": true}, {"name": "Roles", "read": true}]),
        )
        .await;
    let mut body = t.get(&format!("{IDPS}/{id}")).await.body.clone();
    body["ssoStatementRoleMappings"] =
        json!([{"attributeName": "groups", "attributeValue": "ops", "roleExternalId": viewer}]);
    let _ = t.put_as(&attacker, IDPS, body).await;
    let admin_token = sign_in(&t, &idp, &id, ADMIN_EMAIL, |_| {}).await.expect(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_string();
    let admin = user_by_email(&t, ADMIN_EMAIL).await.unwrap();
    assert!(
        admin["roles"].as_array().unwrap().iter().all(|r| r != &json!(viewer)),
        "{admin}"
    );
    t.post_as(
        &admin_token,
        "/api/v1/roles",
        json!({"name": "still admin", "isActive": true}),
    )
    .await
    .expect(201);
}

#[tokio::test]
async fn an_unverified_or_unstated_email_signs_in_nobody() {
    let t = TestApp::start().await;
    let idp = TestIdp::start().await;
    let id = t.post(IDPS, idp.body()).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let victim = t
        .create_user("victim@example.test", "a-long-enough-password", &[])
        .await;
    for verified in [json!(null), json!(false), json!("false"), json!(1)] {
        sign_in(&t, &idp, &id, "victim@example.test", |c| {
            c["email_verified"] = verified.clone()
        })
        .await
        .expect_error(401, "SSO sign-in failed.");
    }
    let failures = t
        .audit("")
        .await
        .into_iter()
        .filter(|a| a["activity"] == "LoginFailed" && a["target"] == "victim@example.test")
        .count();
    assert_eq!(failures, 4);
    // Verified, as a boolean or the string some IdPs send: bound.
    sign_in(&t, &idp, &id, "victim@example.test", |c| {
        c["email_verified"] = json!("true")
    })
    .await
    .expect(200);
    let u = user_by_email(&t, "victim@example.test").await.unwrap();
    assert_eq!(u["externalId"], victim.as_str());
    // Once bound, the IdP's account signs in by its `sub`, whatever its e-mail says now.
    sign_in(&t, &idp, &id, "victim@example.test", |c| {
        c["email"] = json!("renamed@example.test");
        c["email_verified"] = json!(false);
        c["sub"] = json!("victim");
    })
    .await
    .expect(200);
}

#[tokio::test]
async fn an_idp_error_writes_no_caller_text_into_the_audit_log() {
    let t = TestApp::start().await;
    let idp = TestIdp::start().await;
    let id = t.post(IDPS, idp.body()).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let (state, _, _) = begin(&t, &id).await;
    let text = "<script>alert('admin: reset your password at evil.example')</script>";
    let q: String = url::form_urlencoded::byte_serialize(text.as_bytes()).collect();
    t.get(&format!("/api/v1/sso/callback?error={q}&state={state}"))
        .await
        .expect_error(401, "SSO sign-in failed.");
    let audit = t.audit("").await;
    assert_eq!(last_failure(&audit), "the identity provider answered an error");
    assert!(!serde_json::to_string(&audit).unwrap().contains("evil.example"));
    // A protocol error code is recorded as it is.
    let (state, _, _) = begin(&t, &id).await;
    t.get(&format!("/api/v1/sso/callback?error=access_denied&state={state}"))
        .await
        .expect(401);
    assert_eq!(
        last_failure(&t.audit("").await),
        "the identity provider answered error=access_denied"
    );
}

#[tokio::test]
async fn an_sso_token_answer_is_never_cached() {
    let t = TestApp::start().await;
    let idp = TestIdp::start().await;
    let id = t.post(IDPS, idp.body()).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let ok = sign_in(&t, &idp, &id, ADMIN_EMAIL, |_| {}).await;
    ok.expect(200);
    assert_eq!(ok.header("cache-control"), Some("no-store"));
}

#[tokio::test]
async fn unauthenticated_sso_starts_are_throttled_per_address() {
    let t = TestApp::start_with(|env| {
        env.insert("SVC_LOGIN_FAILURES_PER_MINUTE".into(), "5".into());
    })
    .await;
    let idp = TestIdp::start().await;
    let id = t.post(IDPS, idp.body()).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    for _ in 0..5 {
        assert_eq!(t.get(&format!("/api/v1/sso/login/{id}")).await.status, 302);
    }
    let r = t.get(&format!("/api/v1/sso/login/{id}")).await;
    r.expect_error(429, "Too many requests. Please try again later.");
    assert!(r.header("retry-after").is_some());
}

#[tokio::test]
async fn a_key_pair_client_assertion_cannot_claim_the_services_issuer() {
    let t = TestApp::start().await;
    let issuer = t.get("/.well-known/openid-configuration").await.body["issuer"]
        .as_str()
        .unwrap()
        .to_string();
    let idp = TestIdp::start().await;
    let mut body = idp.body();
    body["authType"] = json!("KeyPair");
    body["clientSecret"] = Value::Null;
    for client_id in [issuer.clone(), format!("{issuer}/")] {
        body["clientId"] = json!(client_id);
        t.post(IDPS, body.clone())
            .await
            .expect_error(400, "clientId: must not be the service's issuer");
    }
}

/// Sets `mfaRequired` for a SuperAdmin holding a verified authenticator; returns its seed.
async fn require_mfa(t: &TestApp) -> String {
    let e = t.post("/api/v1/me/totp", json!({})).await;
    let e = e.expect(201).clone();
    let seed = e["secret"].as_str().unwrap().to_string();
    t.post(
        &format!("/api/v1/me/totp/{}/verify", e["id"].as_str().unwrap()),
        json!({"code": totp_step_offset(&seed, 0)}),
    )
    .await
    .expect(200);
    t.put("/api/v1/signin-policies/mfa", json!({"mfaRequired": true}))
        .await
        .expect(200);
    seed
}

#[tokio::test]
async fn sso_does_not_skip_the_second_factor() {
    let t = TestApp::start().await;
    let idp = TestIdp::start().await;
    let id = t.post(IDPS, idp.body()).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let seed = require_mfa(&t).await;
    // No second factor at the IdP: the callback owes a TOTP code; its code exchanges for a
    // token only with one.
    let r = sign_in(&t, &idp, &id, ADMIN_EMAIL, |_| {}).await;
    r.expect_error_prefix(401, "A valid TOTP code is required.");
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let code = r.body["ssoCode"].as_str().unwrap().to_string();
    let exchange = |body: Value| t.post_anon("/api/v1/sso/exchange", body);
    exchange(json!({"ssoCode": code}))
        .await
        .expect_error(401, "A valid TOTP code is required.");
    exchange(json!({"ssoCode": code, "totpCode": "000000"}))
        .await
        .expect_error(401, "A valid TOTP code is required.");
    let ok = exchange(json!({"ssoCode": code, "totpCode": totp_step_offset(&seed, 1)})).await;
    let token = ok.expect(200)["accessToken"].as_str().unwrap().to_string();
    assert_eq!(ok.header("cache-control"), Some("no-store"));
    t.get_as(&token, "/api/v1/users").await.expect(200);
    // Spent.
    exchange(json!({"ssoCode": code, "totpCode": totp_step_offset(&seed, 1)}))
        .await
        .expect_error(400, "ssoCode: unknown or expired");
    // The IdP vouches for a second factor (`amr`): the token at once.
    sign_in(&t, &idp, &id, ADMIN_EMAIL, |c| c["amr"] = json!(["pwd", "otp"]))
        .await
        .expect(200);
}

#[tokio::test]
async fn a_console_sign_in_ends_in_the_console_with_a_one_time_code() {
    let t = TestApp::start().await;
    let idp = TestIdp::start().await;
    let id = t.post(IDPS, idp.body()).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let r = t.get(&format!("/api/v1/sso/login/{id}?redirect=console")).await;
    assert_eq!(r.status, 302);
    let u = url::Url::parse(r.header("location").unwrap()).unwrap();
    let (state, nonce) = (query(&u, "state").unwrap(), query(&u, "nonce").unwrap());
    idp.answer_with(idp.sign(&idp.claims(&nonce, ADMIN_EMAIL)));
    let cb = finish(&t, &state).await;
    assert_eq!(cb.status, 302);
    let loc = cb.header("location").unwrap().to_string();
    let code = loc.strip_prefix("/console/#sso-code=").expect(&loc).to_string();
    let ok = t.post_anon("/api/v1/sso/exchange", json!({"ssoCode": code})).await;
    ok.expect(200);
    // A failure goes back to the console too, with the API's message.
    let r = t.get(&format!("/api/v1/sso/login/{id}?redirect=console")).await;
    let u = url::Url::parse(r.header("location").unwrap()).unwrap();
    let state = query(&u, "state").unwrap();
    let cb = t
        .get(&format!("/api/v1/sso/callback?error=access_denied&state={state}"))
        .await;
    assert_eq!(cb.header("location"), Some("/console/#sso-error=SSO+sign-in+failed."));
    // The return is never a URL the caller names.
    t.get(&format!("/api/v1/sso/login/{id}?redirect=https://evil.example"))
        .await
        .expect_error(400, "redirect: must be console");
}
