//! Fail fast when the database is gone (issue 32, docs/OPERATIONS.md): while PostgreSQL cannot be
//! reached, `/edge/v1/credentials` and management writes answer 503 with `Retry-After` within a
//! second, reads of the in-memory configuration keep working, health says what is degraded, and
//! service resumes within a second of the database's return. The database is cut off by a proxy
//! (`support::proxy`), not stopped: the other tests share it. Runs in the PostgreSQL pass.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::edge::*;
use crate::support::harness::{TestApp, use_postgres};
use crate::support::proxy::Proxy;

const KEY: &str = "pk_live_outage";
const UNAVAILABLE: &str = "Service temporarily unavailable. Please try again later.";

#[tokio::test]
async fn without_postgresql_writes_and_credentials_answer_503_at_once_reads_work_and_service_resumes() {
    if !use_postgres() {
        eprintln!("the database outage test runs in the PostgreSQL pass (SQLite has no server to lose)");
        return;
    }
    let admin = peer("SVC_TEST_POSTGRES_URL");
    let pg = url::Url::parse(&admin).unwrap();
    let proxy = Proxy::start(&format!("{}:{}", pg.host_str().unwrap(), pg.port().unwrap())).await;
    let t = TestApp::start_with(|env| {
        let direct = env["SVC_DATABASE_URL"].clone();
        env.insert("SVC_DATABASE_URL".into(), proxy.postgres_url(&direct));
    })
    .await;
    let oidc = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let ex = worked_example(&t, &oidc, KEY).await;
    let id_token = mock_id_token(&[("sub", "system:job:build"), ("aud", &t.base)]).await;
    let token = auth_oidc(&t, &ex.client_id, &id_token).await;
    let body = example_body(&id_token);
    let credentials = || {
        t.send(
            t.client
                .post(t.url("/edge/v1/credentials"))
                .bearer_auth(&token)
                .json(&body),
        )
    };
    credentials().await.expect(200);

    proxy.cut();
    let cut = Instant::now();
    // The first requests after the loss, before anything noticed it, and the ones after.
    let mut slowest = Duration::ZERO;
    for round in 0..5 {
        let started = Instant::now();
        let (edge, write, read) = tokio::join!(
            credentials(),
            t.post(
                "/api/v1/client-workloads",
                json!({"name": format!("during-outage-{round}"), "isActive": true}),
            ),
            t.get("/api/v1/client-workloads"),
        );
        let took = started.elapsed();
        slowest = slowest.max(took);
        edge.expect_error(503, UNAVAILABLE);
        assert_eq!(edge.header("retry-after"), Some("1"));
        write.expect_error(503, UNAVAILABLE);
        assert_eq!(write.header("retry-after"), Some("1"));
        let listed = read.expect(200)["clientWorkloads"].as_array().unwrap().clone();
        assert!(listed.iter().any(|w| w["name"] == "build-job"), "served from memory");
        assert!(took < Duration::from_secs(1), "round {round} took {took:?}");
    }
    let health = t.get("/api/v1/health").await;
    assert_eq!(health.expect(200)["status"], "Unhealthy");
    assert!(
        health.body["degraded"]
            .as_str()
            .is_some_and(|d| d.starts_with("database unreachable")),
        "{}",
        health.text
    );
    eprintln!(
        "outage: slowest of 5 rounds of (credentials, write, read) answered in {slowest:?}; {:?} since the cut",
        cut.elapsed()
    );

    proxy.restore().await;
    let back = Instant::now();
    let recovered = loop {
        let r = credentials().await;
        if r.status == 200 {
            break back.elapsed();
        }
        r.expect_error(503, UNAVAILABLE);
        assert!(
            back.elapsed() < Duration::from_secs(5),
            "not serving 5 s after the database returned"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    eprintln!("outage: /edge/v1/credentials answered 200 again {recovered:?} after the database returned");
    assert!(recovered < Duration::from_secs(1), "recovery took {recovered:?}");
    t.post(
        "/api/v1/client-workloads",
        json!({"name": "after-outage", "isActive": true}),
    )
    .await
    .expect(204);
    let health = t.get("/api/v1/health").await;
    assert_eq!(health.expect(200)["status"], "Healthy");
    assert_eq!(health.body["degraded"], serde_json::Value::Null);
    // Nothing written during the outage exists; what was written after does.
    let names: Vec<String> = t.get("/api/v1/client-workloads?per-page=100").await.expect(200)["clientWorkloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with("during-outage")), "{names:?}");
    assert!(names.contains(&"after-outage".to_string()));
}
