//! `svc admin list` and `svc admin get`: JSON as the API answers it, tables of the key columns,
//! the resource set by id or name, paging, and the failures: an unknown resource (exit 2), a
//! refused token (exit 1 with the server's message), a missing entry.

use serde_json::{Value, json};

use super::{listed, ok, refused, resource_set, stdout, svc, svc_with};
use crate::support::cred::id_of;
use crate::support::harness::TestApp;

async fn client_workload(t: &TestApp, name: &str, rs: Option<&str>) -> String {
    let mut req = t
        .client
        .post(t.url("/api/v1/client-workloads"))
        .bearer_auth(&t.token)
        .json(&json!({"name": name, "isActive": true,
                      "identities": [{"type": "oidcIdTokenSubject", "value": format!("sub:{name}")}]}));
    if let Some(rs) = rs {
        req = req.header("x-svc-resourceset", rs);
    }
    let r = t.send(req).await;
    assert_eq!(r.status, 204, "{}", r.text);
    id_of(&r)
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[tokio::test]
async fn list_and_get_print_the_apis_json_and_tables() {
    let t = TestApp::start().await;
    let a = client_workload(&t, "alpha-job", None).await;
    let b = client_workload(&t, "beta job", None).await;

    let out = ok(&svc(&t, &["admin", "list", "client-workloads", "-o", "json"]).await);
    let api = t.get("/api/v1/client-workloads").await;
    assert_eq!(json_of(&out), api.expect(200)["clientWorkloads"], "the list's items");

    let table = ok(&svc(&t, &["admin", "list", "client-workloads"]).await);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(header, ["EXTERNALID", "NAME", "ISACTIVE", "MODIFIEDAT"]);
    assert!(lines[1].starts_with(&format!("{a}  alpha-job  ")), "{table}");
    assert!(lines[2].starts_with(&format!("{b}  beta job   true")), "{table}");
    // Columns are aligned: every row's isActive starts where the header's does.
    let col = lines[0].find("ISACTIVE").unwrap();
    assert!(lines.iter().skip(1).all(|l| &l[col..col + 4] == "true"), "{table}");

    let out = ok(&svc(&t, &["admin", "get", "client-workloads", &b, "-o", "json"]).await);
    assert_eq!(
        json_of(&out),
        *t.get(&format!("/api/v1/client-workloads/{b}")).await.expect(200)
    );
    let out = ok(&svc(&t, &["admin", "get", "client-workloads", &b]).await);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(
        out.lines().nth(1).unwrap().starts_with(&format!("{b}  beta job")),
        "{out}"
    );

    // A resource with a discriminator shows it; users show their e-mail; v1 views by prefix.
    t.post(
        "/api/v2/credential-providers",
        json!({"type": "apikey", "name": "key", "isActive": true, "apiKey": "s3cr3t-list-canary"}),
    )
    .await
    .expect(201);
    let table = ok(&svc(&t, &["admin", "list", "credential-providers"]).await);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["EXTERNALID", "NAME", "TYPE", "ISACTIVE", "MODIFIEDAT"],
        "{table}"
    );
    assert!(table.contains("  key   apikey  true"), "{table}");
    let v1 = ok(&svc(&t, &["admin", "list", "v1/credential-providers", "-o", "json"]).await);
    assert_eq!(
        json_of(&v1),
        t.get("/api/v1/credential-providers").await.expect(200)["credentialProviders"]
    );
    assert!(!v1.contains("s3cr3t-list-canary") && !table.contains("s3cr3t-list-canary"));
    let users = ok(&svc(&t, &["admin", "list", "users"]).await);
    assert!(users.starts_with("EXTERNALID") && users.contains("EMAIL"), "{users}");
    assert!(users.contains(crate::support::harness::ADMIN_EMAIL), "{users}");

    // Event lists have their own columns; extra query parameters pass through.
    let audit = ok(&svc(
        &t,
        &["admin", "list", "audit-logs", "--param", "category=ClientWorkloads"],
    )
    .await);
    let header: Vec<&str> = audit.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["EXTERNALID", "CREATEDAT", "CATEGORY", "ACTIVITY", "TARGET", "RESULT"]
    );
    assert_eq!(audit.lines().count(), 3, "two creates: {audit}");
    assert!(audit.contains("ClientWorkloads  Created"), "{audit}");

    // A missing entry is a failure; so is a malformed id (the server's 400).
    let missing = "00000000-0000-4000-8000-000000000000";
    refused(
        &svc(&t, &["admin", "get", "client-workloads", missing]).await,
        1,
        &format!("svc: client-workloads: no entry {missing}"),
    );
    refused(
        &svc(&t, &["admin", "get", "client-workloads", "nope"]).await,
        1,
        "svc: GET /api/v1/client-workloads/nope: 400 ",
    );
}

#[tokio::test]
async fn an_unknown_resource_exits_2_listing_the_known_ones() {
    let t = TestApp::start().await;
    for args in [
        &["admin", "list", "workloads"][..],
        &["admin", "get", "workloads", "00000000-0000-4000-8000-000000000000"],
        &["admin", "list", "v3/client-workloads"],
    ] {
        let o = svc(&t, args).await;
        refused(&o, 2, "svc: unknown resource");
        let err = super::stderr(&o);
        for known in [
            "client-workloads",
            "trust-providers",
            "credential-providers",
            "v1/credential-providers",
            "access-policies",
            "audit-logs",
            "users",
        ] {
            assert!(err.contains(known), "{known} not listed: {err}");
        }
        assert!(stdout(&o).is_empty());
    }
}

#[tokio::test]
async fn a_refused_token_exits_1_with_the_servers_message() {
    let t = TestApp::start().await;
    let env = [("SVC_URL", t.base.as_str()), ("SVC_TOKEN", "not-a-token")];
    let o = svc_with(&env, &["admin", "list", "client-workloads"]).await;
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        super::stderr(&o),
        "svc: GET /api/v1/client-workloads: 401 Not authenticated.\n"
    );
    // A token without the permission: 403, the server's message.
    let weak = t
        .user_with_role("weak@acme.test", json!([{"name": "Users", "read": true}]))
        .await;
    let o = svc(&t, &["admin", "list", "roles", "--token", &weak]).await;
    refused(&o, 1, "svc: GET /api/v1/roles: 403 Forbidden.");
    // No token at all is a usage error; so is a URL that is none; an unreachable server fails.
    refused(
        &svc_with(&[("SVC_URL", &t.base)], &["admin", "list", "roles"]).await,
        2,
        "no token: give --token or set SVC_TOKEN",
    );
    refused(
        &svc(&t, &["admin", "list", "roles", "--url", "ftp://x"]).await,
        2,
        "--url / SVC_URL: not an http(s) URL",
    );
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    refused(
        &svc(&t, &["admin", "list", "roles", "--url", &closed]).await,
        1,
        &format!("svc: cannot reach {closed}"),
    );
}

#[tokio::test]
async fn the_token_never_reaches_an_output_or_error_message() {
    let t = TestApp::start().await;
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let canary = "tok3n-canary.not-a-jwt";
    for (url, token) in [
        (t.base.as_str(), canary),
        (closed.as_str(), t.token.as_str()),
        ("ftp://x", t.token.as_str()),
    ] {
        for args in [
            &["admin", "list", "roles"][..],
            &["admin", "get", "roles", "00000000-0000-4000-8000-000000000000"],
            &["admin", "explain", "--type", "ApiKey"],
        ] {
            let o = svc_with(&[("SVC_URL", url), ("SVC_TOKEN", token)], args).await;
            assert!(!o.status.success());
            let all = format!("{}{}", stdout(&o), super::stderr(&o));
            assert!(!all.contains(token), "{args:?}: {all}");
        }
    }
}

/// `svc admin token`'s whole answer works as SVC_TOKEN.
#[tokio::test]
async fn the_output_of_admin_token_is_a_token_for_the_client() {
    let t = TestApp::start().await;
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"));
    cmd.args(["admin", "token", "--role", "SuperAdmin", "--ttl", "600"])
        .env_clear()
        .envs(&t.env);
    if !crate::support::harness::use_postgres() {
        cmd.current_dir(&t.dir);
    }
    let login = ok(&cmd.output().await.unwrap());
    let o = svc_with(
        &[("SVC_URL", &t.base), ("SVC_TOKEN", login.trim())],
        &["admin", "list", "roles", "-o", "json"],
    )
    .await;
    let roles = json_of(&ok(&o));
    assert!(
        roles.as_array().unwrap().iter().any(|r| r["name"] == "SuperAdmin"),
        "{roles}"
    );
}

#[tokio::test]
async fn the_resource_set_flag_selects_the_set_by_id_or_name() {
    let t = TestApp::start().await;
    let rs = resource_set(&t, "team-a").await;
    client_workload(&t, "in-default", None).await;
    let theirs = client_workload(&t, "in-team-a", Some(&rs)).await;

    let names = |extra: &'static [&'static str]| listed(&t, "client-workloads", extra);
    assert_eq!(names(&[]).await.0, ["in-default"]);
    assert_eq!(names(&["--resource-set", "team-a"]).await.0, ["in-team-a"]);
    let by_id = listed(&t, "client-workloads", &["--resource-set", &rs]).await.0;
    assert_eq!(by_id, ["in-team-a"]);
    // get reads in the set; outside it the entry is not there.
    let get = ["admin", "get", "client-workloads", theirs.as_str(), "-o", "json"];
    refused(&svc(&t, &get).await, 1, "no entry");
    let mut in_set = get.to_vec();
    in_set.extend(["--resource-set", "team-a"]);
    assert_eq!(json_of(&ok(&svc(&t, &in_set).await))["externalId"], theirs.as_str());
    // A list without the header (v2 access policies) filters by the set; a global resource has none.
    refused(
        &svc(&t, &["admin", "list", "roles", "--resource-set", "team-a"]).await,
        2,
        "roles belong to no resource set",
    );
    let out = ok(&svc(&t, &["admin", "list", "access-policies", "--resource-set", "team-a"]).await);
    assert_eq!(out.lines().count(), 1, "the header only: {out}");
    refused(
        &svc(&t, &["admin", "list", "client-workloads", "--resource-set", "team-b"]).await,
        2,
        "--resource-set: no resource set named \"team-b\"",
    );
}

#[tokio::test]
async fn all_follows_every_page() {
    let t = TestApp::start().await;
    for i in 0..5 {
        client_workload(&t, &format!("job-{i}"), None).await;
    }
    let cw = "client-workloads";
    let (names, err) = listed(&t, cw, &["--per-page", "2"]).await;
    assert_eq!(names, ["job-0", "job-1"]);
    assert!(
        err.contains("2 of 5 entries shown (page 1); --all lists every page"),
        "{err}"
    );
    let (names, err) = listed(&t, cw, &["--per-page", "2", "--all"]).await;
    assert_eq!(names, ["job-0", "job-1", "job-2", "job-3", "job-4"]);
    assert!(err.is_empty(), "{err}");
    let (names, _) = listed(&t, cw, &["--per-page", "2", "--page", "3", "--order", "name desc"]).await;
    assert_eq!(names, ["job-0"]);
    let (names, _) = listed(&t, cw, &["--filter", "name:job-3"]).await;
    assert_eq!(names, ["job-3"]);
}
