//! Helpers for Edge API tests: peers from scripts/peers.sh, the worked example's configuration
//! (contract §6), edge calls and event queries.

use serde_json::{Value, json};

use crate::support::harness::{Resp, TestApp};

/// A peer address exported by scripts/peers.sh; the test fails loudly without it.
pub fn peer(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run the suite with scripts/test.sh (or scripts/peers.sh start && source target/peers-run/env)"))
}

/// An ID token minted by the real oauth2-mock-server with the given claims.
pub async fn mock_id_token(claims: &[(&str, &str)]) -> String {
    let url = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let mut form: Vec<(String, String)> = vec![
        ("grant_type".into(), "password".into()),
        ("username".into(), "job".into()),
        ("client_id".into(), "svc".into()),
    ];
    for (k, v) in claims {
        // The mock server parses claim values as JSON when it can: quote strings explicitly.
        form.push((format!("claim_{k}"), serde_json::to_string(v).unwrap()));
    }
    let r = reqwest::Client::new()
        .post(format!("{url}/token"))
        .form(&form)
        .send()
        .await
        .expect("oauth2-mock-server");
    let v: Value = r.json().await.unwrap();
    v["id_token"].as_str().expect("id_token").to_string()
}

pub struct Example {
    pub trust_provider: String,
    pub client_id: String,
    pub client_workload: String,
    pub server_workload: String,
    pub credential_provider: String,
    pub policy: String,
}

/// Steps 2–6 of the worked example: OIDC trust provider with issuer and subject rules, client
/// workload by subject, server workload, API-key provider, policy.
pub async fn worked_example(t: &TestApp, oidc_url: &str, api_key: &str) -> Example {
    let r = t
        .post(
            "/api/v1/trust-providers",
            json!({"name": "build-runners", "isActive": true, "provider": "OidcIdToken", "oidcUrl": oidc_url,
                   "matchRules": [{"attribute": "OidcIssuer", "value": oidc_url},
                                  {"attribute": "OidcSubject", "value": "system:job:build"},
                                  {"attribute": "OidcSubject", "value": "system:job:release"}]}),
        )
        .await;
    let tp = r.expect(200).clone();
    let cw = t.post("/api/v1/client-workloads", json!({"name": "build-job", "isActive": true, "identities": [{"type": "oidcIdTokenSubject", "value": "system:job:build"}]})).await;
    assert_eq!(cw.status, 204, "{}", cw.text);
    let cw_id = cw.header("location").unwrap().rsplit('/').next().unwrap().to_string();
    let sw = t
        .post(
            "/api/v1/server-workloads",
            json!({"name": "partner-api", "isActive": true,
                   "serviceEndpoint": {"host": "api.partner.example", "port": 443, "appProtocol": "HTTP", "transportProtocol": "TCP",
                     "requestedPort": 443, "requestedTls": true, "tls": true, "tlsVerification": "full",
                     "workloadServiceAuthentication": {"method": "API Key", "scheme": "Header", "config": "X-Api-Key"}}}),
        )
        .await;
    assert_eq!(sw.status, 204, "{}", sw.text);
    let sw_id = sw.header("location").unwrap().rsplit('/').next().unwrap().to_string();
    let cp = t
        .post(
            "/api/v2/credential-providers",
            json!({"type": "apikey", "name": "partner-key", "isActive": true, "apiKey": api_key}),
        )
        .await;
    let cp_id = cp.expect(201)["externalId"].as_str().unwrap().to_string();
    let tp_id = tp["externalId"].as_str().unwrap().to_string();
    let pol = t
        .post(
            "/api/v2/access-policies",
            json!({"name": "build-job to partner-api", "isActive": true, "clientWorkload": cw_id, "serverWorkload": sw_id,
                   "trustProviders": [tp_id], "accessConditions": [], "contentSecurity": [],
                   "credentialProviders": [{"credentialProviderId": cp_id, "mappingType": "None"}]}),
        )
        .await;
    let policy = pol.expect(200)["externalId"].as_str().unwrap().to_string();
    Example {
        client_id: tp["edgeSdkClientId"].as_str().unwrap().to_string(),
        trust_provider: tp_id,
        client_workload: cw_id,
        server_workload: sw_id,
        credential_provider: cp_id,
        policy,
    }
}

pub async fn auth(t: &TestApp, client_id: &str, client: Value) -> Resp {
    t.send(
        t.client
            .post(t.url("/edge/v1/auth"))
            .json(&json!({"clientId": client_id, "client": client})),
    )
    .await
}

/// `/auth` with a generic OIDC token; returns the access token (asserting 200).
pub async fn auth_oidc(t: &TestApp, client_id: &str, id_token: &str) -> String {
    let r = auth(t, client_id, json!({"oidc": {"identityToken": id_token}})).await;
    r.expect(200)["accessToken"].as_str().unwrap().to_string()
}

pub async fn credentials(t: &TestApp, access_token: &str, body: Value) -> Resp {
    t.send(
        t.client
            .post(t.url("/edge/v1/credentials"))
            .bearer_auth(access_token)
            .json(&body),
    )
    .await
}

/// The worked example's `/credentials` body (step 8).
pub fn example_body(id_token: &str) -> Value {
    json!({"client": {"oidc": {"identityToken": id_token}},
           "server": {"transportProtocol": "TCP", "host": "api.partner.example", "port": 443},
           "credentialType": "ApiKey"})
}

/// Creates a trust provider (v1, active, named `p`) from `body`; returns its externalId and
/// edgeSdkClientId.
pub async fn provider(t: &TestApp, body: Value) -> (String, String) {
    let mut b = json!({"name": "p", "isActive": true});
    b.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
    let r = t.post("/api/v1/trust-providers", b).await;
    let v = r.expect(200);
    (
        v["externalId"].as_str().unwrap().to_string(),
        v["edgeSdkClientId"].as_str().unwrap().to_string(),
    )
}

/// The newest `access.authentication` event.
pub async fn last_authn(t: &TestApp) -> Value {
    authz_events(t, "&event-type=access.authentication").await[0].clone()
}

/// `/auth` answers 401, and the newest authentication event gives the first trust provider's
/// `reason`.
pub async fn refused(t: &TestApp, client_id: &str, client: Value, reason: &str) {
    let r = auth(t, client_id, client).await;
    r.expect_error(401, "Unauthorized.");
    let ev = last_authn(t).await;
    assert_eq!(ev["trustProviders"][0]["reason"], reason, "event: {ev}");
}

/// Authorization events (newest first), read over HTTP right after the requests as any client
/// would (the server stores what is queued before it answers a read).
pub async fn authz_events(t: &TestApp, query: &str) -> Vec<Value> {
    let r = t
        .get(&format!("/api/v1/authorization-events?per-page=1000{query}"))
        .await;
    r.expect(200)["authorizationEvents"].as_array().unwrap().clone()
}

pub async fn workload_events(t: &TestApp, query: &str) -> Vec<Value> {
    let r = t.get(&format!("/api/v1/workload-events?per-page=1000{query}")).await;
    r.expect(200)["workloadEvents"].as_array().unwrap().clone()
}

/// Decodes a JWT payload without verifying it (test inspection only).
pub fn jwt_payload(token: &str) -> Value {
    let p = token.split('.').nth(1).unwrap();
    serde_json::from_slice(&svc_server::crypto::b64url_decode(p).unwrap()).unwrap()
}
