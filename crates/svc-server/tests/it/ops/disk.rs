//! A full disk under SQLite (issue 32, docs/OPERATIONS.md): writes and `/edge/v1/credentials`
//! fail closed with 503 and the error body while the data directory has no room, reads work,
//! nothing is corrupted, and service resumes by itself once space is freed. On a tmpfs of the
//! test's own (`support::tmpfs`; skipped where mounting is impossible).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::edge::*;
use crate::support::harness::{TestApp, use_postgres};
use crate::support::tmpfs::Tmpfs;

const KEY: &str = "pk_live_full_disk";
const UNAVAILABLE: &str = "Service temporarily unavailable. Please try again later.";

#[tokio::test]
async fn a_full_disk_fails_closed_with_503_corrupts_nothing_and_service_resumes_when_space_is_freed() {
    if use_postgres() {
        eprintln!("the full-disk test is SQLite's (PostgreSQL's disk is the database server's)");
        return;
    }
    let Some(fs) = Tmpfs::mount(24 << 20) else {
        eprintln!("skipped: a full disk needs a tmpfs of the test's own");
        return;
    };
    let db = fs.join("svc.db");
    let t = TestApp::start_with(|env| {
        env.insert("SVC_DATABASE_URL".into(), format!("sqlite://{}", db.display()));
        // A request answers once its events are stored or refused: not after a long wait.
        env.insert("SVC_EVENTS_COMMIT_TIMEOUT_MS".into(), "2000".into());
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
    let mut issued = 1u64;

    let filler = fs.fill();
    // The WAL reuses its space for a while; requests go on until the disk refuses one.
    let started = Instant::now();
    let refused = loop {
        let r = credentials().await;
        match r.status {
            200 => issued += 1,
            503 => break r,
            other => panic!("unexpected {other}: {}", r.text),
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the full disk never refused a request"
        );
    };
    refused.expect_error(503, UNAVAILABLE);
    assert_eq!(refused.header("retry-after"), Some("1"));
    // From now on at once, and writes too; reads work.
    for i in 0..3 {
        let at = Instant::now();
        let r = credentials().await;
        r.expect_error(503, UNAVAILABLE);
        assert!(at.elapsed() < Duration::from_secs(1), "{:?}", at.elapsed());
        let w = t
            .post(
                "/api/v1/client-workloads",
                json!({"name": format!("on-a-full-disk-{i}"), "isActive": true}),
            )
            .await;
        w.expect_error(503, UNAVAILABLE);
        assert_eq!(w.header("retry-after"), Some("1"));
    }
    let listed = t.get("/api/v1/client-workloads").await;
    assert!(listed.expect(200)["clientWorkloads"].to_string().contains("build-job"));
    let health = t.get("/api/v1/health").await;
    assert_eq!(health.expect(200)["status"], "Unhealthy");
    assert!(
        health.body["degraded"]
            .as_str()
            .is_some_and(|d| d.starts_with("database not writable")),
        "{}",
        health.text
    );

    std::fs::remove_file(&filler).unwrap();
    let freed = Instant::now();
    let resumed = loop {
        let r = credentials().await;
        if r.status == 200 {
            issued += 1;
            break freed.elapsed();
        }
        r.expect_error(503, UNAVAILABLE);
        if freed.elapsed() > Duration::from_secs(10) {
            let logs = crate::support::harness::logs();
            let tail: Vec<&str> = logs
                .lines()
                .filter(|l| l.contains("WARN") || l.contains("ERROR"))
                .collect();
            panic!(
                "no service 10 s after space was freed; log:\n{}",
                tail[tail.len().saturating_sub(30)..].join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    eprintln!("full disk: /edge/v1/credentials answered 200 again {resumed:?} after space was freed");
    assert!(resumed < Duration::from_secs(2), "{resumed:?}");
    t.post(
        "/api/v1/client-workloads",
        json!({"name": "after-the-full-disk", "isActive": true}),
    )
    .await
    .expect(204);
    assert_eq!(t.get("/api/v1/health").await.body["status"], "Healthy");

    // Nothing corrupted: SQLite's own check, every answered request's events stored, and a
    // restart loads everything.
    t.flush_events().await;
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    let check: String = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(check, "ok");
    pool.close().await;
    let events = t
        .get("/api/v1/authorization-events?per-page=1&span-last-minutes=60")
        .await
        .expect(200)["recordsTotal"]
        .as_u64()
        .unwrap();
    assert!(
        events >= issued,
        "{events} authorization events for {issued} credentials issued"
    );
    let t = t.restart().await;
    let names = t.get("/api/v1/client-workloads?per-page=100").await.expect(200)["clientWorkloads"].to_string();
    assert!(
        names.contains("after-the-full-disk") && !names.contains("on-a-full-disk"),
        "{names}"
    );
    drop(t);
    drop(fs);
}
