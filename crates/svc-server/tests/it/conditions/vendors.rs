//! Step 9 with the vendors of §5.4, against loopback fakes written from those shapes: the
//! `SensorA` token endpoint and device lookup, the `CloudSecurityAIntegrationApi` GraphQL
//! inventory. Each rule passing and failing, the vendor down, slow or failing, the caches (the
//! fake counts calls), and the client secret never leaving except to the token endpoint.

use serde_json::{Value, json};

use super::evaluation::{ask, decision, guarded};
use super::*;
use crate::support::cred::Rig;
use crate::support::cred::{Answer, Recorder, Seen, json_answer};
use crate::support::harness::{TestApp, contains, logs};

fn rfc3339(offset_secs: i64) -> String {
    let t = time::OffsetDateTime::now_utc() + time::Duration::seconds(offset_secs);
    t.format(&time::format_description::well_known::Rfc3339).unwrap()
}

/// The fake vendor: `/token` (client credentials), the SensorA device API and the GraphQL
/// inventory, answering by agent / resource id.
fn vendor(seen: &Seen) -> (u16, Value) {
    if seen.uri.starts_with("/token") {
        if seen.form_value("client_secret").as_deref() != Some(SECRET)
            || seen.form_value("grant_type").as_deref() != Some("client_credentials")
        {
            return (401, json!({"error": "invalid_client"}));
        }
        return (
            200,
            json!({"access_token": "vendor-token", "expires_in": 3600, "token_type": "bearer"}),
        );
    }
    if seen.header("authorization") != Some("Bearer vendor-token") {
        return (401, json!({"errors": ["unauthorized"]}));
    }
    if let Some(agent) = seen.uri.strip_prefix("/devices/entities/devices/v2?ids=") {
        let device = |last_seen: String, rfm: &str| {
            json!({"device_id": agent, "hostname": "Build-Host-1", "serial_number": "SN-1", "mac_address": "AA-BB-CC-DD-EE-01",
                   "local_ip": "10.1.2.3", "last_seen": last_seen, "reduced_functionality_mode": rfm})
        };
        let resources = match agent {
            "agent-ok" => vec![device(rfc3339(-30), "no")],
            "agent-stale" => vec![device(rfc3339(-7200), "no")],
            "agent-rfm" => vec![device(rfc3339(-30), "yes")],
            _ => vec![],
        };
        return (200, json!({"resources": resources}));
    }
    if seen.uri == "/graphql" {
        let body: Value = serde_json::from_slice(&seen.body).unwrap_or_default();
        let id = body["variables"]["providerUniqueIds"][0]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let node = |connected: bool| json!({"providerUniqueId": id, "type": "FUNCTION", "lastSeen": rfc3339(-60), "clusterConnected": connected});
        let nodes = match id.as_str() {
            "arn:fn:ok" => vec![node(true)],
            "arn:fn:detached" => vec![node(false)],
            _ => vec![],
        };
        return (200, json!({"data": {"cloudResources": {"nodes": nodes}}}));
    }
    (404, json!({}))
}

async fn sensor_integration(t: &TestApp, base: &str, token_url: &str) -> String {
    let mut b = sensor_a_body(token_url);
    b["endpoint"] = json!(base);
    let r = t.post("/api/v2/integrations", b).await;
    r.expect(201)["externalId"].as_str().unwrap().to_string()
}

async fn sensor_condition(t: &TestApp, integration: &str, flags: Value) -> String {
    let mut b = json!({"name": "managed device", "isActive": true, "integrationType": "SensorA", "integrationID": integration,
                       "maxLastSeenSeconds": 600});
    for (k, v) in flags.as_object().unwrap() {
        b[k] = v.clone();
    }
    condition(t, b).await
}

fn host(agent: &str) -> Value {
    json!({"host": {"hostname": "build-host-1", "systemSerialNumber": "SN-1", "sensors": {"sensorA": {"agentId": agent}},
                    "networkInterfaces": [{"name": "eth0", "macAddress": "aa:bb:cc:dd:ee:01", "ipv4Addresses": ["10.1.2.3"]}]}})
}

/// The integration once its first periodic sync is recorded.
async fn synced(t: &TestApp, id: &str) -> Value {
    for _ in 0..60 {
        let r = t.get(&format!("/api/v2/integrations/{id}")).await;
        if !r.expect(200)["lastSyncStatus"].is_null() {
            return r.body.clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    panic!("no sync recorded for integration {id}");
}

fn calls(v: &Recorder, prefix: &str) -> usize {
    v.seen().iter().filter(|s| s.uri.starts_with(prefix)).count()
}

#[tokio::test]
async fn a_sensor_a_condition_checks_the_device_and_each_enabled_match() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let v = Recorder::start(Answer::Func(vendor)).await;
    let i = sensor_integration(&t, &v.url, &format!("{}/token", v.url)).await;
    let all = json!({"matchHostname": true, "matchSerialNumber": true, "matchMacAddress": true, "matchLocalIP": true,
                     "preventRestrictedFunctionalityMode": true});
    let c = sensor_condition(&t, &i, all).await;
    guarded(&t, &rig, &[&c]).await;
    // §3.11: the periodic sync obtains a token and records it.
    let synced = synced(&t, &i).await;
    assert_eq!(synced["lastSyncStatus"], "Success");
    assert!(synced["lastSync"].is_string());
    let before = calls(&v, "/token");
    let r = ask(&t, &rig, host("agent-ok")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(decision(&t).await["accessConditions"][0]["result"], "Passed");
    // The token request: client credentials with the stored secret.
    let token_call = v.seen().into_iter().find(|s| s.uri.starts_with("/token")).unwrap();
    assert_eq!(token_call.form_value("client_id").as_deref(), Some("sensor-client"));
    // Cached: a second request asks the vendor nothing.
    ask(&t, &rig, host("agent-ok")).await.expect(200);
    assert_eq!(calls(&v, "/token"), before + 1);
    assert_eq!(calls(&v, "/devices/"), 1);

    // Each failure names what was compared.
    let mut cases: Vec<(Value, &str, Value)> = vec![
        (host("agent-unknown"), "sensorA.agentId", json!("not found")),
        (host("agent-stale"), "lastSeen", Value::Null),
        (host("agent-rfm"), "reducedFunctionalityMode", json!("yes")),
        (
            json!({"host": {"hostname": "build-host-1"}}),
            "sensorA.agentId",
            json!("missing: client.host.sensors.sensorA.agentId"),
        ),
    ];
    let mut other_host = host("agent-ok");
    other_host["host"]["hostname"] = json!("laptop");
    cases.push((other_host, "hostname", json!("laptop")));
    let mut other_serial = host("agent-ok");
    other_serial["host"]["systemSerialNumber"] = json!("SN-2");
    cases.push((other_serial, "systemSerialNumber", json!("SN-2")));
    let mut other_mac = host("agent-ok");
    other_mac["host"]["networkInterfaces"][0]["macAddress"] = json!("aa:bb:cc:dd:ee:02");
    cases.push((other_mac, "macAddress", json!("aa:bb:cc:dd:ee:02")));
    let mut other_ip = host("agent-ok");
    other_ip["host"]["networkInterfaces"][0]["ipv4Addresses"] = json!(["10.9.9.9"]);
    cases.push((other_ip, "localIP", json!("10.9.9.9")));
    for (client, attribute, actual) in cases {
        let r = ask(&t, &rig, client.clone()).await;
        assert_eq!(r.status, 403, "{client}: {}", r.text);
        let ev = decision(&t).await;
        assert_eq!(ev["outcome"]["reason"], "ConditionFailed");
        let c = &ev["accessConditions"][0];
        assert_eq!(c["result"], "Failed");
        assert_eq!(c["attribute"], attribute, "{client}: {c}");
        if !actual.is_null() {
            assert_eq!(c["actualValue"], actual, "{client}: {c}");
        }
    }
    // Flags not enabled are not compared.
    let lenient = sensor_condition(&t, &i, json!({})).await;
    let policy = decision(&t).await["accessPolicy"]["id"].as_str().unwrap().to_string();
    t.patch(
        &format!("/api/v2/access-policies/{policy}"),
        json!({"accessConditions": [lenient]}),
    )
    .await
    .expect(200);
    let mut anywhere = host("agent-ok");
    anywhere["host"]["hostname"] = json!("laptop");
    ask(&t, &rig, anywhere).await.expect(200);

    // The client secret went only to the token endpoint: not in events, audit, logs or storage.
    t.flush_events().await;
    for path in [
        "/api/v1/authorization-events?per-page=1000",
        "/api/v1/audit-logs?per-page=1000",
    ] {
        assert!(!t.get(path).await.text.contains(SECRET), "{path}");
    }
    assert!(!logs().contains(SECRET));
    assert!(!logs().contains("vendor-token"));
    if let Some(bytes) = t.sqlite_bytes() {
        assert!(!contains(&bytes, SECRET));
    }
}

#[tokio::test]
async fn a_vendor_that_fails_fails_the_condition_not_the_service() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let v = Recorder::start(json_answer(503, json!({"error": "maintenance"}))).await;
    let i = sensor_integration(&t, &v.url, &format!("{}/token", v.url)).await;
    let c = sensor_condition(&t, &i, json!({})).await;
    guarded(&t, &rig, &[&c]).await;
    // The sync records the failure.
    let s = synced(&t, &i).await;
    assert_eq!(s["lastSyncStatus"], "token endpoint answered 503");
    let v1 = t.get(&format!("/api/v1/integrations/{i}")).await;
    assert_eq!(v1.expect(200)["lastSyncStatus"], "token endpoint answered 503");
    // 5xx from the token endpoint.
    ask(&t, &rig, host("agent-ok"))
        .await
        .expect_error(403, "Not applicable for this request.");
    let a = decision(&t).await["accessConditions"][0].clone();
    assert_eq!(
        (a["attribute"].as_str(), a["actualValue"].as_str()),
        (Some("upstream"), Some("token endpoint answered 503"))
    );
    // Not cached: once the vendor is back, the condition passes.
    v.set(Answer::Func(vendor));
    ask(&t, &rig, host("agent-ok")).await.expect(200);
    // A 5xx from the device API.
    let down = Recorder::start(Answer::Func(|s: &Seen| {
        if s.uri.starts_with("/token") {
            (200, json!({"access_token": "vendor-token", "expires_in": 3600}))
        } else {
            (500, json!({"errors": ["boom"]}))
        }
    }))
    .await;
    let i2 = sensor_integration(&t, &down.url, &format!("{}/token", down.url)).await;
    let c2 = sensor_condition(&t, &i2, json!({})).await;
    let policy = decision(&t).await["accessPolicy"]["id"].as_str().unwrap().to_string();
    t.patch(
        &format!("/api/v2/access-policies/{policy}"),
        json!({"accessConditions": [c2]}),
    )
    .await
    .expect(200);
    ask(&t, &rig, host("agent-ok")).await.expect(403);
    let a = decision(&t).await["accessConditions"][0].clone();
    assert_eq!(a["actualValue"], "device lookup answered 500");
    // A vendor nobody listens for.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let gone = format!("http://127.0.0.1:{closed}");
    let i3 = sensor_integration(&t, &gone, &format!("{gone}/token")).await;
    let c3 = sensor_condition(&t, &i3, json!({})).await;
    t.patch(
        &format!("/api/v2/access-policies/{policy}"),
        json!({"accessConditions": [c3]}),
    )
    .await
    .expect(200);
    ask(&t, &rig, host("agent-ok")).await.expect(403);
    let a = decision(&t).await["accessConditions"][0].clone();
    assert_eq!(a["attribute"], "upstream");
    assert!(
        a["actualValue"].as_str().unwrap().starts_with("upstream unreachable"),
        "{a}"
    );
    // The service still serves.
    t.get("/api/v2/integrations").await.expect(200);
}

#[tokio::test]
async fn a_slow_vendor_fails_the_condition_within_the_upstream_timeout() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let slow = Recorder::start(Answer::Fixed(
        200,
        "application/json",
        br#"{"access_token":"t","expires_in":3600}"#.to_vec(),
        std::time::Duration::from_secs(15),
    ))
    .await;
    let i = sensor_integration(&t, &slow.url, &format!("{}/token", slow.url)).await;
    let c = sensor_condition(&t, &i, json!({})).await;
    guarded(&t, &rig, &[&c]).await;
    let started = std::time::Instant::now();
    ask(&t, &rig, host("agent-ok")).await.expect(403);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(13),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(decision(&t).await["accessConditions"][0]["attribute"], "upstream");
}

#[tokio::test]
async fn a_cloud_security_a_condition_checks_the_inventory() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let v = Recorder::start(Answer::Func(vendor)).await;
    let r = t
        .post(
            "/api/v2/integrations",
            json!({"name": "inventory", "isActive": true, "integrationType": "CloudSecurityAIntegrationApi", "syncFrequencySeconds": 300,
                   "endpoint": format!("{}/graphql", v.url), "clientId": "cs", "clientSecret": SECRET,
                   "tokenUrl": format!("{}/token", v.url), "audience": "cloudsec-api"}),
        )
        .await;
    let i = r.expect(201)["externalId"].as_str().unwrap().to_string();
    let c = condition(
        &t,
        json!({"name": "known function", "isActive": true, "integrationType": "CloudSecurityAIntegrationApi", "integrationID": i,
               "maxLastSeenSeconds": 3600, "serverless": true, "containerClusterConnected": true}),
    )
    .await;
    guarded(&t, &rig, &[&c]).await;
    let lambda = |arn: &str| json!({"cloudA": {"lambda": {"arn": arn}}});
    ask(&t, &rig, lambda("arn:fn:ok")).await.expect(200);
    let token_call = v.seen().into_iter().find(|s| s.uri.starts_with("/token")).unwrap();
    assert_eq!(token_call.form_value("audience").as_deref(), Some("cloudsec-api"));
    let query = v.seen().into_iter().find(|s| s.uri == "/graphql").unwrap();
    let q: Value = serde_json::from_slice(&query.body).unwrap();
    assert_eq!(q["variables"], json!({"providerUniqueIds": ["arn:fn:ok"]}));
    assert!(q["query"].as_str().unwrap().contains("cloudResources"));
    ask(&t, &rig, lambda("arn:fn:detached")).await.expect(403);
    let a = decision(&t).await["accessConditions"][0].clone();
    assert_eq!(a["attribute"], "clusterConnected");
    ask(&t, &rig, lambda("arn:fn:unknown")).await.expect(403);
    let a = decision(&t).await["accessConditions"][0].clone();
    assert_eq!(
        (a["attribute"].as_str(), a["actualValue"].as_str()),
        (Some("providerUniqueId"), Some("not found"))
    );
    // Nothing names a cloud resource: fails.
    ask(&t, &rig, json!({})).await.expect(403);
}
