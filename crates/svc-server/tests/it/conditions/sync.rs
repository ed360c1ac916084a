//! The periodic syncs of §3.11 and §3.12 (`lastSync`): once per period, and on one node only
//! when several share PostgreSQL.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::support::cred::{Answer, Recorder, Seen};
use crate::support::harness::{TestApp, use_postgres};

fn token(seen: &Seen) -> (u16, Value) {
    if seen.uri.starts_with("/token") && seen.form_value("client_secret").as_deref() == Some(SECRET) {
        return (200, json!({"access_token": "vendor-token", "expires_in": 3600}));
    }
    (401, json!({"error": "invalid_client"}))
}

/// Waits (≤ 15 s: the job runs every 5 s) until the integration's `lastSync` differs from
/// `before`, and returns it.
async fn synced(t: &TestApp, id: &str, before: &Value) -> Value {
    let started = Instant::now();
    loop {
        let i = t.get(&format!("/api/v2/integrations/{id}")).await;
        let i = i.expect(200).clone();
        if i["lastSync"] != *before {
            assert_eq!(i["lastSyncStatus"], "Success", "{i}");
            return i["lastSync"].clone();
        }
        assert!(started.elapsed() < Duration::from_secs(15), "no sync: {i}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn an_integration_syncs_once_per_period_on_one_node() {
    let a = TestApp::start().await;
    // Two nodes on PostgreSQL, both running the sync job; SQLite serves one node.
    let b = if use_postgres() { Some(a.join().await) } else { None };
    let vendor = Recorder::start(Answer::Func(token)).await;
    let mut body = sensor_a_body(&format!("{}/token", vendor.url));
    body["endpoint"] = json!(vendor.url);
    let r = a.post("/api/v2/integrations", body).await;
    let id = r.expect(201)["externalId"].as_str().unwrap().to_string();

    let first = synced(&a, &id, &Value::Null).await;
    // Another round of the job on every node: the sync of this period is done.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(
        vendor.count(),
        1,
        "one token request for the period, whichever node made it"
    );

    // The next period (syncFrequencySeconds 300) on every node's clock.
    a.advance_clock(301_000);
    if let Some(b) = &b {
        b.advance_clock(301_000);
    }
    let second = synced(&a, &id, &first).await;
    assert_ne!(first, second);
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(vendor.count(), 2, "one more for the second period");
}
