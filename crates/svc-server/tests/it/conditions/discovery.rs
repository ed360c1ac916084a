//! Discovery integrations and server-workload drafts (§3.12) against a loopback fake of the
//! §5.4 inventory (GraphQL, two pages).

use serde_json::{Value, json};

use super::*;
use crate::support::cred::{Answer, Recorder, Seen};
use crate::support::harness::{TestApp, contains};

fn inventory(seen: &Seen) -> (u16, Value) {
    if seen.uri.starts_with("/token") {
        return (200, json!({"access_token": "inventory-token", "expires_in": 3600}));
    }
    if seen.header("authorization") != Some("Bearer inventory-token") {
        return (401, json!({}));
    }
    let body: Value = serde_json::from_slice(&seen.body).unwrap_or_default();
    let page = if body["variables"]["after"].is_null() {
        json!({"nodes": [{"providerUniqueId": "i-1", "name": "web", "hostnames": ["Web.internal"], "ports": [443, 8443], "lastSeen": "2026-11-20T10:00:00Z"}],
               "pageInfo": {"hasNextPage": true, "endCursor": "c1"}})
    } else {
        json!({"nodes": [{"providerUniqueId": "i-2", "name": "db", "hostnames": ["db.internal"], "ports": [5432], "lastSeen": null}],
               "pageInfo": {"hasNextPage": false, "endCursor": null}})
    };
    (200, json!({"data": {"cloudResources": page}}))
}

fn body(url: &str) -> Value {
    let j = json!({"tokenUrl": format!("{url}/token"), "clientId": "disc", "clientSecret": SECRET, "audience": "inv"});
    json!({"name": "inventory", "isActive": true, "type": "CloudSecurityAIntegrationApi", "syncFrequencySeconds": 3600,
           "endpoint": format!("{url}/graphql"), "discoveryIntegrationJSON": j.to_string()})
}

async fn drafts(t: &TestApp, query: &str) -> Value {
    t.get(&format!("/api/alpha/server-workload-drafts{query}"))
        .await
        .expect(200)
        .clone()
}

#[tokio::test]
async fn a_discovery_integration_keeps_one_draft_per_discovered_host_and_port() {
    let t = TestApp::start().await;
    let v = Recorder::start(Answer::Func(inventory)).await;
    let r = t.post("/api/v1/discovery-integrations", body(&v.url)).await;
    let d = r.expect(201).clone();
    let id = d["externalId"].as_str().unwrap().to_string();
    assert_eq!(d["type"], "CloudSecurityAIntegrationApi");
    assert_eq!(d["resourceSet"], svc_server::domain::DEFAULT_RESOURCE_SET.to_string());
    let j: Value = serde_json::from_str(d["discoveryIntegrationJSON"].as_str().unwrap()).unwrap();
    assert_eq!(
        j,
        json!({"tokenUrl": format!("{}/token", v.url), "clientId": "disc", "audience": "inv"})
    );
    // Validation.
    let with = |k: &str, val: Value| {
        let mut b = body(&v.url);
        b[k] = val;
        b
    };
    t.post("/api/v1/discovery-integrations", with("type", json!("SensorA")))
        .await
        .expect_error(400, "type: must be one of CloudSecurityAIntegrationApi");
    t.post(
        "/api/v1/discovery-integrations",
        with("syncFrequencySeconds", json!(60)),
    )
    .await
    .expect_error(400, "syncFrequencySeconds: must be 300..3600");
    t.post(
        "/api/v1/discovery-integrations",
        with(
            "discoveryIntegrationJSON",
            json!(json!({"tokenUrl": "https://t.example", "clientId": "c", "audience": "a"}).to_string()),
        ),
    )
    .await
    .expect_error(400, "discoveryIntegrationJSON.clientSecret: is required");
    t.post(
        "/api/v1/discovery-integrations",
        with("discoveryIntegrationJSON", json!("{nope")),
    )
    .await
    .expect_error_prefix(400, "discoveryIntegrationJSON: must be JSON text of an object");

    // Sync now: 202, then the drafts of both pages.
    let r = t
        .post(&format!("/api/v1/discovery-integrations/{id}/sync"), json!({}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body["success"], true);
    let mut list = Value::Null;
    for _ in 0..40 {
        list = drafts(&t, "").await;
        if list["recordsTotal"] == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    assert_eq!(list["recordsTotal"], 3, "{list}");
    let gql: Vec<Value> = v
        .seen()
        .iter()
        .filter(|s| s.uri == "/graphql")
        .map(|s| serde_json::from_slice::<Value>(&s.body).unwrap()["variables"].clone())
        .collect();
    assert_eq!(
        gql[..2],
        [
            json!({"first": 500, "after": null}),
            json!({"first": 500, "after": "c1"})
        ]
    );
    let web = drafts(&t, "?filter=host:web.internal&order=serviceEndpoint.port").await;
    let items = web["serverWorkloadDrafts"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["serviceEndpoint"]["port"], 443);
    assert_eq!(items[0]["isActive"], false);
    assert_eq!(items[0]["accessPolicyCount"], 0);
    assert_eq!(items[0]["discoveryIntegrationId"], id.as_str());
    assert_eq!(items[0]["lastSeenAt"], "2026-11-20T10:00:00.000Z");
    let draft = items[0]["externalId"].as_str().unwrap().to_string();
    let one = t.get(&format!("/api/alpha/server-workload-drafts/{draft}")).await;
    assert_eq!(one.expect(200)["name"], "web (web.internal:443)");
    let f = drafts(&t, &format!("?filter=discoveryIntegrationId:{id}")).await;
    assert_eq!(f["recordsTotal"], 3);
    // §1.4 rule 5: `resourceSet:<uuid>` narrows the lists read without the header.
    let default_rs = crate::support::harness::DEFAULT_RS;
    let f = drafts(&t, &format!("?filter=resourceSet:{default_rs}")).await;
    assert_eq!(f["recordsTotal"], 3);
    let f = drafts(&t, "?filter=resourceSet:00000000-0000-4000-8000-000000000001").await;
    assert_eq!(f["recordsTotal"], 0);
    for (set, n) in [(default_rs, 1), ("00000000-0000-4000-8000-000000000001", 0)] {
        let r = t
            .get(&format!("/api/v1/discovery-integrations?filter=resourceSet:{set}"))
            .await;
        assert_eq!(r.expect(200)["recordsTotal"], n, "{set}");
    }
    assert_eq!(
        t.get("/api/alpha/server-workload-drafts/00000000-0000-4000-8000-000000000001")
            .await
            .status,
        204
    );
    let d = t.get(&format!("/api/v1/discovery-integrations/{id}")).await;
    assert_eq!(d.expect(200)["lastSyncStatus"], "Success");
    // A second sync refreshes, it does not duplicate.
    t.post(&format!("/api/v1/discovery-integrations/{id}/sync"), json!({}))
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(drafts(&t, "").await["recordsTotal"], 3);
    // Drafts are never server workloads.
    let sw = t.get("/api/v1/server-workloads").await;
    assert_eq!(sw.expect(200)["recordsTotal"], 0);

    // RBAC: drafts need Server Workloads; sync needs Discovery Integrations write.
    let disc = t
        .user_with_role(
            "disc@acme.test",
            json!([{"name": "Discovery Integrations", "read": true}]),
        )
        .await;
    t.get_as(&disc, "/api/alpha/server-workload-drafts")
        .await
        .expect_error(403, "Forbidden.");
    t.post_as(&disc, &format!("/api/v1/discovery-integrations/{id}/sync"), json!({}))
        .await
        .expect_error(403, "Forbidden.");
    let sw = t
        .user_with_role("sw@acme.test", json!([{"name": "Server Workloads", "read": true}]))
        .await;
    assert_eq!(
        t.get_as(&sw, "/api/alpha/server-workload-drafts").await.expect(200)["recordsTotal"],
        3
    );
    t.post(
        "/api/v1/discovery-integrations/00000000-0000-4000-8000-000000000001/sync",
        json!({}),
    )
    .await
    .expect_error(404, "Not found.");

    // The client secret: never shown, audited or stored in clear.
    for path in ["/api/v1/discovery-integrations", "/api/v1/audit-logs?per-page=1000"] {
        assert!(!t.get(path).await.text.contains(SECRET), "{path}");
    }
    if let Some(bytes) = t.sqlite_bytes() {
        assert!(!contains(&bytes, SECRET));
    }
    // Deleting the integration deletes its drafts; DELETE answers 200.
    t.delete(&format!("/api/v1/discovery-integrations/{id}"))
        .await
        .expect(200);
    assert_eq!(drafts(&t, "").await["recordsTotal"], 0);
    t.delete(&format!("/api/v1/discovery-integrations/{id}"))
        .await
        .expect(200);
}
