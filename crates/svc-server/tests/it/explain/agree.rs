//! Explain and `/edge/v1/credentials` are one decision (issue 33 part 4): every denial of the
//! suite run through both, comparing the status and the reason — explain's answer against what
//! `/credentials` answered and recorded in its request's authorization event — and the trust
//! provider's failed check; content security and the resource set's routing as `/credentials`
//! applies them.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::{EVALUATE, apikey, body, step};
use crate::conditions::{condition, time_body};
use crate::support::cred::*;
use crate::support::edge::{auth_oidc, authz_events, credentials};
use crate::support::fake_issuer::FakeIssuer;
use crate::support::harness::{DEFAULT_RS, TestApp};

/// The requests whose events were already read (by `meta.contextId`).
#[derive(Default)]
struct Seen(HashSet<String>);

impl Seen {
    /// The outcome reason `/credentials` recorded for the one request sent since the last call:
    /// its `access.authorization` event's, else (refused before the decision) its
    /// `access.request` event's.
    async fn reason(&mut self, t: &TestApp) -> (Value, Vec<Value>) {
        let new: Vec<Value> = authz_events(t, "")
            .await
            .into_iter()
            .filter(|e| !self.0.contains(e["meta"]["contextId"].as_str().unwrap()))
            .filter(|e| e["meta"]["eventType"] != "access.authentication")
            .collect();
        let contexts: HashSet<String> = new
            .iter()
            .map(|e| e["meta"]["contextId"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(contexts.len(), 1, "one request since the last read: {new:?}");
        self.0.extend(contexts);
        let of = |ty: &str| new.iter().find(|e| e["meta"]["eventType"] == ty).cloned();
        let decided = of("access.authorization").or_else(|| of("access.request")).unwrap();
        (decided["outcome"]["reason"].clone(), new)
    }
}

/// Explains `b`, sends it (without `clientId`) to `/credentials` with `token`, and asserts that
/// both give `status` and `reason`; returns the trace and the request's events.
async fn agree(t: &TestApp, seen: &mut Seen, token: &str, b: &Value, status: u16, reason: &str) -> (Value, Vec<Value>) {
    let trace = t.post(EVALUATE, b.clone()).await.expect(200).clone();
    let mut edge_body = b.clone();
    edge_body.as_object_mut().unwrap().remove("clientId");
    let edge = credentials(t, token, edge_body).await;
    let (recorded, events) = seen.reason(t).await;
    assert_eq!(
        (trace["status"].as_u64(), trace["reason"].as_str()),
        (Some(u64::from(status)), Some(reason)),
        "explain: {trace}"
    );
    assert_eq!(
        (edge.status, recorded.as_str()),
        (status, Some(reason)),
        "/credentials: {} {events:?}",
        edge.text
    );
    // The message explain says /credentials sends is the one it sent.
    if let Some(m) = trace["message"].as_str() {
        assert_eq!(edge.body["message"], m, "{}", edge.text);
    } else if status == 404 {
        assert_eq!(edge.body["credentialType"], "Unknown", "{}", edge.text);
    }
    (trace, events)
}

#[tokio::test]
async fn every_denial_is_explained_as_credentials_decides_it() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let mut seen = Seen::default();
    let cp = apikey(&rig, &t, "key").await;
    let policy = rig.attach(&t, &cp).await;
    let b = |ct: &str, extra: Value| body(&rig, ct, extra);
    let access = rig.access.clone();

    // Allowed, with a content-security entry on the policy: explain names it at step 7, as the
    // authorization event does.
    let cs = t
        .post(
            "/api/v1/content-security",
            json!({"type": "SensorAAIDR", "name": "aidr", "isActive": true, "baseUrl": "https://aidr.example",
                   "encryptedToken": "canary-aidr-token-agree"}),
        )
        .await;
    let cs = cs.expect(201)["externalId"].as_str().unwrap().to_string();
    t.patch(
        &format!("/api/v2/access-policies/{policy}"),
        json!({"contentSecurity": [cs]}),
    )
    .await
    .expect(200);
    let trace = t.post(EVALUATE, b("ApiKey", json!({}))).await.expect(200).clone();
    assert_eq!(trace["status"], 200, "{trace}");
    assert_eq!(
        step(&trace, "accessPolicy")["detail"]["contentSecurity"],
        json!([{"id": cs, "name": "aidr"}])
    );
    rig.issue(&t, "ApiKey").await;
    let (_, events) = seen.reason(&t).await;
    let decided = events
        .iter()
        .find(|e| e["meta"]["eventType"] == "access.authorization")
        .unwrap();
    assert_eq!(decided["contentSecurity"][0]["id"], cs.as_str());
    assert_eq!(decided["contentSecurity"][0]["result"], "Identified");

    // Step 3: the body, as the Edge API reads it.
    agree(&t, &mut seen, &access, &b("Unknown", json!({})), 400, "InvalidRequest").await;
    let bad_port = b("ApiKey", json!({"server": {"host": rig.host, "port": 0}}));
    agree(&t, &mut seen, &access, &bad_port, 400, "InvalidRequest").await;
    let array = b("ApiKey", json!({"server": ["TCP", rig.host, 443]}));
    let (trace, _) = agree(&t, &mut seen, &access, &array, 400, "InvalidRequest").await;
    assert_eq!(trace["message"], "The credentials request is invalid.");

    // Steps 5–7.
    let other = rig._iss.sign(&rig._iss.claims(&t.base, "system:job:other"));
    let other_access = auth_oidc(&t, &rig.client_id, &other).await;
    let stranger = b("ApiKey", json!({"client": {"oidc": {"identityToken": other}}}));
    agree(&t, &mut seen, &other_access, &stranger, 404, "NoClientWorkload").await;
    let nowhere = b(
        "ApiKey",
        json!({"server": {"host": "nowhere.example.test", "port": 443}}),
    );
    agree(&t, &mut seen, &access, &nowhere, 404, "NoServerWorkload").await;
    let lonely = t
        .post(
            "/api/v1/server-workloads",
            json!({"name": "lonely", "isActive": true, "serviceEndpoint": {"host": "lonely.example.test", "port": 443, "appProtocol": "HTTP",
                   "transportProtocol": "TCP", "requestedPort": 443, "requestedTls": true, "tls": true, "tlsVerification": "full"}}),
        )
        .await;
    assert_eq!(lonely.status, 204, "{}", lonely.text);
    let lonely = b(
        "ApiKey",
        json!({"server": {"host": "lonely.example.test", "port": 443}}),
    );
    agree(&t, &mut seen, &access, &lonely, 404, "NoAccessPolicy").await;

    // Step 8: a listed provider whose match rule the evidence fails; its check is the same in
    // the trace and in the event.
    let strict = t
        .post(
            "/api/v1/trust-providers",
            json!({"name": "strict", "isActive": true, "provider": "OidcIdToken", "oidcUrl": rig._iss.url,
                   "matchRules": [{"attribute": "OidcSubject", "value": "system:job:release"}]}),
        )
        .await;
    let strict = strict.expect(200)["externalId"].as_str().unwrap().to_string();
    t.patch(
        &format!("/api/v2/access-policies/{policy}"),
        json!({"trustProviders": [strict]}),
    )
    .await
    .expect(200);
    let (trace, events) = agree(
        &t,
        &mut seen,
        &access,
        &b("ApiKey", json!({})),
        403,
        "AttestationFailed",
    )
    .await;
    let check = &step(&trace, "trustProvider")["detail"];
    let recorded = &events
        .iter()
        .find(|e| e["meta"]["eventType"] == "access.authorization")
        .unwrap()["trustProviders"][0];
    for k in ["attribute", "expectedValues", "actualValue"] {
        assert_eq!(check[k], recorded[k], "{k}: {check} / {recorded}");
    }
    assert_eq!(recorded["attribute"], "OidcSubject");
    assert_eq!(check["message"], recorded["detail"]);
    t.patch(
        &format!("/api/v2/access-policies/{policy}"),
        json!({"trustProviders": [rig.trust_provider]}),
    )
    .await
    .expect(200);

    // Step 9: a time condition open only on another day.
    let days = [
        "Sunday",
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
    ];
    let today = time::OffsetDateTime::now_utc().weekday().number_days_from_sunday() as usize;
    let mut closed = time_body(
        "another day",
        json!([{"startTime": "00:00", "endTime": "24:00", "weekDay": {"name": days[(today + 3) % 7]}}]),
    );
    closed["timezone"] = json!({"timezone": "UTC"});
    let closed = condition(&t, closed).await;
    t.patch(
        &format!("/api/v2/access-policies/{policy}"),
        json!({"accessConditions": [closed]}),
    )
    .await
    .expect(200);
    agree(&t, &mut seen, &access, &b("ApiKey", json!({})), 403, "ConditionFailed").await;
    t.patch(
        &format!("/api/v2/access-policies/{policy}"),
        json!({"accessConditions": []}),
    )
    .await
    .expect(200);

    // Steps 10–11.
    agree(
        &t,
        &mut seen,
        &access,
        &b("UsernamePassword", json!({})),
        403,
        "CredentialTypeMismatch",
    )
    .await;
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"isActive": false}),
    )
    .await
    .expect(200);
    agree(
        &t,
        &mut seen,
        &access,
        &b("ApiKey", json!({})),
        404,
        "NoCredentialProvider",
    )
    .await;
    let minted = rig
        .provider(
            &t,
            json!({"type": "oidc-id-token", "name": "rp-token", "isActive": true, "audience": "https://rp.example.test",
                   "subject": "ci", "customClaims": [{"key": "x", "value": "${oidc.identityToken.decode.payload.missing}", "valueType": "dynamic"}]}),
        )
        .await;
    rig.attach(&t, &minted).await;
    let (trace, _) = agree(
        &t,
        &mut seen,
        &access,
        &b("OAuthToken", json!({})),
        403,
        "UnresolvableClaim",
    )
    .await;
    assert!(
        step(&trace, "credentialType")["detail"]["unresolvable"]
            .as_str()
            .is_some_and(|u| u.contains("missing")),
        "{trace}"
    );
    let role = |name: &str, arn: &str| json!({"type": "cloudA-sts-oidc", "name": name, "isActive": true, "cloudAIAMRoleArn": arn});
    let deploy = rig
        .provider(&t, role("deploy-role", "arn:aws:iam::123456789012:role/deploy"))
        .await;
    let audit = rig
        .provider(&t, role("audit-role", "arn:aws:iam::123456789012:role/auditor"))
        .await;
    let policy = rig
        .policy(
            &t,
            json!([{"credentialProviderId": deploy, "mappingType": "AccessKeyId", "accessKeyId": "AKIADEPLOY"},
                   {"credentialProviderId": audit, "mappingType": "AccessKeyId", "accessKeyId": "AKIAAUDIT"}]),
        )
        .await;
    const CT: &str = "CloudAStsFederation";
    agree(&t, &mut seen, &access, &b(CT, json!({})), 400, "SelectorRequired").await;
    let wrong = b(CT, json!({"connectionMetadata": {"accessKeyId": "AKIAOTHER"}}));
    agree(&t, &mut seen, &access, &wrong, 404, "SelectorMismatch").await;

    // Step 7: two policies for the subject.
    let cw = t
        .post(
            "/api/v1/client-workloads",
            json!({"name": "deploy-job-too", "isActive": true, "identities": [{"type": "oidcIdTokenSubject", "value": SUBJECT}]}),
        )
        .await;
    assert_eq!(cw.status, 204, "{}", cw.text);
    let second = t
        .post(
            "/api/v2/access-policies",
            json!({"name": "second", "isActive": true, "clientWorkload": id_of(&cw), "serverWorkload": rig.server_workload,
                   "trustProviders": [], "credentialProviders": [{"credentialProviderId": deploy, "mappingType": "None"}]}),
        )
        .await;
    let second = second.expect(200)["externalId"].as_str().unwrap().to_string();
    agree(&t, &mut seen, &access, &b(CT, json!({})), 400, "MultipleAccessPolicies").await;
    t.delete(&format!("/api/v2/access-policies/{second}")).await.expect(204);
    t.delete(&format!("/api/v2/access-policies/{policy}")).await.expect(204);

    // Step 2: evidence /auth refuses: no edge token, so /credentials refuses the request's token.
    let expired = {
        let mut c = rig._iss.claims(&t.base, SUBJECT);
        c["exp"] = json!(now() - 3600);
        c["iat"] = json!(now() - 7200);
        rig._iss.sign(&c)
    };
    let stale = b("ApiKey", json!({"client": {"oidc": {"identityToken": expired}}}));
    let (trace, events) = agree(&t, &mut seen, "not-an-edge-token", &stale, 401, "InvalidToken").await;
    let s = step(&trace, "edgeToken");
    assert_eq!(s["reason"], "StaleEvidence", "{s}");
    assert_eq!(s["detail"]["attribute"], "exp");
    assert!(
        s["detail"]["expectedValues"][0]
            .as_str()
            .is_some_and(|e| e.starts_with("after ")),
        "{s}"
    );
    // The refused token's check is in its request's event; never the token.
    let request = &events[0];
    assert_eq!(request["outcome"]["reason"], "InvalidToken");
    assert!(request["outcome"]["detail"].is_string(), "{request}");
    assert!(!request.to_string().contains("not-an-edge-token"));
}

/// Explain verifies the evidence, and a listed trust provider, through the resource set's
/// routing, as `/auth` and `/credentials` do: the routing's proxy sees the requests for both
/// issuers, and what it answers for the second is the same upstream failure in both.
#[tokio::test]
async fn explain_verifies_through_the_routing_as_the_edge_api_does() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let mut seen = Seen::default();
    let cp = apikey(&rig, &t, "key").await;
    let policy = rig.attach(&t, &cp).await;
    // A provider on an issuer nobody asked yet, listed alone.
    let elsewhere = FakeIssuer::start().await;
    let listed = t
        .post(
            "/api/v1/trust-providers",
            json!({"name": "elsewhere", "isActive": true, "provider": "OidcIdToken", "oidcUrl": elsewhere.url}),
        )
        .await;
    let listed = listed.expect(200)["externalId"].as_str().unwrap().to_string();
    t.patch(
        &format!("/api/v2/access-policies/{policy}"),
        json!({"trustProviders": [listed]}),
    )
    .await
    .expect(200);
    // The routing's proxy hands every request to the rig's issuer: the rig's evidence verifies
    // through it, the other issuer's discovery answers with the wrong issuer.
    let proxy = Recorder::start(Answer::Proxy(rig._iss.url.clone())).await;
    t.post(
        "/api/v1/routings",
        json!({"name": "egress", "isActive": true, "resourceSetId": DEFAULT_RS, "proxyUrl": proxy.url}),
    )
    .await
    .expect(201);

    let b = body(&rig, "ApiKey", json!({}));
    let trace = t.post(EVALUATE, b.clone()).await.expect(200).clone();
    assert_eq!(step(&trace, "edgeToken")["result"], "Passed", "{trace}");
    let host = |url: &str| url.trim_start_matches("http://").to_string();
    let asked: Vec<String> = proxy
        .seen()
        .iter()
        .filter_map(|s| s.header("host").map(str::to_string))
        .collect();
    assert!(asked.contains(&host(&rig._iss.url)), "{asked:?}");
    assert!(
        asked.contains(&host(&elsewhere.url)),
        "explain went around the routing: {asked:?}"
    );
    assert_eq!(elsewhere.jwks_fetches.load(std::sync::atomic::Ordering::SeqCst), 0);
    let check = step(&trace, "trustProvider");
    assert_eq!(
        (check["result"].as_str(), check["reason"].as_str()),
        (Some("Failed"), Some("UpstreamError")),
        "{trace}"
    );
    let (_, events) = agree(&t, &mut seen, &rig.access, &b, 403, "AttestationFailed").await;
    let recorded = &events
        .iter()
        .find(|e| e["meta"]["eventType"] == "access.authorization")
        .unwrap()["trustProviders"][0];
    assert_eq!(recorded["reason"], "UpstreamError", "{recorded}");
    assert_eq!(recorded["detail"], check["detail"]["message"], "{recorded}");
}
