//! Agent controllers (contract §3.21) and their compliance settings (§3.22): shape, statuses
//! (DELETE 201), validation, unique `allowedTlsHostname`, trust-provider references, device codes,
//! RBAC with `Agent Controllers`.

use serde_json::{Value, json};

use crate::support::harness::TestApp;

const PATH: &str = "/api/v1/agent-controllers";
const WARN: &str = "x-svc-compliance-warning";

async fn set_compliance(t: &TestApp, name: &str, value: &str) {
    t.put("/api/v1/compliance-settings", json!({"name": name, "value": value}))
        .await
        .expect(200);
}

async fn trust_provider(t: &TestApp, rs: Option<&str>) -> String {
    let mut req = t
        .client
        .post(t.url("/api/v1/trust-providers"))
        .bearer_auth(&t.token)
        .json(&json!({"name": "tp", "isActive": true, "provider": "CiAIdentityToken"}));
    if let Some(rs) = rs {
        req = req.header("X-Svc-ResourceSet", rs);
    }
    t.send(req).await.expect(200)["externalId"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn agent_controller_shape_and_statuses() {
    let t = TestApp::start().await;
    let r = t.post(PATH, json!({"name": "edge-1"})).await;
    let body = r.expect(201).clone();
    let id = body["externalId"].as_str().unwrap().to_string();
    assert_eq!(r.header("location"), Some(format!("{PATH}/{id}").as_str()));
    // Both edge settings are Recommended by default: stored, with a warning.
    assert_eq!(
        r.header(WARN),
        Some("edge_trust_prov_governance, edge_tls_hostname_governance")
    );
    assert!(body["id"].is_i64());
    assert_eq!(body["isActive"], true, "isActive defaults to true");
    assert_eq!(body["tlsCertificates"], json!([]));
    assert_eq!(body["isHealthy"], false);
    assert_eq!(body["lastReportedUptime"], 0);
    assert_eq!(body["lastReportedHealthTime"], Value::Null);
    assert_eq!(body["trustProviderId"], Value::Null);
    assert_eq!(body["trustProvider"], Value::Null);
    assert_eq!(body["allowedTlsHostname"], Value::Null);
    assert_eq!(body["version"], Value::Null);
    assert_eq!(body["tags"], json!([]));
    assert!(body.get("resourceSet").is_none() && body.get("createdBy").is_none());

    assert_eq!(*t.get(&format!("{PATH}/{id}")).await.expect(200), body);
    assert_eq!(
        t.get(&format!("{PATH}/00000000-0000-4000-8000-000000000001"))
            .await
            .status,
        204
    );
    let list = t.get(&format!("{PATH}?check-tls-type=true")).await;
    assert_eq!(list.expect(200)["agentControllers"][0]["externalId"], id.as_str());
    assert_eq!(list.body["recordsTotal"], 1);
    assert_eq!(
        list.body["agentControllers"][0]["tlsCertificates"],
        serde_json::json!([])
    );
    t.get(&format!("{PATH}?check-tls-type=maybe"))
        .await
        .expect_error(400, "check-tls-type: must be true or false");
    assert_eq!(
        t.get(&format!("{PATH}?filter=isHealthy:false")).await.body["recordsTotal"],
        1
    );

    // PATCH: version, isActive, trustProviderId only.
    let tp = trust_provider(&t, None).await;
    let p = t
        .patch(
            &format!("{PATH}/{id}"),
            json!({"version": "1.2.3", "isActive": false, "trustProviderId": tp}),
        )
        .await;
    assert_eq!(p.expect(200)["version"], "1.2.3");
    assert_eq!(p.body["isActive"], false);
    assert_eq!(p.body["trustProviderId"], tp.as_str());
    assert_eq!(p.body["trustProvider"]["externalId"], tp.as_str());
    assert_eq!(p.header(WARN), Some("edge_tls_hostname_governance"));
    t.patch(&format!("{PATH}/{id}"), json!({"name": "x"}))
        .await
        .expect_error(400, "name: unknown property");
    t.patch(
        &format!("{PATH}/00000000-0000-4000-8000-000000000001"),
        json!({"version": "1"}),
    )
    .await
    .expect_error(404, "Not found.");
    let f = t.get(&format!("{PATH}?filter=trustProviderId:{tp}")).await;
    assert_eq!(f.expect(200)["recordsTotal"], 1);

    // PUT replaces: absent fields return to their defaults.
    let u = t
        .put(
            PATH,
            json!({"externalId": id, "name": "edge-2", "allowedTlsHostname": "*.edge.acme.test",
                   "trustProviderId": tp}),
        )
        .await;
    assert_eq!(u.expect(200)["name"], "edge-2");
    assert_eq!(u.body["version"], Value::Null);
    assert_eq!(u.body["isActive"], true);
    assert_eq!(u.body["allowedTlsHostname"], "*.edge.acme.test");
    assert!(u.header(WARN).is_none());
    t.put(PATH, json!({"name": "x"}))
        .await
        .expect_error(400, "externalId: is required");

    // DELETE answers 201 (also for an id already gone).
    let d = t.delete(&format!("{PATH}/{id}")).await;
    assert_eq!((d.status, d.text.as_str()), (201, ""));
    assert_eq!(t.delete(&format!("{PATH}/{id}")).await.status, 201);
    assert_eq!(t.get(&format!("{PATH}/{id}")).await.status, 204);

    let mut audit: Vec<String> = t
        .audit("")
        .await
        .iter()
        .filter(|a| a["category"] == "AgentControllers")
        .map(|a| a["activity"].as_str().unwrap().to_string())
        .collect();
    // One entry per write; two writes in the same millisecond tie, and ties break on the
    // entries' random `externalId` (§1.6), so the order is not compared.
    audit.sort();
    assert_eq!(audit, ["Created", "Deleted", "Patched", "Updated"]);
}

#[tokio::test]
async fn agent_controller_validation_and_compliance() {
    let t = TestApp::start().await;
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "name: is required"),
        (json!({"name": ""}), "name: must be 1..128 characters"),
        (json!({"name": "a", "isActive": "yes"}), "isActive: must be a boolean"),
        (
            json!({"name": "a", "resourceSet": "x"}),
            "resourceSet: unknown property",
        ),
        (
            json!({"name": "a", "trustProviderId": "00000000-0000-4000-8000-000000000001"}),
            "trustProviderId: unknown trust provider",
        ),
        (
            json!({"name": "a", "allowedTlsHostname": "not a host"}),
            "allowedTlsHostname: must be a fully qualified domain name or a *. wildcard",
        ),
        (
            json!({"name": "a", "allowedTlsHostname": "localhost"}),
            "allowedTlsHostname: must be a fully qualified domain name or a *. wildcard",
        ),
        (
            json!({"name": "a", "allowedTlsHostname": format!("{}.test", "a".repeat(260))}),
            "allowedTlsHostname: must be 1..256 characters",
        ),
    ];
    for (body, msg) in cases {
        let r = t.post(PATH, body).await;
        if msg.starts_with("isActive") {
            r.expect_error_prefix(400, "isActive: must be");
        } else {
            r.expect_error(400, msg);
        }
    }

    // allowedTlsHostname is unique among controllers (case-insensitively).
    let a = t
        .post(PATH, json!({"name": "a", "allowedTlsHostname": "edge.acme.test"}))
        .await;
    let a = a.expect(201)["externalId"].as_str().unwrap().to_string();
    t.post(PATH, json!({"name": "b", "allowedTlsHostname": "EDGE.acme.test"}))
        .await
        .expect_error_prefix(400, "allowedTlsHostname: already used by agent controller 'a'");
    // The same controller may keep it.
    t.put(
        PATH,
        json!({"externalId": a, "name": "a2", "allowedTlsHostname": "edge.acme.test"}),
    )
    .await
    .expect(200);

    // Required: 400 naming the field, nothing stored; Optional: no warning.
    set_compliance(&t, "edge_trust_prov_governance", "Required").await;
    t.post(PATH, json!({"name": "c", "allowedTlsHostname": "c.acme.test"}))
        .await
        .expect_error(
            400,
            "trustProviderId: required by compliance setting edge_trust_prov_governance",
        );
    set_compliance(&t, "edge_trust_prov_governance", "Optional").await;
    set_compliance(&t, "edge_tls_hostname_governance", "Required").await;
    t.post(PATH, json!({"name": "c"})).await.expect_error(
        400,
        "allowedTlsHostname: required by compliance setting edge_tls_hostname_governance",
    );
    // Existing entities are re-checked on their next write.
    t.put(PATH, json!({"externalId": a, "name": "a3"})).await.expect_error(
        400,
        "allowedTlsHostname: required by compliance setting edge_tls_hostname_governance",
    );
    set_compliance(&t, "edge_tls_hostname_governance", "Optional").await;
    let r = t.post(PATH, json!({"name": "d"})).await;
    r.expect(201);
    assert!(r.header(WARN).is_none());
    assert_eq!(t.get(PATH).await.body["recordsTotal"], 2);
}

#[tokio::test]
async fn agent_controllers_and_trust_providers() {
    let t = TestApp::start().await;
    let rs = t
        .post("/api/v1/resource-sets", json!({"name": "b", "isActive": true}))
        .await;
    let rs = rs.expect(201)["externalId"].as_str().unwrap().to_string();
    // A trust provider of any resource set may be named.
    let tp = trust_provider(&t, Some(&rs)).await;
    let c = t.post(PATH, json!({"name": "c", "trustProviderId": tp})).await;
    let c = c.expect(201)["externalId"].as_str().unwrap().to_string();
    let tp_view = t
        .send(
            t.client
                .get(t.url(&format!("/api/v1/trust-providers/{tp}")))
                .bearer_auth(&t.token)
                .header("X-Svc-ResourceSet", &rs),
        )
        .await;
    assert_eq!(tp_view.expect(200)["agentControllersCount"], 1);
    assert_eq!(tp_view.body["agentControllerIds"], json!([c]));
    // §1.10 rule 4: the trust provider cannot be deleted while a controller names it.
    let d = t
        .send(
            t.client
                .delete(t.url(&format!("/api/v1/trust-providers/{tp}")))
                .bearer_auth(&t.token)
                .header("X-Svc-ResourceSet", &rs),
        )
        .await;
    d.expect_error(
        400,
        &format!("trustProviderId: referenced by agent controller 'c' ({c})"),
    );
    // Rule 6: deleting the resource set clears the controller's trustProviderId.
    t.delete(&format!("/api/v1/resource-sets/{rs}")).await.expect(204);
    let g = t.get(&format!("{PATH}/{c}")).await;
    assert_eq!(g.expect(200)["trustProviderId"], Value::Null);
    assert_eq!(g.body["trustProvider"], Value::Null);
}

#[tokio::test]
async fn device_codes() {
    let t = TestApp::start().await;
    let c = t.post(PATH, json!({"name": "c"})).await;
    let c = c.expect(201)["externalId"].as_str().unwrap().to_string();
    let path = format!("{PATH}/{c}/device-code");
    let first = t.post(&path, json!(null)).await;
    let code1 = first.expect(201)["device_code"].as_str().unwrap().to_string();
    assert_eq!(code1.len(), 6);
    assert!(code1.bytes().all(|b| b.is_ascii_digit()));
    assert_eq!(first.body.as_object().unwrap().len(), 1, "{}", first.text);
    // A new code each time (the previous one is replaced).
    let mut codes = vec![code1.clone()];
    for _ in 0..3 {
        let r = t.post(&path, json!(null)).await;
        codes.push(r.expect(201)["device_code"].as_str().unwrap().to_string());
    }
    codes.dedup();
    assert!(codes.len() >= 3, "codes repeat: {codes:?}");
    // Never shown by reads.
    let g = t.get(&format!("{PATH}/{c}")).await;
    for code in &codes {
        assert!(!g.text.contains(code.as_str()) || g.text.matches(code.as_str()).count() == 0);
    }
    assert!(g.body.get("device_code").is_none() && g.body.get("deviceCode").is_none());
    t.post(
        &format!("{PATH}/00000000-0000-4000-8000-000000000001/device-code"),
        json!(null),
    )
    .await
    .expect_error(404, "Not found.");
    t.post(&format!("{PATH}/nope/device-code"), json!(null))
        .await
        .expect_error_prefix(400, "agentControllerExternalId: must be a UUID");
    let audit: Vec<Value> = t
        .audit("")
        .await
        .into_iter()
        .filter(|a| a["activity"] == "DeviceCodeCreated")
        .collect();
    assert_eq!(audit.len(), 4);
    assert!(
        audit
            .iter()
            .all(|a| a["category"] == "AgentControllers" && a["target"] == c.as_str())
    );

    // RBAC: device-code is a write of Agent Controllers.
    let ro = t
        .user_with_role("ro@acme.test", json!([{"name": "Agent Controllers", "read": true}]))
        .await;
    t.get_as(&ro, PATH).await.expect(200);
    t.post_as(&ro, &path, json!(null)).await.expect_error(403, "Forbidden.");
    t.post_as(&ro, PATH, json!({"name": "x"}))
        .await
        .expect_error(403, "Forbidden.");
    let none = t
        .user_with_role(
            "none@acme.test",
            json!([{"name": "Routing Configuration", "write": true}]),
        )
        .await;
    t.get_as(&none, PATH).await.expect_error(403, "Forbidden.");
    t.get_as(&none, &format!("{PATH}/{c}"))
        .await
        .expect_error(403, "Forbidden.");
}

/// Issue 31: an agent controller may name a trust provider of any resource set, but naming one
/// shows it only to a caller who can read it anyway, and a caller may name only one it can see.
#[tokio::test]
async fn an_agent_controller_does_not_reveal_a_trust_provider_its_reader_cannot_read() {
    let t = TestApp::start().await;
    let other = t
        .post("/api/v1/resource-sets", json!({"name": "payments", "isActive": true}))
        .await;
    let other = other.expect(201)["externalId"].as_str().unwrap().to_string();
    let hidden = trust_provider(&t, Some(&other)).await;
    // A controller administrator of the default set, with no trust-provider rights.
    let ac_admin = t
        .user_with_role(
            "ac-admin@example.test",
            json!([{"name": "Agent Controllers", "read": true, "write": true}]),
        )
        .await;
    t.post_as(&ac_admin, PATH, json!({"name": "probe", "trustProviderId": hidden}))
        .await
        .expect_error(400, "trustProviderId: unknown trust provider");
    // The SuperAdmin names it; the controller administrator sees the id, not the provider.
    let c = t.post(PATH, json!({"name": "edge", "trustProviderId": hidden})).await;
    let c = c.expect(201)["externalId"].as_str().unwrap().to_string();
    assert_eq!(
        t.get(&format!("{PATH}/{c}")).await.body["trustProvider"]["externalId"],
        hidden.as_str()
    );
    let seen = t.get_as(&ac_admin, &format!("{PATH}/{c}")).await;
    assert_eq!(seen.expect(200)["trustProviderId"], hidden.as_str());
    assert_eq!(seen.body["trustProvider"], Value::Null);
    let list = t.get_as(&ac_admin, PATH).await;
    assert!(!list.text.contains("CiAIdentityToken"), "{}", list.text);
    // Writing the controller back unchanged keeps the provider it names.
    let mut back = seen.body.clone();
    back["description"] = json!("renamed");
    t.put_as(&ac_admin, PATH, back).await.expect(200);
}
