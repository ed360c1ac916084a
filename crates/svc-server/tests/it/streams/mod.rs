//! Log streams (contract §3.14, §5.4; issue 19 parts 3-4): the resource and its rules, delivery
//! to loopback HTTP event collectors (`support::hec`), the cursor that survives restarts, one
//! deliverer per stream across PostgreSQL nodes, and retention that keeps what a stream has not
//! delivered.

mod delivery;
mod nodes;
mod objects;
mod resource;
mod retention;

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::harness::TestApp;
use crate::support::hec::Collector;

pub const PATH: &str = "/api/v1/log-streams";

/// A service whose streams deliver every second.
pub async fn app() -> TestApp {
    TestApp::start_with(|env| {
        env.insert("SVC_LOG_STREAM_INTERVAL_SECONDS".into(), "1".into());
    })
    .await
}

/// A service whose delivery loop stays idle (an hour's interval): the test drives the cycles
/// ([`cycle`]) and the clock ([`long_lived`]).
pub async fn manual() -> TestApp {
    manual_with(|_| {}).await
}

/// [`manual`] with the environment adjusted by `f`.
pub async fn manual_with(f: impl FnOnce(&mut std::collections::BTreeMap<String, String>)) -> TestApp {
    let t = TestApp::start_with(|env| {
        env.insert("SVC_LOG_STREAM_INTERVAL_SECONDS".into(), "3600".into());
        f(env);
    })
    .await;
    long_lived(t)
}

/// The test's token replaced by an operator's (`svc admin token --role SuperAdmin`) valid for ten
/// years, so the clock can move by days; minting one writes no audit entry.
pub fn long_lived(mut t: TestApp) -> TestApp {
    let role = svc_server::domain::records::SUPER_ADMIN_ROLE;
    t.token = svc_server::service::auth::mint_cli_token(&t.app, role, 10 * 365 * 86_400).access_token;
    t
}

/// One delivery cycle of the node, on its clock.
pub async fn cycle(t: &TestApp) {
    svc_server::clock::scope(t.app.clock.clone(), svc_server::service::streams::cycle(&t.app)).await;
}

/// A fresh GUID-form `authenticationToken`.
pub fn guid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A fresh sensorA `apiKey` (`^[a-zA-Z0-9-]{32,40}$`).
pub fn api_key() -> String {
    format!("key-{}", uuid::Uuid::new_v4().simple())
}

/// A logAnalyticsA collector stream (plain http) to `c` with `token`.
pub fn la(c: &Collector, data_type: &str, token: &str) -> Value {
    json!({"type": "LogAnalyticsAHttpEventCollector", "name": "siem", "isActive": true, "dataType": data_type,
           "hecHostPort": c.host_port(), "authenticationToken": token, "hecSourceName": "svc-test", "tls": false})
}

/// A sensorA collector stream (plain http) to `c` with `key`.
pub fn sensor(c: &Collector, data_type: &str, key: &str) -> Value {
    json!({"type": "SensorAHttpEventCollector", "name": "sensor", "isActive": true, "dataType": data_type,
           "hecHostPort": c.host_port(), "apiKey": key, "hecSourceName": "svc-sensor", "tls": false})
}

/// POSTs a stream (201); returns its DTO.
pub async fn create(t: &TestApp, body: Value) -> Value {
    t.post(PATH, body).await.expect(201).clone()
}

pub fn id(v: &Value) -> String {
    v["externalId"].as_str().unwrap().to_string()
}

pub async fn get(t: &TestApp, id: &str) -> Value {
    t.get(&format!("{PATH}/{id}")).await.expect(200).clone()
}

/// A stream's counters: (in progress, completed, errored).
pub async fn counts(t: &TestApp, id: &str) -> (i64, i64, i64) {
    let v = get(t, id).await;
    let n = |k: &str| v[k].as_i64().unwrap();
    (
        n("inProgTransactionCount"),
        n("completedTransactionCount"),
        n("erroredTransactionCount"),
    )
}

/// Waits (up to `limit`) until `c` accepted at least `n` events, then two more cycles, so that
/// anything sent twice or too many would show; returns every accepted event.
pub async fn settled(c: &Collector, n: usize, limit: Duration) -> Vec<Value> {
    c.wait_events(n, limit).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    c.events()
}

/// A global entity (an agent controller) that `touch` changes: every write is one audit entry of
/// the default resource set, and nothing else (a resource set would add its built-in
/// integrations' entries, in its own set).
pub async fn marker(t: &TestApp) -> String {
    let r = t
        .post("/api/v1/agent-controllers", json!({"name": "marker", "isActive": true}))
        .await;
    r.expect(201)["externalId"].as_str().unwrap().to_string()
}

/// `n` audit entries.
pub async fn touch(t: &TestApp, marker: &str, n: usize) {
    for i in 0..n {
        t.patch(
            &format!("/api/v1/agent-controllers/{marker}"),
            json!({"version": format!("touch {i} {}", uuid::Uuid::new_v4())}),
        )
        .await
        .expect(200);
    }
}

/// Every audit entry of the default resource set, keyed by `externalId` (whatever the clock).
pub async fn audit_by_id(t: &TestApp) -> std::collections::BTreeMap<String, Value> {
    let items = t.audit("&start-date=2000-01-01T00:00:00Z").await;
    items.into_iter().map(|v| (id(&v), v)).collect()
}

/// The audit entries from `since` (a `createdAt`) on.
pub async fn audit_since(t: &TestApp, since: &Value) -> std::collections::BTreeMap<String, Value> {
    let since = svc_api::Timestamp::parse(since.as_str().unwrap()).unwrap().millis();
    audit_by_id(t)
        .await
        .into_iter()
        .filter(|(_, v)| {
            svc_api::Timestamp::parse(v["createdAt"].as_str().unwrap())
                .unwrap()
                .millis()
                >= since
        })
        .collect()
}

/// Polls `f` every 100 ms until it holds, for at most `limit`; returns whether it did.
pub async fn eventually<F, Fut>(limit: Duration, mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if f().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Asserts no record was delivered twice (by `externalId` or `meta.eventId`).
#[track_caller]
pub fn assert_unique(events: &[Value]) {
    let mut seen = std::collections::BTreeSet::new();
    for e in events {
        let key = e["externalId"]
            .as_str()
            .or_else(|| e["meta"]["eventId"].as_str())
            .expect("a record id")
            .to_string();
        assert!(seen.insert(key.clone()), "{key} delivered twice");
    }
}
