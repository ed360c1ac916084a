//! The contract's worked example (§6), end to end, with an ID token from a real third-party OIDC
//! server (oauth2-mock-server), and every variation of its step 9.

use serde_json::{Value, json};

use crate::support::edge::*;
use crate::support::harness::{ADMIN_EMAIL, DEFAULT_RS, TestApp, logs};

const KEY: &str = "pk_live_51Hx9";

#[tokio::test]
async fn worked_example_end_to_end() {
    let t = TestApp::start_with(|e| {
        e.insert("SVC_TENANT".into(), "acme1".into());
    })
    .await;
    let oidc = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let ex = worked_example(&t, &oidc, KEY).await;

    // Step 2: the provider's shape.
    let tp = t.get(&format!("/api/v1/trust-providers/{}", ex.trust_provider)).await;
    let tp = tp.expect(200);
    assert_eq!(
        tp["edgeSdkClientId"],
        format!("svc:local:acme1:identity:oidc_idtoken:{}", ex.trust_provider)
    );
    assert_eq!(tp["resourceSet"], DEFAULT_RS);
    assert_eq!(tp["createdBy"], ADMIN_EMAIL);
    assert_eq!(tp["id"], 1);
    assert_eq!(
        tp["matchRules"][1],
        json!({"attribute": "OidcSubject", "value": "system:job:build", "key": null})
    );
    for k in ["certificate", "pemType", "jwks", "publicKeyValidation", "secret"] {
        assert_eq!(tp[k], Value::Null, "{k}");
    }
    assert_eq!(
        (
            tp["isSvcTenantOidcToken"].clone(),
            tp["agentControllerIds"].clone(),
            tp["accessPolicyCount"].clone()
        ),
        (json!(false), json!([]), json!(1))
    );
    // Step 5: the key is write-only.
    let cp = t
        .get(&format!("/api/v2/credential-providers/{}", ex.credential_provider))
        .await;
    let cp = cp.expect(200);
    assert_eq!(
        (
            cp["apiKey"].clone(),
            cp["lifetimeTimeSpanSeconds"].clone(),
            cp["type"].clone()
        ),
        (Value::Null, json!(0), json!("apikey"))
    );
    // Step 6: the policy's mapping uses "" for unused selectors.
    let pol = t
        .get(&format!("/api/v2/access-policies/{}/credential-mappings", ex.policy))
        .await;
    assert_eq!(
        pol.expect(200)["entities"][0],
        json!({"credentialProviderId": ex.credential_provider, "mappingType": "None", "accessKeyId": "", "accountName": "", "headerName": "", "headerValue": "", "httpbodyFieldPath": "", "httpbodyFieldValue": ""})
    );
    // Six audit entries: the sign-in and one creation per entity.
    let audit = t.audit("").await;
    let acts: Vec<&str> = audit.iter().map(|a| a["activity"].as_str().unwrap()).collect();
    assert_eq!(
        acts,
        ["Created", "Created", "Created", "Created", "Created", "LoginSucceeded"]
    );
    assert!(audit.iter().all(|a| a["resourceSetId"] == DEFAULT_RS));

    // Step 7: the workload authenticates.
    let id_token = mock_id_token(&[("sub", "system:job:build"), ("aud", &t.base)]).await;
    let r = auth(&t, &ex.client_id, json!({"oidc": {"identityToken": id_token}})).await;
    let b = r.expect(200).clone();
    assert_eq!(
        (
            b["refreshToken"].clone(),
            b["tokenType"].clone(),
            b["expiresIn"].clone()
        ),
        (Value::Null, json!("Bearer"), json!(3600))
    );
    let access = b["accessToken"].as_str().unwrap().to_string();
    let header: Value =
        serde_json::from_slice(&svc_server::crypto::b64url_decode(access.split('.').next().unwrap()).unwrap()).unwrap();
    assert_eq!(header["alg"], "HS256");
    let claims = jwt_payload(&access);
    assert_eq!(claims["iss"], t.base.as_str());
    assert_eq!(claims["aud"], "svc-edge");
    assert_eq!(claims["sub"], ex.client_id.as_str());
    assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 3600);
    assert_eq!(claims["svc"]["tp"], ex.trust_provider.as_str());
    assert_eq!(claims["svc"]["tpk"], "OidcIdToken");
    assert_eq!(claims["svc"]["rs"], DEFAULT_RS);
    assert_eq!(
        claims["svc"]["facts"],
        json!({"OidcAudience": [t.base], "OidcIssuer": oidc, "OidcSubject": "system:job:build"})
    );
    assert_eq!(claims["svc"]["claims"]["sub"], "system:job:build");

    // Step 8: the credential.
    let r = credentials(&t, &access, example_body(&id_token)).await;
    assert_eq!(
        *r.expect(200),
        json!({"credentialType": "ApiKey", "expiresAt": null, "data": {"apiKey": KEY}})
    );

    let events = authz_events(&t, "").await;
    let by_type = |ty: &str| {
        events
            .iter()
            .filter(|e| e["meta"]["eventType"] == ty)
            .cloned()
            .collect::<Vec<_>>()
    };
    let authn = by_type("access.authentication");
    assert_eq!(authn.len(), 1);
    assert_eq!(authn[0]["outcome"]["result"], "Authorized");
    assert_eq!(authn[0]["trustProviders"][0]["result"], "Attested");
    let request = &by_type("access.request")[0];
    let authz = &by_type("access.authorization")[0];
    let cred = &by_type("access.credential")[0];
    assert_eq!(request["outcome"]["result"], "Received");
    assert_eq!(authz["outcome"]["result"], "Authorized");
    assert_eq!(authz["clientWorkload"]["result"], "Identified");
    assert_eq!(authz["clientWorkload"]["id"], ex.client_workload.as_str());
    assert_eq!(authz["serverWorkload"]["id"], ex.server_workload.as_str());
    assert_eq!(authz["accessPolicy"]["id"], ex.policy.as_str());
    assert_eq!(authz["trustProviders"][0]["result"], "Attested");
    assert_eq!(cred["credentialProvider"]["result"], "Retrieved");
    assert_eq!(cred["credentialProvider"]["type"], "apikey");
    let ctx = request["meta"]["contextId"].clone();
    assert!(ctx.is_string());
    assert_eq!(authz["meta"]["contextId"], ctx);
    assert_eq!(cred["meta"]["contextId"], ctx);
    assert_eq!(authz["meta"]["directiveId"], ctx);
    assert_eq!(authz["clientRequest"]["network"]["targetHost"], "api.partner.example");
    assert_eq!(authz["clientRequest"]["network"]["targetPort"], 443);
    assert_eq!(authz["environment"]["oidc"]["sub"], "system:job:build");
    let wl = workload_events(&t, "").await;
    assert_eq!(wl.len(), 1);
    assert_eq!(wl[0]["meta"]["action"], "CredentialIssued");
    assert_eq!(wl[0]["meta"]["connectionId"], ctx);
    assert_eq!(wl[0]["meta"]["policyId"], ex.policy.as_str());
    assert_eq!(wl[0]["outcome"]["result"], "Success");
    // The workload-event filters of §3.25; an empty value is absent, as for any parameter.
    let other = "0b8e3c1a-58b1-4c39-9d35-0c37a8e0f2a4";
    for (query, n) in [
        (format!("&source-workload={}", ex.client_workload), 1),
        (format!("&source-workload={other},{}", ex.client_workload), 1),
        (format!("&source-workload={other}"), 0),
        ("&source-workload=".to_string(), 1),
        (
            format!("&target-workload={}&target-workload={other}", ex.server_workload),
            1,
        ),
        (format!("&target-workload={}", ex.client_workload), 0),
        ("&target-workload=".to_string(), 1),
        ("&application-protocol=http".to_string(), 1),
        ("&application-protocol=grpc".to_string(), 0),
        ("&user-id=someone".to_string(), 0),
    ] {
        assert_eq!(workload_events(&t, &query).await.len(), n, "{query}");
    }
    t.get("/api/v1/workload-events?source-workload=nope")
        .await
        .expect_error(400, "source-workload: must be UUIDs");
    // Values the rows keep in columns (not in the stored body) come back in place.
    for e in [request, authz, cred] {
        let m = &e["meta"];
        assert_eq!(m["clientIP"], "127.0.0.1");
        assert_eq!(m["resourceSetId"], DEFAULT_RS);
        assert_eq!(m["severity"], "Info");
        assert!(svc_api::Timestamp::parse(m["timestamp"].as_str().unwrap()).is_some());
        assert_eq!(e["clientRequest"]["network"]["sourceIP"], "127.0.0.1");
        assert_eq!(e["environment"]["network"]["sourceIP"], "127.0.0.1");
        let id = m["eventId"].as_str().unwrap();
        let one = t.get(&format!("/api/v1/authorization-events/{id}")).await;
        assert_eq!(one.expect(200), e, "the single read shows the list's object");
    }
    let m = &wl[0]["meta"];
    assert_eq!(m["eventType"], "workload.credential");
    assert_eq!(m["severity"], "Info");
    assert_eq!(m["resourceSetId"], DEFAULT_RS);
    assert_eq!(m["clientWorkloadId"], ex.client_workload.as_str());
    assert_eq!(m["serverWorkloadId"], ex.server_workload.as_str());
    assert_eq!(m["applicationProtocol"], "HTTP");
    let ms = |v: &Value| svc_api::Timestamp::parse(v.as_str().unwrap()).unwrap().millis();
    let after_authz = ms(&m["timestamp"]) - ms(&authz["meta"]["timestamp"]);
    assert!((0..1000).contains(&after_authz), "{after_authz} ms");
    let one = t
        .get(&format!("/api/v1/workload-events/{}", m["eventId"].as_str().unwrap()))
        .await;
    assert_eq!(one.expect(200), &wl[0]);
    // Sorting on such a value sorts on its column.
    for order in [
        "directiveId",
        "clientRequest.network.sourceIP",
        "environment.network.sourceIP",
    ] {
        let r = t
            .get(&format!("/api/v1/authorization-events?order={order}%20desc"))
            .await;
        assert_eq!(
            r.expect(200)["authorizationEvents"].as_array().unwrap().len(),
            4,
            "{order}"
        );
    }
    // The list's search finds them by type, client IP and entity name (authorization events),
    // by action and client IP (workload events), whatever the case.
    for (text, n) in [
        ("ACCESS.Credential", 1),
        ("127.0.0", 4),
        ("Build-Job", 1),
        ("partner-key", 2),
        ("build-runners", 2),
        ("nothing-like-it", 0),
    ] {
        assert_eq!(
            authz_events(&t, &format!("&search={text}")).await.len(),
            n,
            "search {text:?}"
        );
    }
    for (text, n) in [("credentialissued", 1), ("127.0.0.1", 1), ("build-job", 0)] {
        assert_eq!(
            workload_events(&t, &format!("&search={text}")).await.len(),
            n,
            "search {text:?}"
        );
    }
    // None of them contains the key or a token.
    let all = format!("{events:?}{wl:?}");
    for secret in [KEY, &id_token, &access] {
        assert!(!all.contains(secret), "an event contains a credential or token");
    }
    let log = logs();
    for secret in [KEY, &id_token, &access] {
        assert!(!log.contains(secret), "a log line contains a credential or token");
    }
}

#[tokio::test]
async fn worked_example_variations() {
    let t = TestApp::start_with(|e| {
        e.insert("SVC_TENANT".into(), "acme1".into());
    })
    .await;
    let oidc = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let ex = worked_example(&t, &oidc, KEY).await;
    let id_token = mock_id_token(&[("sub", "system:job:build"), ("aud", &t.base)]).await;
    let access = auth_oidc(&t, &ex.client_id, &id_token).await;

    // "port": 8443 → 404 Unknown (no server workload).
    let mut b = example_body(&id_token);
    b["server"]["port"] = json!(8443);
    let r = credentials(&t, &access, b).await;
    assert_eq!(
        *r.expect(404),
        json!({"credentialType": "Unknown", "expiresAt": null, "data": {}})
    );
    let ev = authz_events(&t, "&event-type=access.authorization").await;
    assert_eq!(
        ev[0]["outcome"],
        json!({"result": "Unauthorized", "reason": "NoServerWorkload"})
    );

    // The self-reported pod name shows in the environment of every event of the request,
    // `access.request` included.
    let mut b = example_body(&id_token);
    b["client"]["os"] = json!({"environment": {"ORCH_POD_NAME": "build-7f9c"}});
    credentials(&t, &access, b).await.expect(200);
    let ev = authz_events(&t, "").await;
    let env_of = |ty: &str| ev.iter().find(|e| e["meta"]["eventType"] == ty).unwrap()["environment"].clone();
    assert_eq!(env_of("access.request")["orchestrator"]["podName"], "build-7f9c");
    assert_eq!(env_of("access.authorization")["orchestrator"]["podName"], "build-7f9c");
    assert_eq!(env_of("access.credential")["orchestrator"]["podName"], "build-7f9c");
    assert_eq!(env_of("access.credential")["oidc"]["sub"], "system:job:build");

    // "credentialType": "OAuthToken" → 403.
    let mut b = example_body(&id_token);
    b["credentialType"] = json!("OAuthToken");
    credentials(&t, &access, b)
        .await
        .expect_error(403, "Not applicable for this request.");
    let ev = authz_events(&t, "&event-type=access.authorization").await;
    assert_eq!(ev[0]["outcome"]["reason"], "CredentialTypeMismatch");

    // "credentialType": "Unknown" → 400 with the field reason.
    let mut b = example_body(&id_token);
    b["credentialType"] = json!("Unknown");
    credentials(&t, &access, b).await.expect_error(
        400,
        "The credentials request is invalid. credentialType: must not be Unknown",
    );

    // No Authorization header → 401.
    let r = t
        .send(
            t.client
                .post(t.url("/edge/v1/credentials"))
                .json(&example_body(&id_token)),
        )
        .await;
    r.expect_error(401, "Unauthorized access.");

    // A token whose sub is system:job:test → /auth 401; the event says why.
    let bad = mock_id_token(&[("sub", "system:job:test"), ("aud", &t.base)]).await;
    let r = auth(&t, &ex.client_id, json!({"oidc": {"identityToken": bad}})).await;
    r.expect_error(401, "Unauthorized.");
    let ev = authz_events(&t, "&event-type=access.authentication").await;
    let tpev = &ev[0]["trustProviders"][0];
    assert_eq!(tpev["reason"], "MatchRuleFailed");
    assert_eq!(tpev["attribute"], "OidcSubject");
    assert_eq!(
        tpev["expectedValues"],
        json!(["system:job:build", "system:job:release"])
    );
    assert_eq!(tpev["actualValue"], "system:job:test");
    // The evidence verified; only a rule failed: the environment holds its facts.
    assert_eq!(ev[0]["environment"]["oidc"]["sub"], "system:job:test");
    assert_eq!(
        ev[0]["outcome"],
        json!({"result": "Unauthorized", "reason": "MatchRuleFailed"})
    );

    // A second apikey provider on the policy → 400 at write time.
    let cp2 = t
        .post(
            "/api/v2/credential-providers",
            json!({"type": "apikey", "name": "second", "isActive": true, "apiKey": "k2"}),
        )
        .await;
    let cp2 = cp2.expect(201)["externalId"].as_str().unwrap().to_string();
    let r = t
        .patch(
            &format!("/api/v2/access-policies/{}", ex.policy),
            json!({"credentialProviders": [{"credentialProviderId": ex.credential_provider, "mappingType": "None"}, {"credentialProviderId": cp2, "mappingType": "None"}]}),
        )
        .await;
    r.expect_error_prefix(400, "credentialProviders");

    // Deactivating the trust provider after step 7 revokes the token; reactivation does not
    // bring it back.
    credentials(&t, &access, example_body(&id_token)).await.expect(200);
    t.patch(
        &format!("/api/v1/trust-providers/{}", ex.trust_provider),
        json!({"isActive": false}),
    )
    .await
    .expect(200);
    credentials(&t, &access, example_body(&id_token))
        .await
        .expect_error(401, "Unauthorized access.");
    auth(&t, &ex.client_id, json!({"oidc": {"identityToken": id_token}}))
        .await
        .expect_error(401, "Unauthorized.");
    t.patch(
        &format!("/api/v1/trust-providers/{}", ex.trust_provider),
        json!({"isActive": true}),
    )
    .await
    .expect(200);
    credentials(&t, &access, example_body(&id_token))
        .await
        .expect_error(401, "Unauthorized access.");
    t.advance_clock(1100);
    let fresh = auth_oidc(&t, &ex.client_id, &id_token).await;
    credentials(&t, &fresh, example_body(&id_token)).await.expect(200);
    // Deleting needs the policy gone first (it is active); then the token is revoked too.
    t.delete(&format!("/api/v1/trust-providers/{}", ex.trust_provider))
        .await
        .expect_error_prefix(400, "trustProviders: referenced by access policy");
    // Deleted (its policy first) and re-created under the same id (§1.2 lets a POST choose it):
    // the deleted provider's tokens stay revoked (401 at step 2, before step 7's 404).
    let tp_body = t
        .get(&format!("/api/v1/trust-providers/{}", ex.trust_provider))
        .await
        .body
        .clone();
    t.delete(&format!("/api/v2/access-policies/{}", ex.policy))
        .await
        .expect(204);
    t.delete(&format!("/api/v1/trust-providers/{}", ex.trust_provider))
        .await
        .expect(204);
    t.advance_clock(1100);
    let again = t.post("/api/v1/trust-providers", tp_body).await;
    assert_eq!(again.expect(200)["externalId"], ex.trust_provider.as_str());
    credentials(&t, &fresh, example_body(&id_token))
        .await
        .expect_error(401, "Unauthorized access.");

    // `directiveId` is not stored (it equals `contextId`): sorting on it sorts on `contextId`,
    // over the events of the many requests above.
    let ids = |order: &str| {
        let order = order.to_string();
        let t = &t;
        async move {
            t.app.events.flush().await;
            let r = t
                .get(&format!("/api/v1/authorization-events?per-page=1000&order={order}"))
                .await;
            let items = r.expect(200)["authorizationEvents"].as_array().unwrap().clone();
            items.iter().map(|e| e["meta"]["contextId"].clone()).collect::<Vec<_>>()
        }
    };
    let by_context = ids("contextId%20desc").await;
    assert!(by_context.len() > 10);
    assert_eq!(ids("directiveId%20desc").await, by_context);
}

/// A client that lists or reads events right after an edge answer sees that request's events:
/// the writer batches them for a few milliseconds, and the event reads wait for what is queued.
/// Read over HTTP only, as an outside client would, several times in a row.
#[tokio::test]
async fn event_reads_right_after_an_edge_answer_show_its_events() {
    let t = TestApp::start().await;
    let oidc = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let ex = worked_example(&t, &oidc, KEY).await;
    let id_token = mock_id_token(&[("sub", "system:job:build"), ("aud", &t.base)]).await;
    let access = auth_oidc(&t, &ex.client_id, &id_token).await;
    for n in 1..=3usize {
        credentials(&t, &access, example_body(&id_token)).await.expect(200);
        let r = t
            .get("/api/v1/authorization-events?per-page=1000&event-type=access.credential")
            .await;
        let creds = r.expect(200)["authorizationEvents"].as_array().unwrap().clone();
        // Two requests a round: this one is the (2n-1)th.
        assert_eq!(creds.len(), 2 * n - 1, "every access.credential event so far");
        let r = t.get("/api/v1/workload-events?per-page=1000").await;
        assert_eq!(r.expect(200)["workloadEvents"].as_array().unwrap().len(), 2 * n - 1);
        credentials(&t, &access, example_body(&id_token)).await.expect(200);
        // The single read right after an answer: its newest event by id.
        let r = t.get("/api/v1/authorization-events?per-page=1").await;
        let newest = r.expect(200)["authorizationEvents"][0].clone();
        assert_eq!(newest["meta"]["eventType"], "access.credential");
        let id = newest["meta"]["eventId"].as_str().unwrap().to_string();
        let one = t.get(&format!("/api/v1/authorization-events/{id}")).await;
        assert_eq!(one.expect(200)["meta"]["eventId"], id.as_str());
    }
}
