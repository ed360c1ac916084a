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
    let stored = t.get(&format!("{IDPS}/{id}")).await.body.clone();
    let mut body = stored.clone();
    body["ssoStatementRoleMappings"] =
        json!([{"attributeName": "groups", "attributeValue": "ops", "roleExternalId": viewer}]);
    let _ = t.put_as(&attacker, IDPS, body).await;
    // The IdP its administrator wrote is no longer trusted: it signs in no account holding a
    // role it does not map (issue 31, third read) — the SuperAdmin is refused, not demoted.
    sign_in(&t, &idp, &id, ADMIN_EMAIL, |_| {})
        .await
        .expect_error(401, "SSO sign-in failed.");
    // Once a SuperAdmin writes it back (trusting it), the SuperAdmin signs in, still itself.
    t.put(IDPS, stored).await.expect(200);
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

/// A console sign-in's start: the identity provider's `state` and `nonce`, and the browser
/// binding cookie the start set (`name=value`).
async fn console_start(t: &TestApp, id: &str) -> (String, String, String) {
    let r = t.get(&format!("/api/v1/sso/login/{id}?redirect=console")).await;
    assert_eq!(r.status, 302);
    let set = r
        .header("set-cookie")
        .expect("a console sign-in sets its binding cookie");
    assert!(set.starts_with("svc_sso_binding="), "{set}");
    for attr in ["Path=/api/v1/sso", "HttpOnly", "SameSite=Lax", "Max-Age=600"] {
        assert!(set.contains(attr), "{set}");
    }
    let cookie = set.split(';').next().unwrap().to_string();
    let u = url::Url::parse(r.header("location").unwrap()).unwrap();
    (query(&u, "state").unwrap(), query(&u, "nonce").unwrap(), cookie)
}

/// `GET path` anonymously, sending `cookie` (`name=value`) when given.
async fn get_with_cookie(t: &TestApp, path: &str, cookie: Option<&str>) -> Resp {
    let mut req = t.client.get(t.url(path));
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    t.send(req).await
}

/// `POST /api/v1/sso/exchange` anonymously, sending `cookie` when given.
async fn exchange_with_cookie(t: &TestApp, code: &str, cookie: Option<&str>) -> Resp {
    let mut req = t
        .client
        .post(t.url("/api/v1/sso/exchange"))
        .json(&json!({"ssoCode": code}));
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    t.send(req).await
}

#[tokio::test]
async fn a_console_sign_in_ends_in_the_console_with_a_one_time_code() {
    let t = TestApp::start().await;
    let idp = TestIdp::start().await;
    let id = t.post(IDPS, idp.body()).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let (state, nonce, cookie) = console_start(&t, &id).await;
    idp.answer_with(idp.sign(&idp.claims(&nonce, ADMIN_EMAIL)));
    let cb = get_with_cookie(
        &t,
        &format!("/api/v1/sso/callback?code=the-code&state={state}"),
        Some(&cookie),
    )
    .await;
    assert_eq!(cb.status, 302);
    let loc = cb.header("location").unwrap().to_string();
    let code = loc.strip_prefix("/console/#sso-code=").expect(&loc).to_string();
    let ok = exchange_with_cookie(&t, &code, Some(&cookie)).await;
    ok.expect(200);
    // The binding is spent with the sign-in.
    let cleared = ok.header("set-cookie").unwrap_or_default();
    assert!(
        cleared.starts_with("svc_sso_binding=;") && cleared.contains("Max-Age=0"),
        "{cleared}"
    );
    // A failure goes back to the console too, with the API's message.
    let (state, _, cookie) = console_start(&t, &id).await;
    let cb = get_with_cookie(
        &t,
        &format!("/api/v1/sso/callback?error=access_denied&state={state}"),
        Some(&cookie),
    )
    .await;
    assert_eq!(cb.header("location"), Some("/console/#sso-error=SSO+sign-in+failed."));
    // The return is never a URL the caller names.
    t.get(&format!("/api/v1/sso/login/{id}?redirect=https://evil.example"))
        .await
        .expect_error(400, "redirect: must be console");
}

/// Login CSRF: an attacker signs in at the IdP as themself through the console flow and sends
/// the victim the callback link (or the console link with the code it ended in). The victim's
/// browser does not hold the attacker's binding cookie, so neither the callback nor the code's
/// exchange signs it in (as the attacker, whose session the victim would then work in).
#[tokio::test]
async fn a_console_sign_in_started_in_one_browser_signs_in_no_other() {
    let t = TestApp::start().await;
    let idp = TestIdp::start().await;
    let id = t.post(IDPS, idp.body()).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    // The callback link, opened in another browser (no cookie, or its own sign-in's cookie).
    let (_, _, victims) = console_start(&t, &id).await;
    for cookie in [None, Some(victims.as_str())] {
        let (state, nonce, _attackers) = console_start(&t, &id).await;
        idp.answer_with(idp.sign(&idp.claims(&nonce, ADMIN_EMAIL)));
        let cb = get_with_cookie(&t, &format!("/api/v1/sso/callback?code=the-code&state={state}"), cookie).await;
        assert_eq!(
            cb.header("location"),
            Some("/console/#sso-error=SSO+sign-in+failed."),
            "{cookie:?}"
        );
    }
    // The code the attacker's own browser earned, exchanged by another browser: refused, and
    // spent (the attacker cannot use it either).
    for cookie in [None, Some(victims.as_str())] {
        let (state, nonce, attackers) = console_start(&t, &id).await;
        idp.answer_with(idp.sign(&idp.claims(&nonce, ADMIN_EMAIL)));
        let cb = get_with_cookie(
            &t,
            &format!("/api/v1/sso/callback?code=the-code&state={state}"),
            Some(&attackers),
        )
        .await;
        let loc = cb.header("location").unwrap().to_string();
        let code = loc.strip_prefix("/console/#sso-code=").expect(&loc).to_string();
        let r = exchange_with_cookie(&t, &code, cookie).await;
        assert_eq!(r.status, 401, "{cookie:?}: {}", r.text);
        assert!(r.body.get("accessToken").is_none());
        exchange_with_cookie(&t, &code, Some(&attackers))
            .await
            .expect_error(400, "ssoCode: unknown or expired");
    }
    // The API's flow (no console) has no cookie to present and needs none.
    sign_in(&t, &idp, &id, ADMIN_EMAIL, |_| {}).await.expect(200);
}

/// An `Identity Providers` administrator sends back a SuperAdmin's IdP with its SuperAdmin
/// mapping kept and the URL moved to a server it controls: keeping a mapping is giving it (the
/// server decides who matches), so the write is refused and the IdP stays where it was.
#[tokio::test]
async fn an_idp_admin_cannot_keep_a_super_admin_mapping() {
    let t = TestApp::start().await;
    let super_admin = svc_server::domain::records::SUPER_ADMIN_ROLE.to_string();
    let corp = TestIdp::start().await;
    // A SuperAdmin may map SuperAdmin: the corporate group "svc-admins".
    let mut body = corp.body();
    body["ssoStatementRoleMappings"] =
        json!([{"attributeName": "groups", "attributeValue": "svc-admins", "roleExternalId": super_admin}]);
    let id = t.post(IDPS, body).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let attacker = idp_admin(&t).await;
    let evil = TestIdp::start().await;
    let stored = t.get(&format!("{IDPS}/{id}")).await.body.clone();
    let mut moved = stored.clone();
    moved["oidcBaseURL"] = json!(evil.url);
    moved["clientSecret"] = json!("attacker-secret");
    t.put_as(&attacker, IDPS, moved).await.expect_error(403, "Forbidden.");
    // Nor may it merely rename the IdP while the mapping is there (a PUT names the mapping).
    let mut renamed = stored.clone();
    renamed["name"] = json!("renamed");
    t.put_as(&attacker, IDPS, renamed).await.expect_error(403, "Forbidden.");
    assert_eq!(
        t.get(&format!("{IDPS}/{id}")).await.body["oidcBaseURL"],
        json!(corp.url)
    );
    // The corporate group still makes SuperAdmins.
    let r = sign_in(&t, &corp, &id, "new.admin@example.test", |c| {
        c["groups"] = json!(["svc-admins"])
    })
    .await;
    let token = r.expect(200)["accessToken"].as_str().unwrap().to_string();
    t.post_as(
        &token,
        "/api/v1/roles",
        json!({"name": "by the new admin", "isActive": true}),
    )
    .await
    .expect(201);
}

/// A `Users` administrator creates, with a password it knows, the account of a new member of
/// the group a trusted IdP maps to SuperAdmin, before that person's first SSO sign-in. Binding
/// the account by its verified e-mail drops the password the administrator set.
#[tokio::test]
async fn an_account_pre_created_by_a_users_admin_loses_its_password_when_a_trusted_idp_binds_it() {
    let t = TestApp::start().await;
    let super_admin = svc_server::domain::records::SUPER_ADMIN_ROLE.to_string();
    let corp = TestIdp::start().await;
    let mut body = corp.body();
    body["ssoStatementRoleMappings"] =
        json!([{"attributeName": "groups", "attributeValue": "svc-admins", "roleExternalId": super_admin}]);
    let id = t.post(IDPS, body).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let attacker = t
        .user_with_role(
            "users-admin@example.test",
            json!([{"name": "Users", "read": true, "write": true}]),
        )
        .await;
    const PW: &str = "attacker-knows-this";
    const HIRE: &str = "new.hire@example.test";
    t.post_as(
        &attacker,
        "/api/v1/users",
        json!({"email": HIRE, "firstName": "New", "lastName": "Hire", "password": PW, "roles": []}),
    )
    .await
    .expect(201);
    let before = t.login(HIRE, PW).await;
    // The new hire's first SSO sign-in binds the account and maps SuperAdmin.
    let hire = sign_in(&t, &corp, &id, HIRE, |c| c["groups"] = json!(["svc-admins"])).await;
    let hire = hire.expect(200)["accessToken"].as_str().unwrap().to_string();
    t.post_anon("/api/v1/login", json!({"email": HIRE, "password": PW}))
        .await
        .expect_error(401, "Invalid email or password.");
    // The administrator's session on the account ended with the binding.
    t.get_as(&before, "/api/v1/users").await.expect(401);
    // The new hire is the SuperAdmin it was meant to be.
    t.post_as(
        &hire,
        "/api/v1/roles",
        json!({"name": "by the new hire", "isActive": true}),
    )
    .await
    .expect(201);
}

/// The same pre-hijack by an `Identity Providers` administrator: its own IdP creates the account
/// first; the trusted IdP binds it and maps SuperAdmin; the administrator's IdP no longer signs
/// it in (the binding replaced every other).
#[tokio::test]
async fn an_account_an_idp_admin_created_through_its_own_idp_is_not_its_once_a_trusted_idp_binds_it() {
    let t = TestApp::start().await;
    let super_admin = svc_server::domain::records::SUPER_ADMIN_ROLE.to_string();
    let corp = TestIdp::start().await;
    let mut body = corp.body();
    body["ssoStatementRoleMappings"] =
        json!([{"attributeName": "groups", "attributeValue": "svc-admins", "roleExternalId": super_admin}]);
    let corp_id = t.post(IDPS, body).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let own_role = role(
        &t,
        "idp admins",
        json!([{"name": "Identity Providers", "read": true, "write": true}]),
    )
    .await;
    const PW: &str = "a-long-enough-password";
    t.create_user("idp-admin@example.test", PW, &[&own_role]).await;
    let attacker = t.login("idp-admin@example.test", PW).await;
    let evil = TestIdp::start().await;
    let mut eb = evil.body();
    eb["ssoStatementRoleMappings"] =
        json!([{"attributeName": "groups", "attributeValue": "x", "roleExternalId": own_role}]);
    let evil_id = t.post_as(&attacker, IDPS, eb).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    const HIRE: &str = "new.hire@example.test";
    sign_in(&t, &evil, &evil_id, HIRE, |c| c["groups"] = json!(["x"]))
        .await
        .expect(200);
    let hire = sign_in(&t, &corp, &corp_id, HIRE, |c| c["groups"] = json!(["svc-admins"])).await;
    let hire = hire.expect(200)["accessToken"].as_str().unwrap().to_string();
    sign_in(&t, &evil, &evil_id, HIRE, |c| c["groups"] = json!([]))
        .await
        .expect_error(401, "SSO sign-in failed.");
    assert!(
        last_failure(&t.audit("").await).contains("may not sign in an account it is not bound to"),
        "{}",
        last_failure(&t.audit("").await)
    );
    t.post_as(
        &hire,
        "/api/v1/roles",
        json!({"name": "by the new hire", "isActive": true}),
    )
    .await
    .expect(201);
}

/// An `Identity Providers` administrator moves a trusted IdP to its server (untrusted now); a
/// SuperAdmin's routine PATCH (a description) does not make it trusted again, so it does not
/// bind the SuperAdmin's account for the attacker. A SuperAdmin's PUT, which names the URL, does.
#[tokio::test]
async fn a_super_admins_patch_does_not_trust_a_moved_idp() {
    let t = TestApp::start().await;
    let corp = TestIdp::start().await;
    let id = t.post(IDPS, corp.body()).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let attacker = idp_admin(&t).await;
    let evil = TestIdp::start().await;
    let mut moved = t.get(&format!("{IDPS}/{id}")).await.body.clone();
    moved["oidcBaseURL"] = json!(evil.url);
    moved["clientSecret"] = json!("attacker-secret");
    t.put_as(&attacker, IDPS, moved).await.expect(200);
    t.patch(&format!("{IDPS}/{id}"), json!({"description": "corporate SSO"}))
        .await
        .expect(200);
    sign_in(&t, &evil, &id, ADMIN_EMAIL, |_| {})
        .await
        .expect_error(401, "SSO sign-in failed.");
    assert!(
        last_failure(&t.audit("").await).contains("may not sign in an account it is not bound to"),
        "{}",
        last_failure(&t.audit("").await)
    );
    // Written again by the SuperAdmin with the URL in the body: trusted.
    let mut body = t.get(&format!("{IDPS}/{id}")).await.body.clone();
    body["oidcBaseURL"] = json!(corp.url);
    body["clientSecret"] = json!("s3cr:t /x");
    t.put(IDPS, body).await.expect(200);
    sign_in(&t, &corp, &id, ADMIN_EMAIL, |_| {}).await.expect(200);
}

/// A stranger's wrong passwords lock the account only for the stranger's address: the owner,
/// bound to the IdP, still signs in through it from its own (and is refused from the
/// stranger's, as a password sign-in would be).
#[tokio::test]
async fn a_strangers_wrong_passwords_do_not_lock_the_owner_out_of_sso() {
    let t = TestApp::start_with(|env| {
        env.insert("SVC_TRUSTED_PROXIES".into(), "127.0.0.1/32".into());
    })
    .await;
    const STRANGER: &str = "203.0.113.66";
    const OWNER: &str = "198.51.100.20";
    let corp = TestIdp::start().await;
    let id = t.post(IDPS, corp.body()).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let sso_from = |from: &'static str| {
        let (t, corp, id) = (&t, &corp, id.clone());
        async move {
            let (state, nonce, _) = begin(t, &id).await;
            corp.answer_with(corp.sign(&corp.claims(&nonce, ADMIN_EMAIL)));
            let url = t.url(&format!("/api/v1/sso/callback?code=the-code&state={state}"));
            t.send(t.client.get(url).header("x-forwarded-for", from)).await
        }
    };
    sso_from(OWNER).await.expect(200); // bound
    for _ in 0..5 {
        let r = t
            .send(
                t.client
                    .post(t.url("/api/v1/login"))
                    .header("x-forwarded-for", STRANGER)
                    .json(&json!({"email": ADMIN_EMAIL, "password": "whatever-guess-1"})),
            )
            .await;
        r.expect_error(401, "Invalid email or password.");
    }
    sso_from(OWNER).await.expect(200);
    sso_from(STRANGER).await.expect_error(401, "The account is locked.");
}

/// An `Identity Providers` administrator points IdPs at addresses inside the network and reads
/// their verification: an internal service's error text (even one shaped like a protocol error
/// code) never comes back, and a closed port reads the same as an answering one.
#[tokio::test]
async fn an_internal_error_token_is_not_read_back() {
    use crate::support::cred::{Answer, Recorder};
    let t = TestApp::start().await;
    let attacker = idp_admin(&t).await;
    let internal = Recorder::start(Answer::Fixed(
        403,
        "application/json",
        br#"{"error": "vault-root-token:s.AbCdEf123456"}"#.to_vec(),
        std::time::Duration::ZERO,
    ))
    .await;
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut said = Vec::new();
    for base in [internal.url.clone(), format!("http://127.0.0.1:{closed}")] {
        let mut body = TestIdp::start().await.body();
        body["oidcBaseURL"] = json!(base);
        let id = t.post_as(&attacker, IDPS, body).await.expect(201)["externalId"]
            .as_str()
            .unwrap()
            .to_string();
        let v = t.get_as(&attacker, &format!("{IDPS}/{id}/verification")).await;
        said.push(v.body["message"].as_str().unwrap().to_string());
    }
    assert_eq!(internal.count(), 1, "the internal service was asked once");
    assert!(!said[0].contains("vault-root-token"), "{said:?}");
    assert!(!said[0].contains("403"), "{said:?}");
    assert_eq!(said[0], said[1]);
    // A reachable, complete IdP still verifies.
    let good = TestIdp::start().await;
    let id = t.post_as(&attacker, IDPS, good.body()).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let v = t.get_as(&attacker, &format!("{IDPS}/{id}/verification")).await;
    assert_eq!(
        v.body["message"],
        "The OIDC identity provider is reachable and completely configured."
    );
}

#[tokio::test]
async fn an_untrusted_idp_does_not_keep_an_account_given_roles_it_does_not_map() {
    let t = TestApp::start().await;
    let own_role = role(
        &t,
        "idp admins",
        json!([{"name": "Identity Providers", "read": true, "write": true}]),
    )
    .await;
    const PW: &str = "a-long-enough-password";
    t.create_user("idp-admin@example.test", PW, &[&own_role]).await;
    let attacker = t.login("idp-admin@example.test", PW).await;
    // The administrator's own (untrusted) IdP creates an account for a new e-mail.
    let evil = TestIdp::start().await;
    let mut body = evil.body();
    body["ssoStatementRoleMappings"] =
        json!([{"attributeName": "groups", "attributeValue": "x", "roleExternalId": own_role}]);
    let evil_id = t.post_as(&attacker, IDPS, body.clone()).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    sign_in(&t, &evil, &evil_id, "new.hire@example.test", |c| {
        c["groups"] = json!(["x"])
    })
    .await
    .expect(200);
    // A SuperAdmin gives the new hire's account SuperAdmin (the normal way to grant more).
    let u = user_by_email(&t, "new.hire@example.test").await.unwrap();
    let mut put = u.clone();
    put["roles"] = json!([svc_server::domain::records::SUPER_ADMIN_ROLE.to_string()]);
    t.put(&format!("/api/v1/users/{}", u["externalId"].as_str().unwrap()), put)
        .await
        .expect(200);
    // The user shows which IdP account it signs in as.
    let u = user_by_email(&t, "new.hire@example.test").await.unwrap();
    assert_eq!(u["ssoIdentities"][0]["identityProviderId"], json!(evil_id), "{u}");
    // The administrator's IdP no longer signs it in, with or without the mapped claim.
    for groups in [json!([]), json!(["x"])] {
        sign_in(&t, &evil, &evil_id, "new.hire@example.test", |c| c["groups"] = groups)
            .await
            .expect_error(401, "SSO sign-in failed.");
    }
    // Once a SuperAdmin writes the IdP (trusting it), the account signs in through it.
    t.put(IDPS, t.get(&format!("{IDPS}/{evil_id}")).await.body.clone())
        .await
        .expect(200);
    let tok = sign_in(&t, &evil, &evil_id, "new.hire@example.test", |_| {})
        .await
        .expect(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_string();
    t.post_as(&tok, "/api/v1/roles", json!({"name": "granted", "isActive": true}))
        .await
        .expect(201);
}

#[tokio::test]
async fn a_token_expiring_inside_the_write_unit_is_not_the_service() {
    use svc_server::service::admission::{ADMITTED, Admitted, Guard, Scope};
    let t = TestApp::start().await;
    let attacker = idp_admin(&t).await;
    let exp = crate::support::edge::jwt_payload(&attacker)["exp"].as_i64().unwrap();
    let now = svc_server::clock::scope(t.app.clock.clone(), async { svc_server::clock::now_millis() }).await;
    t.advance_clock((exp + 31) * 1000 - now);
    // The write unit's checks ask who the admitted caller is: no longer anyone, so refused —
    // never the service's own write, for which every check passes.
    let admitted = Admitted {
        token: attacker,
        guard: Guard {
            perm: svc_server::domain::Perm::IdentityProviders,
            scope: Scope::Rs,
            write: None,
        },
        write: true,
        rs: svc_server::domain::DEFAULT_RESOURCE_SET,
    };
    let st = t.app.state();
    let caller = svc_server::clock::scope(
        t.app.clock.clone(),
        ADMITTED.scope(admitted, async {
            svc_server::service::escalation::current_caller(&t.app, &st).map(|c| c.is_some())
        }),
    )
    .await;
    assert!(
        matches!(caller, Err(svc_server::error::Error::Unauthenticated)),
        "{caller:?}"
    );
    let mapped = [svc_server::domain::records::SUPER_ADMIN_ROLE];
    let admitted_again = Admitted {
        token: String::from("not a token"),
        guard: Guard {
            perm: svc_server::domain::Perm::IdentityProviders,
            scope: Scope::Rs,
            write: None,
        },
        write: true,
        rs: svc_server::domain::DEFAULT_RESOURCE_SET,
    };
    let check = ADMITTED
        .scope(admitted_again, async {
            svc_server::service::escalation::check_mapped_roles(&t.app, &st, &mapped)
        })
        .await;
    assert!(check.is_err(), "{check:?}");
}
