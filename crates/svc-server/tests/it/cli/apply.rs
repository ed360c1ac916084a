//! `svc admin apply -f FILE`: created, then unchanged (no write: the audit log and `modifiedAt`
//! say so), then updated when a field changes; YAML and JSON; the resource set; the first
//! failure stops the run; a secret in the file never reaches the output.

use serde_json::json;

use super::{listed, ok, refused, resource_set, stderr, stdout, svc};
use crate::support::fake_issuer::FakeIssuer;
use crate::support::harness::TestApp;

const CW: &str = "6a0c3b52-2f0e-4b7a-9d35-1c8e4f0b7a01";
const SW: &str = "6a0c3b52-2f0e-4b7a-9d35-1c8e4f0b7a02";
const CP: &str = "6a0c3b52-2f0e-4b7a-9d35-1c8e4f0b7a03";
const TP: &str = "6a0c3b52-2f0e-4b7a-9d35-1c8e4f0b7a04";
const CANARY: &str = "s3cr3t-apply-canary";

/// A file of one entry of most writable families, referencing each other by fixed ids.
fn yaml(issuer: &str, description: &str) -> String {
    format!(
        r#"# A YAML list, then one more document.
- resource: trust-providers
  externalId: {TP}
  name: ci
  isActive: true
  provider: OidcIdToken
  oidcUrl: {issuer}
- resource: client-workloads
  externalId: {CW}
  name: deploy-job
  description: {description}
  isActive: true
  identities:
    - type: oidcIdTokenSubject
      value: "repo:acme/app:ref:refs/heads/main"
- resource: server-workloads
  externalId: {SW}
  name: partner
  isActive: true
  serviceEndpoint: {{host: api.partner.test, port: 443, appProtocol: HTTP, transportProtocol: TCP,
                    requestedPort: 443, requestedTls: true, tls: true, tlsVerification: full}}
- resource: credential-providers
  externalId: {CP}
  name: partner-key
  type: apikey
  isActive: true
  apiKey: {CANARY}
- resource: access-policies
  name: deploy to partner
  isActive: true
  clientWorkload: {CW}
  serverWorkload: {SW}
  trustProviders: [{TP}]
  credentialProviders:
    - credentialProviderId: {CP}
      mappingType: None
---
resource: roles
name: team-auditor
isActive: true
permissions:
  - name: Audit Logs
    read: true
---
resource: users
email: cli-user@acme.test
firstName: Cli
lastName: User
password: a-long-enough-password
---
resource: resource-sets
name: team-b
isActive: true
"#
    )
}

fn write(t: &TestApp, name: &str, text: &str) -> String {
    let p = t.dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// `(action, resource, name)` of each output line.
fn actions(out: &str) -> Vec<(String, String, String)> {
    out.lines()
        .map(|l| {
            let mut w = l.splitn(4, ' ');
            let (a, r, _id, n) = (w.next(), w.next(), w.next(), w.next());
            (a.unwrap().into(), r.unwrap().into(), n.unwrap_or_default().into())
        })
        .collect()
}

async fn writes(t: &TestApp) -> usize {
    t.audit("").await.len()
}

#[tokio::test]
async fn apply_creates_then_changes_nothing_then_updates_what_changed() {
    let t = TestApp::start().await;
    let iss = FakeIssuer::start().await;
    let file = write(&t, "svc.yaml", &yaml(&iss.url, "first"));

    let out = ok(&svc(&t, &["admin", "apply", "-f", &file]).await);
    let expected = [
        ("trust-providers", "ci"),
        ("client-workloads", "deploy-job"),
        ("server-workloads", "partner"),
        ("credential-providers", "partner-key"),
        ("access-policies", "deploy to partner"),
        ("roles", "team-auditor"),
        ("users", "cli-user@acme.test"),
        ("resource-sets", "team-b"),
    ];
    let got = actions(&out);
    assert_eq!(got.len(), expected.len(), "{out}");
    for ((a, r, n), (er, en)) in got.iter().zip(expected) {
        assert_eq!((a.as_str(), r.as_str(), n.as_str()), ("created", er, en), "{out}");
    }
    // The lines carry the ids the server gave (or the file's).
    assert!(
        out.contains(&format!("created client-workloads {CW} deploy-job")),
        "{out}"
    );
    assert!(out.contains(&format!("created server-workloads {SW} partner")), "{out}");
    let policy = t.get("/api/v2/access-policies?filter=name:deploy%20to%20partner").await;
    let policy = policy.expect(200)["entities"][0].clone();
    assert!(
        out.contains(&format!(
            "created access-policies {} ",
            policy["externalId"].as_str().unwrap()
        )),
        "{out}"
    );
    assert_eq!(
        t.get(&format!("/api/v1/client-workloads/{CW}")).await.expect(200)["description"],
        "first"
    );

    // Twice: nothing written, nothing modified.
    let before = writes(&t).await;
    let modified = t.get(&format!("/api/v1/client-workloads/{CW}")).await.expect(200)["modifiedAt"].clone();
    let out = ok(&svc(&t, &["admin", "apply", "-f", &file]).await);
    assert!(actions(&out).iter().all(|(a, ..)| a == "unchanged"), "{out}");
    assert_eq!(actions(&out).len(), expected.len());
    assert_eq!(writes(&t).await, before, "a second apply wrote");
    assert_eq!(
        t.get(&format!("/api/v1/client-workloads/{CW}")).await.expect(200)["modifiedAt"],
        modified
    );

    // One field changed: that entry alone is updated, once.
    let file = write(&t, "svc.yaml", &yaml(&iss.url, "second"));
    let out = ok(&svc(&t, &["admin", "apply", "-f", &file]).await);
    let changed: Vec<_> = actions(&out).into_iter().filter(|(a, ..)| a != "unchanged").collect();
    assert_eq!(
        changed,
        [("updated".into(), "client-workloads".into(), "deploy-job".into())],
        "{out}"
    );
    assert_eq!(writes(&t).await, before + 1);
    let cw = t.get(&format!("/api/v1/client-workloads/{CW}")).await;
    assert_eq!(cw.expect(200)["description"], "second");
    let out = ok(&svc(&t, &["admin", "apply", "-f", &file]).await);
    assert!(actions(&out).iter().all(|(a, ..)| a == "unchanged"), "{out}");
    assert_eq!(writes(&t).await, before + 1);

    // The policy holds the mapping, the provider its secret (it is issued to the workload).
    let p = t
        .get(&format!(
            "/api/v2/access-policies/{}/credential-mappings",
            policy["externalId"].as_str().unwrap()
        ))
        .await;
    assert_eq!(p.expect(200)["entities"][0]["credentialProviderId"], CP);
    assert!(!out.contains(CANARY));
}

/// An entry found by name (no externalId in the file) is updated in place, and a user by e-mail.
#[tokio::test]
async fn apply_matches_by_name_and_reads_json() {
    let t = TestApp::start().await;
    let r = t
        .post(
            "/api/v1/roles",
            json!({"name": "ops", "isActive": true, "permissions": []}),
        )
        .await;
    let id = r.expect(201)["externalId"].as_str().unwrap().to_string();
    let file = write(
        &t,
        "roles.json",
        &json!([{"resource": "roles", "name": "ops", "isActive": true, "description": "operators",
                 "permissions": [{"name": "Audit Logs", "read": true}]},
                {"resource": "roles", "name": "ops-2", "isActive": false}])
        .to_string(),
    );
    let out = ok(&svc(&t, &["admin", "apply", "-f", &file]).await);
    assert_eq!(
        out,
        format!(
            "updated roles {id} ops\ncreated roles {} ops-2\n",
            role_id(&t, "ops-2").await
        )
    );
    let role = t.get(&format!("/api/v1/roles/{id}")).await;
    assert_eq!(role.expect(200)["description"], "operators");
    let out = ok(&svc(&t, &["admin", "apply", "-f", &file]).await);
    assert_eq!(
        actions(&out).iter().filter(|(a, ..)| a == "unchanged").count(),
        2,
        "{out}"
    );

    // Two entries of one name: the item must say which (its externalId).
    t.post("/api/v1/roles", json!({"name": "ops-2", "isActive": true}))
        .await
        .expect(201);
    let o = svc(&t, &["admin", "apply", "-f", &file]).await;
    refused(
        &o,
        1,
        "svc: item 2 (roles \"ops-2\"): 2 entries are named \"ops-2\"; give the item the externalId",
    );
}

async fn role_id(t: &TestApp, name: &str) -> String {
    let r = t.get(&format!("/api/v1/roles?filter=name:{name}")).await;
    r.expect(200)["roles"][0]["externalId"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn apply_writes_into_the_resource_set() {
    let t = TestApp::start().await;
    let rs = resource_set(&t, "team-a").await;
    let file = write(
        &t,
        "cw.yaml",
        "resource: client-workloads\nname: job\nisActive: true\n---\nresource: content-security\nname: cs\nisActive: true\ntype: SensorAAIDR\nbaseUrl: https://aidr.example.test\nencryptedToken: s3cr3t\n",
    );
    // The same names in the default set and in team-a are different entries.
    let out = ok(&svc(&t, &["admin", "apply", "-f", &file]).await);
    assert_eq!(
        actions(&out).iter().filter(|(a, ..)| a == "created").count(),
        2,
        "{out}"
    );
    let out = ok(&svc(&t, &["admin", "apply", "-f", &file, "--resource-set", "team-a"]).await);
    assert_eq!(
        actions(&out).iter().filter(|(a, ..)| a == "created").count(),
        2,
        "{out}"
    );
    let out = ok(&svc(&t, &["admin", "apply", "-f", &file, "--resource-set", &rs]).await);
    assert_eq!(
        actions(&out).iter().filter(|(a, ..)| a == "unchanged").count(),
        2,
        "{out}"
    );
    let (names, _) = listed(&t, "client-workloads", &["--resource-set", "team-a"]).await;
    assert_eq!(names, ["job"]);
    let cs = t.get("/api/v1/content-security").await;
    let sets: Vec<&str> = cs.expect(200)["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["resourceSet"].as_str().unwrap())
        .collect();
    assert_eq!(sets.len(), 2);
    assert!(sets.contains(&rs.as_str()) && sets.contains(&crate::support::harness::DEFAULT_RS));
    // The list of a resource without the header keeps the set's entries.
    let (names, _) = listed(&t, "content-security", &["--resource-set", "team-a"]).await;
    assert_eq!(names, ["cs"]);
}

#[tokio::test]
async fn apply_stops_at_the_first_error_with_its_message() {
    let t = TestApp::start().await;
    let file = write(
        &t,
        "bad.yaml",
        &format!(
            "- resource: roles\n  name: first\n  isActive: true\n\
             - resource: credential-providers\n  name: bad\n  type: apikey\n  isActive: true\n  apiKey: {CANARY}\n  nope: 1\n\
             - resource: roles\n  name: third\n  isActive: true\n"
        ),
    );
    let o = svc(&t, &["admin", "apply", "-f", &file]).await;
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(actions(&stdout(&o)).len(), 1, "{}", stdout(&o));
    assert_eq!(
        stderr(&o),
        "svc: item 2 (credential-providers \"bad\"): POST /api/v2/credential-providers: 400 nope: unknown property\n"
    );
    assert!(!stdout(&o).contains(CANARY) && !stderr(&o).contains(CANARY));
    let roles = t.get("/api/v1/roles?filter=name:third").await;
    assert_eq!(roles.expect(200)["recordsTotal"], 0, "nothing after the failure");

    // A file that cannot be read, or whose items are wrong, writes nothing (exit 2).
    let before = t.audit("").await.len();
    let file = write(
        &t,
        "unknown.yaml",
        "- resource: roles\n  name: x\n  isActive: true\n- resource: gadgets\n  name: y\n",
    );
    refused(
        &svc(&t, &["admin", "apply", "-f", &file]).await,
        2,
        "item 2: unknown resource \"gadgets\"",
    );
    refused(
        &svc(&t, &["admin", "apply", "-f", "/nonexistent.yaml"]).await,
        2,
        "cannot read /nonexistent.yaml",
    );
    let file = write(&t, "x.json", "[{\"resource\": \"roles\",]");
    refused(&svc(&t, &["admin", "apply", "-f", &file]).await, 2, "not JSON");
    assert_eq!(t.audit("").await.len(), before);
}

/// Standard input, and an empty file (nothing to do).
#[tokio::test]
async fn apply_reads_standard_input() {
    use tokio::io::AsyncWriteExt;
    let t = TestApp::start().await;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .args(["admin", "apply", "-f", "-"])
        .env_clear()
        .env("SVC_URL", &t.base)
        .env("SVC_TOKEN", &t.token)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"resource\": \"roles\", \"name\": \"from-stdin\", \"isActive\": true}")
        .await
        .unwrap();
    drop(stdin);
    let o = child.wait_with_output().await.unwrap();
    assert!(ok(&o).starts_with("created roles "), "{}", stdout(&o));
    let empty = write(&t, "empty.yaml", "# nothing yet\n");
    assert_eq!(ok(&svc(&t, &["admin", "apply", "-f", &empty]).await), "");
}

#[tokio::test]
async fn a_secret_of_the_file_never_reaches_the_output() {
    let t = TestApp::start().await;
    let items = |extra: &str| {
        format!(
            "- resource: credential-providers\n  name: key\n  type: apikey\n  isActive: true\n  apiKey: {CANARY}\n{extra}\
             - resource: users\n  email: secretive@acme.test\n  firstName: Se\n  lastName: Cret\n  password: {CANARY}-pw\n"
        )
    };
    let good = write(&t, "good.yaml", &items(""));
    let bad = write(&t, "bad.yaml", &items("  description: changed\n  nope: 1\n"));
    let mut seen = String::new();
    for file in [&good, &good, &bad] {
        let o = svc(&t, &["admin", "apply", "-f", file]).await;
        seen.push_str(&stdout(&o));
        seen.push_str(&stderr(&o));
    }
    assert!(
        seen.contains("created credential-providers") && seen.contains("unchanged users"),
        "{seen}"
    );
    assert!(seen.contains("400 nope: unknown property"), "{seen}");
    assert!(!seen.contains(CANARY), "{seen}");
    assert!(!crate::support::harness::logs().contains(CANARY));
    // The secret was stored (the provider issues it), though never read back.
    let cp = t.get("/api/v2/credential-providers?filter=name:key").await;
    assert_eq!(
        cp.expect(200)["credentialProviders"][0]["apiKey"],
        serde_json::Value::Null
    );
}

/// A write that earned `X-Svc-Compliance-Warning` says so on standard error, with what the
/// setting means: a policy with no trust provider accepts an edge token from any of them. A run
/// that writes nothing warns of nothing.
#[tokio::test]
async fn apply_prints_the_compliance_warnings_a_write_earned() {
    let t = TestApp::start().await;
    let file = |description: &str| {
        format!(
            r#"- resource: client-workloads
  externalId: {CW}
  name: deploy-job
  isActive: true
  identities: [{{type: oidcIdTokenSubject, value: "repo:acme/app"}}]
- resource: server-workloads
  externalId: {SW}
  name: partner
  isActive: true
  serviceEndpoint: {{host: api.partner.test, port: 443, appProtocol: HTTP, transportProtocol: TCP,
                    requestedPort: 443, requestedTls: true, tls: true, tlsVerification: full}}
- resource: credential-providers
  externalId: {CP}
  name: partner-key
  type: apikey
  isActive: true
  apiKey: {CANARY}
- resource: access-policies
  name: open policy
  description: {description}
  isActive: true
  clientWorkload: {CW}
  serverWorkload: {SW}
  trustProviders: []
  credentialProviders:
    - credentialProviderId: {CP}
      mappingType: None
"#
        )
    };
    let path = write(&t, "open.yaml", &file("first"));
    let o = svc(&t, &["admin", "apply", "-f", &path]).await;
    let out = ok(&o);
    assert!(out.contains("created access-policies "), "{out}");
    let err = stderr(&o);
    let warned = |err: &str, method: &str| {
        err.lines().any(|l| {
            l.starts_with(&format!(
                "svc: warning: {method} /api/v2/access-policies: compliance setting ap_trust_prov_governance: "
            )) && l.contains("accepts an edge token from any trust provider of its resource set")
        })
    };
    assert!(warned(&err, "POST"), "{err}");
    assert!(
        err.contains("compliance setting ap_access_cond_governance: the access policy has no access condition"),
        "{err}"
    );
    assert!(!err.contains(CANARY) && !out.contains(CANARY));
    // Nothing written: nothing to warn of.
    let o = svc(&t, &["admin", "apply", "-f", &path]).await;
    ok(&o);
    assert_eq!(stderr(&o), "", "a run without writes warned");
    // An update that still lists no trust provider earns it again.
    let path = write(&t, "open.yaml", &file("second"));
    let o = svc(&t, &["admin", "apply", "-f", &path]).await;
    assert!(ok(&o).contains("updated access-policies "));
    assert!(warned(&stderr(&o), "PUT"), "{}", stderr(&o));
}
