//! Two nodes on one PostgreSQL database and one stream: exactly one node delivers it, and the
//! other takes over when that node stops (§3.14; issue 19). Runs in the PostgreSQL pass only.

use super::*;
use crate::support::harness::use_postgres;
use crate::support::hec::Collector;

#[tokio::test]
async fn on_postgresql_one_node_delivers_a_stream_and_another_takes_over_when_it_stops() {
    if !use_postgres() {
        eprintln!("multi-node tests run in the PostgreSQL pass only (SQLite serves one node)");
        return;
    }
    let mut a = app().await;
    let mut b = a.join().await;
    let token = guid();
    let c = Collector::start(&format!("Splunk {token}")).await;
    let s = create(&a, la(&c, "AuditLogs", &token)).await;
    let m = marker(&a).await;
    // Writes through both nodes, over several cycles.
    for _ in 0..4 {
        touch(&a, &m, 2).await;
        touch(&b, &m, 2).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    // The stream's creation, the marker's, sixteen touches.
    let expected = 2 + 16;
    let events = settled(&c, expected, Duration::from_secs(20)).await;
    assert_eq!(events.len(), expected);
    assert_unique(&events);
    let (sent_a, sent_b) = (a.app.streams.transactions_sent(), b.app.streams.transactions_sent());
    assert!(
        (sent_a > 0) != (sent_b > 0),
        "exactly one node delivers the stream: {sent_a} and {sent_b} transactions"
    );
    // Both nodes show what the stream did.
    for node in [&a, &b] {
        assert!(
            eventually(Duration::from_secs(5), || async {
                get(node, &id(&s)).await["completedTransactionCount"].as_u64() == Some(sent_a + sent_b)
            })
            .await
        );
    }

    // The deliverer stops; the other node takes the stream over where it was.
    let (deliverer, other) = if sent_a > 0 { (&mut a, &mut b) } else { (&mut b, &mut a) };
    deliverer.shutdown().await;
    let before = other.app.streams.transactions_sent();
    touch(other, &m, 5).await;
    let events = settled(&c, expected + 5, Duration::from_secs(20)).await;
    assert_eq!(events.len(), expected + 5);
    assert_unique(&events);
    assert!(
        other.app.streams.transactions_sent() > before,
        "the other node delivers now"
    );
}
