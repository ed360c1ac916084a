//! Management rules of credential providers that cut across types: reuse isolation between
//! policies, PATCH semantics (null and "" clear, server state kept), read-only and derived fields,
//! reserved names, the v1 `roleId` mirror, verification of providers that need a workload request,
//! and inactive integrations.

use serde_json::{Value, json};
use svc_server::domain::records::AUDITOR_ROLE;

use crate::support::cred::*;
use crate::support::harness::TestApp;

#[tokio::test]
async fn reuse_never_crosses_policies() {
    let fake = Recorder::start(json_answer(200, json!({"access_token": "t", "expires_in": 3600}))).await;
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let cp = rig
        .provider(&t, json!({"type": "oauth-client-credential", "name": "cc", "isActive": true, "clientID": "c", "clientSecret": "s",
                             "url": format!("{}/token", fake.url)}))
        .await;
    rig.attach(&t, &cp).await;
    rig.issue(&t, "OAuthToken").await;
    rig.issue(&t, "OAuthToken").await;
    assert_eq!(fake.count(), 1, "same policy: reused");
    // The same provider behind a second policy (another server workload) fetches its own.
    let r = t
        .post(
            "/api/v1/server-workloads",
            json!({"name": "other", "isActive": true, "serviceEndpoint": {"host": "other.example.test", "port": 443, "appProtocol": "HTTP",
                   "transportProtocol": "TCP", "requestedPort": 443, "requestedTls": true, "tls": true, "tlsVerification": "full"}}),
        )
        .await;
    let sw = id_of(&r);
    t.post(
        "/api/v2/access-policies",
        json!({"name": "second", "isActive": true, "clientWorkload": rig.client_workload, "serverWorkload": sw,
               "credentialProviders": [{"credentialProviderId": cp, "mappingType": "None"}]}),
    )
    .await
    .expect(200);
    let r = crate::support::edge::credentials(
        &t,
        &rig.access,
        json!({"client": {"oidc": {"identityToken": rig.id_token}}, "server": {"host": "other.example.test", "port": 443}, "credentialType": "OAuthToken"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(fake.count(), 2);
}

#[tokio::test]
async fn patch_clears_with_null_or_empty_and_keeps_server_state() {
    let t = TestApp::start().await;
    let cp = t
        .post(
            "/api/v2/credential-providers",
            json!({"type": "aiA-wif", "name": "a", "isActive": true, "federationRuleId": "fdrl_1",
               "organizationId": "5a1e2f3c-4b5d-4e6f-8a7b-9c0d1e2f3a4b", "serviceAccountId": "svac_1", "scope": "s",
               "workspaceId": "wrkspc_1", "audience": "https://aud.example"}),
        )
        .await
        .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let r = t
        .patch(
            &format!("/api/v2/credential-providers/{cp}"),
            json!({"providerDetailJSON": "{\"workspaceId\": \"\", \"audience\": null}"}),
        )
        .await;
    let v = r.expect(200);
    assert_eq!(
        (v["workspaceId"].clone(), v["audience"].clone()),
        (Value::Null, Value::Null)
    );
    // A required field cannot be cleared.
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"providerDetailJSON": "{\"scope\": null}"}),
    )
    .await
    .expect_error(400, "providerDetailJSON.scope: is required");
    // Dynamic expressions are checked against the known set, including environment names.
    t.post(
        "/api/v2/credential-providers",
        json!({"type": "oidc-id-token", "name": "o", "isActive": true, "audience": "a",
            "subject": "${os.environment.HOME}", "subjectType": "dynamic"}),
    )
    .await
    .expect_error(400, "subject: unknown expression ${os.environment.HOME}");
    t.post(
        "/api/v2/credential-providers",
        json!({"type": "oidc-id-token", "name": "o", "isActive": true, "audience": "a",
            "subject": "pod:${os.environment.ORCH_POD_NAME}", "subjectType": "dynamic"}),
    )
    .await
    .expect(201);
}

#[tokio::test]
async fn derived_and_reserved_fields() {
    let t = TestApp::start().await;
    // signed-jwt: a GET → PUT round trip keeps the issuer derived (it follows the subject).
    let r = t
        .post(
            "/api/v2/credential-providers",
            json!({"type": "signed-jwt", "name": "w", "isActive": true, "tokenConfiguration": "dataWarehouseA",
               "algorithmType": "RS256", "lifetime": 60, "subject": "ACME.ONE"}),
        )
        .await;
    let mut v = r.expect(201).clone();
    let fp = v["issuer"].as_str().unwrap().rsplit(':').next().unwrap().to_string();
    assert_eq!(v["issuer"], format!("ACME.ONE.SHA256:{fp}"));
    v["subject"] = json!("ACME.TWO");
    let r = t.put("/api/v2/credential-providers", v).await;
    assert_eq!(r.expect(200)["issuer"], format!("ACME.TWO.SHA256:{fp}"));
    // JWT-SVID: full SPIFFE ID syntax, and `sub` is not a custom claim.
    t.post(
        "/api/v2/credential-providers",
        json!({"type": "jwt-svid-token", "name": "s", "isActive": true, "audience": "a", "subject": "spiffe://ACME/x"}),
    )
    .await
    .expect_error_prefix(400, "subject: the trust domain");
    t.post(
        "/api/v2/credential-providers",
        json!({"type": "jwt-svid-token", "name": "s", "isActive": true, "audience": "a", "subject": "spiffe://acme/x",
            "customClaims": [{"key": "team", "value": "a"}, {"key": "sub", "value": "spiffe://acme/admin"}]}),
    )
    .await
    .expect_error(400, "customClaims[1].key: cannot be sub in a JWT-SVID");
    // OAuth custom parameters cannot duplicate protocol parameters.
    t.post("/api/v2/credential-providers", json!({"type": "oauth-client-credential", "name": "c", "isActive": true, "clientID": "c",
            "clientSecret": "s", "url": "https://idp.example/token", "customParameters": [{"key": "grant_type", "value": "password"}]}))
        .await
        .expect_error(400, "customParameters[0].key: grant_type is set by the service");
    // Stored OAuth tokens are not input fields.
    t.post("/api/v2/credential-providers", json!({"type": "oauth-authorization-code", "name": "c", "isActive": true, "clientID": "c",
            "oAuthUrl": "https://idp.example", "authorizationUrl": "https://idp.example/auth", "tokenUrl": "https://idp.example/token",
            "refreshToken": "injected"}))
        .await
        .expect_error(400, "refreshToken: unknown property");
}

/// What a provider shows for the fields it was created without: the defaults §3.5.2 states, and
/// `[]` for a list (§1.1: never `null`); a GET → PUT round trip keeps them.
#[tokio::test]
async fn absent_fields_show_their_defaults_and_lists_are_empty() {
    let t = TestApp::start().await;
    let cases = [
        (
            json!({"type": "oauth-client-credential", "name": "o", "isActive": true, "clientID": "c",
                   "clientSecret": "s", "url": "https://idp.example/token"}),
            json!({"credentialStyle": "authHeader", "customParameters": []}),
        ),
        (
            json!({"type": "oauth-authorization-code", "name": "a", "isActive": true, "clientID": "c",
                   "oAuthUrl": "https://idp.example", "authorizationUrl": "https://idp.example/auth",
                   "tokenUrl": "https://idp.example/token"}),
            json!({"customParameters": []}),
        ),
        (
            json!({"type": "oidc-id-token", "name": "i", "isActive": true, "audience": "a", "subject": "s"}),
            json!({"subjectType": "literal", "algorithmType": "ES256", "customClaims": []}),
        ),
        (
            json!({"type": "svc-access-token", "name": "t", "isActive": true, "roleId": AUDITOR_ROLE,
                   "lifetimeInSeconds": 600}),
            json!({"absoluteTokenLifetime": null}),
        ),
    ];
    for (body, expected) in cases {
        let shows = |v: &Value, when: &str| {
            for (k, want) in expected.as_object().unwrap() {
                assert!(v.get(k).is_some(), "{k} of {} is written {when}", body["type"]);
                assert_eq!(v[k], *want, "{k} of {} {when}", body["type"]);
            }
        };
        let v = t
            .post("/api/v2/credential-providers", body.clone())
            .await
            .expect(201)
            .clone();
        shows(&v, "on create");
        let back = t
            .put("/api/v2/credential-providers", v.clone())
            .await
            .expect(200)
            .clone();
        shows(&back, "after a round trip");
    }
    // An API key is 1..8192 characters (§3.5.2); empty on a PUT keeps the stored one (§1.9).
    t.post(
        "/api/v2/credential-providers",
        json!({"type": "apikey", "name": "long", "isActive": true, "apiKey": "k".repeat(8193)}),
    )
    .await
    .expect_error(400, "apiKey: must be 1..8192 characters");
    let v = t
        .post(
            "/api/v2/credential-providers",
            json!({"type": "apikey", "name": "k", "isActive": true, "apiKey": "k".repeat(8192)}),
        )
        .await
        .expect(201)
        .clone();
    let mut put = v.clone();
    put["apiKey"] = json!("");
    t.put("/api/v2/credential-providers", put).await.expect(200);
    // The same inside a v1 providerDetailJSON, and a signed-jwt key that is no PEM.
    let long = format!("{{\"apiKey\": \"{}\"}}", "k".repeat(8193));
    t.post(
        "/api/v1/credential-providers",
        json!({"type": "apikey", "name": "long1", "isActive": true, "providerDetailJSON": long}),
    )
    .await
    .expect_error(400, "providerDetailJSON.apiKey: must be 1..8192 characters");
    let bad_key = t
        .post(
            "/api/v2/credential-providers",
            json!({"type": "signed-jwt", "name": "w", "isActive": true, "tokenConfiguration": "dataWarehouseA",
               "algorithmType": "RS256", "lifetime": 60, "subject": "ACME.ONE", "privateKey": "not a key"}),
        )
        .await;
    bad_key.expect_error_prefix(400, "privateKey:");
    assert!(!bad_key.text.contains("not a key"), "the refused key is not echoed");
}

#[tokio::test]
async fn v1_role_id_mirrors_the_access_token_role() {
    let t = TestApp::start().await;
    let r = t
        .post(
            "/api/v1/credential-providers",
            json!({"type": "svc-access-token", "name": "r", "isActive": true, "roleId": AUDITOR_ROLE,
               "providerDetailJSON": "{\"lifetimeInSeconds\": 600}"}),
        )
        .await;
    let v = r.expect(201).clone();
    assert_eq!(v["roleId"], AUDITOR_ROLE.to_string());
    let id = v["externalId"].as_str().unwrap();
    let v2 = t.get(&format!("/api/v2/credential-providers/{id}")).await;
    assert_eq!(v2.expect(200)["roleId"], AUDITOR_ROLE.to_string());
    let admin = svc_server::domain::records::SUPER_ADMIN_ROLE.to_string();
    let r = t
        .patch(&format!("/api/v1/credential-providers/{id}"), json!({"roleId": admin}))
        .await;
    assert_eq!(r.expect(201)["roleId"], admin);
    t.post(
        "/api/v1/credential-providers",
        json!({"type": "apikey", "name": "k", "isActive": true, "roleId": AUDITOR_ROLE,
            "providerDetailJSON": "{\"apiKey\": \"k\"}"}),
    )
    .await
    .expect_error(400, "roleId: applies only to svc-access-token providers");
    // An unknown role is named where it was given: v1's own field, or inside the detail text.
    let unknown = "00000000-0000-4000-8000-00000000abcd";
    t.post(
        "/api/v1/credential-providers",
        json!({"type": "svc-access-token", "name": "u", "isActive": true, "roleId": unknown,
            "providerDetailJSON": "{\"lifetimeInSeconds\": 600}"}),
    )
    .await
    .expect_error(400, "roleId: unknown role");
    let detail = json!({"roleId": unknown, "lifetimeInSeconds": 600}).to_string();
    t.post(
        "/api/v1/credential-providers",
        json!({"type": "svc-access-token", "name": "u", "isActive": true, "providerDetailJSON": detail}),
    )
    .await
    .expect_error(400, "providerDetailJSON.roleId: unknown role");
    t.patch(
        &format!("/api/v2/credential-providers/{id}"),
        json!({"providerDetailJSON": json!({"roleId": unknown}).to_string()}),
    )
    .await
    .expect_error(400, "providerDetailJSON.roleId: unknown role");
    t.patch(
        &format!("/api/v1/credential-providers/{id}"),
        json!({"roleId": unknown}),
    )
    .await
    .expect_error(400, "roleId: unknown role");
}

#[tokio::test]
async fn verification_of_an_x509_provider_signs_a_probe_certificate() {
    let t = TestApp::start().await;
    let r = t
        .post(
            "/api/v2/credential-providers",
            json!({"type": "x509svid", "name": "m", "isActive": true, "spiffeId": "spiffe://acme.test/probe"}),
        )
        .await;
    let id = r.expect(201)["externalId"].as_str().unwrap().to_string();
    let v = t.get(&format!("/api/v2/credential-providers/{id}/verification")).await;
    assert_eq!(
        *v.expect(200),
        json!({"success": true, "message": "A credential was obtained.", "id": 0})
    );
    // A dynamic SPIFFE ID needs a workload request.
    let r = t
        .post(
            "/api/v2/credential-providers",
            json!({"type": "x509svid", "name": "d", "isActive": true,
               "spiffeId": "spiffe://acme.test/${svc.clientWorkload.id}", "spiffeIdType": "dynamic"}),
        )
        .await;
    let id = r.expect(201)["externalId"].as_str().unwrap().to_string();
    let v = t.get(&format!("/api/v2/credential-providers/{id}/verification")).await;
    assert_eq!(v.expect(200)["success"], false);
}

/// A token endpoint for the authorization-code flow that states no `expires_in`.
fn no_expiry(s: &Seen) -> (u16, Value) {
    match s.form_value("grant_type").as_deref() {
        Some("authorization_code") | Some("refresh_token") => (
            200,
            json!({"access_token": "at-without-expiry", "refresh_token": "rt", "token_type": "Bearer"}),
        ),
        _ => (400, json!({"error": "unsupported_grant_type"})),
    }
}

#[tokio::test]
async fn authorization_code_token_without_expires_in_has_no_expiry() {
    let fake = Recorder::start(Answer::Func(no_expiry)).await;
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let cp = rig
        .provider(&t, json!({"type": "oauth-authorization-code", "name": "ac", "isActive": true, "clientID": "c", "clientSecret": "s",
                             "oAuthUrl": fake.url, "authorizationUrl": format!("{}/auth", fake.url), "tokenUrl": format!("{}/token", fake.url)}))
        .await;
    rig.attach(&t, &cp).await;
    // A consent the IdP answered with an error spends its state (single use, §3.5.4).
    let r = t.get(&format!("/api/v2/credential-providers/{cp}/authorize")).await;
    let refused = state_of(r.header("location").unwrap());
    let callback = |q: String| {
        t.client
            .get(t.url(&format!("/api/v1/credential-providers/{cp}/callback?{q}")))
    };
    t.send(callback(format!("error=access_denied&state={refused}")))
        .await
        .expect_error_prefix(400, "Authorization failed: access_denied");
    t.send(callback(format!("code=c0&state={refused}")))
        .await
        .expect_error(400, "state: unknown or expired");
    // An error callback is checked like a code: its state first.
    t.send(callback(format!("error=access_denied&state={refused}")))
        .await
        .expect_error(400, "state: unknown or expired");
    t.send(callback("error=access_denied".to_string()))
        .await
        .expect_error(400, "state: is required");
    let r = t.get(&format!("/api/v2/credential-providers/{cp}/authorize")).await;
    let loc = r.header("location").unwrap().to_string();
    let state = state_of(&loc);
    let cb = t.send(callback(format!("code=c1&state={state}"))).await;
    cb.expect(200);
    let exchange = fake.seen().pop().unwrap();
    assert_eq!(
        exchange.header("authorization"),
        Some("Basic Yzpz"),
        "HTTP Basic client authentication"
    );
    assert_eq!(
        exchange.form_value("redirect_uri"),
        Some(format!("{}/api/v1/credential-providers/{cp}/callback", t.base))
    );
    let v = rig.issue(&t, "OAuthToken").await;
    assert_eq!(
        (v["data"]["token"].clone(), v["expiresAt"].clone()),
        (json!("at-without-expiry"), Value::Null)
    );
    // Reused (for an assumed hour): no refresh call.
    rig.issue(&t, "OAuthToken").await;
    assert_eq!(fake.count(), 1);
}

#[tokio::test]
async fn an_inactive_integration_gives_no_credential() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let r = t
        .post("/api/v1/credential-integrations", json!({"type": "CloudBDirectoryFederation", "name": "kv", "isActive": false, "audience": "a",
               "subject": "s", "cloudBTenant": "4f6c1d2e-8a9b-4c3d-9e8f-0a1b2c3d4e5f", "clientId": "0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e",
               "keyVaultName": "acme-secrets"}))
        .await;
    let integ = r.expect(201)["externalId"].as_str().unwrap().to_string();
    let cp = rig
        .provider(
            &t,
            json!({"type": "cloudB-key-vault-value", "name": "kv", "isActive": true, "secretName1": "k",
                             "credentialProviderIntegrationExternalId": integ}),
        )
        .await;
    rig.attach(&t, &cp).await;
    let r = rig.request(&t, "ApiKey", json!({})).await;
    assert_eq!(
        *r.expect(200),
        json!({"credentialType": "Unknown", "expiresAt": null, "data": {}})
    );
    let ev = last_event(&t, "access.credential").await;
    assert!(
        ev["credentialProvider"]["reason"]
            .as_str()
            .unwrap()
            .contains("inactive"),
        "{ev}"
    );
}

/// A token endpoint whose refresh tokens rotate and can be spent once (a spent one is
/// `invalid_grant`), counting refreshes in the access token it returns.
fn rotating(s: &Seen) -> (u16, Value) {
    use std::sync::Mutex;
    static CURRENT: Mutex<Option<(String, u32)>> = Mutex::new(None);
    let mut cur = CURRENT.lock().unwrap();
    match s.form_value("grant_type").as_deref() {
        Some("authorization_code") => {
            *cur = Some(("rt-0".into(), 0));
            (
                200,
                json!({"access_token": "at-0", "refresh_token": "rt-0", "expires_in": 30}),
            )
        }
        Some("refresh_token") => match cur.as_mut() {
            Some((rt, n)) if s.form_value("refresh_token").as_deref() == Some(rt.as_str()) => {
                *n += 1;
                *rt = format!("rt-{n}");
                (
                    200,
                    json!({"access_token": format!("at-{n}"), "refresh_token": rt.clone(), "expires_in": 30}),
                )
            }
            _ => (
                400,
                json!({"error": "invalid_grant", "error_description": "refresh token spent"}),
            ),
        },
        _ => (400, json!({"error": "unsupported_grant_type"})),
    }
}

#[tokio::test]
async fn two_nodes_never_spend_a_rotating_refresh_token_twice() {
    if !crate::support::harness::use_postgres() {
        eprintln!("multi-node renewal runs in the PostgreSQL pass only (SQLite serves one node)");
        return;
    }
    let fake = Recorder::start(Answer::Func(rotating)).await;
    let a = TestApp::start().await;
    let rig = Rig::new(&a).await;
    let cp = rig
        .provider(&a, json!({"type": "oauth-authorization-code", "name": "ac", "isActive": true, "clientID": "c", "clientSecret": "s",
                             "oAuthUrl": fake.url, "authorizationUrl": format!("{}/auth", fake.url), "tokenUrl": format!("{}/token", fake.url)}))
        .await;
    rig.attach(&a, &cp).await;
    let r = a.get(&format!("/api/v2/credential-providers/{cp}/authorize")).await;
    let loc = r.header("location").unwrap().to_string();
    let state = state_of(&loc);
    a.send(a.client.get(a.url(&format!(
        "/api/v1/credential-providers/{cp}/callback?code=c&state={state}"
    ))))
    .await
    .expect(200);
    let b = a.join().await;
    // Tokens live 30 s (< the 60 s margin): every request renews. Both nodes at once, repeatedly.
    let body = json!({"client": {"oidc": {"identityToken": rig.id_token}}, "server": {"host": rig.host, "port": 443}, "credentialType": "OAuthToken"});
    for _ in 0..5 {
        let (ra, rb) = tokio::join!(
            crate::support::edge::credentials(&a, &rig.access, body.clone()),
            crate::support::edge::credentials(&b, &rig.access, body.clone())
        );
        assert_eq!((ra.status, rb.status), (200, 200), "{} / {}", ra.text, rb.text);
    }
    let spent = fake
        .seen()
        .iter()
        .filter(|s| s.form_value("grant_type").as_deref() == Some("refresh_token"))
        .count();
    assert_eq!(spent, 10, "one refresh per request, none with a spent token");
}
