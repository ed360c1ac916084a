//! Writes at the same moment: through several nodes on one PostgreSQL database (contract §0;
//! architecture invariant 10) they are validated against each other, and a change made through
//! one node holds for the next management request on every node; on any database, a write is
//! checked against what committed while it was admitted (its resource set, its caller).

use serde_json::json;
use uuid::Uuid;

use crate::support::harness::TestApp;

fn postgres_only() -> bool {
    if crate::support::harness::use_postgres() {
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
    // Sign-in too: a user created on A signs in on B at once; deactivated on A, no longer on B.
    const PW: &str = "a-long-enough-password";
    let user = a.create_user("roamer@acme.test", PW, &[]).await;
    let token = b.login("roamer@acme.test", PW).await;
    a.patch(&format!("/api/v1/users/{user}"), json!({"isActive": false}))
        .await
        .expect(200);
    let r = b
        .post_anon("/api/v1/login", json!({"email": "roamer@acme.test", "password": PW}))
        .await;
    assert_eq!(r.status, 401, "{}", r.text);
    let r = b.get_as(&token, "/api/v1/users").await;
    assert_eq!(r.status, 401, "{}", r.text);
}

/// A resource set deleted while entities are created in it: no entity outlives it (each POST
/// either lands before the delete, and is removed with the set, or is refused).
#[tokio::test]
async fn no_entity_outlives_a_resource_set_deleted_while_it_is_written() {
    let t = TestApp::start().await;
    for i in 0..8 {
        let rs = t
            .post(
                "/api/v1/resource-sets",
                json!({"name": format!("doomed-{i}"), "isActive": true}),
            )
            .await
            .expect(201)["externalId"]
            .as_str()
            .unwrap()
            .to_string();
        let post = |n: usize| {
            t.send(
                t.client
                    .post(t.url("/api/v1/client-workloads"))
                    .bearer_auth(&t.token)
                    .header("X-Svc-ResourceSet", &rs)
                    .json(&workload(&Uuid::new_v4().to_string(), &format!("w-{i}-{n}"))),
            )
        };
        let set = format!("/api/v1/resource-sets/{rs}");
        let (_, _, _, del) = tokio::join!(post(0), post(1), post(2), t.delete(&set));
        assert_eq!(del.status, 204, "{}", del.text);
        // The set again, with the same id: it must be empty.
        t.post(
            "/api/v1/resource-sets",
            json!({"externalId": rs, "name": format!("again-{i}"), "isActive": true}),
        )
        .await
        .expect(201);
        let list = t
            .send(
                t.client
                    .get(t.url("/api/v1/client-workloads"))
                    .bearer_auth(&t.token)
                    .header("X-Svc-ResourceSet", &rs),
            )
            .await;
        assert_eq!(
            list.expect(200)["clientWorkloads"],
            json!([]),
            "an entity outlived its resource set"
        );
    }
}

/// A role's permission withdrawn while its user writes: no write of that user commits after
/// the change (each is refused or lands before it).
#[tokio::test]
async fn no_write_commits_after_its_callers_permission_is_withdrawn() {
    let t = TestApp::start().await;
    let token = t
        .user_with_role(
            "writer@acme.test",
            json!([{"name": "Client Workloads", "read": true, "write": true}]),
        )
        .await;
    let role = t.get("/api/v1/roles?per-page=100").await.expect(200)["roles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "role of writer@acme.test")
        .unwrap()["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let ids: Vec<String> = (0..40).map(|_| Uuid::new_v4().to_string()).collect();
    // Writes a millisecond apart, the role changing among them.
    let writes = futures_util::future::join_all(ids.iter().enumerate().map(|(n, id)| {
        let (t, token) = (&t, &token);
        async move {
            tokio::time::sleep(std::time::Duration::from_millis(n as u64)).await;
            t.post_as(token, "/api/v1/client-workloads", workload(id, &format!("late-{n}")))
                .await
        }
    }));
    // The role changes while the writes queue behind each other: some were admitted before it.
    let revoke = async {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        t.put(
            "/api/v1/roles",
            json!({"externalId": role, "name": "role of writer@acme.test", "isActive": true,
               "permissions": [{"name": "Client Workloads", "read": true, "write": false}]}),
        )
        .await
    };
    let (results, revoked) = tokio::join!(writes, revoke);
    let revoked_at = revoked.expect(200)["modifiedAt"].as_str().unwrap().to_string();
    for (id, r) in ids.iter().zip(&results) {
        match r.status {
            204 => {
                let g = t.get(&format!("/api/v1/client-workloads/{id}")).await;
                let created = g.expect(200)["createdAt"].as_str().unwrap();
                assert!(
                    created <= revoked_at.as_str(),
                    "{id} was written at {created}, after its permission was withdrawn at {revoked_at}"
                );
            }
            403 => {}
            s => panic!("{id}: unexpected {s}: {}", r.text),
        }
    }
}

/// The first-start key step run by eight starts at once: each finds a complete ring right after
/// it (a start that lost the race used to read the winner's keys before they were committed).
#[tokio::test]
async fn first_keys_are_complete_for_every_start_at_once() {
    if !postgres_only() {
        return;
    }
    use svc_server::issuer::keys;
    let dir = crate::support::harness::temp_dir();
    let db = crate::support::harness::fresh_database(&dir).await;
    let store = svc_server::store::Store::open(&svc_server::config::DatabaseUrl::Postgres(db))
        .await
        .unwrap();
    let cipher = svc_server::crypto::aead::Cipher::new(&[9u8; 32]);
    let starts = (0..8).map(|_| async {
        keys::ensure(&store, &cipher, svc_server::clock::now_millis())
            .await
            .unwrap();
        let rows = store.load_keys().await.unwrap();
        keys::KeyRing::from_rows(&rows, &cipher).map(|_| rows.len())
    });
    for r in futures_util::future::join_all(starts).await {
        assert_eq!(r, Ok(3), "one key per algorithm, complete for every start");
    }
    store.close().await;
}

/// Three nodes started at once on an empty database: every one comes up (one used to stop with
/// "key ring is incomplete", reading the keys another node was still writing), with one key per
/// algorithm between them and the same JWKS.
#[tokio::test]
async fn nodes_started_together_on_an_empty_database_share_one_key_ring() {
    if !postgres_only() {
        return;
    }
    let key = svc_server::crypto::b64std(&[7u8; 32]);
    for _ in 0..4 {
        let dir = crate::support::harness::temp_dir();
        let db = crate::support::harness::fresh_database(&dir).await;
        let ports: Vec<u16> = (0..3)
            .map(|_| {
                std::net::TcpListener::bind("127.0.0.1:0")
                    .unwrap()
                    .local_addr()
                    .unwrap()
                    .port()
            })
            .collect();
        let public = format!("http://127.0.0.1:{}", ports[0]);
        let mut nodes: Vec<tokio::process::Child> = ports
            .iter()
            .map(|p| {
                tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"))
                    .arg("serve")
                    .env_clear()
                    .env("SVC_LISTEN_ADDR", format!("127.0.0.1:{p}"))
                    .env("SVC_PUBLIC_URL", &public)
                    .env("SVC_DATABASE_URL", &db)
                    .env("SVC_ENCRYPTION_KEY", &key)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .kill_on_drop(true)
                    .spawn()
                    .unwrap()
            })
            .collect();
        let client = reqwest::Client::new();
        let mut jwks = Vec::new();
        for p in &ports {
            let url = format!("http://127.0.0.1:{p}/.well-known/jwks.json");
            let mut body = None;
            for _ in 0..150 {
                if let Ok(r) = client.get(&url).send().await
                    && r.status() == 200
                {
                    body = Some(r.text().await.unwrap());
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            jwks.push(body);
        }
        for (n, node) in nodes.iter_mut().enumerate() {
            if let Ok(Some(status)) = node.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = node.stderr.take() {
                    use tokio::io::AsyncReadExt;
                    let _ = e.read_to_string(&mut err).await;
                }
                panic!("node {n} stopped ({status}): {err}");
            }
        }
        let first = jwks[0].clone().expect("node 0 serves its JWKS");
        assert!(jwks.iter().all(|j| j.as_deref() == Some(first.as_str())), "{jwks:?}");
        let keys: serde_json::Value = serde_json::from_str(&first).unwrap();
        assert_eq!(
            keys["keys"].as_array().unwrap().len(),
            2,
            "one ES256 and one RS256 key: {first}"
        );
    }
}
