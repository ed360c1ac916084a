//! SSO sign-in (contract §2.3): end to end against the real node-oidc-provider peer
//! (`client_secret_basic` with its real client authentication, `private_key_jwt` verified by the
//! provider against our JWKS, PKCE, user creation and role mapping, inactive and locked users),
//! and against a loopback IdP this test controls for the hostile ID tokens (wrong nonce, foreign
//! key, expired, wrong audience or issuer, no e-mail), the `state` rules (single use, expiring,
//! unknown) and a `state` started on one node completing on another.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use aws_lc_rs::rsa::KeySize;
use aws_lc_rs::signature::RsaKeyPair;
use axum::Router;
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::idps::{oidc_idp, oidc_provider_url};
use crate::support::fake_issuer::{FakeIssuer, rsa_jwk};
use crate::support::harness::{Resp, TestApp, use_postgres};

const IDPS: &str = "/api/v1/sso-idps";

// ---- driving the real provider (no browser: the recipe of docs/TESTING.md) --------------------

#[derive(Default)]
struct Jar(BTreeMap<String, String>);

impl Jar {
    fn header(&self) -> String {
        self.0
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
    fn take(&mut self, r: &reqwest::Response) {
        for c in r.headers().get_all("set-cookie") {
            let c = c.to_str().unwrap_or_default();
            if let Some((nv, _)) = c.split_once(';').or(Some((c, "")))
                && let Some((n, v)) = nv.split_once('=')
            {
                self.0.insert(n.trim().to_string(), v.trim().to_string());
            }
        }
    }
}

/// One step at the provider: the absolute `Location` it answers with.
async fn step(t: &TestApp, jar: &mut Jar, url: &str, form: Option<&[(&str, &str)]>) -> String {
    let mut req = match form {
        Some(f) => t.client.post(url).form(f),
        None => t.client.get(url),
    };
    if !jar.0.is_empty() {
        req = req.header("cookie", jar.header());
    }
    let r = req.send().await.unwrap();
    jar.take(&r);
    let status = r.status().as_u16();
    let loc = r
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("{url}: {status} without Location"));
    url::Url::parse(url).unwrap().join(&loc).unwrap().to_string()
}

/// Starts the sign-in at the service, signs in at the provider as `login` and consents; returns
/// the service's authorization redirect and the callback URL the provider sends the browser to.
async fn through_provider(t: &TestApp, idp: &str, login: &str) -> (url::Url, String) {
    let r = t.get(&format!("/api/v1/sso/login/{idp}")).await;
    assert_eq!(r.status, 302, "{}", r.text);
    let auth = r.header("location").unwrap().to_string();
    let mut jar = Jar::default();
    let i1 = step(t, &mut jar, &auth, None).await;
    let a1 = step(
        t,
        &mut jar,
        &i1,
        Some(&[("prompt", "login"), ("login", login), ("password", "x")]),
    )
    .await;
    let i2 = step(t, &mut jar, &a1, None).await;
    let a2 = step(t, &mut jar, &i2, Some(&[("prompt", "consent")])).await;
    let cb = step(t, &mut jar, &a2, None).await;
    assert!(cb.starts_with(&t.url("/api/v1/sso/callback?")), "{cb}");
    (url::Url::parse(&auth).unwrap(), cb)
}

async fn get_url(t: &TestApp, url: &str) -> Resp {
    t.send(t.client.get(url)).await
}

pub(super) fn query(u: &url::Url, k: &str) -> Option<String> {
    u.query_pairs().find(|(n, _)| n == k).map(|(_, v)| v.into_owned())
}

pub(super) async fn role(t: &TestApp, name: &str, perms: Value) -> String {
    let r = t
        .post(
            "/api/v1/roles",
            json!({"name": name, "isActive": true, "permissions": perms}),
        )
        .await;
    r.expect(201)["externalId"].as_str().unwrap().to_string()
}

pub(super) async fn user_by_email(t: &TestApp, email: &str) -> Option<Value> {
    let r = t.get(&format!("/api/v1/users?filter=email:{email}")).await;
    r.expect(200)["users"].as_array().unwrap().first().cloned()
}

fn sorted(v: &Value) -> Vec<String> {
    let mut s: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    s.sort();
    s
}

#[tokio::test]
async fn sso_sign_in_with_a_client_secret_at_the_real_provider() {
    let t = TestApp::start().await;
    let by_email = role(&t, "by-email", json!([{"name": "Users", "read": true}])).await;
    let by_group = role(&t, "by-group", json!([{"name": "Audit Logs", "read": true}])).await;
    let mut body = oidc_idp(&oidc_provider_url());
    body["ssoStatementRoleMappings"] = json!([
        {"attributeName": "email", "attributeValue": "alice@example.test", "roleExternalId": by_email},
        {"attributeName": "groups", "attributeValue": "team-alice", "roleExternalId": by_group},
    ]);
    let idp = t.post(IDPS, body).await;
    let idp = idp.expect(201)["externalId"].as_str().unwrap().to_string();

    let (auth, cb) = through_provider(&t, &idp, "alice").await;
    // The authorization request: code flow, PKCE S256, state, nonce, our redirect URI.
    assert_eq!(query(&auth, "response_type").as_deref(), Some("code"));
    assert_eq!(query(&auth, "client_id").as_deref(), Some("svc-ac"));
    assert_eq!(query(&auth, "redirect_uri"), Some(t.url("/api/v1/sso/callback")));
    assert_eq!(query(&auth, "scope").as_deref(), Some("openid email profile"));
    assert_eq!(query(&auth, "code_challenge_method").as_deref(), Some("S256"));
    for k in ["state", "nonce", "code_challenge"] {
        assert!(query(&auth, k).is_some_and(|v| v.len() >= 32), "{k}");
    }
    assert!(auth.as_str().starts_with(&format!("{}/auth?", oidc_provider_url())));

    let ok = get_url(&t, &cb).await;
    let login = ok.expect(200).clone();
    assert_eq!(login["tokenType"], "Bearer");
    assert_eq!(login["expiresIn"], 3600);
    let token = login["accessToken"].as_str().unwrap().to_string();
    // The user was created: names from the ID token, roles exactly the mapped ones
    // (a string claim and an array claim).
    let alice = t.get_as(&token, "/api/v1/users?filter=email:alice@example.test").await;
    let alice = alice.expect(200)["users"][0].clone();
    assert_eq!(alice["firstName"], "alice");
    assert_eq!(alice["lastName"], "Peer");
    assert_eq!(alice["isActive"], true);
    let mut want = vec![by_email.clone(), by_group.clone()];
    want.sort();
    assert_eq!(sorted(&alice["roles"]), want);
    let alice_id = alice["externalId"].as_str().unwrap().to_string();

    // The state is single use: the same callback again is refused.
    get_url(&t, &cb).await.expect_error(400, "state: unknown or expired");

    // Audit: the user's creation and the successful sign-in.
    let audit = t.audit("").await;
    assert!(
        audit
            .iter()
            .any(|a| a["category"] == "Users" && a["activity"] == "Created" && a["target"] == alice_id.as_str())
    );
    let ok_entry = audit
        .iter()
        .find(|a| a["activity"] == "LoginSucceeded" && a["target"] == alice_id.as_str())
        .expect("LoginSucceeded");
    assert_eq!(ok_entry["category"], "Authentication");
    assert_eq!(ok_entry["actor"]["email"], "alice@example.test");

    // Again: the existing user signs in; no second user.
    let (_, cb) = through_provider(&t, &idp, "alice").await;
    get_url(&t, &cb).await.expect(200);
    let users = t.get("/api/v1/users?filter=email:alice@example.test").await;
    assert_eq!(users.body["recordsTotal"], 1);

    // Inactive: 401.
    t.patch(&format!("/api/v1/users/{alice_id}"), json!({"isActive": false}))
        .await
        .expect(200);
    let (_, cb) = through_provider(&t, &idp, "alice").await;
    get_url(&t, &cb).await.expect_error(401, "The account is inactive.");

    // Locked (five wrong passwords): 401.
    const PW: &str = "a-long-enough-password";
    t.create_user("carol@example.test", PW, &[]).await;
    for _ in 0..5 {
        t.post_anon(
            "/api/v1/login",
            json!({"email": "carol@example.test", "password": "wrong-password-1"}),
        )
        .await;
    }
    let (_, cb) = through_provider(&t, &idp, "carol").await;
    get_url(&t, &cb).await.expect_error(401, "The account is locked.");
    let audit = t.audit("").await;
    let failed: Vec<&Value> = audit
        .iter()
        .filter(|a| a["activity"] == "LoginFailed" && a["category"] == "Authentication")
        .collect();
    assert!(failed.iter().any(|a| a["outcome"]["reason"] == "inactive user"));
    assert!(failed.iter().any(|a| a["outcome"]["reason"] == "account locked"));

    // The provider's real client authentication: a wrong secret fails.
    let mut wrong = t.get(&format!("{IDPS}/{idp}")).await.body.clone();
    wrong["clientSecret"] = json!("not-the-secret");
    t.put(IDPS, wrong).await.expect(200);
    let (_, cb) = through_provider(&t, &idp, "dave").await;
    get_url(&t, &cb).await.expect_error(401, "SSO sign-in failed.");
    let audit = t.audit("").await;
    let entry = audit
        .iter()
        .find(|a| a["activity"] == "LoginFailed" && a["target"] == idp.as_str())
        .expect("the failed exchange is audited under the IdP");
    let reason = entry["outcome"]["reason"].as_str().unwrap();
    assert!(reason.contains("401") && reason.contains("invalid_client"), "{reason}");
    assert!(!serde_json::to_string(&audit).unwrap().contains("not-the-secret"));
}

#[tokio::test]
async fn sso_sign_in_with_private_key_jwt_at_the_real_provider() {
    let t = TestApp::start().await;
    let provider = oidc_provider_url();
    // Register a private_key_jwt client whose keys are the service's published JWKS.
    let register = |jwks_uri: String| {
        let body = json!({
            "redirect_uris": [t.url("/api/v1/sso/callback")],
            "token_endpoint_auth_method": "private_key_jwt",
            "token_endpoint_auth_signing_alg": "RS256",
            "jwks_uri": jwks_uri,
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
        });
        let req = t.client.post(format!("{provider}/reg")).json(&body);
        async move {
            let r = req.send().await.unwrap();
            assert_eq!(r.status().as_u16(), 201);
            let v: Value = r.json().await.unwrap();
            v["client_id"].as_str().unwrap().to_string()
        }
    };
    let client_id = register(t.url("/.well-known/jwks.json")).await;
    let mut body = oidc_idp(&provider);
    body["authType"] = json!("KeyPair");
    body["clientId"] = json!(client_id);
    body["clientSecret"] = Value::Null;
    let idp = t.post(IDPS, body.clone()).await;
    let idp = idp.expect(201)["externalId"].as_str().unwrap().to_string();

    // An existing user without matching mappings keeps its roles.
    let keep = role(&t, "kept", json!([{"name": "Roles", "read": true}])).await;
    let dave = t
        .create_user("dave@example.test", "a-long-enough-password", &[&keep])
        .await;
    let (_, cb) = through_provider(&t, &idp, "dave").await;
    let ok = get_url(&t, &cb).await;
    let token = ok.expect(200)["accessToken"].as_str().unwrap().to_string();
    t.get_as(&token, "/api/v1/roles").await.expect(200);
    let u = t.get(&format!("/api/v1/users/{dave}")).await;
    assert_eq!(u.body["roles"], json!([keep]));

    // An unknown user whom no mapping matches is not created.
    let (_, cb) = through_provider(&t, &idp, "erin").await;
    get_url(&t, &cb).await.expect_error(401, "SSO sign-in failed.");
    assert!(user_by_email(&t, "erin@example.test").await.is_none());
    let audit = t.audit("").await;
    let e = audit
        .iter()
        .find(|a| a["activity"] == "LoginFailed" && a["target"] == "erin@example.test")
        .expect("audited under the e-mail");
    assert_eq!(
        e["outcome"]["reason"],
        "no user with this e-mail and no role mapping matched"
    );

    // A client whose registered keys are not ours: the provider refuses our assertion.
    let other = register(format!("{provider}/jwks")).await;
    let mut b2 = body.clone();
    b2["clientId"] = json!(other);
    b2["name"] = json!("other keys");
    let idp2 = t.post(IDPS, b2).await;
    let idp2 = idp2.expect(201)["externalId"].as_str().unwrap().to_string();
    let (_, cb) = through_provider(&t, &idp2, "dave").await;
    get_url(&t, &cb).await.expect_error(401, "SSO sign-in failed.");
}

// ---- a loopback IdP the test controls -----------------------------------------------------------

/// A token request as the IdP saw it: the Authorization header and the form fields.
type TokenRequest = (Option<String>, BTreeMap<String, String>);

pub(super) struct TestIdp {
    pub(super) url: String,
    key: RsaKeyPair,
    foreign: RsaKeyPair,
    /// The next answer of `/token`.
    answer: Arc<Mutex<Value>>,
    /// Every token request: (Authorization header, form fields).
    requests: Arc<Mutex<Vec<TokenRequest>>>,
}

impl TestIdp {
    pub(super) async fn start() -> TestIdp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let key = RsaKeyPair::generate(KeySize::Rsa2048).unwrap();
        let foreign = RsaKeyPair::generate(KeySize::Rsa2048).unwrap();
        let jwks = json!({"keys": [rsa_jwk(&key, "k1")]});
        let answer = Arc::new(Mutex::new(json!({})));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let u = url.clone();
        let (a, rq) = (answer.clone(), requests.clone());
        let app = Router::new()
            .route(
                "/.well-known/openid-configuration",
                get(move || {
                    let u = u.clone();
                    async move {
                        axum::Json(json!({"issuer": u, "authorization_endpoint": format!("{u}/authorize"),
                            "token_endpoint": format!("{u}/token"), "jwks_uri": format!("{u}/jwks")}))
                    }
                }),
            )
            .route("/jwks", get(move || async move { axum::Json(jwks.clone()) }))
            .route(
                "/token",
                post(move |headers: axum::http::HeaderMap, body: String| {
                    let (a, rq) = (a.clone(), rq.clone());
                    async move {
                        let auth = headers.get("authorization").map(|v| v.to_str().unwrap().to_string());
                        let form: BTreeMap<String, String> =
                            url::form_urlencoded::parse(body.as_bytes()).into_owned().collect();
                        rq.lock().unwrap().push((auth, form));
                        axum::Json(a.lock().unwrap().clone())
                    }
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        TestIdp {
            url,
            key,
            foreign,
            answer,
            requests,
        }
    }

    /// An ID token's claims for `email` (verified; `sub` the e-mail's local part).
    pub(super) fn claims(&self, nonce: &str, email: &str) -> Value {
        let now = svc_server::clock::now_secs();
        let sub = email.split('@').next().unwrap_or_default().to_ascii_lowercase();
        json!({"iss": self.url, "aud": "fake-client", "sub": sub, "email": email, "email_verified": true,
               "nonce": nonce, "iat": now, "exp": now + 300, "groups": ["ops", "dev"]})
    }

    pub(super) fn sign(&self, claims: &Value) -> String {
        FakeIssuer::sign_rs256_with(&self.key, json!({"alg": "RS256", "kid": "k1", "typ": "JWT"}), claims)
    }

    pub(super) fn answer_with(&self, id_token: String) {
        *self.answer.lock().unwrap() = json!({"access_token": "at", "token_type": "Bearer", "id_token": id_token});
    }

    pub(super) fn body(&self) -> Value {
        json!({"type": "OIDCv1", "name": "fake", "isActive": true, "userAccessEnabled": true,
               "oidcBaseURL": self.url, "clientId": "fake-client", "clientSecret": "s3cr:t /x",
               "scopes": "openid email", "authType": "ClientSecret"})
    }
}

/// The test IdP registered at `t`, its `groups` claim `ops` mapped to a role reading users:
/// (the IdP's id, the role's).
async fn ops_idp(t: &TestApp, idp: &TestIdp) -> (String, String) {
    let ops = role(t, "ops", json!([{"name": "Users", "read": true}])).await;
    let mut body = idp.body();
    body["ssoStatementRoleMappings"] =
        json!([{"attributeName": "groups", "attributeValue": "ops", "roleExternalId": ops}]);
    let id = t.post(IDPS, body).await;
    (id.expect(201)["externalId"].as_str().unwrap().to_string(), ops)
}

/// Starts a sign-in at `t`: (state, nonce, code_challenge).
pub(super) async fn begin(t: &TestApp, idp: &str) -> (String, String, String) {
    let r = t.get(&format!("/api/v1/sso/login/{idp}")).await;
    assert_eq!(r.status, 302, "{}", r.text);
    let u = url::Url::parse(r.header("location").unwrap()).unwrap();
    (
        query(&u, "state").unwrap(),
        query(&u, "nonce").unwrap(),
        query(&u, "code_challenge").unwrap(),
    )
}

pub(super) async fn finish(t: &TestApp, state: &str) -> Resp {
    t.get(&format!("/api/v1/sso/callback?code=the-code&state={state}"))
        .await
}

#[tokio::test]
async fn hostile_id_tokens_and_state_rules() {
    let t = TestApp::start().await;
    let idp = TestIdp::start().await;
    let (id, ops) = ops_idp(&t, &idp).await;

    // Each hostile token: 401, nothing created.
    type Mutate = fn(&TestIdp, &mut Value) -> Option<String>;
    let cases: Vec<(&str, Mutate)> = vec![
        ("wrong nonce", |_, c| {
            c["nonce"] = json!("another-nonce");
            None
        }),
        ("no nonce", |_, c| {
            c.as_object_mut().unwrap().remove("nonce");
            None
        }),
        ("foreign key", |i, c| {
            Some(FakeIssuer::sign_rs256_with(
                &i.foreign,
                json!({"alg": "RS256", "kid": "k1"}),
                c,
            ))
        }),
        ("expired", |_, c| {
            let now = svc_server::clock::now_secs();
            c["exp"] = json!(now - 3600);
            c["iat"] = json!(now - 7200);
            None
        }),
        ("wrong audience", |_, c| {
            c["aud"] = json!("someone-else");
            None
        }),
        ("wrong issuer", |_, c| {
            c["iss"] = json!("https://evil.test");
            None
        }),
        ("no email", |_, c| {
            c.as_object_mut().unwrap().remove("email");
            None
        }),
        // Whoever typed an address in at the IdP is not its owner (account takeover).
        ("unverified email", |_, c| {
            c["email_verified"] = json!(false);
            None
        }),
        // An IdP that does not say it verified the address vouches for nothing (nOAuth).
        ("email_verified absent", |_, c| {
            c.as_object_mut().unwrap().remove("email_verified");
            None
        }),
    ];
    for (what, mutate) in cases {
        let (state, nonce, _) = begin(&t, &id).await;
        let mut claims = idp.claims(&nonce, "mallory@example.test");
        let token = mutate(&idp, &mut claims).unwrap_or_else(|| idp.sign(&claims));
        idp.answer_with(token);
        let r = finish(&t, &state).await;
        assert_eq!(r.status, 401, "{what}: {}", r.text);
        r.expect_error(401, "SSO sign-in failed.");
    }
    assert!(user_by_email(&t, "mallory@example.test").await.is_none());
    let failures = t
        .audit("")
        .await
        .into_iter()
        .filter(|a| a["activity"] == "LoginFailed" && a["target"] == id.as_str())
        .count();
    assert_eq!(failures, 7, "one entry per refused token, under the IdP");

    // A good token: PKCE verifier and client authentication as sent to the token endpoint.
    let (state, nonce, challenge) = begin(&t, &id).await;
    idp.answer_with(idp.sign(&idp.claims(&nonce, "Mallory@Example.test")));
    let ok = finish(&t, &state).await;
    ok.expect(200);
    let (auth, form) = idp.requests.lock().unwrap().last().cloned().unwrap();
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(form["code"], "the-code");
    assert_eq!(form["redirect_uri"], t.url("/api/v1/sso/callback"));
    let verifier = &form["code_verifier"];
    assert_eq!(
        svc_server::crypto::b64url(&svc_server::crypto::sha256(verifier.as_bytes())),
        challenge
    );
    assert!(!form.contains_key("client_secret"));
    // RFC 6749 §2.3.1: id and secret form-encoded, then Basic.
    let basic = svc_server::crypto::b64std(b"fake-client:s3cr%3At+%2Fx");
    assert_eq!(auth.as_deref(), Some(format!("Basic {basic}").as_str()));
    let u = user_by_email(&t, "mallory@example.test").await.expect("created");
    assert_eq!(u["roles"], json!([ops]), "array claim mapped");
    assert_eq!(
        (u["firstName"].as_str(), u["lastName"].as_str()),
        (Some("SSO"), Some("User"))
    );

    // An existing user whom no mapping matches keeps its roles.
    let (state, nonce, _) = begin(&t, &id).await;
    let mut c = idp.claims(&nonce, "mallory@example.test");
    c["groups"] = json!(["dev"]);
    idp.answer_with(idp.sign(&c));
    finish(&t, &state).await.expect(200);
    let u = user_by_email(&t, "mallory@example.test").await.unwrap();
    assert_eq!(u["roles"], json!([ops]));

    // State rules: missing, unknown, expired, spent by an IdP error, code missing.
    t.get("/api/v1/sso/callback?code=x")
        .await
        .expect_error(400, "state: is required");
    finish(&t, "not-a-state")
        .await
        .expect_error(400, "state: unknown or expired");
    let data = json!({"idp": id, "nonce": "n", "verifier": "v"}).to_string();
    t.app
        .store
        .put_pending("expired-state", "sso-login", &data, svc_server::clock::now_millis() - 1)
        .await
        .unwrap();
    finish(&t, "expired-state")
        .await
        .expect_error(400, "state: unknown or expired");
    // A consent state of the credential-provider flow is not an SSO state.
    t.app
        .store
        .put_pending(
            "other-purpose",
            "oauth-consent",
            &data,
            svc_server::clock::now_millis() + 60_000,
        )
        .await
        .unwrap();
    finish(&t, "other-purpose")
        .await
        .expect_error(400, "state: unknown or expired");
    let (state, _, _) = begin(&t, &id).await;
    t.get(&format!("/api/v1/sso/callback?error=access_denied&state={state}"))
        .await
        .expect_error(401, "SSO sign-in failed.");
    finish(&t, &state).await.expect_error(400, "state: unknown or expired");
    let (state, _, _) = begin(&t, &id).await;
    t.get(&format!("/api/v1/sso/callback?state={state}"))
        .await
        .expect_error(400, "code: is required");

    // Sign-in start: only an active OIDCv1 IdP with userAccessEnabled.
    t.get("/api/v1/sso/login/00000000-0000-4000-8000-000000000001")
        .await
        .expect_error(404, "Not found.");
    t.get("/api/v1/sso/login/nope")
        .await
        .expect_error_prefix(400, "idpId: must be a UUID");
    t.patch(&format!("{IDPS}/{id}"), json!({"isActive": false}))
        .await
        .expect(200);
    t.get(&format!("/api/v1/sso/login/{id}"))
        .await
        .expect_error(404, "Not found.");
    let mut no_access = idp.body();
    no_access["userAccessEnabled"] = json!(false);
    let na = t.post(IDPS, no_access).await;
    let na = na.expect(201)["externalId"].as_str().unwrap().to_string();
    t.get(&format!("/api/v1/sso/login/{na}"))
        .await
        .expect_error(404, "Not found.");
}

/// Secrets are encrypted at rest: a sign-in's pending state (its PKCE verifier and nonce) is
/// stored sealed under its own label, so the database shows none of it; the sign-in then
/// completes from it, and a state whose data does not open (altered, or sealed for another
/// state) is unknown.
#[tokio::test]
async fn a_pending_sign_in_state_is_sealed_at_rest() {
    let t = TestApp::start().await;
    let idp = TestIdp::start().await;
    let (id, _) = ops_idp(&t, &idp).await;
    let (state, nonce, challenge) = begin(&t, &id).await;
    sqlx::any::install_default_drivers();
    let raw = sqlx::AnyPool::connect(&t.db_url).await.unwrap();
    let stored: String = sqlx::query_scalar("SELECT data FROM pending_states WHERE state = $1")
        .bind(&state)
        .fetch_one(&raw)
        .await
        .unwrap();
    assert!(stored.starts_with("v1:"), "sealed: {stored}");
    assert!(!stored.contains(&nonce) && !stored.contains("verifier"), "{stored}");
    let label = svc_server::store::sealed::pending_label(&state);
    let opened: Value = serde_json::from_slice(&t.app.cipher.open(&stored, &label).unwrap()).unwrap();
    assert_eq!(opened["nonce"], json!(nonce));
    let verifier = opened["verifier"].as_str().unwrap();
    assert_eq!(
        svc_server::crypto::b64url(&svc_server::crypto::sha256(verifier.as_bytes())),
        challenge
    );
    idp.answer_with(idp.sign(&idp.claims(&nonce, "sealed@example.test")));
    finish(&t, &state).await.expect(200);

    // Another state's sealed data moved onto this one does not open: unknown.
    let (first, _, _) = begin(&t, &id).await;
    let (second, nonce, _) = begin(&t, &id).await;
    sqlx::query("UPDATE pending_states SET data = (SELECT data FROM pending_states WHERE state = $1) WHERE state = $2")
        .bind(&first)
        .bind(&second)
        .execute(&raw)
        .await
        .unwrap();
    idp.answer_with(idp.sign(&idp.claims(&nonce, "sealed@example.test")));
    finish(&t, &second).await.expect_error(400, "state: unknown or expired");
}

#[tokio::test]
async fn a_state_started_on_one_node_completes_on_another() {
    if !use_postgres() {
        // Several nodes share PostgreSQL; SQLite is one node.
        return;
    }
    let a = TestApp::start().await;
    let b = a.join().await;
    let idp = TestIdp::start().await;
    let (id, _) = ops_idp(&a, &idp).await;
    // The IdP was created through A; the sign-in starts on B and completes on A.
    let (state, nonce, _) = begin(&b, &id).await;
    idp.answer_with(idp.sign(&idp.claims(&nonce, "node@example.test")));
    let ok = finish(&a, &state).await;
    let token = ok.expect(200)["accessToken"].as_str().unwrap().to_string();
    b.get_as(&token, "/api/v1/users").await.expect(200);
    // Single use across nodes.
    finish(&b, &state).await.expect_error(400, "state: unknown or expired");
}

#[tokio::test]
async fn mapped_roles_replace_the_users_roles_but_keep_the_last_super_admin() {
    let t = TestApp::start().await;
    let idp = TestIdp::start().await;
    let ops = role(&t, "ops", json!([{"name": "Users", "read": true}])).await;
    let dev = role(&t, "dev", json!([{"name": "Roles", "read": true}])).await;
    let mut body = idp.body();
    body["ssoStatementRoleMappings"] = json!([
        {"attributeName": "groups", "attributeValue": "ops", "roleExternalId": ops},
        {"attributeName": "department", "attributeValue": "eng", "roleExternalId": dev},
    ]);
    let id = t.post(IDPS, body).await;
    let id = id.expect(201)["externalId"].as_str().unwrap().to_string();

    // An existing user's roles become exactly the mapped ones (one Users Updated entry).
    let user = t
        .create_user("frank@example.test", "a-long-enough-password", &[&dev])
        .await;
    let (state, nonce, _) = begin(&t, &id).await;
    let mut c = idp.claims(&nonce, "frank@example.test");
    c["department"] = json!("eng");
    idp.answer_with(idp.sign(&c));
    finish(&t, &state).await.expect(200);
    let u = t.get(&format!("/api/v1/users/{user}")).await;
    let mut want = vec![ops.clone(), dev.clone()];
    want.sort();
    assert_eq!(sorted(&u.body["roles"]), want);
    let updates = |audit: &[Value]| {
        audit
            .iter()
            .filter(|a| a["category"] == "Users" && a["activity"] == "Updated" && a["target"] == user.as_str())
            .count()
    };
    assert_eq!(updates(&t.audit("").await), 1);
    // The same roles again: no change, no entry.
    let (state, nonce, _) = begin(&t, &id).await;
    let mut c = idp.claims(&nonce, "frank@example.test");
    c["department"] = json!("eng");
    idp.answer_with(idp.sign(&c));
    finish(&t, &state).await.expect(200);
    assert_eq!(updates(&t.audit("").await), 1);

    // The only SuperAdmin signs in through SSO with a mapping to ops: SuperAdmin stays.
    let admin = user_by_email(&t, crate::support::harness::ADMIN_EMAIL).await.unwrap();
    let (state, nonce, _) = begin(&t, &id).await;
    idp.answer_with(idp.sign(&idp.claims(&nonce, crate::support::harness::ADMIN_EMAIL)));
    let tok = finish(&t, &state).await;
    let tok = tok.expect(200)["accessToken"].as_str().unwrap().to_string();
    // The mapping changed the admin's roles, which ended its other sessions (issue 22): the
    // password session of the harness is refused, the new SSO session reads.
    let path = format!("/api/v1/users/{}", admin["externalId"].as_str().unwrap());
    t.get(&path).await.expect_error(401, "Not authenticated.");
    let a = t.get_as(&tok, &path).await;
    let roles = sorted(&a.body["roles"]);
    assert!(roles.contains(&ops), "{roles:?}");
    assert_eq!(roles.len(), 2, "ops and SuperAdmin: {roles:?}");
    // Still a SuperAdmin: may write roles.
    t.post_as(&tok, "/api/v1/roles", json!({"name": "x", "isActive": true}))
        .await
        .expect(201);
}
