//! RBAC (contract §2.6, §2.7): permissions × resource sets through the one guard; resource sets,
//! roles and users with their protection rules.

use serde_json::{Value, json};

use crate::support::harness::{ADMIN_EMAIL, DEFAULT_RS, TestApp};

const PW: &str = "a-long-enough-password";

async fn create_rs(t: &TestApp, name: &str) -> String {
    let r = t
        .post("/api/v1/resource-sets", json!({"name": name, "isActive": true}))
        .await;
    assert_eq!(
        r.header("location"),
        Some(format!("/api/v1/resource-sets/{}", r.body["externalId"].as_str().unwrap()).as_str())
    );
    r.expect(201)["externalId"].as_str().unwrap().to_string()
}

async fn create_role(t: &TestApp, name: &str, perms: Value, sets: &[&str]) -> String {
    let sets: Vec<Value> = sets.iter().map(|s| json!({"externalId": s})).collect();
    let r = t
        .post(
            "/api/v1/roles",
            json!({"name": name, "isActive": true, "permissions": perms, "resourceSets": sets}),
        )
        .await;
    r.expect(201)["externalId"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn role_scoped_to_resource_set_b_is_confined_to_b() {
    let t = TestApp::start().await;
    let b = create_rs(&t, "team-b").await;
    let role = create_role(
        &t,
        "b-auditor",
        json!([{"name": "Audit Logs", "read": true}, {"name": "Users", "read": true, "write": true}]),
        &[&b],
    )
    .await;
    t.create_user("bee@acme.test", PW, &[&role]).await;
    let tok = t.login("bee@acme.test", PW).await;

    // Reads in B: allowed. Reads in the default set: 403.
    let rs_b = t
        .send(
            t.client
                .get(t.url("/api/v1/audit-logs"))
                .bearer_auth(&tok)
                .header("X-Svc-ResourceSet", &b),
        )
        .await;
    rs_b.expect(200);
    t.get_as(&tok, "/api/v1/audit-logs")
        .await
        .expect_error(403, "Forbidden.");
    let rs_default = t
        .send(
            t.client
                .get(t.url("/api/v1/audit-logs"))
                .bearer_auth(&tok)
                .header("X-Svc-ResourceSet", DEFAULT_RS),
        )
        .await;
    rs_default.expect_error(403, "Forbidden.");
    // Users are global entities (members of the default set): write there is refused.
    t.post_as(
        &tok,
        "/api/v1/users",
        json!({"email": "x@acme.test", "firstName": "Xx", "lastName": "Yy"}),
    )
    .await
    .expect_error(403, "Forbidden.");
    t.get_as(&tok, "/api/v1/users").await.expect_error(403, "Forbidden.");

    // Scoped entities: a role with Trust Providers write in B writes and reads in B only.
    let tp_role = create_role(&t, "b-tp", json!([{"name": "Trust Providers", "write": true}]), &[&b]).await;
    t.create_user("tp@acme.test", PW, &[&tp_role]).await;
    let tp_tok = t.login("tp@acme.test", PW).await;
    let tp_body = json!({"name": "b-ci", "isActive": true, "provider": "CiAIdentityToken"});
    t.post_as(&tp_tok, "/api/v1/trust-providers", tp_body.clone())
        .await
        .expect_error(403, "Forbidden.");
    t.get_as(&tp_tok, "/api/v1/trust-providers")
        .await
        .expect_error(403, "Forbidden.");
    let r = t
        .send(
            t.client
                .post(t.url("/api/v1/trust-providers"))
                .bearer_auth(&tp_tok)
                .header("X-Svc-ResourceSet", &b)
                .json(&tp_body),
        )
        .await;
    let tp_id = r.expect(200)["externalId"].as_str().unwrap().to_string();
    let r = t
        .send(
            t.client
                .get(t.url(&format!("/api/v1/trust-providers/{tp_id}")))
                .bearer_auth(&tp_tok)
                .header("X-Svc-ResourceSet", &b),
        )
        .await;
    assert_eq!(r.expect(200)["resourceSet"], b.as_str());
    // Even a SuperAdmin does not see B's provider from the default set.
    assert_eq!(t.get(&format!("/api/v1/trust-providers/{tp_id}")).await.status, 204);
    t.patch(&format!("/api/v1/trust-providers/{tp_id}"), json!({"name": "x"}))
        .await
        .expect_error(404, "Not found.");

    // The identity-type catalogue belongs to no resource set: Client Workloads read in B is
    // enough; a role without it is refused.
    let cw_role = create_role(&t, "b-cw", json!([{"name": "Client Workloads", "read": true}]), &[&b]).await;
    t.create_user("cw@acme.test", PW, &[&cw_role]).await;
    let cw_tok = t.login("cw@acme.test", PW).await;
    let cat = t.get_as(&cw_tok, "/api/v1/client-workloads/identifiers").await;
    assert!(!cat.expect(200).as_array().unwrap().is_empty());
    t.get_as(&tp_tok, "/api/v1/client-workloads/identifiers")
        .await
        .expect_error(403, "Forbidden.");

    // The same permissions granted in the default set allow both.

    let role2 = create_role(
        &t,
        "default-users",
        json!([{"name": "Users", "write": true}]),
        &[DEFAULT_RS],
    )
    .await;
    t.create_user("dee@acme.test", PW, &[&role2]).await;
    let tok2 = t.login("dee@acme.test", PW).await;
    t.get_as(&tok2, "/api/v1/users").await.expect(200);
    t.post_as(
        &tok2,
        "/api/v1/users",
        json!({"email": "x@acme.test", "firstName": "Xx", "lastName": "Yy"}),
    )
    .await
    .expect(201);
    // Read-only where write is not granted.
    t.post_as(&tok2, "/api/v1/roles", json!({"name": "n", "isActive": true}))
        .await
        .expect_error(403, "Forbidden.");

    // Role edits apply at once: deactivating the role removes the rights of live tokens.
    t.patch(&format!("/api/v1/roles/{role2}"), json!({"isActive": false}))
        .await
        .expect(200);
    t.get_as(&tok2, "/api/v1/users").await.expect_error(403, "Forbidden.");
}

#[tokio::test]
async fn resource_set_header_is_validated() {
    let t = TestApp::start().await;
    let r = t
        .send(
            t.client
                .get(t.url("/api/v1/audit-logs"))
                .bearer_auth(&t.token)
                .header("X-Svc-ResourceSet", "nope"),
        )
        .await;
    r.expect_error(400, "X-Svc-ResourceSet: must be a UUID");
    let r = t
        .send(
            t.client
                .get(t.url("/api/v1/audit-logs"))
                .bearer_auth(&t.token)
                .header("X-Svc-ResourceSet", uuid::Uuid::new_v4().to_string()),
        )
        .await;
    r.expect_error(400, "X-Svc-ResourceSet: unknown resource set");
    // Header values are case-insensitive UUIDs.
    let r = t
        .send(
            t.client
                .get(t.url("/api/v1/audit-logs"))
                .bearer_auth(&t.token)
                .header("X-Svc-ResourceSet", DEFAULT_RS.to_uppercase()),
        )
        .await;
    r.expect(200);
    // A caller that does not authenticate gets 401 whatever the header says: the answer does not
    // tell whether a resource set exists (§2.1).
    for (token, header) in [
        ("x.y.z", "nope".to_string()),
        ("x.y.z", uuid::Uuid::new_v4().to_string()),
        ("x.y.z", DEFAULT_RS.to_string()),
    ] {
        let r = t
            .send(
                t.client
                    .get(t.url("/api/v1/client-workloads"))
                    .bearer_auth(token)
                    .header("X-Svc-ResourceSet", header),
            )
            .await;
        r.expect_error(401, "Not authenticated.");
    }
}

#[tokio::test]
async fn user_without_roles_can_only_sign_in_and_use_me() {
    let t = TestApp::start().await;
    t.create_user("nobody@acme.test", PW, &[]).await;
    let tok = t.login("nobody@acme.test", PW).await;
    t.get_as(&tok, "/api/v1/roles").await.expect_error(403, "Forbidden.");
    t.get_as(&tok, "/api/v1/users").await.expect_error(403, "Forbidden.");
    t.post_as(&tok, "/api/v1/me/totp", json!({})).await.expect(201);
    let r = t.get_as(&tok, "/api/v1/health").await;
    assert_eq!(r.expect(200)["user"], "nobody@acme.test");
    // Resource sets too (§2.6), the list and a read by id, known or not.
    t.get_as(&tok, "/api/v1/resource-sets")
        .await
        .expect_error(403, "Forbidden.");
    t.get_as(&tok, &format!("/api/v1/resource-sets/{DEFAULT_RS}"))
        .await
        .expect_error(403, "Forbidden.");
    t.get_as(&tok, "/api/v1/resource-sets/0b8e3c1a-58b1-4c39-9d35-0c37a8e0f2a4")
        .await
        .expect_error(403, "Forbidden.");
}

#[tokio::test]
async fn default_resource_set_and_system_roles_are_fixed() {
    let t = TestApp::start().await;
    let rs = t.get(&format!("/api/v1/resource-sets/{DEFAULT_RS}")).await;
    assert_eq!(rs.expect(200)["name"], "Default");
    t.delete(&format!("/api/v1/resource-sets/{DEFAULT_RS}"))
        .await
        .expect_error_prefix(400, "resourceSet:");
    t.patch(&format!("/api/v1/resource-sets/{DEFAULT_RS}"), json!({"name": "x"}))
        .await
        .expect_error_prefix(400, "resourceSet:");
    let roles = t.get("/api/v1/roles?filter=isSystem:true").await;
    let roles = roles.expect(200)["roles"].as_array().unwrap().clone();
    assert_eq!(roles.len(), 2);
    for r in &roles {
        let id = r["externalId"].as_str().unwrap();
        assert_eq!(r["permissions"].as_array().unwrap().len(), 23);
        t.patch(&format!("/api/v1/roles/{id}"), json!({"name": "x"}))
            .await
            .expect_error_prefix(400, "role:");
        t.delete(&format!("/api/v1/roles/{id}"))
            .await
            .expect_error_prefix(400, "role:");
    }
    let auditor = roles.iter().find(|r| r["name"] == "Auditor").unwrap();
    assert!(
        auditor["permissions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["write"] == false && p["read"] == true)
    );
    let sa = roles.iter().find(|r| r["name"] == "SuperAdmin").unwrap();
    let audit_perm = sa["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "Audit Logs")
        .unwrap();
    assert_eq!(
        *audit_perm,
        json!({"name": "Audit Logs", "read": true, "write": false, "isReadable": true, "isWritable": false, "accessLevel": "Read-Only"})
    );
}

#[tokio::test]
async fn role_permissions_are_validated_and_listed_in_order() {
    let t = TestApp::start().await;
    t.post(
        "/api/v1/roles",
        json!({"name": "r", "isActive": true, "permissions": [{"name": "Audit Logs", "write": true}]}),
    )
    .await
    .expect_error(400, "permissions[0].write: 'Audit Logs' is read-only");
    t.post("/api/v1/roles", json!({"name": "r", "isActive": true, "permissions": [{"name": "Users", "read": true}, {"name": "Users", "write": true}]}))
        .await
        .expect_error(400, "permissions[1].name: duplicate permission");
    t.post(
        "/api/v1/roles",
        json!({"name": "r", "isActive": true, "resourceSets": [{"externalId": uuid::Uuid::new_v4()}]}),
    )
    .await
    .expect_error(400, "resourceSets[0].externalId: unknown resource set");
    let r = t
        .post(
            "/api/v1/roles",
            json!({"name": "writer", "isActive": true, "permissions": [{"name": "Users", "write": true}]}),
        )
        .await;
    let body = r.expect(201).clone();
    let perms = body["permissions"].as_array().unwrap();
    assert_eq!(perms[0]["name"], "Access Policies");
    assert_eq!(perms[0]["accessLevel"], "No Access");
    let users = perms.iter().find(|p| p["name"] == "Users").unwrap();
    assert_eq!(
        (
            users["read"].clone(),
            users["write"].clone(),
            users["accessLevel"].clone()
        ),
        (json!(true), json!(true), json!("Read/Write"))
    );
    // No resource sets given → the default one.
    assert_eq!(body["resourceSets"][0]["externalId"], DEFAULT_RS);
    // The nested ResourceSetDTO: not expanded again, its arrays empty, never null (§1.1).
    let nested = &body["resourceSets"][0];
    for k in ["roles", "rolesDetails", "users"] {
        assert_eq!(nested[k], json!([]), "{k}");
    }
    // The response can be sent back in a PUT (read-only fields are ignored).
    let mut back = body.clone();
    back["name"] = json!("writer-2");
    let r = t.put("/api/v1/roles", back).await;
    assert_eq!(r.expect(200)["name"], "writer-2");
    // PATCH names the entity in its path: the body's externalId may repeat it, not change it.
    let rid = body["externalId"].as_str().unwrap();
    t.patch(
        &format!("/api/v1/roles/{rid}"),
        json!({"externalId": uuid::Uuid::new_v4(), "name": "moved"}),
    )
    .await
    .expect_error(400, "externalId: cannot be changed");
    let r = t
        .patch(
            &format!("/api/v1/roles/{rid}"),
            json!({"externalId": rid, "name": "writer-3"}),
        )
        .await;
    assert_eq!(r.expect(200)["name"], "writer-3");
    t.put("/api/v1/roles", json!({"name": "x", "isActive": true}))
        .await
        .expect_error(400, "externalId: is required");
    t.put(
        "/api/v1/roles",
        json!({"externalId": uuid::Uuid::new_v4(), "name": "x", "isActive": true}),
    )
    .await
    .expect_error(404, "Not found.");
}

#[tokio::test]
async fn deleting_a_role_removes_it_from_users() {
    let t = TestApp::start().await;
    let role = create_role(&t, "temp", json!([{"name": "Users", "read": true}]), &[]).await;
    let uid = t.create_user("holder@acme.test", PW, &[&role]).await;
    t.delete(&format!("/api/v1/roles/{role}")).await.expect(204);
    let u = t.get(&format!("/api/v1/users/{uid}")).await;
    assert_eq!(u.expect(201)["roles"], json!([]));
    // Missing: 204 again (idempotent) and GET → 204 empty.
    t.delete(&format!("/api/v1/roles/{role}")).await.expect(204);
    let g = t.get(&format!("/api/v1/roles/{role}")).await;
    assert_eq!((g.status, g.text.as_str()), (204, ""));
}

#[tokio::test]
async fn users_protect_the_last_super_admin_and_the_caller() {
    let t = TestApp::start().await;
    let users = t.get("/api/v1/users").await;
    let admin_id = users.expect(200)["users"][0]["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    t.delete(&format!("/api/v1/users/{admin_id}"))
        .await
        .expect_error_prefix(400, "user:");
    t.patch(&format!("/api/v1/users/{admin_id}"), json!({"isActive": false}))
        .await
        .expect_error(400, "isActive: you cannot deactivate yourself");
    // PUT says the same (the caller is also the last SuperAdmin here).
    let me = t.get(&format!("/api/v1/users/{admin_id}")).await.expect(201).clone(); // 201 (sic, §3.18)
    let mut off = json!({"email": me["email"], "firstName": me["firstName"], "lastName": me["lastName"],
                         "roles": me["roles"], "isActive": false});
    off["externalId"] = json!(admin_id);
    t.put(&format!("/api/v1/users/{admin_id}"), off)
        .await
        .expect_error(400, "isActive: you cannot deactivate yourself");
    // A second SuperAdmin cannot strip the first of the role while it is the last one left.
    let sa = "5ac00000-0000-4000-8000-000000000001";
    let other = t.create_user("second@acme.test", PW, &[sa]).await;
    let tok = t.login("second@acme.test", PW).await;
    let r = t
        .call(
            reqwest::Method::PUT,
            &format!("/api/v1/users/{other}"),
            Some(&tok),
            Some(json!({"email": "second@acme.test", "firstName": "Se", "lastName": "Cond", "roles": []})),
        )
        .await;
    r.expect(200);
    // A role change ends the user's sessions (issue 22): the same token is refused.
    t.get_as(&tok, "/api/v1/users")
        .await
        .expect_error(401, "Not authenticated.");
    // The admin is the last SuperAdmin again and cannot strip itself.
    let r = t
        .put(
            &format!("/api/v1/users/{admin_id}"),
            json!({"email": ADMIN_EMAIL, "firstName": "Bo", "lastName": "Ot", "roles": []}),
        )
        .await;
    r.expect_error_prefix(400, "user: the last active SuperAdmin");
    // PUT with a non-UUID path id names no user; a body id must match the path.
    t.put(
        "/api/v1/users/not-a-uuid",
        json!({"email": "a@acme.test", "firstName": "Aa", "lastName": "Bb"}),
    )
    .await
    .expect_error(404, "Not found.");
    t.put(
        &format!("/api/v1/users/{other}"),
        json!({"externalId": admin_id, "email": "a@acme.test", "firstName": "Aa", "lastName": "Bb"}),
    )
    .await
    .expect_error(400, "externalId: must equal the id in the path");
}

#[tokio::test]
async fn user_validation_and_shape() {
    let t = TestApp::start().await;
    t.post(
        "/api/v1/users",
        json!({"email": "nope", "firstName": "Aa", "lastName": "Bb"}),
    )
    .await
    .expect_error(400, "email: must be an e-mail address");
    t.post(
        "/api/v1/users",
        json!({"email": ADMIN_EMAIL.to_uppercase(), "firstName": "Aa", "lastName": "Bb"}),
    )
    .await
    .expect_error(400, "email: already exists");
    t.post(
        "/api/v1/users",
        json!({"email": "a@acme.test", "firstName": "A", "lastName": "Bb"}),
    )
    .await
    .expect_error(400, "firstName: must be 2..64 characters");
    t.post(
        "/api/v1/users",
        json!({"email": "a@acme.test", "firstName": "Aa", "lastName": "Bb", "password": "short"}),
    )
    .await
    .expect_error(400, "password: must be 12..128 characters");
    t.post(
        "/api/v1/users",
        json!({"email": "a@acme.test", "firstName": "Aa", "lastName": "Bb", "roles": [uuid::Uuid::new_v4()]}),
    )
    .await
    .expect_error(400, "roles[0]: unknown role");
    let r = t
        .post(
            "/api/v1/users",
            json!({"email": "a@acme.test", "firstName": "Aa", "lastName": "Bb", "password": "a-secret-password-1"}),
        )
        .await;
    let b = r.expect(201).clone();
    assert_eq!(b["password"], Value::Null);
    assert_eq!(b["isActive"], true);
    assert_eq!(b["isLocked"], false);
    assert_eq!(b["userTokens"], json!([]));
    let id = b["externalId"].as_str().unwrap();
    assert_eq!(r.header("location"), Some(format!("/api/v1/users/{id}").as_str()));
    // PATCH changes only what is given; roles only through PUT.
    let p = t
        .patch(&format!("/api/v1/users/{id}"), json!({"phoneNumber": "+1 555 0100"}))
        .await;
    assert_eq!(p.expect(200)["firstName"], "Aa");
    t.patch(&format!("/api/v1/users/{id}"), json!({"roles": []}))
        .await
        .expect_error(400, "roles: unknown property");
    t.patch(
        &format!("/api/v1/users/{id}"),
        json!({"externalId": uuid::Uuid::new_v4(), "firstName": "Xy"}),
    )
    .await
    .expect_error(400, "externalId: cannot be changed");
    let missing = t.get(&format!("/api/v1/users/{}", uuid::Uuid::new_v4())).await;
    assert_eq!(missing.status, 204);
}

#[tokio::test]
async fn deleting_a_roles_last_resource_set_grants_nothing_elsewhere() {
    let t = TestApp::start().await;
    let b = create_rs(&t, "doomed").await;
    let c = create_rs(&t, "kept").await;
    let only_b = create_role(&t, "b-only", json!([{"name": "Users", "read": true}]), &[&b]).await;
    let b_and_c = create_role(&t, "b-and-c", json!([{"name": "Audit Logs", "read": true}]), &[&b, &c]).await;
    t.create_user("bo@acme.test", PW, &[&only_b, &b_and_c]).await;
    let bo = t.login("bo@acme.test", PW).await;
    t.get_as(&bo, "/api/v1/users").await.expect_error(403, "Forbidden.");
    t.delete(&format!("/api/v1/resource-sets/{b}")).await.expect(204);
    // The role of the deleted set only: no set, no rights (not the default set's).
    let r = t.get(&format!("/api/v1/roles/{only_b}")).await;
    assert_eq!(r.expect(200)["resourceSets"], json!([]));
    t.get_as(&bo, "/api/v1/users").await.expect_error(403, "Forbidden.");
    // The other role keeps its remaining set.
    let r = t.get(&format!("/api/v1/roles/{b_and_c}")).await;
    let sets: Vec<Value> = r.expect(200)["resourceSets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["externalId"].clone())
        .collect();
    assert_eq!(sets, vec![json!(c)]);
    let in_c = t
        .send(
            t.client
                .get(t.url("/api/v1/audit-logs"))
                .bearer_auth(&bo)
                .header("X-Svc-ResourceSet", &c),
        )
        .await;
    in_c.expect(200);
    t.get_as(&bo, "/api/v1/audit-logs")
        .await
        .expect_error(403, "Forbidden.");
}

#[tokio::test]
async fn resource_set_listing_and_deletion() {
    let t = TestApp::start().await;
    let b = create_rs(&t, "doomed").await;
    let role = create_role(&t, "b-only", json!([{"name": "Users", "read": true}]), &[&b]).await;
    let tp = t
        .send(
            t.client
                .post(t.url("/api/v1/trust-providers"))
                .bearer_auth(&t.token)
                .header("X-Svc-ResourceSet", &b)
                .json(&json!({"name": "in-b", "isActive": true, "provider": "CiAIdentityToken"})),
        )
        .await
        .expect(200)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let list = t.get("/api/v1/resource-sets").await;
    let items = list.expect(200)["entities"].as_array().unwrap().clone();
    let doomed = items.iter().find(|s| s["externalId"] == b.as_str()).unwrap();
    assert!(doomed["roles"].as_array().unwrap().iter().any(|r| r == role.as_str()));
    assert!(
        doomed["users"].as_array().unwrap().iter().any(|u| u == ADMIN_EMAIL),
        "SuperAdmin reaches every set"
    );
    t.delete(&format!("/api/v1/resource-sets/{b}")).await.expect(204);
    t.delete(&format!("/api/v1/resource-sets/{b}"))
        .await
        .expect_error(404, "Not found.");
    // The role no longer names the deleted set.
    let r = t.get(&format!("/api/v1/roles/{role}")).await;
    assert_eq!(r.expect(200)["resourceSets"], json!([]));
    // The entities deleted with the set are audited where they can be read: the default set.
    let tps = t.audit("&category=TrustProviders").await;
    assert!(
        tps.iter()
            .any(|a| a["activity"] == "Deleted" && a["target"] == tp.as_str() && a["resourceSetId"] == DEFAULT_RS),
        "{tps:?}"
    );
    let audit = t.audit("&category=ResourceSets").await;
    assert!(
        audit
            .iter()
            .any(|a| a["activity"] == "Deleted" && a["target"] == b.as_str() && a["severity"] == "Warning")
    );
}
