//! One stored row per edge request (issue 19 part 2): the events of a request are stored together
//! and read back, through the lists and single reads, exactly as the contract shows them.

use serde_json::Value;

use crate::support::edge::*;
use crate::support::harness::TestApp;

/// The number of stored edge requests, read from outside the service.
async fn stored_requests(t: &TestApp) -> i64 {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&t.db_url).await.unwrap();
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM edge_requests")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    n
}

#[tokio::test]
async fn an_edge_request_is_one_stored_row_read_back_as_its_events() {
    let t = TestApp::start().await;
    let oidc = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let ex = worked_example(&t, &oidc, "pk_live_rows").await;
    let id_token = mock_id_token(&[("sub", "system:job:build"), ("aud", &t.base)]).await;
    let token = auth_oidc(&t, &ex.client_id, &id_token).await;
    let before = stored_requests(&t).await;
    credentials(&t, &token, example_body(&id_token)).await.expect(200);
    assert_eq!(
        stored_requests(&t).await,
        before + 1,
        "one row for the request's four events"
    );

    // Its events, newest first: one context, one time, and each with what the request shares.
    let events = authz_events(&t, "").await;
    let context = events[0]["meta"]["contextId"].clone();
    let mine: Vec<&Value> = events.iter().filter(|e| e["meta"]["contextId"] == context).collect();
    let types: Vec<&str> = mine.iter().map(|e| e["meta"]["eventType"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["access.credential", "access.authorization", "access.request"],
        "in the order they were written, newest first"
    );
    for e in &mine {
        assert_eq!(e["meta"]["timestamp"], mine[0]["meta"]["timestamp"]);
        assert_eq!(e["meta"]["directiveId"], context);
        assert_eq!(e["clientRequest"]["version"], "edge/v1");
        assert_eq!(e["clientRequest"]["network"]["sourceIP"], "127.0.0.1");
        assert!(e["clientRequest"]["network"]["sourcePort"].as_u64().unwrap() > 0);
        assert_eq!(e["environment"]["network"]["sourceIP"], "127.0.0.1");
        assert_eq!(e["environment"]["oidc"]["sub"], "system:job:build", "{e}");
        // The single read gives the same record.
        let id = e["meta"]["eventId"].as_str().unwrap();
        let one = t.get(&format!("/api/v1/authorization-events/{id}")).await;
        assert_eq!(one.expect(200), *e);
    }
    // The workload event of the same request, under the same id scheme.
    let workload = workload_events(&t, "").await;
    let w = workload
        .iter()
        .find(|w| w["meta"]["connectionId"] == context)
        .expect("the request's workload event");
    assert_eq!(w["meta"]["timestamp"], mine[0]["meta"]["timestamp"]);
    let id = w["meta"]["eventId"].as_str().unwrap();
    let one = t.get(&format!("/api/v1/workload-events/{id}")).await;
    assert_eq!(one.expect(200), w);
    // A filter on one event's column picks that event out of the row.
    let credential = authz_events(&t, "&event-type=access.credential").await;
    assert!(credential.iter().all(|e| e["meta"]["eventType"] == "access.credential"));
    assert!(credential.iter().any(|e| e["meta"]["contextId"] == context));
}
