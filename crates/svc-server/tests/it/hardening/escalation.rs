//! A caller can grant only what it holds (Kubernetes RBAC's escalation rule): roles it creates or
//! changes, and roles it gives users, carry only permissions and resource sets it holds itself.

use serde_json::{Value, json};

use crate::support::harness::TestApp;

fn id(v: &Value) -> String {
    v["externalId"].as_str().unwrap().to_string()
}

fn role(name: &str, permissions: Value, sets: &[&str]) -> Value {
    let sets: Vec<Value> = sets.iter().map(|s| json!({"externalId": s})).collect();
    json!({"name": name, "isActive": true, "permissions": permissions, "resourceSets": sets})
}

#[tokio::test]
async fn a_caller_can_grant_only_what_it_holds() {
    let t = TestApp::start().await;
    let other_rs = id(t
        .post("/api/v1/resource-sets", json!({"name": "other", "isActive": true}))
        .await
        .expect(201));
    // A role administrator: Roles and Users write, Audit Logs read, in the default set only.
    let admin = t
        .user_with_role(
            "roles-admin@example.com",
            json!([{"name": "Roles", "write": true}, {"name": "Users", "write": true}, {"name": "Audit Logs", "read": true}]),
        )
        .await;
    let default = "ffffffff-ffff-ffff-ffff-ffffffffffff";

    // What it holds, it may grant.
    let r = t
        .post_as(
            &admin,
            "/api/v1/roles",
            role("auditor-lite", json!([{"name": "Audit Logs", "read": true}]), &[]),
        )
        .await;
    let lite = id(r.expect(201));
    // More than it holds: another permission, a higher level, another resource set.
    for body in [
        role("tp", json!([{"name": "Trust Providers", "read": true}]), &[]),
        role(
            "users-w",
            json!([{"name": "Users", "write": true}, {"name": "Audit Logs", "write": false, "read": true}]),
            &[default],
        ),
        role("elsewhere", json!([{"name": "Audit Logs", "read": true}]), &[&other_rs]),
        role("empty-elsewhere", json!([]), &[&other_rs]),
    ] {
        let name = body["name"].clone();
        let r = t.post_as(&admin, "/api/v1/roles", body).await;
        if name == "users-w" {
            r.expect(201);
        } else {
            r.expect_error(403, "Forbidden.");
        }
    }
    // Nothing of a refused write is stored.
    let names: Vec<String> = t.get("/api/v1/roles?per-page=1000").await.expect(200)["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        !names.contains(&"tp".to_string()) && !names.contains(&"elsewhere".to_string()),
        "{names:?}"
    );

    // Changing a role: widening it beyond the caller's rights is refused, a rename is not.
    let mut wider = role(
        "auditor-lite",
        json!([{"name": "Audit Logs", "read": true}, {"name": "Workload Events", "read": true}]),
        &[],
    );
    wider["externalId"] = json!(lite);
    t.call(reqwest::Method::PUT, "/api/v1/roles", Some(&admin), Some(wider))
        .await
        .expect_error(403, "Forbidden.");
    let mut renamed = role("auditor-lite-2", json!([{"name": "Audit Logs", "read": true}]), &[]);
    renamed["externalId"] = json!(lite);
    t.call(reqwest::Method::PUT, "/api/v1/roles", Some(&admin), Some(renamed))
        .await
        .expect(200);
    // A role the SuperAdmin made, holding more, stays out of reach: switching it on is a grant.
    let mut strong = role("strong", json!([{"name": "Trust Providers", "write": true}]), &[]);
    strong["isActive"] = json!(false);
    let strong = id(t.post("/api/v1/roles", strong).await.expect(201));
    t.call(
        reqwest::Method::PATCH,
        &format!("/api/v1/roles/{strong}"),
        Some(&admin),
        Some(json!({"isActive": true})),
    )
    .await
    .expect_error(403, "Forbidden.");

    // A user's roles: only roles the caller holds all of.
    let user = |email: &str, roles: Vec<&str>| json!({"email": email, "firstName": "Test", "lastName": "User", "password": "a-long-enough-password", "roles": roles});
    t.post_as(&admin, "/api/v1/users", user("a@example.com", vec![&lite]))
        .await
        .expect(201);
    let super_admin = svc_server::domain::records::SUPER_ADMIN_ROLE.to_string();
    t.post_as(&admin, "/api/v1/users", user("b@example.com", vec![&super_admin]))
        .await
        .expect_error(403, "Forbidden.");
    t.post_as(&admin, "/api/v1/users", user("c@example.com", vec![&strong]))
        .await
        .expect_error(403, "Forbidden.");
    let uid = id(t
        .post_as(&admin, "/api/v1/users", user("d@example.com", vec![]))
        .await
        .expect(201));
    t.call(
        reqwest::Method::PUT,
        &format!("/api/v1/users/{uid}"),
        Some(&admin),
        Some(user("d@example.com", vec![&super_admin])),
    )
    .await
    .expect_error(403, "Forbidden.");
    // SuperAdmin holds everything.
    t.put(
        &format!("/api/v1/users/{uid}"),
        user("d@example.com", vec![&super_admin, &strong]),
    )
    .await
    .expect(200);
    // Nor may it change a user holding roles it does not hold, whatever it changes (issue 31:
    // the body sets that user's password).
    t.call(
        reqwest::Method::PUT,
        &format!("/api/v1/users/{uid}"),
        Some(&admin),
        Some(user("d@example.com", vec![&super_admin, &strong])),
    )
    .await
    .expect_error(403, "Forbidden.");
    t.post(
        "/api/v1/roles",
        role("tp", json!([{"name": "Trust Providers", "write": true}]), &[&other_rs]),
    )
    .await
    .expect(201);
}

/// A `svc-access-token` provider hands its role to every workload it issues to: naming a role
/// there is granting it.
#[tokio::test]
async fn a_caller_can_hand_workloads_only_roles_it_holds() {
    let t = TestApp::start().await;
    let cp_admin = t
        .user_with_role(
            "cp-admin@example.com",
            json!([{"name": "Credential Providers", "write": true}, {"name": "Audit Logs", "read": true}]),
        )
        .await;
    let provider = |role: &str| json!({"type": "svc-access-token", "name": "token", "isActive": true, "roleId": role, "lifetimeInSeconds": 600});
    let super_admin = svc_server::domain::records::SUPER_ADMIN_ROLE.to_string();
    t.post_as(&cp_admin, "/api/v2/credential-providers", provider(&super_admin))
        .await
        .expect_error(403, "Forbidden.");
    let reader = id(t
        .post(
            "/api/v1/roles",
            role("reader", json!([{"name": "Audit Logs", "read": true}]), &[]),
        )
        .await
        .expect(201));
    let cp = id(t
        .post_as(&cp_admin, "/api/v2/credential-providers", provider(&reader))
        .await
        .expect(201));
    // Switching it to a role the caller does not hold is refused too.
    t.call(
        reqwest::Method::PATCH,
        &format!("/api/v2/credential-providers/{cp}"),
        Some(&cp_admin),
        Some(json!({"providerDetailJSON": json!({"roleId": super_admin}).to_string()})),
    )
    .await
    .expect(403);
}

/// An SSO identity provider gives its mapped roles to the users who sign in through it: mapping
/// a role there is granting it.
#[tokio::test]
async fn a_caller_can_map_sso_users_only_to_roles_it_holds() {
    let t = TestApp::start().await;
    let idp_admin = t
        .user_with_role(
            "idp-admin@example.com",
            json!([{"name": "Identity Providers", "write": true}, {"name": "Audit Logs", "read": true}]),
        )
        .await;
    let reader = id(t
        .post(
            "/api/v1/roles",
            role("reader", json!([{"name": "Audit Logs", "read": true}]), &[]),
        )
        .await
        .expect(201));
    let super_admin = svc_server::domain::records::SUPER_ADMIN_ROLE.to_string();
    let idp = |role: &str| {
        let mut b = json!({"type": "OIDCv1", "name": "corp", "isActive": true, "userAccessEnabled": true,
                           "oidcBaseURL": "https://idp.example.test", "clientId": "svc", "clientSecret": "secret",
                           "scopes": "openid email profile", "authType": "ClientSecret", "pkceRequired": true});
        b["ssoStatementRoleMappings"] =
            json!([{"attributeName": "groups", "attributeValue": "ops", "roleExternalId": role}]);
        b
    };
    t.post_as(&idp_admin, "/api/v1/sso-idps", idp(&super_admin))
        .await
        .expect_error(403, "Forbidden.");
    t.post_as(&idp_admin, "/api/v1/sso-idps", idp(&reader))
        .await
        .expect(201);
}

/// Issue 31: a `Users` administrator could set the SuperAdmin's password, e-mail or second
/// factor and sign in as it. A caller acts on a user only when it holds every role the user
/// holds.
#[tokio::test]
async fn a_users_admin_cannot_take_over_a_super_admin() {
    let t = TestApp::start().await;
    let admin = t
        .user_with_role(
            "users-admin@example.com",
            json!([{"name": "Users", "read": true, "write": true}]),
        )
        .await;
    let sa = t
        .get(&format!(
            "/api/v1/users?filter=email:{}",
            crate::support::harness::ADMIN_EMAIL
        ))
        .await;
    let sa = sa.expect(200)["users"][0].clone();
    let sa_id = sa["externalId"].as_str().unwrap().to_string();
    let path = format!("/api/v1/users/{sa_id}");
    let mut put = sa.clone();
    put["password"] = json!("attacker-chosen-password");
    put["email"] = json!("attacker@example.com");
    t.put_as(&admin, &path, put).await.expect_error(403, "Forbidden.");
    for body in [
        json!({"password": "attacker-chosen-password"}),
        json!({"email": "attacker@example.com"}),
        json!({"isActive": false}),
    ] {
        t.patch_as(&admin, &path, body).await.expect_error(403, "Forbidden.");
    }
    t.post_as(&admin, &format!("{path}/unlock"), json!({}))
        .await
        .expect_error(403, "Forbidden.");
    t.call(reqwest::Method::DELETE, &path, Some(&admin), None)
        .await
        .expect_error(403, "Forbidden.");
    // Nothing changed: the administrator still signs in with its own password.
    t.login(
        crate::support::harness::ADMIN_EMAIL,
        crate::support::harness::ADMIN_PASSWORD,
    )
    .await;
    // Users whose roles it holds (none here), it administers.
    let plain = t.create_user("plain@example.com", "a-long-enough-password", &[]).await;
    t.patch_as(
        &admin,
        &format!("/api/v1/users/{plain}"),
        json!({"firstName": "Renamed"}),
    )
    .await
    .expect(200);
}
