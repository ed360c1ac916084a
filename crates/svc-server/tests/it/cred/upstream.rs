//! Credential types that fetch from an upstream (contract §5.3), against real third-party servers:
//! `oauth-client-credential` and `oauth-authorization-code` against node-oidc-provider,
//! `cloudA-sts-oidc` against moto (through a recording proxy, so the federation assertion the
//! service sends is verified), `vaultClientToken` against OpenBao (the issued token reads a real
//! secret). Upstream failures of every kind become 500 with the reason in the `access.credential`
//! event, and no secret reaches a response, an event or a log line.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::cred::*;
use crate::support::edge::*;
use crate::support::harness::{TestApp, logs};

const INTERNAL: &str = "Failed to retrieve credentials due to an internal error.";

fn oidc_provider() -> String {
    peer("SVC_TEST_OIDC_PROVIDER_URL")
}

fn client_credentials(name: &str, client: &str, secret: &str, style: &str) -> Value {
    json!({"type": "oauth-client-credential", "name": name, "isActive": true, "clientID": client, "clientSecret": secret,
           "scope": "api:read", "url": format!("{}/token", oidc_provider()), "credentialStyle": style})
}

async fn credential_event(t: &TestApp) -> Value {
    last_event(t, "access.credential").await
}

// ---- oauth-client-credential -----------------------------------------------------------------------

#[tokio::test]
async fn oauth_client_credentials_basic_and_post_against_a_real_server() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let url = oidc_provider();
    for (client, secret, style) in [
        ("svc-cc", "svc-cc-secret", "authHeader"),
        ("svc-cc-post", "svc-cc-post-secret", "postBody"),
    ] {
        let cp = rig
            .provider(&t, client_credentials(client, client, secret, style))
            .await;
        let shown = t.get(&format!("/api/v2/credential-providers/{cp}")).await;
        assert_eq!(shown.expect(200)["clientSecret"], Value::Null, "write-only");
        assert!(!shown.text.contains(secret));
        rig.attach(&t, &cp).await;
        let v = rig.issue(&t, "OAuthToken").await;
        let token = v["data"]["token"].as_str().unwrap().to_string();
        let at = jwt_payload(&token);
        assert_eq!(
            (at["iss"].clone(), at["client_id"].clone()),
            (json!(url), json!(client)),
            "{style}"
        );
        assert_eq!(at["scope"], "api:read");
        let left = expires_at_secs(&v) - now();
        assert!((3590..=3600).contains(&left), "now + expires_in: {left}");
        // The same provider and inputs reuse the credential until 60 s before its expiry.
        let again = rig.issue(&t, "OAuthToken").await;
        assert_eq!(again["data"]["token"], token.as_str());
        // Verification performs one real exchange.
        let ver = t.get(&format!("/api/v2/credential-providers/{cp}/verification")).await;
        assert_eq!(ver.expect(200)["success"], true, "{}", ver.text);
    }
    // Custom parameters reach the token request: a `resource` for which the server mints 30 s
    // tokens. Such a token is never reused (it is inside the 60 s margin).
    let mut body = client_credentials("short", "svc-cc", "svc-cc-secret", "authHeader");
    body["customParameters"] = json!([{"key": "resource", "value": "https://short.svc.test"}]);
    let cp = rig.provider(&t, body).await;
    rig.attach(&t, &cp).await;
    let a = rig.issue(&t, "OAuthToken").await;
    let b = rig.issue(&t, "OAuthToken").await;
    assert_eq!(
        jwt_payload(a["data"]["token"].as_str().unwrap())["aud"],
        "https://short.svc.test"
    );
    assert_ne!(a["data"]["token"], b["data"]["token"]);
    // Changing the provider invalidates reuse at once.
    let before = rig.issue(&t, "OAuthToken").await;
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"providerDetailJSON": "{\"scope\": \"api:write\"}"}),
    )
    .await
    .expect(200);
    let after = rig.issue(&t, "OAuthToken").await;
    assert_eq!(
        jwt_payload(after["data"]["token"].as_str().unwrap())["scope"],
        "api:write"
    );
    assert_ne!(before["data"]["token"], after["data"]["token"]);
}

#[tokio::test]
async fn oauth_client_credentials_wrong_secret_is_an_upstream_error_without_the_secret() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let canary = format!("wrong-secret-canary-{}", uuid::Uuid::new_v4().simple());
    let cp = rig
        .provider(&t, client_credentials("bad", "svc-cc", &canary, "authHeader"))
        .await;
    rig.attach(&t, &cp).await;
    let r = rig.request(&t, "OAuthToken", json!({})).await;
    r.expect_error(500, INTERNAL);
    let ev = credential_event(&t).await;
    assert_eq!(ev["outcome"]["result"], "Error");
    assert_eq!(ev["outcome"]["reason"], "UpstreamError");
    assert_eq!(ev["credentialProvider"]["result"], "Error");
    let reason = ev["credentialProvider"]["reason"].as_str().unwrap();
    assert!(reason.contains("401") && reason.contains("invalid_client"), "{reason}");
    // The verification answer names the failure (status 200, success false).
    let ver = t.get(&format!("/api/v2/credential-providers/{cp}/verification")).await;
    let v = ver.expect(200);
    assert_eq!(v["success"], false);
    assert!(v["message"].as_str().unwrap().contains("invalid_client"), "{v}");
    // The secret is nowhere: events, responses, logs.
    let all = authz_events(&t, "").await;
    assert!(!serde_json::to_string(&all).unwrap().contains(&canary));
    assert!(!ver.text.contains(&canary));
    assert!(!logs().contains(&canary));
}

// ---- upstream failures ------------------------------------------------------------------------------

#[tokio::test]
async fn every_kind_of_upstream_failure_is_a_500_with_the_reason_recorded() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let fake = Recorder::start(json_answer(200, json!({}))).await;
    let body = json!({"type": "oauth-client-credential", "name": "fake", "isActive": true, "clientID": "c", "clientSecret": "s",
                      "url": format!("{}/token", fake.url)});
    let cp = rig.provider(&t, body).await;
    rig.attach(&t, &cp).await;
    let cases: Vec<(Answer, &str)> = vec![
        (json_answer(503, json!({"error": "temporarily_unavailable"})), "503"),
        // The protocol's error code, never the body's text (issue 31).
        (
            json_answer(400, json!({"error": "invalid_scope", "error_description": "nope"})),
            "400: invalid_scope",
        ),
        (
            Answer::Fixed(200, "text/html", b"<html>login</html>".to_vec(), Duration::ZERO),
            "not JSON",
        ),
        (json_answer(200, json!({"token_type": "Bearer"})), "no access_token"),
        (json_answer(200, json!({"access_token": ""})), "no access_token"),
        (
            Answer::Fixed(200, "application/json", vec![b' '; 2 * 1024 * 1024], Duration::ZERO),
            "",
        ),
        (json_answer(302, json!({})), "302"),
    ];
    for (answer, expect) in cases {
        fake.set(answer);
        rig.request(&t, "OAuthToken", json!({}))
            .await
            .expect_error(500, INTERNAL);
        let ev = credential_event(&t).await;
        let reason = ev["credentialProvider"]["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(reason.contains(expect), "reason {reason:?} lacks {expect:?}");
        assert_eq!(ev["outcome"]["reason"], "UpstreamError");
    }
    // The token request carried the grant and Basic client authentication (RFC 6749 §2.3.1).
    let s = fake.seen().pop().unwrap();
    assert_eq!((s.method.as_str(), s.uri.as_str()), ("POST", "/token"));
    assert_eq!(s.form_value("grant_type").as_deref(), Some("client_credentials"));
    assert_eq!(s.header("authorization"), Some("Basic Yzpz"));
    // Nothing listening → 500.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        // A moved URL needs its secret again (issue 31).
        json!({"providerDetailJSON": json!({"url": format!("http://127.0.0.1:{closed}/token"), "clientSecret": "s"}).to_string()}),
    )
    .await
    .expect(200);
    rig.request(&t, "OAuthToken", json!({}))
        .await
        .expect_error(500, INTERNAL);
    // A server slower than the 10 s upstream timeout → 500 (not a hung request).
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"providerDetailJSON": json!({"url": format!("{}/token", fake.url), "clientSecret": "s"}).to_string()}),
    )
    .await
    .expect(200);
    fake.set(Answer::Fixed(
        200,
        "application/json",
        b"{\"access_token\":\"late\"}".to_vec(),
        Duration::from_secs(15),
    ));
    let started = std::time::Instant::now();
    rig.request(&t, "OAuthToken", json!({}))
        .await
        .expect_error(500, INTERNAL);
    assert!(started.elapsed() < Duration::from_secs(14));
    let reason = credential_event(&t).await["credentialProvider"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("timed out") || reason.contains("timeout"), "{reason}");
}

#[tokio::test]
async fn upstream_urls_are_checked_and_insecure_http_needs_the_switch() {
    let t = TestApp::start_with(|env| {
        env.remove("SVC_ALLOW_INSECURE_UPSTREAM");
    })
    .await;
    let body = json!({"type": "oauth-client-credential", "name": "x", "isActive": true, "clientID": "c", "clientSecret": "s",
                      "url": "http://127.0.0.1:9/token"});
    t.post("/api/v2/credential-providers", body)
        .await
        .expect_error_prefix(400, "url: ");
    let body = json!({"type": "oauth-client-credential", "name": "x", "isActive": true, "clientID": "c", "clientSecret": "s",
                      "url": "ftp://example.test/token"});
    t.post("/api/v2/credential-providers", body)
        .await
        .expect_error_prefix(400, "url: ");
}

// ---- oauth-authorization-code -----------------------------------------------------------------------

/// A user agent with a cookie jar that follows one redirect at a time.
struct Browser {
    client: reqwest::Client,
    jar: BTreeMap<String, String>,
}

impl Browser {
    fn new() -> Browser {
        Browser {
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            jar: BTreeMap::new(),
        }
    }

    fn cookie_header(&self) -> String {
        self.jar
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Sends and returns (status, absolute Location).
    async fn go(&mut self, method: reqwest::Method, url: &str, form: Option<&[(&str, &str)]>) -> (u16, Option<String>) {
        let mut req = self.client.request(method, url).header("cookie", self.cookie_header());
        if let Some(f) = form {
            req = req.form(f);
        }
        let r = req.send().await.unwrap();
        for c in r.headers().get_all("set-cookie") {
            let c = c.to_str().unwrap();
            if let Some((k, v)) = c.split(';').next().and_then(|kv| kv.split_once('=')) {
                self.jar.insert(k.trim().to_string(), v.to_string());
            }
        }
        let status = r.status().as_u16();
        let loc = r.headers().get("location").map(|l| {
            url::Url::parse(url)
                .unwrap()
                .join(l.to_str().unwrap())
                .unwrap()
                .to_string()
        });
        (status, loc)
    }

    /// Drives node-oidc-provider from the authorization URL to the redirect back to the client:
    /// login, then consent when asked. Returns the final redirect (the service's callback).
    async fn authorize(&mut self, start: &str, callback_prefix: &str) -> String {
        let mut next = start.to_string();
        for _ in 0..10 {
            if next.starts_with(callback_prefix) {
                return next;
            }
            let (status, loc) = if let Some(uid) = next.split("/interaction/").nth(1) {
                let uid = uid.split(['?', '/']).next().unwrap().to_string();
                let base = next.split("/interaction/").next().unwrap().to_string();
                let target = format!("{base}/interaction/{uid}");
                // The provider asks for login first, consent afterwards.
                let login = [("prompt", "login"), ("login", "admin-consenter"), ("password", "x")];
                let (s, l) = self.go(reqwest::Method::POST, &target, Some(&login)).await;
                if s == 303 || s == 302 {
                    (s, l)
                } else {
                    self.go(reqwest::Method::POST, &target, Some(&[("prompt", "consent")]))
                        .await
                }
            } else {
                self.go(reqwest::Method::GET, &next, None).await
            };
            assert!(matches!(status, 302 | 303), "unexpected {status} at {next}");
            next = loc.expect("Location");
        }
        panic!("the authorization flow did not reach the callback");
    }
}

#[tokio::test]
async fn oauth_authorization_code_consent_callback_and_refresh_rotation() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let url = oidc_provider();
    let cp = rig
        .provider(
            &t,
            json!({"type": "oauth-authorization-code", "name": "saas", "isActive": true, "clientID": "svc-ac", "clientSecret": "svc-ac-secret",
                   "scope": "openid offline_access api:read", "oAuthUrl": format!("{url}/.well-known/openid-configuration"),
                   "authorizationUrl": format!("{url}/auth"), "tokenUrl": format!("{url}/token"), "isPkceRequired": true,
                   "customParameters": [{"key": "resource", "value": "https://short.svc.test"}]}),
        )
        .await;
    let shown = t
        .get(&format!("/api/v2/credential-providers/{cp}"))
        .await
        .expect(200)
        .clone();
    let callback = format!("{}/api/v1/credential-providers/{cp}/callback", t.base);
    assert_eq!(shown["callBackUrl"], callback);
    assert_eq!(
        shown["userAuthorizationUrl"],
        format!("{}/api/v2/credential-providers/{cp}/authorize", t.base)
    );
    assert_eq!(
        (shown["state"].clone(), shown["lifetimeTimeSpanSeconds"].clone()),
        (Value::Null, json!(2592000))
    );
    assert_eq!(shown["lifetimeExpiration"], Value::Null);
    rig.attach(&t, &cp).await;

    // Not authorised yet: 200 Unknown, credential event NotRetrieved.
    let r = rig.request(&t, "OAuthToken", json!({})).await;
    assert_eq!(
        *r.expect(200),
        json!({"credentialType": "Unknown", "expiresAt": null, "data": {}})
    );
    assert_eq!(
        credential_event(&t).await["credentialProvider"]["result"],
        "NotRetrieved"
    );

    // Step 1: authorize → 302 to the provider with state, PKCE and the custom parameters.
    let r = t.get(&format!("/api/v2/credential-providers/{cp}/authorize")).await;
    assert_eq!(r.status, 302, "{}", r.text);
    let location = r.header("location").unwrap().to_string();
    let u = url::Url::parse(&location).unwrap();
    let q: BTreeMap<String, String> = u.query_pairs().into_owned().collect();
    assert!(location.starts_with(&format!("{url}/auth?")));
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], "svc-ac");
    assert_eq!(q["redirect_uri"], callback);
    assert_eq!(q["scope"], "openid offline_access api:read");
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["resource"], "https://short.svc.test");
    assert!(q["state"].len() >= 32 && q.contains_key("code_challenge"));

    // The administrator consents at the real provider; it redirects to our callback.
    let mut browser = Browser::new();
    let back = browser.authorize(&location, &callback).await;
    let (_, cb_path) = back.split_at(t.base.len());
    // Step 2: the public callback exchanges the code (with the PKCE verifier).
    let done = t.send(t.client.get(t.url(cb_path))).await;
    assert_eq!(
        *done.expect(200),
        json!({"success": true, "message": "Authorization complete.", "id": 0})
    );
    // The state is single use.
    t.send(t.client.get(t.url(cb_path)))
        .await
        .expect_error_prefix(400, "state: ");
    let audit = t.audit(&format!("&filter=target:{cp}")).await;
    assert!(audit.iter().any(|a| a["activity"] == "Authorized"), "{audit:?}");
    let shown = t
        .get(&format!("/api/v2/credential-providers/{cp}"))
        .await
        .expect(200)
        .clone();
    assert!(shown["lifetimeExpiration"].is_string());
    // The callback is a write (§1.3): `modifiedAt` moves with it.
    assert!(
        api_millis(shown["modifiedAt"].as_str().unwrap()) > api_millis(shown["createdAt"].as_str().unwrap()),
        "{shown}"
    );
    for k in ["accessToken", "refreshToken", "clientSecret"] {
        assert!(shown.get(k).is_none_or(Value::is_null), "{k} is write-only");
    }
    // lifetimeExpiration = authorization time + lifetimeTimeSpanSeconds (§3.5.2), also after the
    // span changes: one day less → one day earlier.
    let millis = |v: &Value| api_millis(v["lifetimeExpiration"].as_str().unwrap());
    let before = millis(&shown);
    let span = shown["lifetimeTimeSpanSeconds"].as_i64().unwrap();
    let patched = t
        .patch(
            &format!("/api/v2/credential-providers/{cp}"),
            json!({"lifetimeTimeSpanSeconds": span - 86_400}),
        )
        .await
        .expect(200)
        .clone();
    assert_eq!(millis(&patched) - before, -86_400_000);

    // Step 3: the stored access token lives 30 s (< the 60 s margin), so each issuance refreshes;
    // the provider rotates refresh tokens, so the second refresh only works if the first rotation
    // was persisted.
    let a = rig.issue(&t, "OAuthToken").await;
    let b = rig.issue(&t, "OAuthToken").await;
    let (pa, pb) = (
        jwt_payload(a["data"]["token"].as_str().unwrap()),
        jwt_payload(b["data"]["token"].as_str().unwrap()),
    );
    assert_eq!(pa["sub"], "admin-consenter");
    assert_eq!(pa["aud"], "https://short.svc.test");
    assert_ne!(pa["jti"], pb["jti"]);
    // The rotated refresh token survives a restart.
    let t = t.restart().await;
    let access = auth_oidc(&t, &rig.client_id, &rig.id_token).await;
    let r = credentials(
        &t,
        &access,
        json!({"client": {"oidc": {"identityToken": rig.id_token}}, "server": {"host": rig.host, "port": 443}, "credentialType": "OAuthToken"}),
    )
    .await;
    assert_eq!(r.expect(200)["credentialType"], "OAuthToken", "{}", r.text);
    // Secrets are sealed at rest.
    if let Some(bytes) = t.sqlite_bytes() {
        let tok = r.body["data"]["token"].as_str().unwrap();
        assert!(
            !crate::support::harness::contains(&bytes, tok),
            "access token stored in plaintext"
        );
        assert!(!crate::support::harness::contains(&bytes, "svc-ac-secret"));
    }
}

#[tokio::test]
async fn oauth_authorization_code_callback_errors_and_final_redirect() {
    let t = TestApp::start().await;
    let url = oidc_provider();
    let final_url = "https://console.example.test/done";
    let cp = Rig::new(&t)
        .await
        .provider(
            &t,
            json!({"type": "oauth-authorization-code", "name": "saas", "isActive": true, "clientID": "svc-ac", "clientSecret": "svc-ac-secret",
                   "scope": "openid api:read", "oAuthUrl": url, "authorizationUrl": format!("{url}/auth"),
                   "tokenUrl": format!("{url}/token"), "finalCallbackUrl": final_url}),
        )
        .await;
    let callback = format!("/api/v1/credential-providers/{cp}/callback");
    // Unknown state → 400; the IdP's error parameter → 400.
    t.send(t.client.get(t.url(&format!("{callback}?code=x&state=forged"))))
        .await
        .expect_error_prefix(400, "state: ");
    let r = t.get(&format!("/api/v1/credential-providers/{cp}/authorize")).await;
    assert_eq!(r.status, 302);
    let loc = r.header("location").unwrap().to_string();
    let state = state_of(&loc);
    assert!(!loc.contains("code_challenge"), "no PKCE unless required");
    let r = t
        .send(
            t.client
                .get(t.url(&format!("{callback}?error=access_denied&state={state}"))),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.body["success"], false);
    // A code the provider does not know → 400 naming the failed exchange.
    let r = t.get(&format!("/api/v2/credential-providers/{cp}/authorize")).await;
    let loc = r.header("location").unwrap().to_string();
    let state = state_of(&loc);
    t.send(t.client.get(t.url(&format!("{callback}?code=bogus&state={state}"))))
        .await
        .expect_error_prefix(400, "Authorization failed: ");
    // A successful consent redirects to finalCallbackUrl.
    let r = t.get(&format!("/api/v2/credential-providers/{cp}/authorize")).await;
    let loc = r.header("location").unwrap().to_string();
    let back = Browser::new().authorize(&loc, &t.url(&callback)).await;
    let done = t.send(t.client.get(&back)).await;
    assert_eq!(done.status, 302, "{}", done.text);
    assert_eq!(done.header("location"), Some(final_url));
    // authorize needs Credential Providers write.
    let auditor = svc_server::domain::records::AUDITOR_ROLE.to_string();
    t.create_user("viewer@acme.test", "viewer-password-123", &[&auditor])
        .await;
    let viewer = t.login("viewer@acme.test", "viewer-password-123").await;
    let r = t
        .get_as(&viewer, &format!("/api/v2/credential-providers/{cp}/authorize"))
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
}

// ---- cloudA-sts-oidc ---------------------------------------------------------------------------------

#[tokio::test]
async fn clouda_sts_assume_role_with_web_identity_against_moto() {
    let proxy = Recorder::start(Answer::Proxy(peer("SVC_TEST_MOTO_URL"))).await;
    let purl = proxy.url.clone();
    let t = TestApp::start_with(move |env| {
        env.insert("SVC_CLOUDA_STS_FEDERATION_URL".into(), format!("{purl}/"));
        env.insert("SVC_CLOUDA_STS_AUDIENCE".into(), "sts.cloud-a.test".into());
    })
    .await;
    let rig = Rig::new(&t).await;
    t.post(
        "/api/v2/credential-providers",
        json!({"type": "cloudA-sts-oidc", "name": "x", "isActive": true, "cloudAIAMRoleArn": "arn:aws:iam::12:role/x"}),
    )
    .await
    .expect_error_prefix(400, "cloudAIAMRoleArn: ");
    t.post("/api/v2/credential-providers", json!({"type": "cloudA-sts-oidc", "name": "x", "isActive": true, "cloudAIAMRoleArn": "arn:aws:iam::123456789012:role/x", "lifetime": 899}))
        .await
        .expect_error(400, "lifetime: must be 900..43200");
    let arn = "arn:aws:iam::123456789012:role/deployer";
    let cp = rig
        .provider(&t, json!({"type": "cloudA-sts-oidc", "name": "deploy-role", "isActive": true, "cloudAIAMRoleArn": arn, "lifetime": 1800}))
        .await;
    let policy = rig.attach(&t, &cp).await;
    let v = rig.issue(&t, "CloudAStsFederation").await;
    let data = v["data"].as_object().unwrap();
    assert_eq!(data.len(), 3);
    assert!(data["cloudAAccessKeyId"].as_str().unwrap().starts_with("ASIA"));
    assert!(!data["cloudASecretAccessKey"].as_str().unwrap().is_empty());
    assert!(data["cloudASessionToken"].is_string());
    assert!(v["expiresAt"].is_string());

    // What the STS received: the unsigned form with a federation assertion from our issuer.
    let seen = proxy.seen();
    assert_eq!(seen.len(), 1);
    let s = &seen[0];
    assert!(
        s.header("authorization").is_none(),
        "AssumeRoleWithWebIdentity is unsigned"
    );
    // The answer is read as XML (§5.3): the real STS answers JSON when asked for it.
    assert_eq!(s.header("accept"), Some("text/xml"));
    assert_eq!(s.form_value("Action").as_deref(), Some("AssumeRoleWithWebIdentity"));
    assert_eq!(s.form_value("Version").as_deref(), Some("2011-06-15"));
    assert_eq!(s.form_value("RoleArn").as_deref(), Some(arn));
    assert_eq!(
        s.form_value("RoleSessionName"),
        Some(format!("svc-{}", rig.client_workload))
    );
    assert_eq!(s.form_value("DurationSeconds").as_deref(), Some("1800"));
    let (h, c) = verify_with_jwks(&t, &s.form_value("WebIdentityToken").unwrap()).await;
    assert_eq!((h["alg"].clone(), h["typ"].clone()), (json!("RS256"), json!("JWT")));
    assert_eq!(c["iss"], t.base);
    assert_eq!(c["aud"], "sts.cloud-a.test");
    assert_eq!(c["sub"], rig.client_workload);
    assert_eq!(c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(), 300);
    assert_eq!(c["svc"]["accessPolicyId"], policy);
    assert_eq!(c["svc"]["credentialProviderId"], cp);

    // Reused while valid: no second STS call.
    let again = rig.issue(&t, "CloudAStsFederation").await;
    assert_eq!(again["data"], v["data"]);
    assert_eq!(proxy.count(), 1);

    // Several roles behind one policy, selected by access key id.
    let other = rig
        .provider(&t, json!({"type": "cloudA-sts-oidc", "name": "audit-role", "isActive": true, "cloudAIAMRoleArn": "arn:aws:iam::123456789012:role/auditor"}))
        .await;
    rig.policy(
        &t,
        json!([{"credentialProviderId": cp, "mappingType": "AccessKeyId", "accessKeyId": "AKIADEPLOY"},
               {"credentialProviderId": other, "mappingType": "AccessKeyId", "accessKeyId": "AKIAAUDIT"}]),
    )
    .await;
    let r = rig
        .request(
            &t,
            "CloudAStsFederation",
            json!({"connectionMetadata": {"accessKeyId": "AKIAAUDIT"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let last = proxy.seen().pop().unwrap();
    assert_eq!(
        last.form_value("RoleArn").as_deref(),
        Some("arn:aws:iam::123456789012:role/auditor")
    );
    assert_eq!(
        last.form_value("DurationSeconds").as_deref(),
        Some("3600"),
        "default lifetime"
    );

    // An STS ErrorResponse is an upstream error naming the code.
    proxy.set(Answer::Fixed(
        400,
        "text/xml",
        b"<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code><Message>No OpenIDConnect provider found</Message></Error></ErrorResponse>".to_vec(),
        Duration::ZERO,
    ));
    t.patch(
        &format!("/api/v2/credential-providers/{other}"),
        json!({"providerDetailJSON": "{\"lifetime\": 900}"}),
    )
    .await
    .expect(200);
    rig.request(
        &t,
        "CloudAStsFederation",
        json!({"connectionMetadata": {"accessKeyId": "AKIAAUDIT"}}),
    )
    .await
    .expect_error(500, INTERNAL);
    let reason = credential_event(&t).await["credentialProvider"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("InvalidIdentityToken"), "{reason}");
    // A 200 that is not the expected document is an upstream error too.
    proxy.set(Answer::Fixed(200, "text/xml", b"<Other/>".to_vec(), Duration::ZERO));
    t.patch(
        &format!("/api/v2/credential-providers/{other}"),
        json!({"providerDetailJSON": "{\"lifetime\": 901}"}),
    )
    .await
    .expect(200);
    rig.request(
        &t,
        "CloudAStsFederation",
        json!({"connectionMetadata": {"accessKeyId": "AKIAAUDIT"}}),
    )
    .await
    .expect_error(500, INTERNAL);
}

// ---- vaultClientToken ---------------------------------------------------------------------------------

struct Bao {
    addr: String,
    token: String,
    http: reqwest::Client,
}

impl Bao {
    fn new() -> Bao {
        Bao {
            addr: peer("SVC_TEST_OPENBAO_ADDR"),
            token: peer("SVC_TEST_OPENBAO_TOKEN"),
            http: reqwest::Client::new(),
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut r = self
            .http
            .request(method, format!("{}/v1/{path}", self.addr))
            .header("X-Vault-Token", &self.token);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let r = r.send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn ok(&self, path: &str, body: Value) {
        let (s, v) = self.call(reqwest::Method::POST, path, Some(body)).await;
        assert!((200..300).contains(&s), "openbao {path}: {s} {v}");
    }
}

#[tokio::test]
async fn vault_client_token_logs_in_to_openbao_and_reads_a_secret() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let bao = Bao::new();
    let port: i32 = bao.addr.rsplit(':').next().unwrap().parse().unwrap();
    let tag = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
    let mount = format!("jwt-{tag}");
    // A JWT auth mount that trusts this service's issuer and JWKS, a role bound to the default
    // audience and to the dynamic subject, and a policy that reads one KV secret.
    bao.ok(&format!("sys/auth/{mount}"), json!({"type": "jwt"})).await;
    bao.ok(
        &format!("auth/{mount}/config"),
        json!({"jwks_url": t.url("/.well-known/jwks.json"), "bound_issuer": t.base, "jwt_supported_algs": ["RS256"]}),
    )
    .await;
    bao.ok(
        &format!("sys/policies/acl/app-{tag}"),
        json!({"policy": format!("path \"secret/data/app-{tag}\" {{ capabilities = [\"read\"] }}")}),
    )
    .await;
    bao.ok(
        &format!("auth/{mount}/role/deployer"),
        json!({"role_type": "jwt", "bound_audiences": [format!("http://127.0.0.1:{port}")], "user_claim": "sub",
               "bound_subject": "workload:deploy-job", "bound_claims": {"team": "platform"},
               "token_policies": [format!("app-{tag}")], "token_ttl": 600}),
    )
    .await;
    bao.ok(
        &format!("secret/data/app-{tag}"),
        json!({"data": {"password": "from-openbao"}}),
    )
    .await;

    let cp = rig
        .provider(
            &t,
            json!({"type": "vaultClientToken", "name": "bao", "isActive": true, "subject": "workload:${svc.clientWorkload.name}", "subjectType": "dynamic",
                   "lifetime": 60, "vaultHost": "127.0.0.1", "port": port, "tls": false, "authenticationPath": format!("auth/{mount}"), "role": "deployer",
                   "customClaimNames": [{"key": "team", "value": "${oidc.identityToken.decode.payload.team}", "valueType": "dynamic"}]}),
        )
        .await;
    let shown = t.get(&format!("/api/v2/credential-providers/{cp}")).await;
    assert_eq!(shown.expect(200)["issuer"], t.base);
    rig.attach(&t, &cp).await;
    let v = rig.issue(&t, "OAuthToken").await;
    let token = v["data"]["token"].as_str().unwrap().to_string();
    let left = expires_at_secs(&v) - now();
    assert!((590..=600).contains(&left), "now + lease_duration: {left}");
    // The token works at the vault, with exactly the role's policy.
    let r = bao
        .http
        .get(format!("{}/v1/secret/data/app-{tag}", bao.addr))
        .header("X-Vault-Token", &token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let secret: Value = r.json().await.unwrap();
    assert_eq!(secret["data"]["data"]["password"], "from-openbao");
    let (s, lookup) = bao
        .call(
            reqwest::Method::POST,
            "auth/token/lookup",
            Some(json!({"token": token})),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(lookup["data"]["meta"]["role"], "deployer");

    // A role the vault refuses → 500 with the vault's reason.
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"providerDetailJSON": "{\"role\": \"missing\"}"}),
    )
    .await
    .expect(200);
    rig.request(&t, "OAuthToken", json!({}))
        .await
        .expect_error(500, INTERNAL);
    let reason = credential_event(&t).await["credentialProvider"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.starts_with("vault login answered 400"), "{reason}");
    // A subject outside the role's binding is refused by the vault, not by us.
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"providerDetailJSON": "{\"role\": \"deployer\", \"subject\": \"someone-else\", \"subjectType\": \"literal\"}"}),
    )
    .await
    .expect(200);
    rig.request(&t, "OAuthToken", json!({}))
        .await
        .expect_error(500, INTERNAL);
    // Validation.
    t.post("/api/v2/credential-providers", json!({"type": "vaultClientToken", "name": "x", "isActive": true, "subject": "s", "lifetime": 60, "vaultHost": "h", "port": 0, "authenticationPath": "auth/jwt"}))
        .await
        .expect_error(400, "port: must be 1..65535");
    t.post("/api/v2/credential-providers", json!({"type": "vaultClientToken", "name": "x", "isActive": true, "subject": "s", "lifetime": 60, "vaultHost": "h", "port": 8200, "authenticationPath": "auth/jwt", "issuer": "https://other.example"}))
        .await
        .expect_error_prefix(400, "issuer: ");
    bao.call(reqwest::Method::DELETE, &format!("sys/auth/{mount}"), None)
        .await;
}

/// Milliseconds of a `…T…Z` timestamp as the API writes it (`2030-01-01T13:00:00.000Z`).
fn api_millis(text: &str) -> i64 {
    svc_api::Timestamp::parse(text).expect("an API timestamp").millis()
}
