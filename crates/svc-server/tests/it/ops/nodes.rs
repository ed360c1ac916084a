//! Lost nodes (issue 32, docs/OPERATIONS.md): three nodes on PostgreSQL as child processes; the
//! one that delivers the log stream and is in the middle of the integration sync is killed with
//! `kill -9`. A survivor delivers the stream within one delivery period and takes the sync over
//! at once; every record is delivered at least once; the edge keeps answering on the others.
//! Runs in the PostgreSQL pass.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::conditions::sensor_a_body;
use crate::support::cred::{Answer, Recorder, Seen};
use crate::support::edge::*;
use crate::support::harness::{ADMIN_EMAIL, ADMIN_PASSWORD, TestApp, temp_dir, use_postgres};
use crate::support::hec::Collector;
use crate::support::node::Node;

const KEY: &str = "pk_live_lost_nodes";
/// The log streams' delivery period here (`SVC_LOG_STREAM_INTERVAL_SECONDS`).
const PERIOD: Duration = Duration::from_secs(2);

fn vendor_token(seen: &Seen) -> (u16, Value) {
    if seen.uri.starts_with("/token") {
        return (200, json!({"access_token": "vendor-token", "expires_in": 3600}));
    }
    (404, json!({}))
}

async fn login(client: &reqwest::Client, n: &Node) -> String {
    let r: Value = client
        .post(n.url("/api/v1/login"))
        .json(&json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    r["accessToken"].as_str().unwrap().to_string()
}

/// A management write through `n` (an agent controller changed): one audit entry, one record
/// of the stream.
async fn write(client: &reqwest::Client, n: &Node, token: &str, marker: &str, i: usize) {
    let r = client
        .patch(n.url(&format!("/api/v1/agent-controllers/{marker}")))
        .bearer_auth(token)
        .json(&json!({"version": format!("marker-{i}")}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
}

/// The ids of every audit entry from `since` (ms) on, through `n`.
async fn audit_ids(client: &reqwest::Client, n: &Node, token: &str, since: i64) -> Vec<String> {
    let r: Value = client
        .get(n.url("/api/v1/audit-logs?per-page=1000&start-date=2000-01-01T00:00:00Z"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    r["auditLogs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            svc_api::Timestamp::parse(e["createdAt"].as_str().unwrap())
                .unwrap()
                .millis()
                >= since
        })
        .map(|e| e["externalId"].as_str().unwrap().to_string())
        .collect()
}

/// The ids of the records the collector accepted.
fn delivered(c: &Collector) -> std::collections::BTreeSet<String> {
    c.events()
        .iter()
        .filter_map(|e| e["externalId"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn a_killed_node_s_stream_and_sync_move_to_a_survivor_within_a_period() {
    if !use_postgres() {
        eprintln!("lost nodes run in the PostgreSQL pass (SQLite serves one node)");
        return;
    }
    // The database and the configuration, made through an in-process node that then stops.
    let collector = Collector::start("Splunk 0c3a4a36-8e40-4d4c-9d63-7e0bd4c0b1a1").await;
    let mut t = TestApp::start_with(|env| {
        env.insert("SVC_LOG_STREAM_INTERVAL_SECONDS".into(), PERIOD.as_secs().to_string());
    })
    .await;
    let oidc = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let ex = worked_example(&t, &oidc, KEY).await;
    let id_token = mock_id_token(&[("sub", "system:job:build"), ("aud", &t.base)]).await;
    let edge_token = auth_oidc(&t, &ex.client_id, &id_token).await;
    let body = example_body(&id_token);
    let marker = t
        .post("/api/v1/agent-controllers", json!({"name": "marker", "isActive": true}))
        .await
        .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let env = t.env.clone();
    t.shutdown().await;

    // Node A alone: it takes the stream and the integration's sync, which the vendor stalls.
    let dir = temp_dir();
    let client = reqwest::Client::new();
    let mut a = Node::spawn(&dir, &env).await.unwrap();
    let token = login(&client, &a).await;
    let stream = client
        .post(a.url("/api/v1/log-streams"))
        .bearer_auth(&token)
        .json(
            &json!({"type": "LogAnalyticsAHttpEventCollector", "name": "siem", "isActive": true,
                      "dataType": "AuditLogs", "hecHostPort": collector.host_port(),
                      "authenticationToken": "0c3a4a36-8e40-4d4c-9d63-7e0bd4c0b1a1",
                      "hecSourceName": "svc-test", "tls": false}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 201);
    let stream: Value = stream.json().await.unwrap();
    // Delivery starts with the stream's own creation.
    let since = svc_api::Timestamp::parse(stream["createdAt"].as_str().unwrap())
        .unwrap()
        .millis();
    for i in 0..3 {
        write(&client, &a, &token, &marker, i).await;
    }
    assert!(
        collector.wait_events(3, Duration::from_secs(10)).await.len() >= 3,
        "node A delivers the stream"
    );
    let vendor = Recorder::start(Answer::Fixed(
        200,
        "application/json",
        b"{}".to_vec(),
        Duration::from_secs(60),
    ))
    .await;
    let mut integration = sensor_a_body(&format!("{}/token", vendor.url));
    integration["endpoint"] = json!(vendor.url);
    let r = client
        .post(a.url("/api/v2/integrations"))
        .bearer_auth(&token)
        .json(&integration)
        .send()
        .await
        .unwrap();
    let integration: Value = r.json().await.unwrap();
    let integration = integration["externalId"].as_str().unwrap().to_string();
    let started = Instant::now();
    while vendor.count() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "node A never started the sync"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let in_turn = Instant::now();

    // B and C join; the edge is used on them throughout.
    let b = Node::spawn(&dir, &env).await.unwrap();
    let c = Node::spawn(&dir, &env).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, bad) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut load = vec![];
    for n in [&b, &c] {
        let (client, url, edge_token, body, stop, ok, bad) = (
            client.clone(),
            n.url("/edge/v1/credentials"),
            edge_token.clone(),
            body.clone(),
            stop.clone(),
            ok.clone(),
            bad.clone(),
        );
        load.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let r = client
                    .post(&url)
                    .bearer_auth(&edge_token)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                let status = r.status().as_u16();
                let text = r.text().await.unwrap();
                if status == 200 && text.contains(KEY) {
                    ok.fetch_add(1, Ordering::Relaxed);
                } else {
                    eprintln!("edge answer on a survivor: {status} {text}");
                    bad.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    // Records written through B while A still delivers.
    for i in 3..6 {
        write(&client, &b, &token, &marker, i).await;
    }
    assert!(
        in_turn.elapsed() < Duration::from_secs(9),
        "A is still in its sync's turn"
    );

    // kill -9 of A, in the middle of its sync and holding the stream.
    a.kill9().await;
    let killed = Instant::now();
    *vendor.answer.lock().unwrap() = Answer::Func(vendor_token);
    let before = audit_ids(&client, &b, &token, since).await;
    for i in 6..9 {
        write(&client, &c, &token, &marker, i).await;
    }
    let after: Vec<String> = audit_ids(&client, &b, &token, since)
        .await
        .into_iter()
        .filter(|id| !before.contains(id))
        .collect();
    assert_eq!(after.len(), 3, "three entries written after the kill");
    // The stream: the records written after the kill are delivered by a survivor.
    let delivered_at = loop {
        let got = delivered(&collector);
        if after.iter().all(|id| got.contains(id)) {
            break killed.elapsed();
        }
        assert!(
            killed.elapsed() < Duration::from_secs(20),
            "no survivor delivered the stream"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // The sync: recorded by a survivor.
    let synced = loop {
        let i: Value = client
            .get(b.url(&format!("/api/v2/integrations/{integration}")))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if i["lastSyncStatus"] == "Success" {
            break killed.elapsed();
        }
        assert!(
            killed.elapsed() < Duration::from_secs(20),
            "no survivor took the sync over: {i}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    stop.store(true, Ordering::Relaxed);
    for l in load {
        l.await.unwrap();
    }
    eprintln!(
        "lost node: stream delivered by a survivor {delivered_at:?} after kill -9 (period {PERIOD:?}), integration \
         synced {synced:?} after; edge on the survivors {} answers, {} not 200",
        ok.load(Ordering::Relaxed),
        bad.load(Ordering::Relaxed)
    );
    assert!(delivered_at < PERIOD + Duration::from_secs(2), "{delivered_at:?}");
    // The survivors' sync job looks every 5 s (waiting for the dead node's lock, which its
    // session's end released): within that and the vendor's answer.
    assert!(synced < Duration::from_secs(10), "{synced:?}");
    assert_eq!(bad.load(Ordering::Relaxed), 0);
    assert!(ok.load(Ordering::Relaxed) > 0);
    // At least once, never lost: every audit entry reached the collector.
    tokio::time::sleep(PERIOD).await;
    let got = delivered(&collector);
    for id in audit_ids(&client, &b, &token, since).await {
        assert!(got.contains(&id), "{id} was never delivered");
    }
    drop((b, c));
}
