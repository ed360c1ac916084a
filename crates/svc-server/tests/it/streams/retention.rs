//! Retention (`SVC_EVENTS_RETENTION_DAYS`, issue 19 part 4): old audit entries and events are
//! deleted, never ones an active log stream has not delivered; 0 keeps everything.

use super::*;
use crate::support::harness::TestApp;
use crate::support::hec::Collector;

async fn purge(t: &TestApp) -> u64 {
    svc_server::clock::scope(t.app.clock.clone(), svc_server::service::jobs::retention(&t.app))
        .await
        .unwrap()
}

fn activities(entries: &std::collections::BTreeMap<String, serde_json::Value>) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = entries
        .values()
        .map(|e| {
            (
                e["activity"].as_str().unwrap().to_string(),
                e["target"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn retention_never_deletes_what_an_active_stream_has_not_delivered() {
    let t = manual().await;
    let token = guid();
    let c = Collector::start(&format!("Splunk {token}")).await;
    // An inactive stream from before the history: it holds nothing back.
    let mut idle = la(&c, "AuditLogs", &token);
    idle["isActive"] = serde_json::json!(false);
    create(&t, idle).await;
    let m = marker(&t).await;
    touch(&t, &m, 3).await;
    let history = audit_by_id(&t).await;
    let s = create(&t, la(&c, "AuditLogs", &token)).await;
    touch(&t, &m, 2).await;
    let undelivered: std::collections::BTreeMap<_, _> = audit_by_id(&t)
        .await
        .into_iter()
        .filter(|(k, _)| !history.contains_key(k))
        .collect();
    assert_eq!(undelivered.len(), 3, "the stream's creation and two touches");

    // 91 days later: the history goes, what the stream has not delivered stays.
    t.advance_clock(91 * 86_400_000);
    assert_eq!(purge(&t).await, history.len() as u64);
    assert_eq!(activities(&audit_by_id(&t).await), activities(&undelivered));

    // Delivered, it may go too.
    cycle(&t).await;
    assert_eq!(c.events().len(), 3);
    assert_eq!(get(&t, &id(&s)).await["completedTransactionCount"], 1);
    assert_eq!(purge(&t).await, 3);
    assert!(audit_by_id(&t).await.is_empty());
}

#[tokio::test]
async fn retention_of_zero_days_keeps_everything() {
    let t = long_lived(
        TestApp::start_with(|env| {
            env.insert("SVC_EVENTS_RETENTION_DAYS".into(), "0".into());
        })
        .await,
    );
    let m = marker(&t).await;
    touch(&t, &m, 2).await;
    let before = audit_by_id(&t).await;
    t.advance_clock(3650 * 86_400_000);
    assert_eq!(purge(&t).await, 0);
    assert_eq!(audit_by_id(&t).await, before);
}

/// The retention job's cutoff (`Store::retention_cutoff`): on PostgreSQL records go a UTC day at
/// a time, each kept until the whole of its day is older than the retention (its day's events
/// are dropped whole there); on SQLite each goes once it is older.
#[tokio::test]
async fn on_postgresql_the_retention_job_goes_a_day_at_a_time() {
    let t = manual().await;
    let m = marker(&t).await;
    touch(&t, &m, 2).await;
    let before = audit_by_id(&t).await;
    let day = 86_400_000;
    let now = svc_server::clock::now_millis();
    // Entries of an earlier day (a test started at midnight) go at once on both.
    let earlier = before
        .values()
        .filter(|v| {
            let at = svc_api::Timestamp::parse(v["createdAt"].as_str().unwrap()).unwrap();
            at.millis().div_euclid(day) < now.div_euclid(day)
        })
        .count() as u64;
    // 90 days on and half the rest of today: every entry is older than the retention, today is
    // not wholly so.
    t.advance_clock(90 * day + ((now.div_euclid(day) + 1) * day - now) / 2 + 1);
    if crate::support::harness::use_postgres() {
        assert_eq!(purge(&t).await, earlier);
        assert_eq!(audit_by_id(&t).await.len() as u64, before.len() as u64 - earlier);
        t.advance_clock(day);
        assert_eq!(purge(&t).await, before.len() as u64 - earlier);
    } else {
        assert_eq!(purge(&t).await, before.len() as u64);
    }
    assert!(audit_by_id(&t).await.is_empty());
}
