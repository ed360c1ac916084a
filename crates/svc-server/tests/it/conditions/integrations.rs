//! Integrations (§3.11): the built-in ones, v1 and v2 views of one entity, validation, the
//! write-only client secret, deletion rules and RBAC.

use serde_json::{Value, json};

use super::*;
use crate::support::harness::{TestApp, contains};

#[tokio::test]
async fn every_resource_set_has_builtin_geoip_and_time_integrations_that_cannot_change() {
    let t = TestApp::start().await;
    let list = t.get("/api/v2/integrations").await;
    let items = list.expect(200)["integrations"].as_array().unwrap().clone();
    let names: Vec<&str> = items.iter().map(|i| i["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["GeoIP", "Time"]);
    let geo = &items[0];
    assert_eq!(geo["integrationType"], "SvcGeoIPCondition");
    assert_eq!(geo["type"], "SvcGeoIPCondition");
    assert_eq!(geo["endpoint"], "builtin");
    assert_eq!(geo["syncFrequencySeconds"], 3600);
    assert_eq!(geo["isActive"], true);
    assert_eq!(geo["accessConditionsCount"], 0);
    let id = geo["externalId"].as_str().unwrap();

    // A new resource set gets its own pair, audited as created.
    let rs = t
        .post("/api/v1/resource-sets", json!({"name": "team", "isActive": true}))
        .await;
    let rs = rs.expect(201)["externalId"].as_str().unwrap().to_string();
    let r = t
        .send(
            t.client
                .get(t.url("/api/v1/integrations"))
                .bearer_auth(&t.token)
                .header("X-Svc-ResourceSet", &rs),
        )
        .await;
    let theirs = r.expect(200)["integrations"].as_array().unwrap().clone();
    assert_eq!(theirs.len(), 2);
    assert!(
        theirs
            .iter()
            .all(|i| i["resourceSet"] == rs.as_str() && i["externalId"] != id)
    );

    // Built-ins cannot be created, replaced, patched or deleted.
    t.post(
        "/api/v2/integrations",
        json!({"name": "g", "isActive": true, "integrationType": "SvcTimeCondition", "syncFrequencySeconds": 300, "endpoint": "https://x.example"}),
    )
    .await
    .expect_error(400, "integrationType: built-in integrations cannot be created");
    let mut body = geo.clone();
    body["name"] = json!("renamed");
    t.put("/api/v2/integrations", body)
        .await
        .expect_error(400, BUILTIN_CHANGE);
    t.patch(&format!("/api/v1/integrations/{id}"), json!({"name": "x"}))
        .await
        .expect_error(400, BUILTIN_CHANGE);
    t.delete(&format!("/api/v2/integrations/{id}"))
        .await
        .expect_error(400, BUILTIN_CHANGE);
    // The v1 view of a built-in.
    let v1 = t.get(&format!("/api/v1/integrations/{id}")).await;
    assert_eq!(v1.expect(200)["type"], "SvcGeoIPCondition");
    assert_eq!(v1.body["integrationJSON"], json!({}));
}

#[tokio::test]
async fn v1_and_v2_show_one_stored_integration_and_never_its_client_secret() {
    let t = TestApp::start().await;
    let r = t
        .post(
            "/api/v2/integrations",
            sensor_a_body("https://token.example/oauth2/token"),
        )
        .await;
    let v2 = r.expect(201).clone();
    let id = v2["externalId"].as_str().unwrap();
    assert_eq!(
        r.header("location"),
        Some(format!("/api/v2/integrations/{id}").as_str())
    );
    assert_eq!(v2["integrationType"], "SensorA");
    assert_eq!(v2["type"], "SensorA");
    assert_eq!(v2["clientId"], "sensor-client");
    assert_eq!(v2["clientSecret"], Value::Null);
    assert_eq!(v2["tokenUrl"], "https://token.example/oauth2/token");
    assert_eq!(v2["audience"], Value::Null);
    assert_eq!(v2["lastSync"], Value::Null);
    assert_eq!(v2["lastSyncStatus"], Value::Null);
    let v1 = t.get(&format!("/api/v1/integrations/{id}")).await;
    let v1 = v1.expect(200);
    assert_eq!(v1["type"], "SensorA");
    assert_eq!(
        v1["integrationJSON"],
        json!({"clientId": "sensor-client", "tokenUrl": "https://token.example/oauth2/token", "audience": null})
    );
    assert_eq!(v1["endpoint"], "https://api.sensor.example");
    // A v1 create is read back through v2.
    let r = t
        .post(
            "/api/v1/integrations",
            json!({"name": "inventory", "isActive": true, "type": "CloudSecurityAIntegrationApi", "syncFrequencySeconds": 600,
                   "endpoint": "https://api.cloudsec.example/graphql",
                   "integrationJSON": {"clientId": "cs", "clientSecret": SECRET, "tokenUrl": "https://auth.cloudsec.example/token", "audience": "cloudsec-api"}}),
        )
        .await;
    let cs = r.expect(201)["externalId"].as_str().unwrap().to_string();
    assert!(r.body["integrationJSON"].get("clientSecret").is_none());
    let v2 = t.get(&format!("/api/v2/integrations/{cs}")).await;
    assert_eq!(v2.expect(200)["audience"], "cloudsec-api");
    assert_eq!(v2.body["integrationType"], "CloudSecurityAIntegrationApi");
    // A GET body sent back in a PUT keeps the secret (write-only: null keeps it).
    let mut back = v2.body.clone();
    back["name"] = json!("inventory 2");
    t.put("/api/v2/integrations", back).await.expect(200);
    let stored = t.app.state();
    let i = stored.integrations.get(&cs.parse::<uuid::Uuid>().unwrap()).unwrap();
    assert_eq!(i.secrets.get("clientSecret"), Some(SECRET));
    // Filters and the list.
    let r = t.get("/api/v1/integrations?filter=type:SensorA").await;
    assert_eq!(r.expect(200)["recordsTotal"], 1);
    let r = t
        .get("/api/v2/integrations?filter=integrationType:CloudSecurityAIntegrationApi")
        .await;
    assert_eq!(r.expect(200)["integrations"][0]["externalId"], cs.as_str());
    // Nowhere readable: responses, audit, the database file.
    for path in [
        "/api/v1/integrations",
        "/api/v2/integrations",
        "/api/v1/audit-logs?per-page=1000",
    ] {
        let r = t.get(path).await;
        assert!(!r.text.contains(SECRET), "{path}");
    }
    if let Some(bytes) = t.sqlite_bytes() {
        assert!(!contains(&bytes, SECRET), "the client secret is stored sealed");
    }
    // DELETE answers 200, also for an id that is gone.
    t.delete(&format!("/api/v1/integrations/{cs}")).await.expect(200);
    t.delete(&format!("/api/v1/integrations/{cs}")).await.expect(200);
    assert_eq!(t.get(&format!("/api/v2/integrations/{cs}")).await.status, 204);
}

#[tokio::test]
async fn integration_bodies_are_validated_field_by_field() {
    let t = TestApp::start().await;
    let base = sensor_a_body("https://token.example/t");
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    let cases = [
        (
            with("syncFrequencySeconds", json!(299)),
            "syncFrequencySeconds: must be 300..3600",
        ),
        (
            with("syncFrequencySeconds", Value::Null),
            "syncFrequencySeconds: is required",
        ),
        (with("endpoint", json!("ftp://x")), "endpoint: must be an https URL"),
        (with("tokenUrl", json!("not a url")), "tokenUrl: must be an https URL"),
        (with("clientId", Value::Null), "clientId: is required"),
        (with("clientSecret", Value::Null), "clientSecret: is required"),
        (
            with("type", json!("CloudSecurityAIntegrationApi")),
            "type: must equal integrationType",
        ),
        (
            with("integrationType", json!("Other")),
            "integrationType: must be one of SensorA, CloudSecurityAIntegrationApi, SvcGeoIPCondition, SvcTimeCondition",
        ),
        (with("bogus", json!(1)), "bogus: unknown property"),
    ];
    for (body, message) in cases {
        t.post("/api/v2/integrations", body).await.expect_error(400, message);
    }
    // `type` alone is enough; the audience is required for CloudSecurityA.
    let mut b = base.clone();
    b.as_object_mut().unwrap().remove("integrationType");
    b["type"] = json!("CloudSecurityAIntegrationApi");
    t.post("/api/v2/integrations", b)
        .await
        .expect_error(400, "audience: is required");
    // v1 paths name `integrationJSON`.
    let v1 = json!({"name": "s", "isActive": true, "type": "SensorA", "syncFrequencySeconds": 300,
                    "endpoint": "https://api.sensor.example", "integrationJSON": {"clientId": "c", "tokenUrl": "https://t.example"}});
    t.post("/api/v1/integrations", v1)
        .await
        .expect_error(400, "integrationJSON.clientSecret: is required");
    // The discriminator cannot change.
    let id = t.post("/api/v2/integrations", base.clone()).await.expect(201)["externalId"].clone();
    let mut b = with("integrationType", json!("CloudSecurityAIntegrationApi"));
    b["type"] = json!("CloudSecurityAIntegrationApi");
    b["externalId"] = id;
    t.put("/api/v2/integrations", b)
        .await
        .expect_error(400, "integrationType: cannot be changed");
}

#[tokio::test]
async fn integrations_need_the_integrations_permission() {
    let t = TestApp::start().await;
    let nop = t
        .user_with_role(
            "nop@acme.test",
            json!([{"name": "Access Conditions", "read": true, "write": true}]),
        )
        .await;
    for path in ["/api/v1/integrations", "/api/v2/integrations"] {
        t.get_as(&nop, path).await.expect_error(403, "Forbidden.");
    }
    let ro = t
        .user_with_role("ro@acme.test", json!([{"name": "Integrations", "read": true}]))
        .await;
    t.get_as(&ro, "/api/v2/integrations").await.expect(200);
    t.post_as(&ro, "/api/v2/integrations", sensor_a_body("https://t.example"))
        .await
        .expect_error(403, "Forbidden.");
    t.get_as(&ro, "/api/v1/access-conditions")
        .await
        .expect_error(403, "Forbidden.");
    t.get_as(&nop, "/api/v2/access-conditions").await.expect(200);
}

#[tokio::test]
async fn resource_sets_from_before_the_builtin_integrations_get_them_at_start() {
    use svc_server::domain::condition::Integration;
    use svc_server::service::write::Write;
    let t = TestApp::start().await;
    // A database written before this version: the default set without its built-ins.
    let ids: Vec<uuid::Uuid> = t.app.state().integrations.keys().copied().collect();
    assert_eq!(ids.len(), 2);
    let mut w = Write::begin_system(&t.app).await.unwrap();
    for id in &ids {
        w.remove::<Integration>(id);
    }
    w.commit().await.unwrap();
    let r = t.get("/api/v2/integrations").await;
    assert_eq!(r.expect(200)["recordsTotal"], 0);
    let t = t.restart().await;
    let r = t.get("/api/v2/integrations").await;
    let names: Vec<Value> = r.expect(200)["integrations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].clone())
        .collect();
    assert_eq!(names, [json!("GeoIP"), json!("Time")]);
    // Made by the start-up, not by a management request: no audit entry.
    let audit = t.audit("&category=Integrations").await;
    assert!(audit.is_empty(), "{audit:?}");
}
