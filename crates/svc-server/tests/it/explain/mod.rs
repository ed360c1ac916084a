//! `POST /api/v1/access-policies/evaluate` (issue 22 part 3): the explain trace of the §4.8
//! decision — an allowed request, each denial reason, attestation by listed trust providers,
//! several policies, connection-metadata selectors, RBAC — always the status `/edge/v1/credentials`
//! answers for the same evidence, and nothing issued, called upstream or written.

mod agree;

use serde_json::{Value, json};

use crate::support::cred::*;
use crate::support::edge::credentials;
use crate::support::harness::{Resp, TestApp};

const EVALUATE: &str = "/api/v1/access-policies/evaluate";

/// The explain body for the rig's workload: its evidence, its clientId, the rig's server.
fn body(rig: &Rig, credential_type: &str, extra: Value) -> Value {
    let mut b = json!({"clientId": rig.client_id, "client": {"oidc": {"identityToken": rig.id_token}},
                       "server": {"transportProtocol": "TCP", "host": rig.host, "port": 443},
                       "credentialType": credential_type});
    if let Value::Object(m) = extra {
        for (k, v) in m {
            b[k] = v;
        }
    }
    b
}

async fn explain(t: &TestApp, b: &Value) -> Resp {
    t.post(EVALUATE, b.clone()).await
}

/// What /edge/v1/credentials answers for the same body (the rig's access token).
async fn edge_status(t: &TestApp, rig: &Rig, b: &Value) -> u16 {
    let mut b = b.clone();
    b.as_object_mut().unwrap().remove("clientId");
    credentials(t, &rig.access, b).await.status
}

/// The first entry named `name`.
fn step<'a>(trace: &'a Value, name: &str) -> &'a Value {
    trace["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no step {name}: {trace}"))
}

/// Explains, checks status and reason, checks that /credentials agrees, returns the trace.
async fn expect(t: &TestApp, rig: &Rig, b: Value, status: u16, reason: Option<&str>) -> Value {
    let r = explain(t, &b).await;
    let trace = r.expect(200).clone();
    assert_eq!(trace["status"], status, "{trace}");
    assert_eq!(trace["reason"], json!(reason), "{trace}");
    assert_eq!(
        edge_status(t, rig, &b).await,
        status,
        "explain and /credentials disagree: {trace}"
    );
    trace
}

async fn apikey(rig: &Rig, t: &TestApp, name: &str) -> String {
    rig.provider(
        t,
        json!({"type": "apikey", "name": name, "isActive": true, "apiKey": "k"}),
    )
    .await
}

#[tokio::test]
async fn an_allowed_request_is_explained_step_by_step() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let cp = apikey(&rig, &t, "key").await;
    let policy = rig.attach(&t, &cp).await;
    let trace = expect(&t, &rig, body(&rig, "ApiKey", json!({})), 200, None).await;
    assert_eq!(trace["message"], Value::Null);
    let main: Vec<(i64, String, String)> = trace["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] != "trustProvider")
        .map(|s| {
            (
                s["step"].as_i64().unwrap(),
                s["name"].as_str().unwrap().to_string(),
                s["result"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = [
        (1, "rateLimit", "Skipped"),
        (2, "edgeToken", "Passed"),
        (3, "requestBody", "Passed"),
        (4, "resourceSet", "Passed"),
        (5, "clientWorkloads", "Passed"),
        (6, "serverWorkloads", "Passed"),
        (7, "accessPolicy", "Passed"),
        (8, "attestation", "Passed"),
        (9, "accessConditions", "Passed"),
        (10, "credentialProvider", "Passed"),
        (11, "credentialType", "Passed"),
        (12, "fetch", "Skipped"),
    ];
    let expected: Vec<(i64, String, String)> = expected
        .iter()
        .map(|(n, a, b)| (*n, a.to_string(), b.to_string()))
        .collect();
    assert_eq!(main, expected, "{trace}");
    for s in trace["steps"].as_array().unwrap() {
        assert!(s.get("reason").is_some() && s.get("detail").is_some(), "{s}");
    }
    assert_eq!(
        step(&trace, "edgeToken")["detail"]["trustProvider"]["id"],
        rig.trust_provider.as_str()
    );
    let cw = &step(&trace, "clientWorkloads")["detail"];
    assert_eq!(cw["chosen"]["id"], rig.client_workload.as_str());
    assert_eq!(cw["chosen"]["name"], "deploy-job");
    assert_eq!(cw["candidates"][0]["name"], "deploy-job");
    assert_eq!(step(&trace, "serverWorkloads")["detail"]["chosen"]["name"], "upstream");
    assert_eq!(step(&trace, "accessPolicy")["detail"]["chosen"]["id"], policy.as_str());
    // The policy lists the token's own provider: recorded as one passed check.
    let tp = step(&trace, "trustProvider");
    assert_eq!((tp["step"].as_i64(), tp["result"].as_str()), (Some(8), Some("Passed")));
    assert_eq!(tp["detail"]["name"], "ci");
    let chosen = &step(&trace, "credentialProvider")["detail"]["chosen"];
    assert_eq!(
        (chosen["id"].as_str(), chosen["type"].as_str()),
        (Some(cp.as_str()), Some("apikey"))
    );
    assert_eq!(step(&trace, "credentialType")["detail"]["provided"], "ApiKey");
}

#[tokio::test]
async fn each_denial_reason_is_the_one_credentials_would_record() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let cp = apikey(&rig, &t, "key").await;
    rig.attach(&t, &cp).await;

    // Step 2: evidence /auth would refuse, a malformed clientId.
    let bad = body(
        &rig,
        "ApiKey",
        json!({"client": {"oidc": {"identityToken": "not-a-jwt"}}}),
    );
    let r = explain(&t, &bad).await;
    let trace = r.expect(200);
    assert_eq!(
        (trace["status"].as_u64(), trace["reason"].as_str()),
        (Some(401), Some("InvalidToken"))
    );
    assert_eq!(trace["message"], "Unauthorized access.");
    let s = step(trace, "edgeToken");
    assert_eq!(
        (s["result"].as_str(), s["reason"].as_str()),
        (Some("Failed"), Some("InvalidEvidence")),
        "{s}"
    );
    assert_eq!(s["detail"]["authStatus"], 401);
    assert_eq!(step(trace, "requestBody")["result"], "Skipped");
    let r = explain(&t, &body(&rig, "ApiKey", json!({"clientId": "svc:nope"}))).await;
    assert_eq!(step(r.expect(200), "edgeToken")["reason"], "InvalidClientId");

    // Step 3: the body.
    let trace = expect(&t, &rig, body(&rig, "Unknown", json!({})), 400, Some("InvalidRequest")).await;
    assert_eq!(
        trace["message"],
        "The credentials request is invalid. credentialType: must not be Unknown"
    );
    assert_eq!(step(&trace, "requestBody")["result"], "Failed");

    // Step 5: no client workload for another subject.
    let other = rig._iss.sign(&rig._iss.claims(&t.base, "system:job:other"));
    let b = body(&rig, "ApiKey", json!({"client": {"oidc": {"identityToken": other}}}));
    let r = explain(&t, &b).await;
    let trace = r.expect(200);
    assert_eq!(
        (trace["status"].as_u64(), trace["reason"].as_str()),
        (Some(404), Some("NoClientWorkload"))
    );
    assert_eq!(step(trace, "clientWorkloads")["result"], "Failed");
    assert_eq!(step(trace, "clientWorkloads")["detail"]["candidates"], json!([]));
    assert_eq!(step(trace, "resourceSet")["result"], "Passed");

    // Step 6: no server workload on that host.
    let b = body(
        &rig,
        "ApiKey",
        json!({"server": {"host": "nowhere.example.test", "port": 443}}),
    );
    let trace = expect(&t, &rig, b, 404, Some("NoServerWorkload")).await;
    assert_eq!(step(&trace, "serverWorkloads")["result"], "Failed");
    assert_eq!(step(&trace, "clientWorkloads")["result"], "Passed");

    // Step 7: a server workload without a policy.
    let sw = t
        .post(
            "/api/v1/server-workloads",
            json!({"name": "lonely", "isActive": true, "serviceEndpoint": {"host": "lonely.example.test", "port": 443, "appProtocol": "HTTP",
                   "transportProtocol": "TCP", "requestedPort": 443, "requestedTls": true, "tls": true, "tlsVerification": "full"}}),
        )
        .await;
    assert_eq!(sw.status, 204, "{}", sw.text);
    let b = body(
        &rig,
        "ApiKey",
        json!({"server": {"host": "lonely.example.test", "port": 443}}),
    );
    let trace = expect(&t, &rig, b, 404, Some("NoAccessPolicy")).await;
    assert_eq!(step(&trace, "accessPolicy")["result"], "Failed");
    assert_eq!(
        step(&trace, "serverWorkloads")["detail"]["candidates"][0]["name"],
        "lonely"
    );

    // Step 11: the provider issues another type.
    let trace = expect(
        &t,
        &rig,
        body(&rig, "UsernamePassword", json!({})),
        403,
        Some("CredentialTypeMismatch"),
    )
    .await;
    assert_eq!(trace["message"], "Not applicable for this request.");
    let s = step(&trace, "credentialType");
    assert_eq!(
        (s["detail"]["requested"].as_str(), s["detail"]["provided"].as_str()),
        (Some("UsernamePassword"), Some("ApiKey"))
    );
    assert_eq!(step(&trace, "credentialProvider")["result"], "Passed");

    // Step 10: the only provider inactive.
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"isActive": false}),
    )
    .await
    .expect(200);
    let trace = expect(
        &t,
        &rig,
        body(&rig, "ApiKey", json!({})),
        404,
        Some("NoCredentialProvider"),
    )
    .await;
    assert_eq!(
        step(&trace, "credentialProvider")["detail"]["mappings"][0]["isActive"],
        false
    );
    assert_eq!(step(&trace, "fetch")["result"], "Skipped");
}

#[tokio::test]
async fn attestation_by_listed_trust_providers_is_explained_per_provider() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let cp = apikey(&rig, &t, "key").await;
    // Two more providers on the same issuer: one whose rule the evidence fails, one it passes.
    let strict = t
        .post(
            "/api/v1/trust-providers",
            json!({"name": "strict", "isActive": true, "provider": "OidcIdToken", "oidcUrl": rig._iss.url,
                   "matchRules": [{"attribute": "OidcSubject", "value": "system:job:release"}]}),
        )
        .await;
    let strict = strict.expect(200)["externalId"].as_str().unwrap().to_string();
    let team = t
        .post(
            "/api/v1/trust-providers",
            json!({"name": "team", "isActive": true, "provider": "OidcIdToken", "oidcUrl": rig._iss.url,
                   "matchRules": [{"attribute": "OidcCustom", "key": "team", "value": "platform"}]}),
        )
        .await;
    let team = team.expect(200)["externalId"].as_str().unwrap().to_string();
    let policy = |tps: Vec<&str>| {
        json!({"name": "p", "isActive": true, "clientWorkload": rig.client_workload, "serverWorkload": rig.server_workload,
               "trustProviders": tps, "credentialProviders": [{"credentialProviderId": cp, "mappingType": "None"}]})
    };
    let p = t.post("/api/v2/access-policies", policy(vec![&strict])).await;
    let pid = p.expect(200)["externalId"].as_str().unwrap().to_string();
    let trace = expect(
        &t,
        &rig,
        body(&rig, "ApiKey", json!({})),
        403,
        Some("AttestationFailed"),
    )
    .await;
    let s = step(&trace, "attestation");
    assert_eq!(
        (s["result"].as_str(), s["reason"].as_str()),
        (Some("Failed"), Some("AttestationFailed"))
    );
    let check = step(&trace, "trustProvider");
    assert_eq!(
        (check["result"].as_str(), check["reason"].as_str()),
        (Some("Failed"), Some("MatchRuleFailed"))
    );
    assert_eq!(check["detail"]["id"], strict.as_str());
    assert_eq!(check["detail"]["attribute"], "OidcSubject");
    assert_eq!(check["detail"]["expectedValues"], json!(["system:job:release"]));
    assert_eq!(check["detail"]["actualValue"], SUBJECT);
    assert_eq!(step(&trace, "accessConditions")["result"], "Skipped");

    // With the second provider listed too, it attests: both checks are listed, in order.
    let mut replaced = policy(vec![&strict, &team]);
    replaced["externalId"] = json!(pid);
    t.put("/api/v2/access-policies", replaced).await.expect(200);
    let trace = expect(&t, &rig, body(&rig, "ApiKey", json!({})), 200, None).await;
    let checks: Vec<(&str, &str)> = trace["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] == "trustProvider")
        .map(|s| (s["detail"]["name"].as_str().unwrap(), s["result"].as_str().unwrap()))
        .collect();
    assert_eq!(checks, [("strict", "Failed"), ("team", "Passed")], "{trace}");
}

#[tokio::test]
async fn several_policies_and_selectors_are_explained() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    // Only some types combine in one policy: cloudA roles, selected by access key id.
    let role = |name: &str, arn: &str| json!({"type": "cloudA-sts-oidc", "name": name, "isActive": true, "cloudAIAMRoleArn": arn});
    let deploy = rig
        .provider(&t, role("deploy-role", "arn:aws:iam::123456789012:role/deploy"))
        .await;
    let audit = rig
        .provider(&t, role("audit-role", "arn:aws:iam::123456789012:role/auditor"))
        .await;
    const CT: &str = "CloudAStsFederation";
    rig.policy(
        &t,
        json!([{"credentialProviderId": deploy, "mappingType": "AccessKeyId", "accessKeyId": "AKIADEPLOY"},
               {"credentialProviderId": audit, "mappingType": "AccessKeyId", "accessKeyId": "AKIAAUDIT"}]),
    )
    .await;
    // No selector: 400 SelectorRequired, with the two mappings.
    let trace = expect(&t, &rig, body(&rig, CT, json!({})), 400, Some("SelectorRequired")).await;
    assert_eq!(
        trace["message"],
        "connectionMetadata is required: the access policy has several credential providers."
    );
    let names: Vec<&str> = step(&trace, "credentialProvider")["detail"]["mappings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["deploy-role", "audit-role"]);
    // A selector naming one mapping chooses it (not compared with /credentials here: that
    // would call the STS); one naming none is 404 SelectorMismatch.
    let b = body(&rig, CT, json!({"connectionMetadata": {"accessKeyId": "AKIAAUDIT"}}));
    let trace = explain(&t, &b).await.expect(200).clone();
    assert_eq!(
        (trace["status"].as_u64(), &trace["reason"]),
        (Some(200), &Value::Null),
        "{trace}"
    );
    assert_eq!(
        step(&trace, "credentialProvider")["detail"]["chosen"]["name"],
        "audit-role"
    );
    let b = body(&rig, CT, json!({"connectionMetadata": {"accessKeyId": "AKIAOTHER"}}));
    expect(&t, &rig, b, 404, Some("SelectorMismatch")).await;

    // A second client workload the same subject matches, with its own policy to the same server:
    // two policies match (400), and the trace names both.
    let cw = t
        .post(
            "/api/v1/client-workloads",
            json!({"name": "deploy-job-too", "isActive": true, "identities": [{"type": "oidcIdTokenSubject", "value": SUBJECT}]}),
        )
        .await;
    assert_eq!(cw.status, 204, "{}", cw.text);
    t.post(
        "/api/v2/access-policies",
        json!({"name": "second", "isActive": true, "clientWorkload": id_of(&cw), "serverWorkload": rig.server_workload,
               "trustProviders": [], "credentialProviders": [{"credentialProviderId": deploy, "mappingType": "None"}]}),
    )
    .await
    .expect(200);
    let trace = expect(&t, &rig, body(&rig, CT, json!({})), 400, Some("MultipleAccessPolicies")).await;
    let s = step(&trace, "accessPolicy");
    assert_eq!(s["detail"]["candidates"].as_array().unwrap().len(), 2, "{s}");
    assert_eq!(s["detail"]["chosen"], Value::Null);
    assert_eq!(
        step(&trace, "clientWorkloads")["detail"]["candidates"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn explain_needs_access_policies_read_in_the_resource_set() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let b = body(&rig, "ApiKey", json!({}));
    let none = t
        .user_with_role("cw@example.com", json!([{"name": "Client Workloads", "read": true}]))
        .await;
    t.post_as(&none, EVALUATE, b.clone())
        .await
        .expect_error(403, "Forbidden.");
    let reader = t
        .user_with_role("ap@example.com", json!([{"name": "Access Policies", "read": true}]))
        .await;
    assert_eq!(t.post_as(&reader, EVALUATE, b.clone()).await.expect(200)["status"], 404);
    t.call(reqwest::Method::POST, EVALUATE, None, Some(b.clone()))
        .await
        .expect_error(401, "Not authenticated.");
    // A resource set the caller cannot read, named by the evidence's SVC_RESOURCE_SET_ID.
    let rs = t
        .post("/api/v1/resource-sets", json!({"name": "other", "isActive": true}))
        .await;
    let rs = rs.expect(201)["externalId"].as_str().unwrap().to_string();
    let mut elsewhere = b.clone();
    elsewhere["client"]["os"] = json!({"environment": {"SVC_RESOURCE_SET_ID": rs}});
    t.post_as(&reader, EVALUATE, elsewhere)
        .await
        .expect_error(403, "Forbidden.");
    // The body is a management body: clientId required, unknown properties refused.
    let mut no_id = b.clone();
    no_id.as_object_mut().unwrap().remove("clientId");
    t.post(EVALUATE, no_id).await.expect_error(400, "clientId: is required");
    let mut extra = b.clone();
    extra["policy"] = json!("x");
    t.post(EVALUATE, extra)
        .await
        .expect_error(400, "policy: unknown property");
}

#[tokio::test]
async fn explain_issues_nothing_calls_no_provider_and_writes_nothing() {
    let fake = Recorder::start(json_answer(200, json!({"access_token": "t", "expires_in": 3600}))).await;
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let cp = rig
        .provider(&t, json!({"type": "oauth-client-credential", "name": "cc", "isActive": true, "clientID": "c", "clientSecret": "s",
                             "url": format!("{}/token", fake.url)}))
        .await;
    rig.attach(&t, &cp).await;
    t.flush_events().await;
    let events_before = crate::support::edge::authz_events(&t, "").await.len();
    let workload_before = crate::support::edge::workload_events(&t, "").await.len();
    let audit_before = t.audit("").await.len();
    for ct in ["OAuthToken", "ApiKey", "Unknown"] {
        let r = explain(&t, &body(&rig, ct, json!({}))).await;
        r.expect(200);
    }
    let trace = explain(&t, &body(&rig, "OAuthToken", json!({}))).await;
    assert_eq!(trace.expect(200)["status"], 200);
    assert!(
        !trace.text.contains("\"t\""),
        "no credential in the trace: {}",
        trace.text
    );
    t.flush_events().await;
    assert_eq!(fake.count(), 0, "no credential provider was called");
    assert_eq!(crate::support::edge::authz_events(&t, "").await.len(), events_before);
    assert_eq!(
        crate::support::edge::workload_events(&t, "").await.len(),
        workload_before
    );
    assert_eq!(t.audit("").await.len(), audit_before);
    // The same request at the Edge API does call it (the fake counts).
    rig.issue(&t, "OAuthToken").await;
    assert_eq!(fake.count(), 1);
}

/// The OpenAPI document describes explain by its DTOs: named schemas with their properties, the
/// step names and results as enums, `chosen` nullable.
#[tokio::test]
async fn the_explain_operation_is_described_by_its_dtos() {
    let doc = svc_server::http::openapi::document();
    let op = &doc["paths"][EVALUATE]["post"];
    let schemas = &doc["components"]["schemas"];
    let named = |v: &Value| {
        v["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/components/schemas/"))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("not a named schema: {v}"))
    };
    let request = named(&op["requestBody"]["content"]["application/json"]["schema"]);
    assert_eq!(request, "AccessPolicyEvaluationRequestDTO");
    let answer = named(&op["responses"]["200"]["content"]["application/json"]["schema"]);
    assert_eq!(answer, "AccessPolicyEvaluationDTO");
    let req = &schemas[&request];
    assert_eq!(req["required"], json!(["clientId"]), "{req}");
    for p in [
        "clientId",
        "client",
        "server",
        "credentialType",
        "connectionMetadata",
        "certSigningRequest",
    ] {
        assert!(req["properties"].get(p).is_some(), "{p}: {req}");
    }
    let ans = &schemas[&answer];
    for p in ["status", "reason", "message", "steps"] {
        assert!(ans["properties"].get(p).is_some(), "{p}: {ans}");
    }
    let step = &schemas["AccessPolicyEvaluationStepDTO"];
    assert!(step["properties"]["detail"].is_object(), "{step}");
    let names = schemas["AccessPolicyEvaluationStepName"]["enum"].as_array().unwrap();
    assert_eq!(names.len(), 13);
    assert!(names.contains(&json!("trustProvider")) && names.contains(&json!("edgeToken")));
    let results = &schemas["AccessPolicyEvaluationStepResult"]["enum"];
    assert_eq!(*results, json!(["Passed", "Failed", "Skipped"]));
    let detail = &schemas["AccessPolicyEvaluationStepDetailDTO"]["properties"];
    for p in [
        "contentSecurity",
        "attribute",
        "expectedValues",
        "actualValue",
        "chosen",
        "mappings",
    ] {
        assert!(detail.get(p).is_some(), "{p}: {detail}");
    }
    assert!(
        detail["chosen"].to_string().contains("null"),
        "chosen is nullable: {}",
        detail["chosen"]
    );
}
