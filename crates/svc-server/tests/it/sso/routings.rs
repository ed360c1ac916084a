//! Routings (contract §3.17): CRUD on the shared layer, 404 for a missing routing, no DELETE,
//! validation, one active routing per resource set, RBAC in the routing's own resource set.

use serde_json::{Value, json};

use crate::support::harness::{DEFAULT_RS, TestApp};

const PW: &str = "a-long-enough-password";

async fn create_rs(t: &TestApp, name: &str) -> String {
    let r = t
        .post("/api/v1/resource-sets", json!({"name": name, "isActive": true}))
        .await;
    r.expect(201)["externalId"].as_str().unwrap().to_string()
}

fn routing(name: &str, rs: &str, active: bool) -> Value {
    json!({"name": name, "isActive": active, "resourceSetId": rs, "proxyUrl": "http://proxy.corp.test:3128"})
}

#[tokio::test]
async fn routing_crud_statuses_and_shape() {
    let t = TestApp::start().await;
    let r = t.post("/api/v1/routings", routing("egress", DEFAULT_RS, true)).await;
    let body = r.expect(201).clone();
    let id = body["externalId"].as_str().unwrap().to_string();
    assert_eq!(r.header("location"), Some(format!("/api/v1/routings/{id}").as_str()));
    assert_eq!(body["resourceSetId"], DEFAULT_RS);
    assert_eq!(body["proxyUrl"], "http://proxy.corp.test:3128");
    assert_eq!(body["name"], "egress");
    assert!(
        body.get("resourceSet").is_none(),
        "routings carry resourceSetId, not resourceSet"
    );
    for k in [
        "createdAt",
        "modifiedAt",
        "createdBy",
        "modifiedBy",
        "description",
        "tags",
    ] {
        assert!(body.get(k).is_some(), "{k} missing: {body}");
    }

    assert_eq!(*t.get(&format!("/api/v1/routings/{id}")).await.expect(200), body);
    let list = t.get("/api/v1/routings").await;
    assert_eq!(list.expect(200)["entities"][0]["externalId"], id.as_str());
    assert_eq!(list.body["recordsTotal"], 1);
    let f = t
        .get(&format!("/api/v1/routings?filter=resourceSetId:{DEFAULT_RS}"))
        .await;
    assert_eq!(f.expect(200)["recordsTotal"], 1);

    // A missing routing is 404 (not 204); there is no DELETE.
    t.get("/api/v1/routings/00000000-0000-4000-8000-000000000001")
        .await
        .expect_error(404, "Not found.");
    let d = t.delete(&format!("/api/v1/routings/{id}")).await;
    assert_eq!(d.status, 405);

    // PATCH (EntityPatchDTO) and PUT.
    let p = t
        .patch(
            &format!("/api/v1/routings/{id}"),
            json!({"isActive": false, "description": "off"}),
        )
        .await;
    assert_eq!(p.expect(200)["isActive"], false);
    assert_eq!(p.body["description"], "off");
    assert_eq!(p.body["proxyUrl"], "http://proxy.corp.test:3128");
    t.patch(
        &format!("/api/v1/routings/{id}"),
        json!({"proxyUrl": "http://p.test:1"}),
    )
    .await
    .expect_error(400, "proxyUrl: unknown property");
    let mut put = routing("egress-2", DEFAULT_RS, true);
    put["externalId"] = json!(id);
    put["proxyUrl"] = json!("https://10.1.2.3:8443");
    let u = t.put("/api/v1/routings", put).await;
    assert_eq!(u.expect(200)["proxyUrl"], "https://10.1.2.3:8443");
    assert_eq!(u.body["name"], "egress-2");
    assert_eq!(u.body["description"], Value::Null);
    let mut unknown = routing("x", DEFAULT_RS, true);
    unknown["externalId"] = json!("00000000-0000-4000-8000-000000000002");
    t.put("/api/v1/routings", unknown).await.expect_error(404, "Not found.");
    t.patch(
        "/api/v1/routings/00000000-0000-4000-8000-000000000002",
        json!({"name": "x"}),
    )
    .await
    .expect_error(404, "Not found.");

    // Audit: Created, Patched, Updated under category Routings.
    let audit: Vec<Value> = t
        .audit("")
        .await
        .into_iter()
        .filter(|a| a["category"] == "Routings")
        .collect();
    let acts: Vec<&str> = audit.iter().map(|a| a["activity"].as_str().unwrap()).collect();
    assert_eq!(acts, ["Updated", "Patched", "Created"]);
    assert!(audit.iter().all(|a| a["target"] == id.as_str()));
}

#[tokio::test]
async fn routing_validation() {
    let t = TestApp::start().await;
    let bad = |f: &dyn Fn(&mut Value)| {
        let mut b = routing("r", DEFAULT_RS, true);
        f(&mut b);
        b
    };
    let cases: Vec<(Value, &str)> = vec![
        (bad(&|b| b["resourceSetId"] = Value::Null), "resourceSetId: is required"),
        (
            bad(&|b| b["resourceSetId"] = json!("00000000-0000-4000-8000-000000000009")),
            "resourceSetId: unknown resource set",
        ),
        (
            bad(&|b| b["resourceSetId"] = json!("nope")),
            "resourceSetId: must be a UUID",
        ),
        (bad(&|b| b["proxyUrl"] = Value::Null), "proxyUrl: is required"),
        (
            bad(&|b| b["proxyUrl"] = json!("proxy:3128")),
            "proxyUrl: must be http(s)://host:port",
        ),
        (
            bad(&|b| b["proxyUrl"] = json!("http://proxy")),
            "proxyUrl: must be http(s)://host:port",
        ),
        (
            bad(&|b| b["proxyUrl"] = json!(format!("http://{}.test:1", "a".repeat(250)))),
            "proxyUrl: must be 1..255 characters",
        ),
        (bad(&|b| b["name"] = Value::Null), "name: is required"),
        (bad(&|b| b["isActive"] = Value::Null), "isActive: is required"),
        (
            bad(&|b| b["resourceSet"] = json!(DEFAULT_RS)),
            "resourceSet: unknown property",
        ),
    ];
    for (body, msg) in cases {
        t.post("/api/v1/routings", body).await.expect_error(400, msg);
    }

    // At most one active routing per resource set; inactive ones do not count.
    t.post("/api/v1/routings", routing("a", DEFAULT_RS, true))
        .await
        .expect(201);
    let off = t.post("/api/v1/routings", routing("b", DEFAULT_RS, false)).await;
    let off = off.expect(201)["externalId"].as_str().unwrap().to_string();
    t.post("/api/v1/routings", routing("c", DEFAULT_RS, true))
        .await
        .expect_error_prefix(400, "resourceSetId: already has an active routing 'a'");
    t.patch(&format!("/api/v1/routings/{off}"), json!({"isActive": true}))
        .await
        .expect_error_prefix(400, "resourceSetId: already has an active routing 'a'");
    // Another resource set has its own.
    let b = create_rs(&t, "b").await;
    t.post("/api/v1/routings", routing("d", &b, true)).await.expect(201);
    // The resource set cannot be changed by a PUT.
    let mut moved = routing("b", &b, false);
    moved["externalId"] = json!(off);
    t.put("/api/v1/routings", moved)
        .await
        .expect_error(400, "resourceSetId: cannot be changed");
    // Deleting a resource set removes its routings.
    t.delete(&format!("/api/v1/resource-sets/{b}")).await.expect(204);
    let list = t.get("/api/v1/routings?filter=name:d").await;
    assert_eq!(list.expect(200)["recordsTotal"], 0);
}

#[tokio::test]
async fn routing_rights_are_checked_in_the_routings_resource_set() {
    let t = TestApp::start().await;
    let b = create_rs(&t, "team-b").await;
    let in_default = t.post("/api/v1/routings", routing("d", DEFAULT_RS, true)).await;
    let in_default = in_default.expect(201)["externalId"].as_str().unwrap().to_string();
    let role = t
        .post(
            "/api/v1/roles",
            json!({"name": "b-routing", "isActive": true,
                   "permissions": [{"name": "Routing Configuration", "write": true}],
                   "resourceSets": [{"externalId": b}]}),
        )
        .await;
    let role = role.expect(201)["externalId"].as_str().unwrap().to_string();
    t.create_user("router@acme.test", PW, &[&role]).await;
    let tok = t.login("router@acme.test", PW).await;

    // Writes in B: allowed; in the default set: 403, though the request carries no header.
    let mine = t.post_as(&tok, "/api/v1/routings", routing("b", &b, true)).await;
    let mine = mine.expect(201)["externalId"].as_str().unwrap().to_string();
    t.post_as(&tok, "/api/v1/routings", routing("x", DEFAULT_RS, false))
        .await
        .expect_error(403, "Forbidden.");
    t.get_as(&tok, &format!("/api/v1/routings/{in_default}"))
        .await
        .expect_error(403, "Forbidden.");
    t.get_as(&tok, &format!("/api/v1/routings/{mine}")).await.expect(200);
    let list = t.get_as(&tok, "/api/v1/routings").await;
    let ids: Vec<&str> = list.expect(200)["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["externalId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [mine.as_str()]);
    let patched = t
        .call(
            reqwest::Method::PATCH,
            &format!("/api/v1/routings/{in_default}"),
            Some(&tok),
            Some(json!({"name": "y"})),
        )
        .await;
    patched.expect_error(403, "Forbidden.");
    // The audit entry of B's routing is filed in B.
    let a = t
        .send(
            t.client
                .get(t.url("/api/v1/audit-logs"))
                .bearer_auth(&t.token)
                .header("X-Svc-ResourceSet", &b),
        )
        .await;
    assert_eq!(a.expect(200)["auditLogs"][0]["target"], mine.as_str());

    // Without the permission anywhere: 403 on every route.
    let none = t
        .user_with_role("none@acme.test", json!([{"name": "Audit Logs", "read": true}]))
        .await;
    t.get_as(&none, "/api/v1/routings")
        .await
        .expect_error(403, "Forbidden.");
    t.get_as(&none, &format!("/api/v1/routings/{mine}"))
        .await
        .expect_error(403, "Forbidden.");
    t.post_as(&none, "/api/v1/routings", routing("z", &b, true))
        .await
        .expect_error(403, "Forbidden.");
    // Read only: GET yes, write 403.
    let ro = t
        .user_with_role("ro@acme.test", json!([{"name": "Routing Configuration", "read": true}]))
        .await;
    t.get_as(&ro, &format!("/api/v1/routings/{in_default}"))
        .await
        .expect(200);
    t.post_as(&ro, "/api/v1/routings", routing("z", DEFAULT_RS, false))
        .await
        .expect_error(403, "Forbidden.");
}

/// A loopback HTTP proxy that answers every request itself, as the token endpoint it was asked
/// for would, and records each request line (absolute-form when a client sends it through a
/// proxy: `POST http://host/path HTTP/1.1`).
async fn answering_proxy() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf).to_string();
                log.lock()
                    .unwrap()
                    .push(head.lines().next().unwrap_or_default().to_string());
                let body = r#"{"access_token":"tok-via-proxy","token_type":"Bearer","expires_in":3600}"#;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
            });
        }
    });
    (url, seen)
}

/// §3.17: an active routing sends the upstream calls made for its resource set's entities
/// through its proxy; without it (or once it is inactive) they go direct.
#[tokio::test]
async fn an_active_routing_sends_the_sets_upstream_calls_through_its_proxy() {
    let t = TestApp::start().await;
    let (proxy, seen) = answering_proxy().await;
    // A token endpoint only the proxy can reach: `.test` names never resolve.
    let cp = t
        .post(
            "/api/v2/credential-providers",
            json!({"type": "oauth-client-credential", "name": "partner-oauth", "isActive": true,
                   "clientID": "svc", "clientSecret": "s3cr3t", "url": "http://token.upstream.test/token"}),
        )
        .await
        .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/api/v2/credential-providers/{cp}/verification");
    let verify = || t.get(&path);
    assert_eq!(
        verify().await.expect(200)["success"],
        false,
        "direct: the name does not resolve"
    );
    assert!(seen.lock().unwrap().is_empty());

    let r = t
        .post(
            "/api/v1/routings",
            json!({"name": "egress", "isActive": true, "resourceSetId": DEFAULT_RS, "proxyUrl": proxy}),
        )
        .await;
    let id = r.expect(201)["externalId"].as_str().unwrap().to_string();
    let v = verify().await;
    assert_eq!(v.expect(200)["success"], true, "{:?}", v.body);
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        ["POST http://token.upstream.test/token HTTP/1.1"]
    );

    t.patch(&format!("/api/v1/routings/{id}"), json!({"isActive": false}))
        .await
        .expect(200);
    assert_eq!(verify().await.expect(200)["success"], false, "inactive: direct again");
    assert_eq!(seen.lock().unwrap().len(), 1);

    // Another resource set's calls never use this set's routing.
    let other = create_rs(&t, "team-b").await;
    t.patch(&format!("/api/v1/routings/{id}"), json!({"isActive": true}))
        .await
        .expect(200);
    let r = t
        .send(
            t.client
                .post(t.url("/api/v2/credential-providers"))
                .bearer_auth(&t.token)
                .header("x-svc-resourceset", &other)
                .json(
                    &json!({"type": "oauth-client-credential", "name": "b-oauth", "isActive": true,
                              "clientID": "svc", "url": "http://token.upstream.test/token"}),
                ),
        )
        .await;
    let cp_b = r.expect(201)["externalId"].as_str().unwrap().to_string();
    let v = t
        .send(
            t.client
                .get(t.url(&format!("/api/v2/credential-providers/{cp_b}/verification")))
                .bearer_auth(&t.token)
                .header("x-svc-resourceset", &other),
        )
        .await;
    assert_eq!(v.expect(200)["success"], false);
    assert_eq!(seen.lock().unwrap().len(), 1);
}
