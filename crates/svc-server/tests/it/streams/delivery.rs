//! Delivery (§3.14, §5.4) to loopback HTTP event collectors: the framing and headers of both HEC
//! variants, records equal to what the event lists return, where a stream starts and stops, a
//! sink that is down or failing, the counters, the 1,000-record transaction, a restart in the
//! middle of a transaction, the 24 h give-up, and TLS without verification.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::*;
use crate::support::cred::Rig;
use crate::support::harness::TestApp;
use crate::support::hec::{Answer, Collector};

const WAIT: Duration = Duration::from_secs(20);

/// Waits until the collector has exactly the records of `expected` (no more), each once.
async fn delivered_exactly(c: &Collector, expected: &BTreeMap<String, Value>) {
    let events = settled(c, expected.len(), WAIT).await;
    assert_unique(&events);
    let got: BTreeMap<String, Value> = events.into_iter().map(|v| (id(&v), v)).collect();
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "the stream delivers exactly these records"
    );
    for (k, v) in expected {
        assert_eq!(&got[k], v, "the delivered record is what the list API shows");
    }
}

/// An API-key credential provider attached to the rig's policy: every `issue` is one
/// `/edge/v1/credentials` request (authorization events and a workload event).
async fn edge(t: &TestApp) -> Rig {
    let rig = Rig::new(t).await;
    let cp = rig
        .provider(
            t,
            json!({"type": "apikey", "name": "k", "isActive": true, "apiKey": "edge-key"}),
        )
        .await;
    rig.attach(t, &cp).await;
    rig
}

/// `n` `/edge/v1/credentials` requests, ten at a time.
async fn issue(t: &TestApp, rig: &Rig, n: usize) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(10) {
        futures_util::future::join_all(chunk.iter().map(|_| rig.issue(t, "ApiKey"))).await;
    }
    t.flush_events().await;
}

/// Every authorization or workload event of the default resource set, by `meta.eventId` (all
/// pages).
async fn events_by_id(t: &TestApp, path: &str, key: &str) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for page in 1.. {
        let r = t
            .get(&format!(
                "{path}?per-page=1000&page={page}&start-date=2000-01-01T00:00:00Z"
            ))
            .await;
        let items = r.expect(200)[key].as_array().unwrap().clone();
        let n = items.len();
        out.extend(
            items
                .into_iter()
                .map(|v| (v["meta"]["eventId"].as_str().unwrap().to_string(), v)),
        );
        if n < 1000 {
            break;
        }
    }
    out
}

/// Asserts the delivered events are exactly `expected`'s, each once (a short message, not the sets).
#[track_caller]
fn assert_same_events(events: &[Value], expected: &BTreeMap<String, Value>) {
    assert_unique(events);
    let got = event_ids(events);
    let missing = expected.keys().filter(|k| !got.contains(*k)).count();
    let extra = got.iter().filter(|k| !expected.contains_key(*k)).count();
    assert_eq!(
        (missing, extra),
        (0, 0),
        "missing and unexpected records of {}",
        expected.len()
    );
}

fn event_ids(events: &[Value]) -> BTreeSet<String> {
    events
        .iter()
        .map(|e| e["meta"]["eventId"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn hec_transactions_are_framed_as_the_contract_says_for_both_collectors() {
    let t = TestApp::start_with(|env| {
        env.insert("SVC_LOG_STREAM_INTERVAL_SECONDS".into(), "1".into());
        env.insert("SVC_HEC_AUTH_SCHEME".into(), "HecToken".into());
    })
    .await;
    let (token, key) = (guid(), api_key());
    let la_c = Collector::start(&format!("HecToken {token}")).await;
    let sensor_c = Collector::start(&format!("Bearer {key}")).await;
    let a = create(&t, la(&la_c, "AuditLogs", &token)).await;
    let b = create(&t, sensor(&sensor_c, "AuditLogs", &key)).await;
    let m = marker(&t).await;
    touch(&t, &m, 3).await;
    for (c, stream, auth, source) in [
        (&la_c, &a, format!("HecToken {token}"), "svc-test"),
        (&sensor_c, &b, format!("Bearer {key}"), "svc-sensor"),
    ] {
        let expected = audit_since(&t, &stream["createdAt"]).await;
        delivered_exactly(c, &expected).await;
        let mut first = None;
        for r in c.requests() {
            assert_eq!(
                (r.method.as_str(), r.path.as_str(), r.status),
                ("POST", "/services/collector/event", 200)
            );
            assert_eq!(r.header("authorization"), Some(auth.as_str()));
            assert_eq!(r.header("content-type"), Some("application/json"));
            // Concatenated objects, each `{"time", "source", "sourcetype", "event"}` in that order.
            let body = String::from_utf8(r.body.clone()).unwrap();
            let mut rest = body.as_str();
            for o in r.objects() {
                let keys: Vec<&str> = o.as_object().unwrap().keys().map(String::as_str).collect();
                assert_eq!(keys, ["time", "source", "sourcetype", "event"]);
                assert_eq!(
                    (o["source"].as_str(), o["sourcetype"].as_str()),
                    (Some(source), Some("_json"))
                );
                let ms = svc_api::Timestamp::parse(o["event"]["createdAt"].as_str().unwrap())
                    .unwrap()
                    .millis();
                let time = format!("{{\"time\":{}.{:03},", ms / 1000, ms % 1000);
                assert!(rest.starts_with(&time), "{time} in {rest}");
                // The object as written: the time as above (three decimals), then the rest.
                let written = serde_json::to_string(&o).unwrap();
                let text = format!("{time}{}", &written[written.find(',').unwrap() + 1..]);
                assert_eq!(
                    &rest[..text.len()],
                    text,
                    "objects follow each other with nothing between"
                );
                rest = &rest[text.len()..];
                first.get_or_insert(o["event"].clone());
            }
            assert!(rest.is_empty());
        }
        // A new stream starts with its own creation, not with the history.
        let first = first.unwrap();
        assert_eq!(
            (first["activity"].as_str(), first["target"].as_str()),
            (Some("Created"), stream["externalId"].as_str())
        );
    }
    assert!(
        audit_by_id(&t)
            .await
            .values()
            .any(|v| v["activity"] == "LoginSucceeded"),
        "history before the streams exists and was not delivered"
    );
    let (in_progress, completed, errored) = counts(&t, &id(&a)).await;
    assert!(completed >= 1);
    assert_eq!((in_progress, errored), (0, 0));
}

#[tokio::test]
async fn records_equal_what_the_event_lists_return_for_every_data_type() {
    let t = app().await;
    let auth = format!("Splunk {}", guid());
    let token = auth.trim_start_matches("Splunk ").to_string();
    let (ca, cw) = (Collector::start(&auth).await, Collector::start(&auth).await);
    create(&t, la(&ca, "AccessAuthorizationEvents", &token)).await;
    create(&t, la(&cw, "WorkloadEvents", &token)).await;
    let rig = edge(&t).await;
    issue(&t, &rig, 3).await;
    // A refused request too: its events carry reasons and fewer fields.
    rig.request(&t, "UsernamePassword", json!({})).await;
    t.flush_events().await;
    for (c, path, key) in [
        (&ca, "/api/v1/authorization-events", "authorizationEvents"),
        (&cw, "/api/v1/workload-events", "workloadEvents"),
    ] {
        let expected = events_by_id(&t, path, key).await;
        assert!(!expected.is_empty());
        let events = settled(c, expected.len(), WAIT).await;
        assert_same_events(&events, &expected);
        for e in &events {
            assert_eq!(e, &expected[e["meta"]["eventId"].as_str().unwrap()], "{path}");
        }
    }
}

#[tokio::test]
async fn an_inactive_stream_delivers_nothing_and_resumes_where_it_stopped() {
    let t = app().await;
    let token = guid();
    let c = Collector::start(&format!("Splunk {token}")).await;
    let s = create(&t, la(&c, "AuditLogs", &token)).await;
    let sid = id(&s);
    let m = marker(&t).await;
    touch(&t, &m, 2).await;
    // Its Created entry, the marker's and two touches.
    assert_eq!(c.wait_events(4, WAIT).await.len(), 4);
    t.patch(&format!("{PATH}/{sid}"), json!({"isActive": false}))
        .await
        .expect(200);
    touch(&t, &m, 3).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(c.events().len(), 4, "an inactive stream delivers nothing");
    t.patch(&format!("{PATH}/{sid}"), json!({"isActive": true}))
        .await
        .expect(200);
    let expected = audit_since(&t, &s["createdAt"]).await;
    assert_eq!(expected.len(), 4 + 1 + 3 + 1);
    delivered_exactly(&c, &expected).await;
}

#[tokio::test]
async fn a_deleted_stream_stops_at_once_and_its_cursor_goes() {
    let t = app().await;
    let token = guid();
    let c = Collector::start(&format!("Splunk {token}")).await;
    // A failing collector: the stream retries its transaction every cycle until it is deleted.
    c.set(Answer::Status(500));
    let s = create(&t, la(&c, "AuditLogs", &token)).await;
    let sid = id(&s);
    assert!(c.wait_requests(2, WAIT).await.len() >= 2, "retried every cycle");
    t.delete(&format!("{PATH}/{sid}")).await.expect(204);
    assert!(t.app.store.stream_cursor(sid.parse().unwrap()).await.unwrap().is_none());
    // A request that was already on its way may still land.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let n = c.requests().len();
    let m = marker(&t).await;
    touch(&t, &m, 2).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(c.requests().len(), n, "a deleted stream sends nothing more");
}

#[tokio::test]
async fn a_sink_that_is_down_gets_the_backlog_after_recovery_with_nothing_lost() {
    svc_server::metrics::install();
    let t = app().await;
    let token = guid();
    let c = Collector::start(&format!("Splunk {token}")).await;
    c.down();
    let s = create(&t, la(&c, "AuditLogs", &token)).await;
    let sid = id(&s);
    let m = marker(&t).await;
    touch(&t, &m, 5).await;
    assert!(
        eventually(WAIT, || async {
            get(&t, &sid).await["erroredTransactionCount"].as_i64() >= Some(2)
        })
        .await,
        "errored transactions are counted"
    );
    let v = get(&t, &sid).await;
    assert_eq!(v["completedTransactionCount"], 0);
    c.up().await;
    let expected = audit_since(&t, &s["createdAt"]).await;
    delivered_exactly(&c, &expected).await;
    let v = get(&t, &sid).await;
    assert!(v["completedTransactionCount"].as_i64() >= Some(1), "{v}");
    assert_eq!(v["inProgTransactionCount"], 0);

    // A collector that answers 503: the same transaction is sent again, records unchanged.
    c.set(Answer::Status(503));
    touch(&t, &m, 2).await;
    let failed = |c: &Collector| c.requests().into_iter().filter(|r| r.status == 503).collect::<Vec<_>>();
    assert!(eventually(WAIT, || async { failed(&c).len() >= 2 }).await);
    touch(&t, &m, 1).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let retries = failed(&c);
    assert!(
        retries.windows(2).all(|w| w[0].body == w[1].body),
        "a retry carries the same records"
    );
    assert_eq!(
        retries[0].objects().len(),
        2,
        "the entry written meanwhile waits for the next transaction"
    );
    c.set(Answer::Accept);
    let expected = audit_since(&t, &s["createdAt"]).await;
    delivered_exactly(&c, &expected).await;

    let seq = v["id"].as_i64().unwrap();
    let text = svc_server::http::scrape::render(&t.app).await;
    for (name, label) in [
        ("svc_log_stream_transactions_total", "result=\"errored\""),
        ("svc_log_stream_transactions_total", "result=\"completed\""),
        ("svc_log_stream_lag_seconds", ""),
    ] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(name) && l.contains(&format!("stream=\"{seq}\"")) && l.contains(label)),
            "{name} {label} for stream {seq}"
        );
    }
}

#[tokio::test]
async fn a_transaction_carries_at_most_1000_records_and_the_rest_follows() {
    let t = app().await;
    let token = guid();
    let c = Collector::start(&format!("Splunk {token}")).await;
    let mut body = la(&c, "AccessAuthorizationEvents", &token);
    body["isActive"] = json!(false);
    let s = create(&t, body).await;
    let rig = edge(&t).await;
    issue(&t, &rig, 360).await;
    let expected = events_by_id(&t, "/api/v1/authorization-events", "authorizationEvents").await;
    assert!(expected.len() > 1000, "{}", expected.len());
    // Activated with the backlog in place: the first transaction is full.
    t.patch(&format!("{PATH}/{}", id(&s)), json!({"isActive": true}))
        .await
        .expect(200);
    let events = c.wait_events(expected.len(), Duration::from_secs(30)).await;
    assert_same_events(&events, &expected);
    let sizes: Vec<usize> = c.accepted().iter().map(|r| r.objects().len()).collect();
    assert_eq!(sizes[0], 1000, "{sizes:?}");
    assert!(sizes.iter().all(|n| *n <= 1000), "{sizes:?}");
}

/// A backlog larger than one transaction is sent in full transactions one after the other, in
/// one cycle, not one transaction per cycle: a stream keeps up with the events it carries
/// (docs/API-CONVENTIONS.md). A failed transaction still waits for the next cycle.
#[tokio::test]
async fn a_backlog_is_sent_in_consecutive_transactions_within_one_cycle() {
    let t = manual().await;
    let token = guid();
    let c = Collector::start(&format!("Splunk {token}")).await;
    let s = create(&t, la(&c, "AccessAuthorizationEvents", &token)).await;
    let sid = id(&s);
    let rig = edge(&t).await;
    issue(&t, &rig, 360).await;
    let expected = events_by_id(&t, "/api/v1/authorization-events", "authorizationEvents").await;
    assert!(expected.len() > 1000, "{}", expected.len());
    cycle(&t).await;
    let sizes: Vec<usize> = c.accepted().iter().map(|r| r.objects().len()).collect();
    assert_eq!(sizes, [1000, expected.len() - 1000], "one cycle");
    assert_same_events(&c.events(), &expected);
    assert_eq!(counts(&t, &sid).await, (0, 2, 0));
    // A sink that fails: one attempt this cycle, then the next.
    c.set(Answer::Status(500));
    issue(&t, &rig, 360).await;
    cycle(&t).await;
    assert_eq!(counts(&t, &sid).await, (0, 2, 1));
    c.set(Answer::Accept);
    cycle(&t).await;
    assert_eq!(counts(&t, &sid).await, (0, 4, 1));
}

/// Issue 34: after a failed transaction, the records stored during the fault do not wait a period
/// more. The retry carries the records of its first attempt (§3.14), and once it is acknowledged
/// the rest follows in the same cycle, however small it is: a stream that was down catches up
/// without waiting for periods.
#[tokio::test]
async fn after_a_fault_the_records_stored_meanwhile_follow_the_retry_in_the_same_cycle() {
    let t = manual().await;
    let token = guid();
    let c = Collector::start(&format!("Splunk {token}")).await;
    c.set(Answer::Status(500));
    let s = create(&t, la(&c, "AuditLogs", &token)).await;
    let sid = id(&s);
    let m = marker(&t).await;
    touch(&t, &m, 2).await;
    cycle(&t).await;
    assert_eq!(counts(&t, &sid).await, (0, 0, 1));
    // Written during the fault, after the first attempt: not part of the failing transaction.
    touch(&t, &m, 3).await;
    cycle(&t).await;
    assert_eq!(counts(&t, &sid).await, (0, 0, 2));
    let failed = c.requests();
    assert!(
        failed.iter().all(|r| r.body == failed[0].body),
        "a retry carries the same records"
    );
    let first = failed[0].objects().len();
    c.set(Answer::Accept);
    cycle(&t).await;
    // One cycle: the retry, then at once everything stored meanwhile.
    let expected = audit_since(&t, &s["createdAt"]).await;
    delivered_exactly(&c, &expected).await;
    let sizes: Vec<usize> = c.accepted().iter().map(|r| r.objects().len()).collect();
    assert_eq!(sizes, [first, expected.len() - first], "the retry, then the rest");
    assert_eq!(counts(&t, &sid).await, (0, 2, 2));
    // Caught up: the next cycle has nothing to send.
    cycle(&t).await;
    assert_eq!(c.accepted().len(), 2);
}

#[tokio::test]
async fn a_restart_in_the_middle_of_a_transaction_resumes_without_loss_or_duplicates() {
    let t = app().await;
    let token = guid();
    let c = Collector::start(&format!("Splunk {token}")).await;
    c.set(Answer::Delay(Duration::from_secs(3)));
    let mut body = la(&c, "AccessAuthorizationEvents", &token);
    body["isActive"] = json!(false);
    let s = create(&t, body).await;
    let sid = id(&s);
    let rig = edge(&t).await;
    issue(&t, &rig, 360).await;
    let expected = events_by_id(&t, "/api/v1/authorization-events", "authorizationEvents").await;
    t.patch(&format!("{PATH}/{sid}"), json!({"isActive": true}))
        .await
        .expect(200);
    assert!(
        eventually(WAIT, || async { get(&t, &sid).await["inProgTransactionCount"] == 1 }).await,
        "a transaction is in flight"
    );
    let t = t.restart().await;
    c.set(Answer::Accept);
    let events = settled(&c, expected.len(), Duration::from_secs(30)).await;
    assert_same_events(&events, &expected);
    let (in_progress, _, errored) = counts(&t, &sid).await;
    assert_eq!((in_progress, errored), (0, 0));
}

#[tokio::test]
async fn an_errored_transaction_is_retried_for_24_hours_then_dropped() {
    let t = manual().await;
    let token = guid();
    let c = Collector::start(&format!("Splunk {token}")).await;
    c.set(Answer::Status(500));
    let s = create(&t, la(&c, "AuditLogs", &token)).await;
    let sid = id(&s);
    let m = marker(&t).await;
    touch(&t, &m, 2).await;
    cycle(&t).await;
    assert_eq!(counts(&t, &sid).await, (0, 0, 1));
    t.advance_clock(23 * 3_600_000);
    cycle(&t).await;
    // Written after the first attempt: not part of the failing transaction.
    touch(&t, &m, 1).await;
    t.advance_clock(2 * 3_600_000);
    cycle(&t).await;
    let sent = c.requests();
    assert_eq!(sent.len(), 3);
    assert!(
        sent.iter().all(|r| r.body == sent[0].body),
        "the same records each time"
    );
    assert_eq!(sent[0].objects().len(), 4);
    assert_eq!(counts(&t, &sid).await, (0, 0, 3));
    // Dropped after 24 h: the cursor moved past it; the next transaction has the newer entry only.
    c.set(Answer::Accept);
    cycle(&t).await;
    let events = c.events();
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0]["activity"], "Patched");
    assert_eq!(counts(&t, &sid).await, (0, 1, 3));
    cycle(&t).await;
    assert_eq!(c.requests().len(), 4, "nothing more to send");
}

#[tokio::test]
async fn tls_without_verification_reaches_a_self_signed_collector_and_full_verification_refuses_it() {
    let t = app().await;
    let token = guid();
    let c = Collector::start_tls(&format!("Splunk {token}")).await;
    let mut none = la(&c, "AuditLogs", &token);
    none["tls"] = json!(true);
    none["tlsVerification"] = json!("none");
    let mut full = none.clone();
    full["name"] = json!("strict");
    full["tlsVerification"] = json!("full");
    let none = create(&t, none).await;
    let full = create(&t, full).await;
    let m = marker(&t).await;
    touch(&t, &m, 1).await;
    let expected = audit_since(&t, &none["createdAt"]).await;
    delivered_exactly(&c, &expected).await;
    let strict = get(&t, &id(&full)).await;
    assert_eq!(
        strict["completedTransactionCount"], 0,
        "the strict client refuses the certificate"
    );
    assert!(strict["erroredTransactionCount"].as_i64() >= Some(1));
    assert!(get(&t, &id(&none)).await["completedTransactionCount"].as_i64() >= Some(1));
}

#[tokio::test]
async fn changing_the_data_type_starts_the_stream_over_in_the_new_records() {
    let t = manual().await;
    let token = guid();
    let c = Collector::start(&format!("Splunk {token}")).await;
    let s = create(&t, la(&c, "AuditLogs", &token)).await;
    let rig = edge(&t).await;
    issue(&t, &rig, 1).await;
    cycle(&t).await;
    let audit = c.events();
    assert!(!audit.is_empty() && audit.iter().all(|e| e.get("category").is_some()));
    let history = events_by_id(&t, "/api/v1/authorization-events", "authorizationEvents").await;
    let mut back = get(&t, &id(&s)).await;
    back["dataType"] = json!("AccessAuthorizationEvents");
    t.put(PATH, back).await.expect(200);
    issue(&t, &rig, 2).await;
    cycle(&t).await;
    let now = events_by_id(&t, "/api/v1/authorization-events", "authorizationEvents").await;
    let new: BTreeMap<String, Value> = now.into_iter().filter(|(k, _)| !history.contains_key(k)).collect();
    assert_eq!(new.len(), 6, "two requests' events");
    assert_same_events(&c.events()[audit.len()..], &new);
    assert_eq!(counts(&t, &id(&s)).await, (0, 2, 0), "the counters are kept");
}
