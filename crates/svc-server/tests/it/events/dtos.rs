//! The event lists answer through their DTOs (issue 33): every item, and every single read, is
//! the stored body as `events::shape::expand` restores it, member for member, in the same order
//! and with the same `null`s (the text compared, not only the values).

use serde_json::{Value, json};
use svc_server::store::EventTable;

use crate::support::edge::*;
use crate::support::harness::{DEFAULT_RS, TestApp};

/// The stored body of the event `id`, as the read side restores it, as text.
async fn stored(t: &TestApp, table: EventTable, id: &str) -> String {
    let (body, columns) = t
        .app
        .store
        .get_event_row(table, id, &[DEFAULT_RS.to_string()])
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{id} is stored"));
    let v: Value = serde_json::from_str(&body).unwrap();
    let v = match table {
        EventTable::Authorization => {
            svc_server::events::shape::expand(v, svc_server::events::shape::AUTHORIZATION_EVENT, &columns)
        }
        EventTable::Workload => {
            svc_server::events::shape::expand(v, svc_server::events::shape::WORKLOAD_EVENT, &columns)
        }
        _ => v,
    };
    v.to_string()
}

/// Each item of `list` (and its single read at `{path}/{id}`) is its stored body, expanded.
async fn same_as_stored(t: &TestApp, table: EventTable, path: &str, items: &[Value], id: &[&str]) {
    assert!(!items.is_empty(), "{path}: no items");
    for item in items {
        let key = item
            .pointer(&format!("/{}", id.join("/")))
            .and_then(Value::as_str)
            .unwrap();
        assert_eq!(item.to_string(), stored(t, table, key).await, "{path} item {key}");
        let one = t.get(&format!("{path}/{key}")).await;
        assert_eq!(one.expect(200).to_string(), item.to_string(), "{path}/{key}");
    }
}

#[tokio::test]
async fn event_lists_answer_their_stored_bodies_member_for_member() {
    let t = TestApp::start().await;
    let oidc = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let ex = worked_example(&t, &oidc, "pk_live_dtos").await;
    let id_token = mock_id_token(&[("sub", "system:job:build"), ("aud", &t.base)]).await;
    let token = auth_oidc(&t, &ex.client_id, &id_token).await;
    credentials(&t, &token, example_body(&id_token)).await.expect(200);
    // A refusal: its authentication event carries an attestation with a reason and values.
    let wrong = mock_id_token(&[("sub", "system:job:build"), ("aud", "someone-else")]).await;
    auth(&t, &ex.client_id, json!({"oidc": {"identityToken": wrong}}))
        .await
        .expect_error(401, "Unauthorized.");

    let events = authz_events(&t, "").await;
    assert!(events.len() >= 4, "{events:?}");
    assert!(
        events.iter().any(|e| e["trustProviders"][0]["reason"].is_string()),
        "a refusal with its reason: {events:?}"
    );
    same_as_stored(
        &t,
        EventTable::Authorization,
        "/api/v1/authorization-events",
        &events,
        &["meta", "eventId"],
    )
    .await;
    let workload = workload_events(&t, "").await;
    same_as_stored(
        &t,
        EventTable::Workload,
        "/api/v1/workload-events",
        &workload,
        &["meta", "eventId"],
    )
    .await;
    let audit = t.get("/api/v1/audit-logs?per-page=1000").await;
    let audit = audit.expect(200)["auditLogs"].as_array().unwrap().clone();
    same_as_stored(&t, EventTable::Audit, "/api/v1/audit-logs", &audit, &["externalId"]).await;
}
