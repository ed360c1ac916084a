//! `/edge/v1/credentials` (contract §4.8, §4.9): body validation, workload identification
//! (identity types, wildcard hosts, CLIENT_WORKLOAD_ID), policies, attestation by listed trust
//! providers, resource-set confinement, rate limits, and the events of each outcome.

use serde_json::{Value, json};

use crate::support::edge::*;
use crate::support::fake_issuer::FakeIssuer;
use crate::support::harness::{DEFAULT_RS, TestApp};

/// An OIDC provider on the fake issuer, a token for `sub`, and its edge access token.
struct Setup {
    iss: FakeIssuer,
    tp: String,
    cid: String,
}

async fn setup(t: &TestApp) -> Setup {
    let iss = FakeIssuer::start().await;
    let r = t
        .post(
            "/api/v1/trust-providers",
            json!({"name": "idp", "isActive": true, "provider": "OidcIdToken", "oidcUrl": iss.url}),
        )
        .await;
    let v = r.expect(200).clone();
    Setup {
        iss,
        tp: v["externalId"].as_str().unwrap().into(),
        cid: v["edgeSdkClientId"].as_str().unwrap().into(),
    }
}

impl Setup {
    async fn access(&self, t: &TestApp, sub: &str) -> (String, String) {
        let id_token = self.iss.sign(&self.iss.claims(&t.base, sub));
        (auth_oidc(t, &self.cid, &id_token).await, id_token)
    }
}

async fn client_workload(t: &TestApp, name: &str, identities: Value) -> String {
    let r = t
        .post(
            "/api/v1/client-workloads",
            json!({"name": name, "isActive": true, "identities": identities}),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.text);
    r.header("location").unwrap().rsplit('/').next().unwrap().to_string()
}

async fn server_workload(t: &TestApp, name: &str, host: &str, port: i32) -> String {
    let r = t
        .post(
            "/api/v1/server-workloads",
            json!({"name": name, "isActive": true, "serviceEndpoint": {"host": host, "port": port, "appProtocol": "HTTP", "transportProtocol": "TCP",
                   "requestedPort": port, "requestedTls": true, "tls": true, "tlsVerification": "full"}}),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.text);
    r.header("location").unwrap().rsplit('/').next().unwrap().to_string()
}

async fn apikey(t: &TestApp, key: &str) -> String {
    let r = t
        .post(
            "/api/v2/credential-providers",
            json!({"type": "apikey", "name": format!("key {key}"), "isActive": true, "apiKey": key}),
        )
        .await;
    r.expect(201)["externalId"].as_str().unwrap().to_string()
}

async fn policy(t: &TestApp, cw: &str, sw: &str, cp: &str, tps: &[&str]) -> String {
    let r = t
        .post(
            "/api/v2/access-policies",
            json!({"name": format!("{cw}->{sw}"), "isActive": true, "clientWorkload": cw, "serverWorkload": sw, "trustProviders": tps,
                   "credentialProviders": [{"credentialProviderId": cp, "mappingType": "None"}]}),
        )
        .await;
    r.expect(200)["externalId"].as_str().unwrap().to_string()
}

fn body(host: &str, port: i32, client: Value) -> Value {
    json!({"client": client, "server": {"host": host, "port": port}, "credentialType": "ApiKey"})
}

fn key_of(r: &crate::support::harness::Resp) -> String {
    r.expect(200)["data"]["apiKey"].as_str().unwrap().to_string()
}

async fn last_authz(t: &TestApp) -> Value {
    authz_events(t, "&event-type=access.authorization").await[0].clone()
}

#[tokio::test]
async fn body_validation_messages() {
    let t = TestApp::start().await;
    let s = setup(&t).await;
    let (access, _) = s.access(&t, "a").await;
    let cases = [
        (
            json!({"server": {"host": "h", "port": 1}, "credentialType": "ApiKey"}),
            "client: is required",
        ),
        (json!({"client": {}, "credentialType": "ApiKey"}), "server: is required"),
        (
            json!({"client": {}, "server": {"host": "h", "port": 1}}),
            "credentialType: is required",
        ),
        (
            json!({"client": {}, "server": {"host": "h", "port": 1}, "credentialType": "Password"}),
            "credentialType: must be one of ApiKey, UsernamePassword, CloudCWorkloadIdentityFederation, OAuthToken, CloudAStsFederation, X509Svid",
        ),
        (
            json!({"client": {}, "server": {"host": " ", "port": 1}, "credentialType": "ApiKey"}),
            "server.host: is required",
        ),
        (
            json!({"client": {}, "server": {"host": "h"}, "credentialType": "ApiKey"}),
            "server.port: is required",
        ),
        (
            json!({"client": {}, "server": {"host": "h", "port": 70000}, "credentialType": "ApiKey"}),
            "server.port: must be 1..65535",
        ),
        (
            json!({"client": {}, "server": {"host": "h", "port": 1, "transportProtocol": "UDP"}, "credentialType": "ApiKey"}),
            "server.transportProtocol: must be TCP",
        ),
        (
            json!({"client": {}, "server": {"host": "h", "port": 1}, "credentialType": "ApiKey", "connectionMetadata": {"accessKeyId": "akia1"}}),
            "connectionMetadata.accessKeyId: must match ^[A-Z0-9]+$",
        ),
        (
            json!({"client": {}, "server": {"host": "h", "port": 1}, "credentialType": "ApiKey", "connectionMetadata": {"headerName": "x"}}),
            "connectionMetadata.headerName: headerName and headerValue must be given together",
        ),
    ];
    for (b, msg) in cases {
        credentials(&t, &access, b)
            .await
            .expect_error(400, &format!("The credentials request is invalid. {msg}"));
        // The event says which field, as the answer does.
        let ev = authz_events(&t, "&event-type=access.request").await;
        assert_eq!(
            ev[0]["outcome"],
            json!({"result": "Unauthorized", "reason": "InvalidRequest", "detail": msg})
        );
    }
    let r = t
        .send(
            t.client
                .post(t.url("/edge/v1/credentials"))
                .bearer_auth(&access)
                .body("[1,"),
        )
        .await;
    r.expect_error(400, "The credentials request is invalid.");
    let req = authz_events(&t, "&event-type=access.request").await;
    assert!(
        req.iter()
            .all(|e| e["outcome"]["result"] == "Unauthorized" && e["outcome"]["reason"] == "InvalidRequest")
    );
    assert!(
        req[0]["outcome"]["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("the body is missing, too large, not JSON")),
        "{}",
        req[0]
    );
    // Unknown fields are ignored at the edge (forward compatibility).
    let mut b = body("nowhere.example", 1, json!({}));
    b["futureField"] = json!(1);
    assert_eq!(credentials(&t, &access, b).await.status, 404);
}

#[tokio::test]
async fn invalid_tokens_are_401_and_management_tokens_are_refused() {
    let t = TestApp::start().await;
    let b = body("h.example", 443, json!({}));
    let unsigned = "not a token signed by a current or previous token key";
    for (token, why) in [
        ("garbage", unsigned),
        (&t.token, "not an edge token's claims"),
        ("a.b.c", unsigned),
    ] {
        credentials(&t, token, b.clone())
            .await
            .expect_error(401, "Unauthorized access.");
        // The event names the check that refused it, never the token.
        let ev = authz_events(&t, "&event-type=access.request").await;
        assert_eq!(
            ev[0]["outcome"],
            json!({"result": "Unauthorized", "reason": "InvalidToken", "detail": why})
        );
        assert!(!ev[0].to_string().contains(token));
    }
    let r = t
        .send(
            t.client
                .post(t.url("/edge/v1/credentials"))
                .header("authorization", "Basic abc")
                .json(&b),
        )
        .await;
    r.expect_error(401, "Unauthorized access.");
    // And an edge token is refused by the management API.
    let s = setup(&t).await;
    let (access, _) = s.access(&t, "a").await;
    t.get_as(&access, "/api/v1/roles")
        .await
        .expect_error(401, "Not authenticated.");
    let ev = authz_events(&t, "&event-type=access.request").await;
    assert_eq!(
        ev[0]["outcome"],
        json!({"result": "Unauthorized", "reason": "InvalidToken",
               "detail": "no bearer token (Authorization: Bearer <token>)"})
    );
}

/// A token verified once is kept (`caches::edge_tokens::Verified`) but never trusted beyond what
/// verifying it again would allow: the same signature under other claims is refused, expiry and
/// the provider's revocation still apply, and a refused token is not kept.
#[tokio::test]
async fn a_verified_token_is_reused_only_while_it_stays_valid() {
    let t = TestApp::start().await;
    let s = setup(&t).await;
    let (a, tok_a) = s.access(&t, "worker").await;
    let (b, _) = s.access(&t, "other").await;
    let client = json!({"oidc": {"identityToken": tok_a}});
    let cw = client_workload(&t, "worker", json!([{"type": "oidcIdTokenSubject", "value": "worker"}])).await;
    let sw = server_workload(&t, "db", "db.example", 5432).await;
    let cp = apikey(&t, "k-db").await;
    policy(&t, &cw, &sw, &cp, &[]).await;
    let ask = |token: String| {
        let (t, client) = (&t, client.clone());
        async move { credentials(t, &token, body("db.example", 5432, client)).await }
    };
    for _ in 0..2 {
        assert_eq!(key_of(&ask(a.clone()).await), "k-db");
    }
    assert_eq!(t.app.edge_tokens.len(), 1);
    assert_eq!(
        t.app.edge_tokens.hits(),
        1,
        "the second request was answered from the kept token"
    );
    // A reloaded key ring forgets every kept token; the next use verifies it again.
    t.app.reload_keys().await.unwrap();
    assert!(t.app.edge_tokens.is_empty());
    assert_eq!(key_of(&ask(a.clone()).await), "k-db");
    assert_eq!((t.app.edge_tokens.len(), t.app.edge_tokens.hits()), (1, 1));
    // B's header and claims under A's (kept) signature; and A's claims under B's signature.
    let (pa, pb): (Vec<&str>, Vec<&str>) = (a.split('.').collect(), b.split('.').collect());
    for forged in [
        format!("{}.{}.{}", pb[0], pb[1], pa[2]),
        format!("{}.{}.{}", pa[0], pa[1], pb[2]),
    ] {
        ask(forged).await.expect_error(401, "Unauthorized access.");
    }
    assert_eq!(t.app.edge_tokens.len(), 1, "a refused token is not kept");
    // Deactivating the provider revokes the kept token (reactivating it does not).
    for active in [false, true] {
        t.patch(
            &format!("/api/v1/trust-providers/{}", s.tp),
            json!({"isActive": active}),
        )
        .await
        .expect(200);
    }
    ask(a).await.expect_error(401, "Unauthorized access.");
    let refusal = || async { authz_events(&t, "&event-type=access.request").await[0]["outcome"]["detail"].clone() };
    assert_eq!(
        refusal().await,
        "revoked: issued before its trust provider's tokens were revoked"
    );
    // While the provider is inactive, a token of it says so.
    t.advance_clock(1_000);
    let (d, _) = s.access(&t, "worker").await;
    for active in [false, true] {
        t.patch(
            &format!("/api/v1/trust-providers/{}", s.tp),
            json!({"isActive": active}),
        )
        .await
        .expect(200);
        if !active {
            ask(d.clone()).await.expect_error(401, "Unauthorized access.");
            assert_eq!(refusal().await, "its trust provider is inactive");
        }
    }
    // A token issued after that, kept, is refused past its expiry (one hour, 30 s of leeway).
    t.advance_clock(1_000);
    let (c, _) = s.access(&t, "worker").await;
    assert_eq!(key_of(&ask(c.clone()).await), "k-db");
    t.advance_clock(3_631_000);
    ask(c).await.expect_error(401, "Unauthorized access.");
}

#[tokio::test]
async fn no_client_workload_no_policy_no_provider_are_404() {
    let t = TestApp::start().await;
    let s = setup(&t).await;
    let (access, tok) = s.access(&t, "worker").await;
    let client = json!({"oidc": {"identityToken": tok}});
    // No client workload.
    let r = credentials(&t, &access, body("db.example", 5432, client.clone())).await;
    assert_eq!(
        *r.expect(404),
        json!({"credentialType": "Unknown", "expiresAt": null, "data": {}})
    );
    assert_eq!(last_authz(&t).await["outcome"]["reason"], "NoClientWorkload");
    let cw = client_workload(&t, "worker", json!([{"type": "oidcIdTokenSubject", "value": "worker"}])).await;
    let sw = server_workload(&t, "db", "db.example", 5432).await;
    // No policy.
    credentials(&t, &access, body("db.example", 5432, client.clone()))
        .await
        .expect(404);
    assert_eq!(last_authz(&t).await["outcome"]["reason"], "NoAccessPolicy");
    // No active provider.
    let cp = apikey(&t, "k-db").await;
    policy(&t, &cw, &sw, &cp, &[]).await;
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"isActive": false}),
    )
    .await
    .expect(200);
    credentials(&t, &access, body("db.example", 5432, client.clone()))
        .await
        .expect(404);
    assert_eq!(last_authz(&t).await["outcome"]["reason"], "NoCredentialProvider");
    t.patch(&format!("/api/v2/credential-providers/{cp}"), json!({"isActive": true}))
        .await
        .expect(200);
    assert_eq!(
        key_of(&credentials(&t, &access, body("db.example", 5432, client.clone())).await),
        "k-db"
    );
    // An inactive workload does not match.
    t.patch(&format!("/api/v1/server-workloads/{sw}"), json!({"isActive": false}))
        .await
        .expect(200);
    credentials(&t, &access, body("db.example", 5432, client.clone()))
        .await
        .expect(404);
    // Several client workloads and no server workload: the event names the first candidate
    // with `matches`, and lists them all, as at step 7 (§3.24).
    let cw2 = client_workload(
        &t,
        "worker-2",
        json!([{"type": "oidcIdTokenSubject", "value": "worker"}]),
    )
    .await;
    credentials(&t, &access, body("db.example", 5432, client))
        .await
        .expect(404);
    let ev = last_authz(&t).await;
    assert_eq!(ev["outcome"]["reason"], "NoServerWorkload");
    let mut listed: Vec<String> = ev["clientWorkloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    listed.sort();
    let mut want = vec![cw.clone(), cw2.clone()];
    want.sort();
    assert_eq!(listed, want);
    assert!(
        want.contains(&ev["clientWorkload"]["id"].as_str().unwrap().to_string()),
        "{ev}"
    );
    let mut matches: Vec<String> = serde_json::from_value(ev["clientWorkload"]["matches"].clone()).unwrap();
    matches.sort();
    assert_eq!(matches, want);
    let wl = workload_events(&t, "").await;
    assert!(wl.iter().any(|e| e["meta"]["action"] == "CredentialIssued"));
    assert!(
        wl.iter()
            .any(|e| e["meta"]["action"] == "CredentialDenied" && e["outcome"]["result"] == "Failure")
    );
}

#[tokio::test]
async fn wildcard_hosts_exact_wins_longest_suffix_wins() {
    let t = TestApp::start().await;
    let s = setup(&t).await;
    let (access, tok) = s.access(&t, "w").await;
    let client = json!({"oidc": {"identityToken": tok}});
    let cw = client_workload(&t, "w", json!([{"type": "oidcIdTokenSubject", "value": "w"}])).await;
    for (name, host, key) in [
        ("wide", "*.example.com", "wide"),
        ("narrow", "*.eu.example.com", "narrow"),
        ("exact", "api.eu.example.com", "exact"),
    ] {
        let sw = server_workload(&t, name, host, 443).await;
        let cp = apikey(&t, key).await;
        policy(&t, &cw, &sw, &cp, &[]).await;
    }
    assert_eq!(
        key_of(&credentials(&t, &access, body("API.EU.example.com", 443, client.clone())).await),
        "exact"
    );
    assert_eq!(
        key_of(&credentials(&t, &access, body("db.eu.example.com", 443, client.clone())).await),
        "narrow"
    );
    assert_eq!(
        key_of(&credentials(&t, &access, body("a.b.example.com", 443, client.clone())).await),
        "wide"
    );
    // The wildcard needs at least one more label; the port must match.
    credentials(&t, &access, body("example.com", 443, client.clone()))
        .await
        .expect(404);
    credentials(&t, &access, body("x.example.com", 8443, client))
        .await
        .expect(404);
}

#[tokio::test]
async fn identity_types_and_client_workload_id() {
    let t = TestApp::start().await;
    let s = setup(&t).await;
    let (access, tok) = s.access(&t, "multi").await;
    let sw = server_workload(&t, "svc", "svc.example", 443).await;
    // Several identity types ANDed, values of one type ORed; hostname case-insensitive; CIDR; prefix.
    let cw1 = client_workload(
        &t,
        "strict",
        json!([{"type": "oidcIdTokenSubject", "value": "other"}, {"type": "oidcIdTokenSubject", "value": "multi"},
               {"type": "hostname", "value": "Build-01"}, {"type": "sourceIPAddress", "value": "127.0.0.0/8"},
               {"type": "processName", "value": "runner"}]),
    )
    .await;
    let cp1 = apikey(&t, "strict-key").await;
    policy(&t, &cw1, &sw, &cp1, &[]).await;
    let client =
        json!({"oidc": {"identityToken": tok}, "host": {"hostname": "build-01", "process": {"name": "runner"}}});
    assert_eq!(
        key_of(&credentials(&t, &access, body("svc.example", 443, client.clone())).await),
        "strict-key"
    );
    let mut wrong = client.clone();
    wrong["host"]["process"]["name"] = json!("other");
    credentials(&t, &access, body("svc.example", 443, wrong))
        .await
        .expect(404);

    // Two workloads match → two policies → 400; CLIENT_WORKLOAD_ID selects one.
    let cw2 = client_workload(
        &t,
        "tagged",
        json!([{"type": "svcClientId", "value": "tagged-1"}, {"type": "oidcIdTokenIssuer", "value": s.iss.url}]),
    )
    .await;
    let cp2 = apikey(&t, "tagged-key").await;
    policy(&t, &cw2, &sw, &cp2, &[]).await;
    let cw3 = client_workload(
        &t,
        "by-issuer",
        json!([{"type": "oidcIdTokenIssuer", "value": s.iss.url}]),
    )
    .await;
    let cp3 = apikey(&t, "issuer-key").await;
    policy(&t, &cw3, &sw, &cp3, &[]).await;
    credentials(&t, &access, body("svc.example", 443, client.clone()))
        .await
        .expect_error(
            400,
            "Several access policies match this request; set CLIENT_WORKLOAD_ID to select the client workload.",
        );
    let ev = last_authz(&t).await;
    assert_eq!(ev["outcome"]["reason"], "MultipleAccessPolicies");
    assert_eq!(ev["accessPolicies"].as_array().unwrap().len(), 2);
    // The event is found by the name of either candidate (§3.26: policy names).
    for candidate in ev["accessPolicies"].as_array().unwrap() {
        let name = candidate["name"].as_str().unwrap().to_uppercase().replace(' ', "%20");
        let found = authz_events(&t, &format!("&search={name}&event-type=access.authorization")).await;
        assert!(
            found.iter().any(|e| e["meta"]["eventId"] == ev["meta"]["eventId"]),
            "search by candidate {candidate}"
        );
    }
    let mut tagged = client.clone();
    tagged["os"] = json!({"environment": {"CLIENT_WORKLOAD_ID": "tagged-1"}});
    assert_eq!(
        key_of(&credentials(&t, &access, body("svc.example", 443, tagged)).await),
        "tagged-key"
    );
    let mut unknown = client.clone();
    unknown["os"] = json!({"environment": {"CLIENT_WORKLOAD_ID": "nobody"}});
    credentials(&t, &access, body("svc.example", 443, unknown))
        .await
        .expect(404);
}

#[tokio::test]
async fn attestation_by_listed_trust_providers() {
    let t = TestApp::start().await;
    let s = setup(&t).await;
    let other = FakeIssuer::start().await;
    let r = t.post("/api/v1/trust-providers", json!({"name": "second", "isActive": true, "provider": "OidcIdToken", "oidcUrl": other.url, "matchRules": [{"attribute": "OidcSubject", "value": "ci"}]})).await;
    let tp2 = r.expect(200)["externalId"].as_str().unwrap().to_string();
    let (access, tok) = s.access(&t, "ci").await;
    let cw = client_workload(&t, "ci", json!([{"type": "oidcIdTokenSubject", "value": "ci"}])).await;
    let sw = server_workload(&t, "target", "target.example", 443).await;
    let cp = apikey(&t, "attested").await;
    let pid = policy(&t, &cw, &sw, &cp, &[&tp2]).await;
    // The token's provider is not listed: the request's evidence must satisfy `second`.
    credentials(
        &t,
        &access,
        body("target.example", 443, json!({"oidc": {"identityToken": tok}})),
    )
    .await
    .expect_error(403, "Not applicable for this request.");
    let ev = last_authz(&t).await;
    assert_eq!(ev["outcome"]["reason"], "AttestationFailed");
    assert_eq!(ev["trustProviders"][0]["result"], "Unauthorized");
    let good = other.sign(&other.claims(&t.base, "ci"));
    assert_eq!(
        key_of(
            &credentials(
                &t,
                &access,
                body("target.example", 443, json!({"oidc": {"identityToken": good}}))
            )
            .await
        ),
        "attested"
    );
    // Listing the token's own provider passes without re-verification.
    t.patch(
        &format!("/api/v2/access-policies/{pid}"),
        json!({"trustProviders": [tp2, s.tp]}),
    )
    .await
    .expect(200);
    assert_eq!(
        key_of(&credentials(&t, &access, body("target.example", 443, json!({}))).await),
        "attested"
    );
    let ev = last_authz(&t).await;
    assert_eq!(ev["trustProviders"][0]["id"], s.tp.as_str());
    assert_eq!(ev["trustProviders"][0]["result"], "Attested");
}

#[tokio::test]
async fn resource_set_confinement() {
    let t = TestApp::start().await;
    let b = t
        .post("/api/v1/resource-sets", json!({"name": "b", "isActive": true}))
        .await
        .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let iss = FakeIssuer::start().await;
    let in_b = |path: &str, body: Value| {
        t.send(
            t.client
                .post(t.url(path))
                .bearer_auth(&t.token)
                .header("X-Svc-ResourceSet", &b)
                .json(&body),
        )
    };
    let r = in_b(
        "/api/v1/trust-providers",
        json!({"name": "b-idp", "isActive": true, "provider": "OidcIdToken", "oidcUrl": iss.url}),
    )
    .await;
    let cid = r.expect(200)["edgeSdkClientId"].as_str().unwrap().to_string();
    assert_eq!(r.body["resourceSet"], b.as_str());
    let tok = iss.sign(&iss.claims(&t.base, "b-job"));
    // /auth selects B by header or by SVC_RESOURCE_SET_ID.
    let r = t
        .send(
            t.client
                .post(t.url("/edge/v1/auth"))
                .header("X-Svc-ResourceSet", &b)
                .json(&json!({"clientId": cid, "client": {"oidc": {"identityToken": tok}}})),
        )
        .await;
    let access = r.expect(200)["accessToken"].as_str().unwrap().to_string();
    assert_eq!(jwt_payload(&access)["svc"]["rs"], b.as_str());
    let r = auth(
        &t,
        &cid,
        json!({"oidc": {"identityToken": tok}, "os": {"environment": {"SVC_RESOURCE_SET_ID": b}}}),
    )
    .await;
    r.expect(200);
    // A /credentials request for another set than the token's is refused.
    credentials(&t, &access, body("x.example", 1, json!({})))
        .await
        .expect_error(403, "Not applicable for this request.");
    assert_eq!(last_authz(&t).await["outcome"]["reason"], "ResourceSetMismatch");
    let ev = authz_events(&t, "&event-type=access.authorization").await;
    assert_eq!(ev[0]["meta"]["resourceSetId"], DEFAULT_RS, "stored in the selected set");
    let ok = t
        .send(
            t.client
                .post(t.url("/edge/v1/credentials"))
                .bearer_auth(&access)
                .header("X-Svc-ResourceSet", &b)
                .json(&body("x.example", 1, json!({}))),
        )
        .await;
    assert_eq!(ok.status, 404, "in B: no workloads yet");
    let r = t
        .send(
            t.client
                .get(t.url("/api/v1/authorization-events?per-page=1000"))
                .bearer_auth(&t.token)
                .header("X-Svc-ResourceSet", &b),
        )
        .await;
    assert!(
        !r.expect(200)["authorizationEvents"].as_array().unwrap().is_empty(),
        "B's events are in B"
    );
}

#[tokio::test]
async fn rate_limits_answer_429_with_retry_after_and_write_no_event() {
    let t = TestApp::start_with(|e| {
        e.insert("SVC_EDGE_AUTH_RATE".into(), "1".into());
        e.insert("SVC_EDGE_AUTH_BURST".into(), "2".into());
        e.insert("SVC_EDGE_CREDENTIALS_RATE".into(), "1".into());
        e.insert("SVC_EDGE_CREDENTIALS_BURST".into(), "3".into());
    })
    .await;
    let s = setup(&t).await;
    let tok = s.iss.sign(&s.iss.claims(&t.base, "r"));
    let access = auth_oidc(&t, &s.cid, &tok).await;
    auth(&t, &s.cid, json!({"oidc": {"identityToken": tok}}))
        .await
        .expect(200);
    let r = auth(&t, &s.cid, json!({"oidc": {"identityToken": tok}})).await;
    r.expect_error(429, "Too many requests. Please try again later.");
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!(retry >= 1);
    // Another clientId has its own bucket.
    auth(
        &t,
        "svc:local:default:identity:oidc_idtoken:00000000-0000-4000-8000-000000000000",
        json!({}),
    )
    .await
    .expect(401);
    assert_eq!(
        authz_events(&t, "&event-type=access.authentication").await.len(),
        3,
        "the 429 wrote nothing"
    );
    // The provider's UUID spelled in upper case is the same provider, hence the same bucket.
    let (prefix, uuid) = s.cid.rsplit_once(':').unwrap();
    let upper = format!("{prefix}:{}", uuid.to_uppercase());
    auth(&t, &upper, json!({"oidc": {"identityToken": tok}}))
        .await
        .expect_error(429, "Too many requests. Please try again later.");
    // ClientIds that name no provider share one bucket per peer: varying them buys nothing.
    let statuses = [
        auth(&t, "nope-1", json!({})).await.status,
        auth(&t, "nope-2", json!({})).await.status,
        auth(&t, "nope-3", json!({})).await.status,
    ];
    assert_eq!(statuses[2], 429, "{statuses:?}");
    // /credentials: one bucket per access token.
    for _ in 0..3 {
        assert_eq!(
            credentials(&t, &access, body("x.example", 1, json!({}))).await.status,
            404
        );
    }
    credentials(&t, &access, body("x.example", 1, json!({})))
        .await
        .expect_error(429, "Too many requests. Please try again later.");
    let other = auth_oidc_after_wait(&t, &s).await;
    assert_eq!(
        credentials(&t, &other, body("x.example", 1, json!({}))).await.status,
        404
    );
}

async fn auth_oidc_after_wait(t: &TestApp, s: &Setup) -> String {
    t.advance_clock(1100);
    let tok = s.iss.sign(&s.iss.claims(&t.base, "r2"));
    auth_oidc(t, &s.cid, &tok).await
}
