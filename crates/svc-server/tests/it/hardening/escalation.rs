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

/// A SuperAdmin's `svc-access-token` provider (role SuperAdmin) exists; a caller holding only
/// `Access Policies` write names it in a policy for a workload it runs: routing a role to a
/// workload is giving it, so the policy is refused and the workload gets no token. A SuperAdmin
/// may route it.
#[tokio::test]
async fn a_policy_writer_cannot_route_a_super_admin_access_token_to_its_workload() {
    use crate::support::cred::Rig;
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await; // the attacker's CI job is this client workload
    let super_admin = svc_server::domain::records::SUPER_ADMIN_ROLE.to_string();
    let cp = rig
        .provider(
            &t,
            json!({"type": "svc-access-token", "name": "automation", "isActive": true,
                   "roleId": super_admin, "lifetimeInSeconds": 600}),
        )
        .await;
    let attacker = t
        .user_with_role(
            "policy-admin@example.test",
            json!([{"name": "Access Policies", "read": true, "write": true}]),
        )
        .await;
    let policy = json!({"name": "mine", "isActive": true, "clientWorkload": rig.client_workload,
                        "serverWorkload": rig.server_workload, "trustProviders": [rig.trust_provider],
                        "credentialProviders": [{"credentialProviderId": cp, "mappingType": "None"}]});
    t.post_as(&attacker, "/api/v2/access-policies", policy.clone())
        .await
        .expect_error(403, "Forbidden.");
    let r = rig.request(&t, "OAuthToken", json!({})).await;
    assert_eq!(r.status, 404, "{}", r.text);
    // Nor through an existing policy of the workload: switching its provider, or switching it
    // on, is routing the role too.
    let mut harmless = policy.clone();
    harmless["credentialProviders"] = json!([]);
    harmless["isActive"] = json!(false);
    let pid = id(t
        .post_as(&attacker, "/api/v2/access-policies", harmless)
        .await
        .expect(200));
    t.put("/api/v2/access-policies", {
        let mut p = policy.clone();
        p["externalId"] = json!(pid);
        p["isActive"] = json!(false);
        p
    })
    .await
    .expect(200);
    t.patch_as(
        &attacker,
        &format!("/api/v2/access-policies/{pid}"),
        json!({"isActive": true}),
    )
    .await
    .expect_error(403, "Forbidden.");
    t.patch_as(
        &attacker,
        &format!("/api/v1/access-policies/{pid}"),
        json!({"isActive": true}),
    )
    .await
    .expect_error(403, "Forbidden.");
    // The SuperAdmin switches it on: the workload receives the token it was meant to.
    t.patch(&format!("/api/v2/access-policies/{pid}"), json!({"isActive": true}))
        .await
        .expect(200);
    let v = rig.issue(&t, "OAuthToken").await;
    let token = v["data"]["token"].as_str().unwrap();
    t.post_as(token, "/api/v1/roles", json!({"name": "automated", "isActive": true}))
        .await
        .expect(201);
}

/// A caller holding only `Trust Providers` write points the trust provider of a policy that
/// hands out a SuperAdmin token at an issuer it runs (or adds a key of its own to it), to mint
/// the workload's evidence: deciding whose evidence the policy accepts is giving its roles, so
/// both are refused and forged evidence gets nothing.
#[tokio::test]
async fn a_trust_provider_writer_cannot_reach_a_super_admin_access_token() {
    use crate::support::cred::{Rig, SUBJECT};
    use crate::support::edge::auth;
    use crate::support::fake_issuer::FakeIssuer;
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let super_admin = svc_server::domain::records::SUPER_ADMIN_ROLE.to_string();
    let cp = rig
        .provider(
            &t,
            json!({"type": "svc-access-token", "name": "automation", "isActive": true,
                   "roleId": super_admin, "lifetimeInSeconds": 600}),
        )
        .await;
    rig.attach(&t, &cp).await;
    let attacker = t
        .user_with_role(
            "tp-admin@example.test",
            json!([{"name": "Trust Providers", "read": true, "write": true}]),
        )
        .await;
    let evil = FakeIssuer::start().await;
    let path = format!("/api/v1/trust-providers/{}", rig.trust_provider);
    let stored = t.get(&path).await.body.clone();
    let mut moved = stored.clone();
    moved["oidcUrl"] = json!(evil.url);
    t.put_as(&attacker, "/api/v1/trust-providers", moved)
        .await
        .expect_error(403, "Forbidden.");
    t.patch_as(&attacker, &path, json!({"oidcUrl": evil.url}))
        .await
        .expect_error(403, "Forbidden.");
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["attacker.example".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap()
        .pem();
    let cert = svc_server::crypto::b64std(cert.as_bytes());
    t.post_as(&attacker, &format!("{path}/secrets"), json!({"secret": cert}))
        .await
        .expect_error(403, "Forbidden.");
    assert_eq!(t.get(&path).await.body["oidcUrl"], stored["oidcUrl"]);
    // Evidence minted by the attacker's issuer is refused.
    let mut claims = evil.claims(&t.base, SUBJECT);
    claims["team"] = json!("platform");
    let forged = evil.sign(&claims);
    let r = auth(&t, &rig.client_id, json!({"oidc": {"identityToken": forged}})).await;
    assert_ne!(r.status, 200, "{}", r.text);
    // Trust providers no such policy accepts, it administers.
    let r = t
        .post_as(
            &attacker,
            "/api/v1/trust-providers",
            json!({"name": "other", "isActive": true, "provider": "OidcIdToken", "oidcUrl": evil.url}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

#[tokio::test]
async fn a_trust_provider_writer_cannot_open_a_paused_policy_by_deleting_its_trust_provider() {
    use crate::support::cred::Rig;
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let cp = rig
        .provider(
            &t,
            json!({"type": "svc-access-token", "name": "automation", "isActive": true,
                   "roleId": svc_server::domain::records::SUPER_ADMIN_ROLE, "lifetimeInSeconds": 600}),
        )
        .await;
    let policy = rig.attach(&t, &cp).await;
    let policy_path = format!("/api/v2/access-policies/{policy}");
    t.patch(&policy_path, json!({"isActive": false})).await.expect(200);
    let attacker = t
        .user_with_role(
            "tp-admin@example.test",
            json!([{"name": "Trust Providers", "read": true, "write": true}]),
        )
        .await;
    // Deleting the paused policy's only trust provider would leave it accepting every provider
    // of the set: refused to a caller without the roles its tokens give; nothing changes.
    let path = format!("/api/v1/trust-providers/{}", rig.trust_provider);
    let r = t.call(reqwest::Method::DELETE, &path, Some(&attacker), None).await;
    r.expect_error(403, "Forbidden.");
    t.get(&path).await.expect(200);
    let p = t.get(&policy_path).await;
    assert_eq!(
        p.expect(200)["trustProviders"][0]["externalId"],
        json!(rig.trust_provider),
        "{}",
        p.text
    );
    // A provider that is not a paused policy's last one goes (the policy keeps the other)...
    let (other, _) =
        crate::support::edge::provider(&t, json!({"provider": "OidcIdToken", "oidcUrl": rig._iss.url})).await;
    t.patch(&policy_path, json!({"trustProviders": [rig.trust_provider, other]}))
        .await
        .expect(200);
    let r = t
        .call(
            reqwest::Method::DELETE,
            &format!("/api/v1/trust-providers/{other}"),
            Some(&attacker),
            None,
        )
        .await;
    assert!(r.status < 300, "{} {}", r.status, r.text);
    // ...and a SuperAdmin may delete the last one (the contract's rule: the paused policy then
    // names none).
    let r = t.delete(&path).await;
    assert!(r.status < 300, "{} {}", r.status, r.text);
    assert_eq!(t.get(&policy_path).await.body["trustProviders"], json!([]));
}
