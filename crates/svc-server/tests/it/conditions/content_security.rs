//! Content security (§3.13): the `SensorAAIDR` entry without the resource-set header, its
//! validation and write-only token, policies that reference it, and the `Identified` entry in
//! authorization events that changes no decision.

use serde_json::{Value, json};

use super::evaluation::{ask, decision, guarded};
use super::*;
use crate::support::cred::Rig;
use crate::support::harness::{TestApp, contains};

const TOKEN: &str = "canary-aidr-token-51c2";

fn body() -> Value {
    json!({"type": "SensorAAIDR", "name": "aidr", "isActive": true, "baseUrl": "https://aidr.example", "encryptedToken": TOKEN})
}

#[tokio::test]
async fn content_security_entries_are_stored_referenced_and_reported() {
    let t = TestApp::start().await;
    let r = t.post("/api/v1/content-security", body()).await;
    let cs = r.expect(201).clone();
    let id = cs["externalId"].as_str().unwrap().to_string();
    assert_eq!(
        r.header("location"),
        Some(format!("/api/v1/content-security/{id}").as_str())
    );
    assert_eq!(cs["type"], "SensorAAIDR");
    assert_eq!(cs["encryptedToken"], Value::Null);
    assert_eq!(
        (
            cs["failOpen"].clone(),
            cs["timeoutMs"].clone(),
            cs["maxRetries"].clone()
        ),
        (json!(false), json!(30000), json!(3))
    );
    assert_eq!(cs["resourceSet"], svc_server::domain::DEFAULT_RESOURCE_SET.to_string());
    assert_eq!(cs["accessPolicyCount"], 0);
    // Validation.
    let with = |k: &str, v: Value| {
        let mut b = body();
        b[k] = v;
        b
    };
    for (b, message) in [
        (with("type", json!("Other")), "type: must be one of SensorAAIDR"),
        (with("type", Value::Null), "type: is required"),
        (with("timeoutMs", json!(4999)), "timeoutMs: must be 5000..600000"),
        (with("maxRetries", json!(11)), "maxRetries: must be 0..10"),
        (with("baseUrl", Value::Null), "baseUrl: is required"),
        (
            with("resourceSet", json!("00000000-0000-4000-8000-00000000abcd")),
            "resourceSet: unknown resource set",
        ),
    ] {
        t.post("/api/v1/content-security", b).await.expect_error(400, message);
    }
    // A GET body sent back in a PUT keeps the token; the resource set cannot change.
    let mut back = cs.clone();
    back["failOpen"] = json!(true);
    let r = t.put("/api/v1/content-security", back.clone()).await;
    assert_eq!(r.expect(200)["failOpen"], true);
    let stored = t.app.state();
    let c = stored.content_security.get(&id.parse::<uuid::Uuid>().unwrap()).unwrap();
    assert_eq!(c.secrets.get("encryptedToken"), Some(TOKEN));
    drop(stored);
    let rs = t
        .post("/api/v1/resource-sets", json!({"name": "other", "isActive": true}))
        .await
        .expect(201)["externalId"]
        .clone();
    let other = rs.as_str().unwrap().to_string();
    back["resourceSet"] = rs;
    t.put("/api/v1/content-security", back)
        .await
        .expect_error(400, "resourceSet: cannot be changed");
    let r = t.get("/api/v1/content-security?filter=type:SensorAAIDR").await;
    assert_eq!(r.expect(200)["entities"][0]["externalId"], id.as_str());
    // §1.4 rule 5: `resourceSet:<uuid>` narrows a list read without the header.
    let default_rs = crate::support::harness::DEFAULT_RS;
    let r = t
        .get(&format!("/api/v1/content-security?filter=resourceSet:{default_rs}"))
        .await;
    assert_eq!(r.expect(200)["entities"][0]["externalId"], id.as_str());
    let r = t
        .get(&format!("/api/v1/content-security?filter=resourceSet:{other}"))
        .await;
    assert_eq!(r.expect(200)["entities"], json!([]), "none in the other set");
    // RBAC: the Access Policies permission (§2.7).
    let nop = t
        .user_with_role(
            "nop@acme.test",
            json!([{"name": "Access Conditions", "read": true, "write": true}]),
        )
        .await;
    t.get_as(&nop, "/api/v1/content-security")
        .await
        .expect_error(403, "Forbidden.");
    // A caller holding the permission only in another set: the entity is invisible there, as
    // an unknown id (§1.4 rules 4, 5; as v2 access policies), not forbidden.
    let role = t
        .post(
            "/api/v1/roles",
            json!({"name": "elsewhere", "isActive": true, "resourceSets": [{"externalId": other}],
                   "permissions": [{"name": "Access Policies", "read": true, "write": true}]}),
        )
        .await;
    let role = role.expect(201)["externalId"].as_str().unwrap().to_string();
    t.create_user("elsewhere@acme.test", "a-long-enough-password", &[&role])
        .await;
    let elsewhere = t.login("elsewhere@acme.test", "a-long-enough-password").await;
    let unknown = "00000000-0000-4000-8000-00000000abcd";
    let mut answers = vec![];
    for path in [
        format!("/api/v1/content-security/{id}"),
        format!("/api/v1/content-security/{unknown}"),
    ] {
        let read = t.get_as(&elsewhere, &path).await.status;
        let body = Some(json!({"failOpen": false}));
        let patched = t
            .call(reqwest::Method::PATCH, &path, Some(&elsewhere), body)
            .await
            .status;
        let deleted = t
            .call(reqwest::Method::DELETE, &path, Some(&elsewhere), None)
            .await
            .status;
        answers.push((read, patched, deleted));
    }
    assert_eq!(answers[0], answers[1], "as an unknown id");
    assert_eq!((answers[0].0, answers[0].1), (204, 404));
    assert_eq!(
        t.get(&format!("/api/v1/content-security/{id}")).await.status,
        200,
        "not deleted"
    );
    let listed = t.get_as(&elsewhere, "/api/v1/content-security").await;
    assert_eq!(listed.expect(200)["entities"], json!([]));

    // Referenced by a policy: reported as Identified, no effect on the decision.
    let rig = Rig::new(&t).await;
    let open = condition(&t, time_body("always", every_day("00:00", "24:00"))).await;
    let policy = guarded(&t, &rig, &[&open]).await;
    t.patch(
        &format!("/api/v2/access-policies/{policy}"),
        json!({"contentSecurity": [id]}),
    )
    .await
    .expect(200);
    let g = t.get(&format!("/api/v2/access-policies/{policy}")).await;
    assert_eq!(g.expect(200)["contentSecurity"][0]["name"], "aidr");
    let v1 = t.get(&format!("/api/v1/access-policies/{policy}")).await;
    assert_eq!(v1.expect(200)["contentSecurity"][0]["type"], "SensorAAIDR");
    assert_eq!(v1.body["contentSecurity"][0]["encryptedToken"], Value::Null);
    ask(&t, &rig, json!({})).await.expect(200);
    let ev = decision(&t).await;
    assert_eq!(
        ev["contentSecurity"],
        json!([{"id": id, "name": "aidr", "result": "Identified", "matches": null,
        "reason": null, "attribute": null, "expectedValue": null, "expectedValues": null, "actualValue": null}])
    );
    let c = t.get(&format!("/api/v1/content-security/{id}")).await;
    assert_eq!(c.expect(200)["accessPolicyCount"], 1);
    t.delete(&format!("/api/v1/content-security/{id}")).await.expect_error(
        400,
        &format!("contentSecurity: referenced by access policy 'guarded' ({policy})"),
    );
    // Never readable.
    for path in [
        "/api/v1/content-security",
        "/api/v1/audit-logs?per-page=1000",
        "/api/v1/authorization-events?per-page=1000",
    ] {
        assert!(!t.get(path).await.text.contains(TOKEN), "{path}");
    }
    if let Some(bytes) = t.sqlite_bytes() {
        assert!(!contains(&bytes, TOKEN));
    }
    // Inactive policy: deleted, the reference goes.
    t.patch(&format!("/api/v2/access-policies/{policy}"), json!({"isActive": false}))
        .await
        .expect(200);
    t.delete(&format!("/api/v1/content-security/{id}")).await.expect(204);
    t.delete(&format!("/api/v1/content-security/{id}")).await.expect(204);
    assert_eq!(t.get(&format!("/api/v1/content-security/{id}")).await.status, 204);
}
