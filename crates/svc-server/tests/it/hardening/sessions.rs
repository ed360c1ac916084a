//! A password change, a deactivation or a role change ends the user's existing sessions (a lock-out
//! after failed sign-ins does not: issue 31), and a deactivated user's tokens stay dead after re-activation.

use serde_json::{Value, json};

use crate::support::harness::TestApp;

const PW: &str = "a-long-enough-password";
const PROBE: &str = "/api/v1/audit-logs?per-page=1";

/// A user who may read audit logs, signed in; returns (id, token).
async fn reader(t: &TestApp, email: &str) -> (String, String) {
    let tok = t
        .user_with_role(email, json!([{"name": "Audit Logs", "read": true}]))
        .await;
    let r = t.get(&format!("/api/v1/users?filter=email:{email}")).await;
    let id = r.expect(200)["users"][0]["externalId"].as_str().unwrap().to_string();
    t.get_as(&tok, PROBE).await.expect(200);
    (id, tok)
}

async fn user(t: &TestApp, id: &str) -> Value {
    t.get(&format!("/api/v1/users/{id}")).await.expect(201).clone()
}

/// The PUT body of a user as stored, with `change` applied.
fn put_body(u: &Value, change: Value) -> Value {
    let mut b = json!({"email": u["email"], "firstName": u["firstName"], "lastName": u["lastName"],
                       "roles": u["roles"], "isActive": u["isActive"]});
    for (k, v) in change.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

#[tokio::test]
async fn a_password_change_ends_the_users_sessions() {
    let t = TestApp::start().await;
    let (id, tok) = reader(&t, "pw@acme.test").await;
    let (_, other) = reader(&t, "bystander@acme.test").await;
    t.patch(
        &format!("/api/v1/users/{id}"),
        json!({"password": "another-long-password"}),
    )
    .await
    .expect(200);
    t.get_as(&tok, PROBE).await.expect_error(401, "Not authenticated.");
    // Another user's session is untouched; the new password signs in and its session works.
    t.get_as(&other, PROBE).await.expect(200);
    let fresh = t.login("pw@acme.test", "another-long-password").await;
    t.get_as(&fresh, PROBE).await.expect(200);
    // By PUT as well.
    let u = user(&t, &id).await;
    t.put(&format!("/api/v1/users/{id}"), put_body(&u, json!({"password": PW})))
        .await
        .expect(200);
    t.get_as(&fresh, PROBE).await.expect_error(401, "Not authenticated.");
}

#[tokio::test]
async fn a_role_change_ends_the_users_sessions_and_a_lock_out_does_not() {
    let t = TestApp::start().await;
    // Role change: another role set ends the session; a PUT keeping the roles does not.
    let (id, tok) = reader(&t, "roles@acme.test").await;
    let u = user(&t, &id).await;
    t.put(
        &format!("/api/v1/users/{id}"),
        put_body(&u, json!({"firstName": "Renamed"})),
    )
    .await
    .expect(200);
    t.get_as(&tok, PROBE).await.expect(200);
    let auditor = svc_server::domain::records::AUDITOR_ROLE.to_string();
    let mut roles = u["roles"].as_array().unwrap().clone();
    roles.push(json!(auditor));
    t.put(&format!("/api/v1/users/{id}"), put_body(&u, json!({"roles": roles})))
        .await
        .expect(200);
    t.get_as(&tok, PROBE).await.expect_error(401, "Not authenticated.");

    // A lock-out after five wrong passwords ends no session (issue 31: whoever knows the
    // e-mail address can cause it); the owner's session outlives it and the unlock.
    let (id, tok) = reader(&t, "locked@acme.test").await;
    for _ in 0..5 {
        t.post_anon(
            "/api/v1/login",
            json!({"email": "locked@acme.test", "password": "wrong-password-here"}),
        )
        .await
        .expect(401);
    }
    assert_eq!(user(&t, &id).await["isLocked"], true);
    t.get_as(&tok, PROBE).await.expect(200);
    t.post(&format!("/api/v1/users/{id}/unlock"), json!({}))
        .await
        .expect(200);
    t.get_as(&tok, PROBE).await.expect(200);
    let fresh = t.login("locked@acme.test", PW).await;
    t.get_as(&fresh, PROBE).await.expect(200);
}

#[tokio::test]
async fn a_deactivated_users_tokens_stay_dead_after_reactivation() {
    let t = TestApp::start().await;
    let (id, tok) = reader(&t, "away@acme.test").await;
    t.patch(&format!("/api/v1/users/{id}"), json!({"isActive": false}))
        .await
        .expect(200);
    t.get_as(&tok, PROBE).await.expect_error(401, "Not authenticated.");
    t.patch(&format!("/api/v1/users/{id}"), json!({"isActive": true}))
        .await
        .expect(200);
    t.get_as(&tok, PROBE).await.expect_error(401, "Not authenticated.");
    // Through PUT as well; a new sign-in works.
    let fresh = t.login("away@acme.test", PW).await;
    let u = user(&t, &id).await;
    t.put(&format!("/api/v1/users/{id}"), put_body(&u, json!({"isActive": false})))
        .await
        .expect(200);
    t.put(&format!("/api/v1/users/{id}"), put_body(&u, json!({"isActive": true})))
        .await
        .expect(200);
    t.get_as(&fresh, PROBE).await.expect_error(401, "Not authenticated.");
    let again = t.login("away@acme.test", PW).await;
    t.get_as(&again, PROBE).await.expect(200);
}
