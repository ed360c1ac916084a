//! The shared list machinery (contract §1.6) and the audit log (§1.11, §3.23, §3.26).

use serde_json::{Value, json};

use crate::support::harness::{ADMIN_EMAIL, DEFAULT_RS, TestApp};

fn names(v: &Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn paging_filtering_ordering_and_grouping() {
    let t = TestApp::start().await;
    for (n, active) in [
        ("delta", true),
        ("Alpha", false),
        ("charlie", true),
        ("bravo", false),
        ("echo", true),
    ] {
        t.post("/api/v1/roles", json!({"name": n, "isActive": active, "description": format!("the {n} role"), "tags": [{"key": "team", "value": n}]}))
            .await
            .expect(201);
    }
    let all = t.get("/api/v1/roles?filter=isSystem:false").await;
    let b = all.expect(200);
    assert_eq!(names(b, "roles"), ["Alpha", "bravo", "charlie", "delta", "echo"]);
    assert_eq!(
        (
            b["page"].clone(),
            b["perPage"].clone(),
            b["order"].clone(),
            b["statusCode"].clone(),
            b["recordsTotal"].clone()
        ),
        (json!(1), json!(100), json!("name asc"), json!(200), json!(5))
    );

    let p2 = t.get("/api/v1/roles?filter=isSystem:false&per-page=2&page=2").await;
    assert_eq!(names(p2.expect(200), "roles"), ["charlie", "delta"]);
    assert_eq!(p2.body["recordsTotal"], 5);
    let past = t.get("/api/v1/roles?page=50").await;
    assert_eq!(past.expect(200)["roles"], json!([]));

    let desc = t.get("/api/v1/roles?filter=isSystem:false&order=Name%20DESC").await;
    assert_eq!(
        names(desc.expect(200), "roles"),
        ["echo", "delta", "charlie", "bravo", "Alpha"]
    );
    assert_eq!(desc.body["order"], "name desc");
    t.get("/api/v1/roles?order=colour")
        .await
        .expect_error(400, "order: unknown field 'colour'");
    t.get("/api/v1/roles?order=name%20sideways")
        .await
        .expect_error(400, "order: unknown direction 'sideways' (asc or desc)");

    let grouped = t
        .get("/api/v1/roles?filter=isSystem:false&group-by=isActive&order=name%20desc")
        .await;
    assert_eq!(
        names(grouped.expect(200), "roles"),
        ["bravo", "Alpha", "echo", "delta", "charlie"]
    );
    t.get("/api/v1/roles?group-by=nope")
        .await
        .expect_error(400, "group-by: unknown field 'nope'");

    // key:value equality (case-insensitive), tags, and text search on name/description.
    let f = |q: &'static str| {
        let t = &t;
        async move {
            t.get(&format!("/api/v1/roles?{q}")).await.expect(200)["recordsTotal"]
                .as_i64()
                .unwrap()
        }
    };
    assert_eq!(f("filter=name:ALPHA").await, 1);
    assert_eq!(f("filter=isActive:false").await, 2);
    assert_eq!(f("filter=tag:team=echo").await, 1);
    assert_eq!(f("filter=tag:team").await, 5);
    assert_eq!(f("filter=the%20c").await, 1);
    assert_eq!(f("filter=unknownkey:zzz").await, 0);

    let users = t.get("/api/v1/users").await;
    assert_eq!(users.expect(200)["order"], "email asc");
}

#[tokio::test]
async fn one_audit_entry_per_write_with_actor_and_target() {
    let t = TestApp::start().await;
    let before = t.audit("").await.len();
    let r = t
        .post("/api/v1/roles", json!({"name": "audited", "isActive": true}))
        .await;
    let id = r.expect(201)["externalId"].as_str().unwrap().to_string();
    t.patch(&format!("/api/v1/roles/{id}"), json!({"description": "changed"}))
        .await
        .expect(200);
    t.get(&format!("/api/v1/roles/{id}")).await.expect(200);
    t.get("/api/v1/roles").await.expect(200);
    t.delete(&format!("/api/v1/roles/{id}")).await.expect(204);
    // A rejected write changes nothing and is not audited.
    t.post("/api/v1/roles", json!({"name": "", "isActive": true}))
        .await
        .expect(400);
    let entries = t.audit("").await;
    assert_eq!(entries.len(), before + 3, "reads and rejected writes are not audited");
    let mine: Vec<&Value> = entries.iter().filter(|e| e["target"] == id.as_str()).collect();
    let acts: Vec<&str> = mine.iter().map(|e| e["activity"].as_str().unwrap()).collect();
    assert_eq!(acts, ["Deleted", "Patched", "Created"], "newest first");
    let created = mine[2];
    assert_eq!(created["category"], "Roles");
    assert_eq!(created["resourceSetId"], DEFAULT_RS);
    assert_eq!(created["actor"]["type"], "User");
    assert_eq!(created["actor"]["email"], ADMIN_EMAIL);
    assert_eq!(created["actor"]["displayName"], "Bootstrap Admin");
    assert_eq!(created["outcome"], json!({"reason": null, "result": "Success"}));
    assert_eq!(created["severity"], "Info");
    assert_eq!(created["client"]["ipAddress"], "127.0.0.1");
    assert_eq!(created["trustProvider"], Value::Null);
    assert_eq!(mine[0]["severity"], "Warning");
    let one = t
        .get(&format!(
            "/api/v1/audit-logs/{}",
            created["externalId"].as_str().unwrap()
        ))
        .await;
    assert_eq!(one.expect(200), created);
    let missing = t.get(&format!("/api/v1/audit-logs/{}", uuid::Uuid::new_v4())).await;
    assert_eq!(missing.status, 204);
}

#[tokio::test]
async fn audit_log_query_semantics() {
    let t = TestApp::start().await;
    t.post("/api/v1/roles", json!({"name": "q1", "isActive": true}))
        .await
        .expect(201);
    let q = |s: &str| format!("/api/v1/audit-logs?{s}");
    let n = |v: &Value| v["recordsTotal"].as_i64().unwrap();
    // Login + role creation are both in the window.
    assert_eq!(n(t.get(&q("")).await.expect(200)), 2);
    assert_eq!(
        n(t.get(&q("category=roles")).await.expect(200)),
        1,
        "category is case-insensitive"
    );
    assert_eq!(n(t.get(&q("severity=WARNING")).await.expect(200)), 0);
    assert_eq!(n(t.get(&q("search=LOGINSUCC")).await.expect(200)), 1);
    assert_eq!(n(t.get(&q("span-last-minutes=5")).await.expect(200)), 2);
    assert_eq!(
        n(t.get(&q(
            "start-date=2000-01-01T00:00:00Z&end-date=2001-01-01T00:00:00%2B02:00"
        ))
        .await
        .expect(200)),
        0
    );
    assert_eq!(n(t.get(&q("start-date=2000-01-01T00:00:00Z")).await.expect(200)), 2);
    t.get(&q("start-date=2001-01-01T00:00:00Z&end-date=2000-01-01T00:00:00Z"))
        .await
        .expect_error(400, "start-date: must not be after end-date");
    t.get(&q("start-date=yesterday"))
        .await
        .expect_error(400, "start-date: must be an RFC 3339 date-time");
    let asc = t.get(&q("order=createdAt%20asc")).await;
    let b = asc.expect(200);
    assert_eq!(b["auditLogs"][0]["activity"], "LoginSucceeded");
    assert_eq!(b["order"], "createdAt asc");
    assert_eq!(t.get(&q("")).await.body["order"], "createdAt desc");
    t.get(&q("order=bogus"))
        .await
        .expect_error(400, "order: unknown field 'bogus'");
    let paged = t.get(&q("per-page=1&page=2")).await;
    assert_eq!(paged.expect(200)["auditLogs"].as_array().unwrap().len(), 1);
    // A minutes span of zero or less is "not given": the days span applies.
    assert_eq!(n(t.get(&q("span-last-minutes=-5")).await.expect(200)), 2);
    // The span parameters' types (§3.23–§3.25): days and hours int32, minutes int64 here and on
    // authorization events, int32 on workload events.
    t.get(&q("span-last-days=2147483648"))
        .await
        .expect_error(400, "span-last-days: must be a non-negative 32-bit integer");
    t.get(&q("span-last-days=-1"))
        .await
        .expect_error(400, "span-last-days: must be a non-negative 32-bit integer");
    assert_eq!(n(t.get(&q("span-last-minutes=2147483648")).await.expect(200)), 2);
    t.get("/api/v1/authorization-events?span-last-hours=2147483648")
        .await
        .expect_error(400, "span-last-hours: must be a non-negative 32-bit integer");
    t.get("/api/v1/authorization-events?span-last-minutes=2147483648")
        .await
        .expect(200);
    t.get("/api/v1/workload-events?span-last-minutes=2147483648")
        .await
        .expect_error(400, "span-last-minutes: must be a 32-bit integer");
    t.get("/api/v1/workload-events?span-last-minutes=2147483647")
        .await
        .expect(200);
    t.get(&q("span-last-minutes=9223372036854775808"))
        .await
        .expect_error(400, "span-last-minutes: must be a 64-bit integer");
    t.get(&q("span-last-minutes=five"))
        .await
        .expect_error(400, "span-last-minutes: must be an integer");
    t.get(&q("order=createdAt%20desc%20extra"))
        .await
        .expect_error(400, "order: must be '<field> [asc|desc]'");
}

#[tokio::test]
async fn event_lists_order_on_any_scalar_field_and_audit_ties_on_the_external_id() {
    let t = TestApp::start().await;
    for name in ["r1", "r2", "r3"] {
        t.post("/api/v1/roles", json!({"name": name, "isActive": true}))
            .await
            .expect(201);
    }
    let q = |s: &str| format!("/api/v1/audit-logs?{s}");
    let ids = |v: &Value| -> Vec<String> {
        v["auditLogs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["externalId"].as_str().unwrap().to_string())
            .collect()
    };
    // A field without a column of its own sorts on the stored body: failed logins by unknown
    // e-mails are entries whose actor userName is that e-mail.
    for email in ["zz-nobody@svc.test", "aa-nobody@svc.test"] {
        t.post_anon(
            "/api/v1/login",
            json!({"email": email, "password": "wrong-password-123"}),
        )
        .await
        .expect_error(401, "Invalid email or password.");
    }
    let user_names = |v: &Value| -> Vec<String> {
        v["auditLogs"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["actor"]["userName"].as_str().map(str::to_lowercase))
            .collect()
    };
    let asc = user_names(t.get(&q("order=actor.userName%20asc")).await.expect(200));
    assert!(asc.contains(&"zz-nobody@svc.test".to_string()) && asc.contains(&"aa-nobody@svc.test".to_string()));
    let mut sorted = asc.clone();
    sorted.sort();
    assert_eq!(asc, sorted);
    let mut desc = user_names(t.get(&q("order=actor.userName%20desc")).await.expect(200));
    desc.reverse();
    assert_eq!(desc, sorted);
    // Nested or bare names; the response names the full path.
    for (order, field) in [
        ("actor.userName%20desc", "actor.userName desc"),
        ("client.userAgent.raw", "client.userAgent.raw asc"),
        ("OUTCOME.REASON", "outcome.reason asc"),
        ("userName", "actor.userName asc"),
    ] {
        let b = t.get(&q(&format!("order={order}"))).await;
        assert_eq!(b.expect(200)["order"], field, "{order}");
    }
    // Every entry has the same category: ties break on externalId ascending, both directions.
    for dir in ["asc", "desc"] {
        let b = t.get(&q(&format!("order=category%20{dir}&category=Roles"))).await;
        let got = ids(b.expect(200));
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(got.len(), 3);
        assert_eq!(got, sorted, "{dir}");
    }
    t.get(&q("order=actor"))
        .await
        .expect_error(400, "order: unknown field 'actor'");
    let ev = |s: &str| format!("/api/v1/authorization-events?{s}");
    for (order, field) in [
        ("meta.contextId", "meta.contextId asc"),
        (
            "clientRequest.network.targetPort%20desc",
            "clientRequest.network.targetPort desc",
        ),
        ("environment.oidc.sub", "environment.oidc.sub asc"),
    ] {
        assert_eq!(t.get(&ev(&format!("order={order}"))).await.expect(200)["order"], field);
    }
    t.get(&ev("order=trustProviders"))
        .await
        .expect_error(400, "order: unknown field 'trustProviders'");
    // Lists and objects are not scalar fields (§3.26), wherever they sit.
    for (list, field) in [
        ("/api/v1/authorization-events", "matches"),
        ("/api/v1/authorization-events", "clientWorkload.matches"),
        ("/api/v1/authorization-events", "expectedValues"),
        ("/api/v1/audit-logs", "trustProvider"),
    ] {
        t.get(&format!("{list}?order={field}"))
            .await
            .expect_error(400, &format!("order: unknown field '{field}'"));
    }
    let wl = |s: &str| format!("/api/v1/workload-events?{s}");
    assert_eq!(
        t.get(&wl("order=network.clientWorkloadIP")).await.expect(200)["order"],
        "network.clientWorkloadIP asc"
    );
}

#[tokio::test]
async fn compliance_settings_read_and_update() {
    let t = TestApp::start().await;
    let r = t.get("/api/v1/compliance-settings").await;
    assert_eq!(
        *r.expect(200),
        json!([
            {"name": "ap_trust_prov_governance", "value": "Recommended"},
            {"name": "ap_access_cond_governance", "value": "Recommended"},
            {"name": "edge_trust_prov_governance", "value": "Recommended"},
            {"name": "edge_tls_hostname_governance", "value": "Recommended"},
        ])
    );
    let r = t
        .put(
            "/api/v1/compliance-settings",
            json!({"name": "ap_trust_prov_governance", "value": "Required"}),
        )
        .await;
    assert_eq!(
        *r.expect(200),
        json!({"name": "ap_trust_prov_governance", "value": "Required"})
    );
    t.put(
        "/api/v1/compliance-settings",
        json!({"name": "nope", "value": "Required"}),
    )
    .await
    .expect_error_prefix(400, "name: must be one of");
    t.put(
        "/api/v1/compliance-settings",
        json!({"name": "ap_trust_prov_governance", "value": "Maybe"}),
    )
    .await
    .expect_error(400, "value: must be one of Required, Recommended, Optional");
    assert_eq!(t.get("/api/v1/compliance-settings").await.body[0]["value"], "Required");
}
