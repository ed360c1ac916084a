//! Credential types whose upstreams have no server in the package registries (contract §5.3):
//! `cloudB-directory-federation`, `cloudB-key-vault-value` (+ the `CloudBDirectoryFederation`
//! integration), `cloudC-identity-federation`, `aiA-wif`, `aiB-wif`, `ciB-managed-account` (+ the
//! `CiB` integration, §3.7). Each runs against a loopback fake written from the vendor's public API
//! format; the fake records every request and the tests assert the exact shapes (paths, grant and
//! assertion types, audiences, headers) and verify the assertions against our JWKS.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::cloudc;
use crate::support::cred::*;
use crate::support::edge::*;
use crate::support::harness::TestApp;

const TENANT: &str = "4f6c1d2e-8a9b-4c3d-9e8f-0a1b2c3d4e5f";
const APP_ID: &str = "0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e";

/// Starts the service with every cloud/AI upstream pointing at `fake`.
async fn app_with(fake: &Recorder) -> TestApp {
    let u = fake.url.clone();
    TestApp::start_with(move |env| {
        env.insert("SVC_CLOUDB_LOGIN_URL".into(), format!("{u}/login"));
        env.insert(
            "SVC_CLOUDB_KEYVAULT_URL_TEMPLATE".into(),
            format!("{u}/vaults/{{vault}}"),
        );
        env.insert(
            "SVC_CLOUDB_KEYVAULT_SCOPE".into(),
            "https://vault.cloud-b.test/.default".into(),
        );
        cloudc::env(&u, env);
        env.insert("SVC_AIA_TOKEN_URL".into(), format!("{u}/aia/v1/oauth/token"));
        env.insert("SVC_AIB_TOKEN_URL".into(), format!("{u}/aib/oauth/token"));
    })
    .await
}

/// Routes of the fake vendor APIs.
fn vendor(s: &Seen) -> (u16, Value) {
    if let Some(a) = cloudc::route(s) {
        return a;
    }
    let path = s.uri.split('?').next().unwrap_or_default();
    match (s.method.as_str(), path) {
        ("POST", p) if p.starts_with("/login/") && p.ends_with("/oauth2/v2.0/token") => {
            let token = if s.form_value("scope").as_deref() == Some("https://vault.cloud-b.test/.default") {
                "kv-bearer"
            } else {
                "directory-access-token"
            };
            (
                200,
                json!({"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": token}),
            )
        }
        ("GET", p) if p.starts_with("/vaults/") => {
            if s.header("authorization") != Some("Bearer kv-bearer") {
                return (401, json!({"error": {"code": "Unauthorized"}}));
            }
            match p.rsplit('/').next().unwrap() {
                "db-user" => (
                    200,
                    json!({"value": "app_user", "id": "x", "attributes": {"enabled": true}}),
                ),
                "db-pass" => (200, json!({"value": "vault-canary-password", "id": "y"})),
                "api-key" => (200, json!({"value": "vault-api-key"})),
                _ => (
                    404,
                    json!({"error": {"code": "SecretNotFound", "message": "A secret with (name/id) was not found"}}),
                ),
            }
        }
        ("POST", "/aia/v1/oauth/token") => (
            200,
            json!({"access_token": "sk-ant-oat01-test", "token_type": "Bearer", "expires_in": 3600}),
        ),
        ("POST", "/aib/oauth/token") => (
            200,
            json!({"access_token": "aib-access-token", "token_type": "Bearer", "expires_in": 1800}),
        ),
        _ => (404, json!({"error": "no such route"})),
    }
}

fn calls_to<'a>(seen: &'a [Seen], prefix: &str) -> Vec<&'a Seen> {
    seen.iter().filter(|s| s.uri.starts_with(prefix)).collect()
}

// ---- cloudB --------------------------------------------------------------------------------------------

#[tokio::test]
async fn cloudb_directory_federation_uses_our_assertion_as_client_assertion() {
    let fake = Recorder::start(Answer::Func(vendor)).await;
    let t = app_with(&fake).await;
    let rig = Rig::new(&t).await;
    t.post("/api/v2/credential-providers", json!({"type": "cloudB-directory-federation", "name": "x", "isActive": true,
            "audience": "api://AzureADTokenExchange", "subject": "svc-workloads", "scope": "s", "cloudBTenant": "a/b", "clientId": APP_ID}))
        .await
        .expect_error(400, "cloudBTenant: must match ^[A-Za-z0-9.-]+$");
    let cp = rig
        .provider(
            &t,
            json!({"type": "cloudB-directory-federation", "name": "graph", "isActive": true, "audience": "api://AzureADTokenExchange",
                   "subject": "svc-workloads", "scope": "https://graph.cloud-b.test/.default", "cloudBTenant": TENANT, "clientId": APP_ID}),
        )
        .await;
    let policy = rig.attach(&t, &cp).await;
    let v = rig.issue(&t, "OAuthToken").await;
    assert_eq!(v["data"], json!({"token": "directory-access-token"}));
    let left = expires_at_secs(&v) - now();
    assert!((3589..=3599).contains(&left), "{left}");
    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    let s = &seen[0];
    assert_eq!(s.uri, format!("/login/{TENANT}/oauth2/v2.0/token"));
    assert!(s.header("authorization").is_none());
    assert_eq!(s.form_value("grant_type").as_deref(), Some("client_credentials"));
    assert_eq!(s.form_value("client_id").as_deref(), Some(APP_ID));
    assert_eq!(
        s.form_value("scope").as_deref(),
        Some("https://graph.cloud-b.test/.default")
    );
    assert_eq!(
        s.form_value("client_assertion_type").as_deref(),
        Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
    );
    let (h, c) = verify_with_jwks(&t, &s.form_value("client_assertion").unwrap()).await;
    assert_eq!(h["alg"], "RS256");
    assert_eq!(
        (c["iss"].clone(), c["sub"].clone(), c["aud"].clone()),
        (
            json!(t.base),
            json!("svc-workloads"),
            json!("api://AzureADTokenExchange")
        )
    );
    assert_eq!(c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(), 300);
    assert_eq!(c["svc"]["accessPolicyId"], policy);
    // Reused until 60 s before expiry.
    rig.issue(&t, "OAuthToken").await;
    assert_eq!(fake.count(), 1);
}

#[tokio::test]
async fn cloudb_key_vault_values_through_an_integration() {
    let fake = Recorder::start(Answer::Func(vendor)).await;
    let t = app_with(&fake).await;
    let rig = Rig::new(&t).await;
    let integ_body = json!({"type": "CloudBDirectoryFederation", "name": "kv", "isActive": true, "audience": "api://AzureADTokenExchange",
                            "subject": "svc-kv-reader", "cloudBTenant": TENANT, "clientId": APP_ID, "keyVaultName": "acme-secrets"});
    // Integration validation.
    for (field, value, message) in [
        (
            "keyVaultName",
            json!("my--vault"),
            "keyVaultName: must match ^[a-zA-Z](?!.*--)[a-zA-Z0-9-]{1,22}[a-zA-Z0-9]$",
        ),
        ("cloudBTenant", json!("contoso"), "cloudBTenant: must be a UUID"),
        ("clientId", json!("app"), "clientId: must be a UUID"),
        ("audience", json!("has space"), "audience: must match ^\\S+$"),
        (
            "type",
            json!("Other"),
            "type: must be one of CiB, CloudBDirectoryFederation",
        ),
    ] {
        let mut b = integ_body.clone();
        b[field] = value;
        t.post("/api/v1/credential-integrations", b)
            .await
            .expect_error(400, message);
    }
    let r = t.post("/api/v1/credential-integrations", integ_body.clone()).await;
    let integ = r.expect(201).clone();
    let integ_id = integ["externalId"].as_str().unwrap().to_string();
    assert_eq!(
        r.header("location"),
        Some(format!("/api/v1/credential-integrations/{integ_id}").as_str())
    );
    assert_eq!(
        (integ["status"].clone(), integ["fetchSecretNames"].clone()),
        (Value::Null, json!(false))
    );
    let list = t
        .get("/api/v1/credential-integrations?filter=type:CloudBDirectoryFederation")
        .await;
    assert_eq!(list.expect(200)["entities"][0]["externalId"], integ_id.as_str());
    t.patch(
        &format!("/api/v1/credential-integrations/{integ_id}"),
        json!({"description": "key vault reader", "type": "CloudBDirectoryFederation"}),
    )
    .await
    .expect(200);
    // The discriminator may be repeated on PATCH, not changed (§1.5).
    t.patch(
        &format!("/api/v1/credential-integrations/{integ_id}"),
        json!({"type": "CiB"}),
    )
    .await
    .expect_error(400, "type: cannot be changed");

    // Provider validation.
    t.post(
        "/api/v2/credential-providers",
        json!({"type": "cloudB-key-vault-value", "name": "x", "isActive": true,
            "secretName1": "a/../b", "credentialProviderIntegrationExternalId": integ_id}),
    )
    .await
    .expect_error(400, "secretName1: must match ^[0-9a-zA-Z-]{1,127}$");
    t.post(
        "/api/v2/credential-providers",
        json!({"type": "cloudB-key-vault-value", "name": "x", "isActive": true,
            "secretName1": "a", "credentialProviderIntegrationExternalId": uuid::Uuid::new_v4()}),
    )
    .await
    .expect_error(
        400,
        "credentialProviderIntegrationExternalId: unknown integration in this resource set",
    );

    // Two secrets → UsernamePassword.
    let cp = rig
        .provider(&t, json!({"type": "cloudB-key-vault-value", "name": "db", "isActive": true, "secretName1": "db-user", "secretName2": "db-pass",
                             "credentialProviderIntegrationExternalId": integ_id}))
        .await;
    let policy = rig.attach(&t, &cp).await;
    let v = rig.issue(&t, "UsernamePassword").await;
    assert_eq!(
        v["data"],
        json!({"username": "app_user", "password": "vault-canary-password"})
    );
    assert_eq!(v["expiresAt"], Value::Null);
    let seen = fake.seen();
    let login = calls_to(&seen, "/login/");
    assert_eq!(login.len(), 1, "one directory token for both secrets");
    assert_eq!(
        login[0].form_value("scope").as_deref(),
        Some("https://vault.cloud-b.test/.default")
    );
    let (_, c) = verify_with_jwks(&t, &login[0].form_value("client_assertion").unwrap()).await;
    assert_eq!(
        (c["sub"].clone(), c["aud"].clone()),
        (json!("svc-kv-reader"), json!("api://AzureADTokenExchange"))
    );
    let reads = calls_to(&seen, "/vaults/");
    assert_eq!(
        reads.iter().map(|s| s.uri.as_str()).collect::<Vec<_>>(),
        vec![
            "/vaults/acme-secrets/secrets/db-user?api-version=7.4",
            "/vaults/acme-secrets/secrets/db-pass?api-version=7.4"
        ]
    );
    // ApiKey is not what this provider issues.
    rig.request(&t, "ApiKey", json!({}))
        .await
        .expect_error(403, "Not applicable for this request.");
    // One secret → ApiKey; the directory token is reused.
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"providerDetailJSON": "{\"secretName1\": \"api-key\", \"secretName2\": null}"}),
    )
    .await
    .expect(200);
    let v = rig.issue(&t, "ApiKey").await;
    assert_eq!(v["data"], json!({"apiKey": "vault-api-key"}));
    assert_eq!(calls_to(&fake.seen(), "/login/").len(), 1);
    // A secret that does not exist → 200 Unknown, NotRetrieved.
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"providerDetailJSON": "{\"secretName1\": \"gone\"}"}),
    )
    .await
    .expect(200);
    let r = rig.request(&t, "ApiKey", json!({})).await;
    assert_eq!(
        *r.expect(200),
        json!({"credentialType": "Unknown", "expiresAt": null, "data": {}})
    );
    assert_eq!(
        last_event(&t, "access.credential").await["credentialProvider"]["result"],
        "NotRetrieved"
    );
    // Secret values never reach events or logs.
    let events = serde_json::to_string(&authz_events(&t, "").await).unwrap();
    assert!(!events.contains("vault-canary-password") && !events.contains("kv-bearer"));
    assert!(!crate::support::harness::logs().contains("vault-canary-password"));
    // The integration cannot be deleted while a provider uses it.
    t.delete(&format!("/api/v1/credential-integrations/{integ_id}"))
        .await
        .expect_error_prefix(400, "credentialProviders: referenced by credential provider 'db'");
    t.delete(&format!("/api/v2/access-policies/{policy}")).await.expect(204);
    t.delete(&format!("/api/v2/credential-providers/{cp}"))
        .await
        .expect(204);
    t.delete(&format!("/api/v1/credential-integrations/{integ_id}"))
        .await
        .expect(204);
    t.delete(&format!("/api/v1/credential-integrations/{integ_id}"))
        .await
        .expect(404);
    let audit = t.audit("&filter=category:CredentialProviderIntegrations").await;
    assert!(audit.len() >= 3, "{audit:?}");
}

// ---- cloudC --------------------------------------------------------------------------------------------

#[tokio::test]
async fn cloudc_identity_federation_exchanges_then_impersonates() {
    let fake = Recorder::start(Answer::Func(vendor)).await;
    let t = app_with(&fake).await;
    let rig = Rig::new(&t).await;
    let audience = "//iam.cloud-c.test/projects/123/locations/global/workloadIdentityPools/svc/providers/svc";
    t.post("/api/v2/credential-providers", json!({"type": "cloudC-identity-federation", "name": "x", "isActive": true, "audience": audience, "serviceAccountEmail": "sa/../x@y.z"}))
        .await
        .expect_error(400, "serviceAccountEmail: must match an e-mail address");
    t.post("/api/v2/credential-providers", json!({"type": "cloudC-identity-federation", "name": "x", "isActive": true, "audience": audience, "serviceAccountEmail": "sa@p.test", "lifetime": 43201}))
        .await
        .expect_error(400, "lifetime: must be 1..43200");
    let cp = rig
        .provider(
            &t,
            json!({"type": "cloudC-identity-federation", "name": "gcs", "isActive": true, "audience": audience,
                             "serviceAccountEmail": "deployer@proj.iam.cloud-c.test", "lifetime": 1800}),
        )
        .await;
    rig.attach(&t, &cp).await;
    let v = rig.issue(&t, "CloudCWorkloadIdentityFederation").await;
    assert_eq!(v["data"], json!({"token": "ya29.cloud-c-token"}));
    assert_eq!(expires_at_secs(&v), 1893553445, "expireTime of generateAccessToken");
    let seen = fake.seen();
    assert_eq!(seen.len(), 2);
    let (sts, iam) = (&seen[0], &seen[1]);
    assert_eq!(sts.uri, "/sts/v1/token");
    assert!(sts.header("authorization").is_none());
    let body: Value = serde_json::from_slice(&sts.body).unwrap();
    let subject_token = body["subjectToken"].as_str().unwrap().to_string();
    assert_eq!(
        body,
        json!({"grantType": "urn:ietf:params:oauth:grant-type:token-exchange", "audience": audience,
               "scope": "https://cloud-c.test/auth/cloud-platform", "requestedTokenType": "urn:ietf:params:oauth:token-type:access_token",
               "subjectToken": subject_token, "subjectTokenType": "urn:ietf:params:oauth:token-type:jwt"})
    );
    let (_, c) = verify_with_jwks(&t, &subject_token).await;
    assert_eq!(
        (c["aud"].clone(), c["sub"].clone()),
        (json!(audience), json!(rig.client_workload))
    );
    assert_eq!(
        iam.uri,
        "/iam/v1/projects/-/serviceAccounts/deployer@proj.iam.cloud-c.test:generateAccessToken"
    );
    assert_eq!(iam.header("authorization"), Some("Bearer federated-token"));
    let body: Value = serde_json::from_slice(&iam.body).unwrap();
    assert_eq!(
        body,
        json!({"scope": ["https://cloud-c.test/auth/cloud-platform"], "lifetime": "1800s"})
    );
    // An STS refusal is an upstream error.
    fake.set(json_answer(
        400,
        json!({"error": "invalid_grant", "error_description": "The audience does not match"}),
    ));
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"providerDetailJSON": "{\"lifetime\": 900}"}),
    )
    .await
    .expect(200);
    rig.request(&t, "CloudCWorkloadIdentityFederation", json!({}))
        .await
        .expect_error(500, "Failed to retrieve credentials due to an internal error.");
    let reason = last_event(&t, "access.credential").await["credentialProvider"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("invalid_grant"), "{reason}");
}

// ---- aiA / aiB ----------------------------------------------------------------------------------------

#[tokio::test]
async fn ai_vendor_token_exchanges() {
    let fake = Recorder::start(Answer::Func(vendor)).await;
    let t = app_with(&fake).await;
    let rig = Rig::new(&t).await;
    let org = "5a1e2f3c-4b5d-4e6f-8a7b-9c0d1e2f3a4b";
    let base_a = json!({"type": "aiA-wif", "name": "claude", "isActive": true, "federationRuleId": "fdrl_01abc", "organizationId": org,
                        "serviceAccountId": "svac_01xyz", "scope": "workspace:developer"});
    for (field, value, message) in [
        (
            "federationRuleId",
            json!("rule_1"),
            "federationRuleId: must match ^fdrl_.+$",
        ),
        (
            "serviceAccountId",
            json!("svac_"),
            "serviceAccountId: must match ^svac_.+$",
        ),
        ("organizationId", json!("acme"), "organizationId: must match a UUID"),
        ("workspaceId", json!("ws_1"), "workspaceId: must match ^wrkspc_.+$"),
        ("lifetime", json!(299), "lifetime: must be 300..43200"),
    ] {
        let mut b = base_a.clone();
        b[field] = value;
        t.post("/api/v2/credential-providers", b)
            .await
            .expect_error(400, message);
    }
    let cp = rig.provider(&t, base_a.clone()).await;
    rig.attach(&t, &cp).await;
    let v = rig.issue(&t, "OAuthToken").await;
    assert_eq!(v["data"], json!({"token": "sk-ant-oat01-test"}));
    let s = fake.seen().pop().unwrap();
    assert_eq!(s.uri, "/aia/v1/oauth/token");
    let form: std::collections::BTreeMap<String, String> = s.form().into_iter().collect();
    let keys: Vec<&str> = form.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        vec![
            "federation_rule_id",
            "grant_type",
            "organization_id",
            "scope",
            "service_account_id",
            "subject_token",
            "subject_token_type"
        ],
        "no workspace_id or requested_token_lifetime unless configured"
    );
    assert_eq!(form["grant_type"], "urn:ietf:params:oauth:grant-type:token-exchange");
    assert_eq!(form["subject_token_type"], "urn:ietf:params:oauth:token-type:jwt");
    assert_eq!(
        (form["federation_rule_id"].as_str(), form["organization_id"].as_str()),
        ("fdrl_01abc", org)
    );
    assert_eq!(
        (form["service_account_id"].as_str(), form["scope"].as_str()),
        ("svac_01xyz", "workspace:developer")
    );
    let (_, c) = verify_with_jwks(&t, &form["subject_token"]).await;
    assert_eq!(
        c["aud"],
        format!("{}/aia/v1/oauth/token", fake.url),
        "default audience: the token URL"
    );
    assert_eq!(c["sub"], rig.client_workload);
    // Optional fields reach the request when set.
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"providerDetailJSON": json!({"workspaceId": "wrkspc_01", "audience": "https://aia.example", "lifetime": 600}).to_string()}),
    )
    .await
    .expect(200);
    rig.issue(&t, "OAuthToken").await;
    let s = fake.seen().pop().unwrap();
    assert_eq!(s.form_value("workspace_id").as_deref(), Some("wrkspc_01"));
    assert_eq!(s.form_value("requested_token_lifetime").as_deref(), Some("600"));
    let (_, c) = verify_with_jwks(&t, &s.form_value("subject_token").unwrap()).await;
    assert_eq!(c["aud"], "https://aia.example");

    // aiB.
    t.post("/api/v2/credential-providers", json!({"type": "aiB-wif", "name": "x", "isActive": true, "identityProviderId": "idp", "serviceAccountId": "user-1"}))
        .await
        .expect_error(400, "identityProviderId: must match ^idp_.+$");
    t.post("/api/v2/credential-providers", json!({"type": "aiB-wif", "name": "x", "isActive": true, "identityProviderId": "idp_1", "serviceAccountId": "svc-1"}))
        .await
        .expect_error(400, "serviceAccountId: must match ^user-.+$");
    let cp = rig
        .provider(&t, json!({"type": "aiB-wif", "name": "gpt", "isActive": true, "identityProviderId": "idp_abc", "serviceAccountId": "user-svc"}))
        .await;
    rig.attach(&t, &cp).await;
    let v = rig.issue(&t, "OAuthToken").await;
    assert_eq!(v["data"], json!({"token": "aib-access-token"}));
    let left = expires_at_secs(&v) - now();
    assert!((1790..=1800).contains(&left));
    let s = fake.seen().pop().unwrap();
    assert_eq!(s.uri, "/aib/oauth/token");
    let form: std::collections::BTreeMap<String, String> = s.form().into_iter().collect();
    assert_eq!(
        form.keys().map(String::as_str).collect::<Vec<_>>(),
        vec![
            "grant_type",
            "identity_provider_id",
            "service_account_id",
            "subject_token",
            "subject_token_type"
        ]
    );
    assert_eq!(
        (
            form["identity_provider_id"].as_str(),
            form["service_account_id"].as_str()
        ),
        ("idp_abc", "user-svc")
    );
    let (_, c) = verify_with_jwks(&t, &form["subject_token"]).await;
    assert_eq!(c["aud"], format!("{}/aib/oauth/token", fake.url));
}

// ---- ciB managed account --------------------------------------------------------------------------------

fn gitlab(s: &Seen) -> (u16, Value) {
    if s.header("private-token") != Some("glpat-admin-canary") {
        return (401, json!({"message": "401 Unauthorized"}));
    }
    let path = s.uri.split('?').next().unwrap_or_default();
    match (s.method.as_str(), path) {
        ("POST", "/api/v4/service_accounts") => {
            let b: Value = serde_json::from_slice(&s.body).unwrap_or_default();
            if b["username"].as_str().is_some_and(|u| u.contains("refused")) {
                return (
                    403,
                    json!({"message": "403 Forbidden - service accounts are not available"}),
                );
            }
            (201, json!({"id": 42, "username": b["username"], "name": b["name"]}))
        }
        ("POST", "/api/v4/groups/acme%2Fplatform/members") | ("POST", "/api/v4/projects/7/members") => {
            (201, json!({"id": 42, "access_level": 30}))
        }
        ("POST", "/api/v4/users/42/personal_access_tokens") => (
            201,
            json!({"id": 99, "name": "svc", "token": "glpat-issued-canary", "expires_at": "2030-01-01", "active": true}),
        ),
        ("DELETE", "/api/v4/personal_access_tokens/99") => (204, json!({})),
        _ => (404, json!({"message": "404 Not Found"})),
    }
}

async fn wait_status(t: &TestApp, cp: &str) -> Value {
    for _ in 0..100 {
        let v = t.get(&format!("/api/v2/credential-providers/{cp}")).await.body;
        if v["status"] != "Pending" {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("provisioning did not finish");
}

#[tokio::test]
async fn cib_managed_account_is_provisioned_issues_tokens_and_revokes_on_delete() {
    let fake = Recorder::start(Answer::Func(gitlab)).await;
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    t.post(
        "/api/v1/credential-integrations",
        json!({"type": "CiB", "name": "gl", "isActive": true, "url": fake.url}),
    )
    .await
    .expect_error(400, "personalAccessToken: is required");
    let r = t
        .post("/api/v1/credential-integrations", json!({"type": "CiB", "name": "gitlab", "isActive": true, "url": fake.url, "personalAccessToken": "glpat-admin-canary"}))
        .await;
    let integ = r.expect(201).clone();
    assert_eq!(integ["personalAccessToken"], Value::Null);
    assert!(!r.text.contains("glpat-admin-canary"));
    let integ_id = integ["externalId"].as_str().unwrap().to_string();
    let base = json!({"type": "ciB-managed-account", "name": "deploy bot", "isActive": true, "accessLevel": 30, "lifetimeInSeconds": 86400,
                      "scope": "read_api read_repository", "credentialProviderIntegrationExternalId": integ_id,
                      "groupIds": "acme/platform", "projectIds": "7"});
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    t.post("/api/v2/credential-providers", with("accessLevel", json!(25)))
        .await
        .expect_error(400, "accessLevel: must be one of 0, 5, 10, 15, 20, 30, 40, 50");
    // Outside 0..50 the message still names the allowed values.
    t.post("/api/v2/credential-providers", with("accessLevel", json!(60)))
        .await
        .expect_error(400, "accessLevel: must be one of 0, 5, 10, 15, 20, 30, 40, 50");
    t.post("/api/v2/credential-providers", with("lifetimeInSeconds", json!(3599)))
        .await
        .expect_error(400, "lifetimeInSeconds: must be 3600..31536000");
    let mut none = base.clone();
    none.as_object_mut().unwrap().remove("groupIds");
    none.as_object_mut().unwrap().remove("projectIds");
    t.post("/api/v2/credential-providers", none)
        .await
        .expect_error(400, "groupIds: groupIds or projectIds is required");

    let r = t.post("/api/v2/credential-providers", base.clone()).await;
    let created = r.expect(201).clone();
    let cp = created["externalId"].as_str().unwrap().to_string();
    assert_eq!(created["username"], "Svc_deploy_bot_managed_service_account");
    assert_eq!(created["status"], "Pending");
    let v = wait_status(&t, &cp).await;
    assert_eq!(
        (v["status"].clone(), v["userId"].clone()),
        (json!("Provisioned"), json!(42)),
        "{v}"
    );
    let seen = fake.seen();
    let sa = &seen[0];
    assert_eq!(
        (sa.method.as_str(), sa.uri.as_str()),
        ("POST", "/api/v4/service_accounts")
    );
    let body: Value = serde_json::from_slice(&sa.body).unwrap();
    assert_eq!(
        body,
        json!({"name": "Svc_deploy_bot_managed_service_account", "username": "Svc_deploy_bot_managed_service_account"})
    );
    let members: Vec<(&str, Value)> = seen[1..]
        .iter()
        .map(|s| (s.uri.as_str(), serde_json::from_slice(&s.body).unwrap()))
        .collect();
    assert_eq!(
        members,
        vec![
            (
                "/api/v4/groups/acme%2Fplatform/members",
                json!({"user_id": 42, "access_level": 30})
            ),
            ("/api/v4/projects/7/members", json!({"user_id": 42, "access_level": 30}))
        ]
    );

    // Issuance mints a personal access token once and reuses it.
    let policy = rig.attach(&t, &cp).await;
    let before = now();
    let v = rig.issue(&t, "OAuthToken").await;
    assert_eq!(v["data"], json!({"token": "glpat-issued-canary"}));
    let mint = fake
        .seen()
        .into_iter()
        .find(|s| s.uri.ends_with("/personal_access_tokens"))
        .unwrap();
    let body: Value = serde_json::from_slice(&mint.body).unwrap();
    assert!(body["name"].as_str().unwrap().starts_with("svc-"));
    assert_eq!(body["scopes"], json!(["read_api", "read_repository"]));
    let date = body["expires_at"].as_str().unwrap();
    let exp = expires_at_secs(&v);
    assert_eq!(exp % 86400, 0, "tokenExpiration is that date at 00:00Z");
    assert!(
        exp >= before + 86400 && exp < before + 2 * 86400 + 1,
        "now + lifetime, rounded up to a day"
    );
    assert_eq!(&v["expiresAt"].as_str().unwrap()[..10], date);
    let again = rig.issue(&t, "OAuthToken").await;
    assert_eq!(again["data"], v["data"]);
    assert_eq!(
        fake.seen()
            .iter()
            .filter(|s| s.uri.ends_with("/personal_access_tokens"))
            .count(),
        1
    );
    let shown = t.get(&format!("/api/v2/credential-providers/{cp}")).await;
    let shown_v = shown.expect(200).clone();
    assert_eq!(shown_v["tokenId"], "99");
    assert!(shown_v["tokenExpiration"].is_string() && shown_v["tokenSensitiveDataId"].is_string());
    assert!(!shown.text.contains("glpat-"), "no token in GET: {}", shown.text);
    // The username is create-only; PUT keeps it and the provisioning state.
    let mut put = shown_v.clone();
    put["username"] = json!("renamed");
    put["description"] = json!("d");
    let r = t.put("/api/v2/credential-providers", put).await;
    let after = r.expect(200);
    assert_eq!(
        (
            after["username"].clone(),
            after["status"].clone(),
            after["userId"].clone()
        ),
        (
            json!("Svc_deploy_bot_managed_service_account"),
            json!("Provisioned"),
            json!(42)
        )
    );
    if let Some(bytes) = t.sqlite_bytes() {
        for canary in ["glpat-admin-canary", "glpat-issued-canary"] {
            assert!(
                !crate::support::harness::contains(&bytes, canary),
                "{canary} stored in plaintext"
            );
        }
    }
    assert!(!crate::support::harness::logs().contains("glpat-"));
    // Deleting the provider revokes the token.
    t.delete(&format!("/api/v2/access-policies/{policy}")).await.expect(204);
    t.delete(&format!("/api/v2/credential-providers/{cp}"))
        .await
        .expect(204);
    for _ in 0..100 {
        if fake.seen().iter().any(|s| s.method == "DELETE") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let del = fake
        .seen()
        .into_iter()
        .find(|s| s.method == "DELETE")
        .expect("revocation");
    assert_eq!(del.uri, "/api/v4/personal_access_tokens/99");
    assert_eq!(del.header("private-token"), Some("glpat-admin-canary"));

    // A refused provisioning ends in Error; issuance then gives "no credential".
    let r = t
        .post("/api/v2/credential-providers", with("username", json!("refused-bot")))
        .await;
    let cp = r.expect(201)["externalId"].as_str().unwrap().to_string();
    let v = wait_status(&t, &cp).await;
    assert_eq!(v["status"], "Error");
    // Only that the upstream refused (issue 31: the provider's writer chose its URL).
    assert_eq!(v["errorMessage"], "the upstream did not issue a credential", "{v}");
    rig.attach(&t, &cp).await;
    let r = rig.request(&t, "OAuthToken", json!({})).await;
    assert_eq!(
        *r.expect(200),
        json!({"credentialType": "Unknown", "expiresAt": null, "data": {}})
    );
}
