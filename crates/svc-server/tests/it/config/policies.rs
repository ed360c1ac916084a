//! Access policies v2 and v1 (contract §3.8, §3.9), compliance settings (§3.22), referential
//! integrity (§1.10), resource-set cascade, and the issuer documents (§5.1).

use serde_json::{Value, json};

use crate::support::harness::{DEFAULT_RS, TestApp};

struct Parts {
    tp: String,
    cw: String,
    sw: String,
    cp: String,
}

async fn parts(t: &TestApp, tag: &str) -> Parts {
    let tp = t
        .post(
            "/api/v1/trust-providers",
            json!({"name": format!("tp-{tag}"), "isActive": true, "provider": "CiAIdentityToken"}),
        )
        .await;
    let cw = t.post("/api/v1/client-workloads", json!({"name": format!("cw-{tag}"), "isActive": true, "identities": [{"type": "svcClientId", "value": tag}]})).await;
    let sw = t
        .post(
            "/api/v1/server-workloads",
            json!({"name": format!("sw-{tag}"), "isActive": true, "serviceEndpoint": {"host": format!("{tag}.example.com"), "port": 443, "appProtocol": "HTTP",
                   "transportProtocol": "TCP", "requestedPort": 443, "requestedTls": true, "tls": true, "tlsVerification": "full"}}),
        )
        .await;
    let cp = t
        .post(
            "/api/v2/credential-providers",
            json!({"type": "apikey", "name": format!("cp-{tag}"), "isActive": true, "apiKey": "k"}),
        )
        .await;
    let id = |loc: Option<&str>| loc.unwrap().rsplit('/').next().unwrap().to_string();
    Parts {
        tp: tp.expect(200)["externalId"].as_str().unwrap().into(),
        cw: id(cw.header("location")),
        sw: id(sw.header("location")),
        cp: cp.expect(201)["externalId"].as_str().unwrap().into(),
    }
}

fn body(p: &Parts, name: &str) -> Value {
    json!({"name": name, "isActive": true, "clientWorkload": p.cw, "serverWorkload": p.sw, "trustProviders": [p.tp],
           "credentialProviders": [{"credentialProviderId": p.cp, "mappingType": "None"}]})
}

#[tokio::test]
async fn policy_validation_rules() {
    let t = TestApp::start().await;
    let p = parts(&t, "a").await;
    let with = |f: &str, v: Value| {
        let mut b = body(&p, "x");
        b[f] = v;
        b
    };
    let bogus = uuid::Uuid::new_v4();
    let cases = [
        (with("clientWorkload", Value::Null), "clientWorkload: is required"),
        (
            with("clientWorkload", json!(bogus)),
            "clientWorkload: unknown client workload",
        ),
        (
            with("serverWorkload", json!(bogus)),
            "serverWorkload: unknown server workload",
        ),
        (
            with("trustProviders", json!([bogus])),
            "trustProviders[0]: unknown trust provider",
        ),
        (
            with("trustProviders", json!([p.tp, p.tp])),
            "trustProviders[1]: duplicate trust provider",
        ),
        (
            with("accessConditions", json!([bogus])),
            "accessConditions[0]: unknown access condition",
        ),
        (
            with(
                "credentialProviders",
                json!([{"credentialProviderId": bogus, "mappingType": "None"}]),
            ),
            "credentialProviders[0].credentialProviderId: unknown credential provider",
        ),
        (
            with(
                "credentialProviders",
                json!([{"credentialProviderId": p.cp, "mappingType": "Bogus"}]),
            ),
            "credentialProviders[0].mappingType: must be one of",
        ),
        (
            with(
                "credentialProviders",
                json!([{"credentialProviderId": p.cp, "mappingType": "AccessKeyId"}]),
            ),
            "credentialProviders[0].accessKeyId: is required for mappingType AccessKeyId",
        ),
        (
            with(
                "credentialProviders",
                json!([{"credentialProviderId": p.cp, "mappingType": "AccessKeyId", "accessKeyId": "akia"}]),
            ),
            "credentialProviders[0].accessKeyId: must match ^[A-Z0-9]*$",
        ),
        (
            with(
                "credentialProviders",
                json!([{"credentialProviderId": p.cp, "mappingType": "None", "accountName": "x"}]),
            ),
            "credentialProviders[0].accountName: must be empty for mappingType None",
        ),
        (
            with(
                "credentialProviders",
                json!([{"credentialProviderId": p.cp, "mappingType": "AccountName", "accountName": "-bad"}]),
            ),
            "credentialProviders[0].accountName: must match",
        ),
        (
            with(
                "credentialProviders",
                json!([{"credentialProviderId": p.cp, "mappingType": "None"}, {"credentialProviderId": p.cp, "mappingType": "None"}]),
            ),
            "credentialProviders[1].credentialProviderId: duplicate credential provider",
        ),
        (with("resourceSet", json!(bogus)), "resourceSet: unknown resource set"),
    ];
    for (b, msg) in cases {
        t.post("/api/v2/access-policies", b).await.expect_error_prefix(400, msg);
    }
    // One mapping may use any selector type; a unicode account name is fine.
    let b = with(
        "credentialProviders",
        json!([{"credentialProviderId": p.cp, "mappingType": "AccountName", "accountName": "Ünïcode.user-1"}]),
    );
    let r = t.post("/api/v2/access-policies", b).await;
    let first = r.expect(200)["externalId"].as_str().unwrap().to_string();
    // One active policy per pair; a second inactive one is allowed.
    t.post("/api/v2/access-policies", body(&p, "dup"))
        .await
        .expect_error_prefix(400, "clientWorkload: active access policy");
    let mut inactive = body(&p, "standby");
    inactive["isActive"] = json!(false);
    let standby = t.post("/api/v2/access-policies", inactive).await.expect(200)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    t.patch(&format!("/api/v2/access-policies/{standby}"), json!({"isActive": true}))
        .await
        .expect_error_prefix(400, "clientWorkload: active access policy");
    // getByWorkloadIds: the active one, else the most recently modified inactive one, else 404.
    let path = format!("/api/v2/access-policies/getByWorkloadIds/{}/{}", p.cw, p.sw);
    assert_eq!(t.get(&path).await.expect(200)["externalId"], first.as_str());
    t.patch(&format!("/api/v2/access-policies/{first}"), json!({"isActive": false}))
        .await
        .expect(200);
    t.patch(
        &format!("/api/v2/access-policies/{standby}"),
        json!({"description": "touched"}),
    )
    .await
    .expect(200);
    assert_eq!(t.get(&path).await.expect(200)["externalId"], standby.as_str());
    t.get(&format!("/api/v2/access-policies/getByWorkloadIds/{}/{}", p.sw, p.cw))
        .await
        .expect_error(404, "Not found.");
}

#[tokio::test]
async fn policy_shapes_notes_and_queries() {
    let t = TestApp::start().await;
    let p = parts(&t, "b").await;
    let r = t.post("/api/v2/access-policies", body(&p, "b-policy")).await;
    let created = r.expect(200).clone();
    let id = created["externalId"].as_str().unwrap().to_string();
    assert_eq!(
        r.header("location"),
        Some(format!("/api/v2/access-policies/{id}").as_str())
    );
    assert_eq!(created["resourceSet"], DEFAULT_RS);
    assert_eq!(created["clientWorkload"], p.cw.as_str());
    let g = t.get(&format!("/api/v2/access-policies/{id}")).await;
    let g = g.expect(200).clone();
    assert_eq!(
        g["clientWorkload"],
        json!({"externalId": p.cw, "name": "cw-b", "isActive": true, "tags": []})
    );
    assert_eq!(g["credentialProviders"][0]["name"], "cp-b");
    assert_eq!(g["trustProviders"][0]["name"], "tp-b");
    // Counts reflect references.
    assert_eq!(
        t.get(&format!("/api/v1/client-workloads/{}", p.cw)).await.body["accessPolicyCount"],
        1
    );
    assert_eq!(
        t.get(&format!("/api/v2/credential-providers/{}", p.cp)).await.body["accessPolicyCount"],
        1
    );
    // Notes: 201, listed newest first, audited; a note is a write (modifiedAt moves).
    let path = format!("/api/v2/access-policies/{id}");
    let before = t.get(&path).await.body["modifiedAt"].clone();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let n = t
        .post(&format!("/api/v2/access-policies/{id}/notes"), json!({"note": "first"}))
        .await;
    let n = n.expect(201).clone();
    assert_ne!(t.get(&path).await.body["modifiedAt"], before);
    assert_eq!(
        (n["note"].clone(), n["createdBy"].clone()),
        (json!("first"), json!(crate::support::harness::ADMIN_EMAIL))
    );
    t.post(
        &format!("/api/v2/access-policies/{id}/notes"),
        json!({"note": "second"}),
    )
    .await
    .expect(201);
    t.post(&format!("/api/v2/access-policies/{id}/notes"), json!({"note": ""}))
        .await
        .expect_error(400, "note: must be 1..1024 characters");
    let notes = t.get(&format!("/api/v2/access-policies/{id}/notes")).await;
    assert_eq!(notes.expect(200)["entities"][0]["note"], "second");
    assert_eq!(
        (notes.body["page"].clone(), notes.body["perPage"].clone()),
        (json!(1), json!(100))
    );
    // Paged like every list (§1.6).
    let page2 = t
        .get(&format!("/api/v2/access-policies/{id}/notes?per-page=1&page=2"))
        .await;
    let v = page2.expect(200);
    assert_eq!(
        (v["page"].clone(), v["perPage"].clone(), v["recordsTotal"].clone()),
        (json!(2), json!(1), json!(2))
    );
    assert_eq!(v["entities"][0]["note"], "first");
    t.get(&format!("/api/v2/access-policies/{id}/notes?per-page=0"))
        .await
        .expect_error(400, "per-page: must be an integer in 1..1000");
    assert!(
        t.audit("&category=AccessPolicies")
            .await
            .iter()
            .any(|a| a["activity"] == "NoteAdded" && a["target"] == id.as_str())
    );
    // List: default order modifiedAt desc, query over referenced names, filters on references.
    let q = parts(&t, "c").await;
    t.post("/api/v2/access-policies", body(&q, "c-policy"))
        .await
        .expect(200);
    let list = t.get("/api/v2/access-policies").await;
    assert_eq!(list.expect(200)["order"], "modifiedAt desc");
    assert_eq!(list.body["entities"][0]["name"], "c-policy");
    assert_eq!(
        t.get("/api/v2/access-policies?query=CW-B").await.expect(200)["recordsTotal"],
        1
    );
    assert_eq!(
        t.get(&format!("/api/v2/access-policies?filter=credentialProvider:{}", q.cp))
            .await
            .expect(200)["entities"][0]["name"],
        "c-policy"
    );
    assert_eq!(
        t.get(&format!(
            "/api/v2/access-policies?filter=trustProvider:{}&query=policy",
            p.tp
        ))
        .await
        .expect(200)["recordsTotal"],
        1
    );
    // PUT replaces; PATCH changes only what is given.
    let mut put = created.clone();
    put["trustProviders"] = json!([]);
    assert_eq!(
        t.put("/api/v2/access-policies", put).await.expect(200)["trustProviders"],
        json!([])
    );
    let r = t
        .patch(
            &format!("/api/v2/access-policies/{id}"),
            json!({"trustProviders": [p.tp]}),
        )
        .await;
    assert_eq!(
        r.expect(200)["credentialProviders"][0]["credentialProviderId"],
        p.cp.as_str()
    );
    // DELETE 204, then 404; GET 204.
    t.delete(&format!("/api/v2/access-policies/{id}")).await.expect(204);
    t.delete(&format!("/api/v2/access-policies/{id}"))
        .await
        .expect_error(404, "Not found.");
    assert_eq!(t.get(&format!("/api/v2/access-policies/{id}")).await.status, 204);
}

#[tokio::test]
async fn compliance_settings_govern_policy_writes() {
    let t = TestApp::start().await;
    let p = parts(&t, "d").await;
    // Recommended (default): stored, with a warning header naming every failed check.
    let mut b = body(&p, "no-tp");
    b["trustProviders"] = json!([]);
    let r = t.post("/api/v2/access-policies", b.clone()).await;
    r.expect(200);
    assert_eq!(
        r.header("x-svc-compliance-warning"),
        Some("ap_trust_prov_governance, ap_access_cond_governance")
    );
    let id = r.body["externalId"].as_str().unwrap().to_string();
    // Required: refused, nothing stored.
    t.put(
        "/api/v1/compliance-settings",
        json!({"name": "ap_trust_prov_governance", "value": "Required"}),
    )
    .await
    .expect(200);
    t.patch(&format!("/api/v2/access-policies/{id}"), json!({"description": "x"}))
        .await
        .expect_error(
            400,
            "trustProviders: required by compliance setting ap_trust_prov_governance",
        );
    // Optional: no header for that check.
    t.put(
        "/api/v1/compliance-settings",
        json!({"name": "ap_trust_prov_governance", "value": "Optional"}),
    )
    .await
    .expect(200);
    let r = t
        .patch(&format!("/api/v2/access-policies/{id}"), json!({"description": "x"}))
        .await;
    assert_eq!(r.header("x-svc-compliance-warning"), Some("ap_access_cond_governance"));
}

#[tokio::test]
async fn policies_v1_view() {
    let t = TestApp::start().await;
    let p = parts(&t, "e").await;
    // A v1 body names its provider in `credentialProvider`, and so does the error (§1.8).
    t.post("/api/v1/access-policies", json!({"name": "v1", "isActive": true, "clientWorkload": p.cw, "serverWorkload": p.sw, "credentialProvider": "6f1c2b8e-8a55-4c0b-9a43-2b1d1b0f4e11", "trustProviders": [p.tp]}))
        .await
        .expect_error(400, "credentialProvider: unknown credential provider in the policy's resource set");
    let r = t
        .post("/api/v1/access-policies", json!({"name": "v1", "isActive": true, "clientWorkload": p.cw, "serverWorkload": p.sw, "credentialProvider": p.cp, "trustProviders": [p.tp]}))
        .await;
    let dto = r.expect(200).clone();
    let id = dto["externalId"].as_str().unwrap().to_string();
    assert_eq!(dto["credentialProvider"], p.cp.as_str());
    assert_eq!(dto["clientWorkloadDetails"]["name"], "cw-e");
    assert_eq!(dto["serverWorkloadDetails"]["serviceEndpoint"]["host"], "e.example.com");
    assert_eq!(dto["serverWorkloadDetails"]["credentialProviderText"], "cp-e");
    assert_eq!(dto["policyNotes"], json!([]));
    // Reads expand references (PolicyExternalDTO).
    let g = t.get(&format!("/api/v1/access-policies/{id}")).await;
    let g = g.expect(200).clone();
    assert_eq!(g["clientWorkload"]["identities"][0]["value"], "e");
    assert_eq!(g["trustProviders"][0]["provider"], "CiAIdentityToken");
    assert_eq!(g["credentialProvider"]["type"], "apikey");
    // v2 sees the same policy with one None mapping.
    let v2 = t
        .get(&format!("/api/v2/access-policies/{id}/credential-mappings"))
        .await;
    assert_eq!(v2.expect(200)["entities"][0]["mappingType"], "None");
    // PATCH: null means "unchanged" (§1.1); another id replaces the provider; PUT without one
    // removes it (absent fields return to their defaults).
    let r = t
        .patch(
            &format!("/api/v1/access-policies/{id}"),
            json!({"credentialProvider": null, "description": "d"}),
        )
        .await;
    assert_eq!(r.expect(200)["credentialProvider"], p.cp.as_str());
    let cp2 = t
        .post(
            "/api/v2/credential-providers",
            json!({"type": "apikey", "name": "cp2", "isActive": true, "apiKey": "k2"}),
        )
        .await
        .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let r = t
        .patch(
            &format!("/api/v1/access-policies/{id}"),
            json!({"credentialProvider": cp2}),
        )
        .await;
    assert_eq!(r.expect(200)["credentialProvider"], cp2.as_str());
    let mut put = r.body.clone();
    put.as_object_mut().unwrap().remove("credentialProvider");
    // A body naming another resource set than the header (§1.4 rule 3).
    let mut elsewhere = put.clone();
    elsewhere["resourceSet"] = json!("0b8e3c1a-58b1-4c39-9d35-0c37a8e0f2a4");
    t.put("/api/v1/access-policies", elsewhere)
        .await
        .expect_error(400, "resourceSet: does not match X-Svc-ResourceSet");
    let r = t.put("/api/v1/access-policies", put).await;
    assert_eq!(r.expect(200)["credentialProvider"], Value::Null);

    assert_eq!(
        t.get("/api/v1/access-policies").await.expect(200)["accessPolicies"][0]["externalId"],
        id.as_str()
    );
    let by = t
        .get(&format!("/api/v1/access-policies/getByWorkloadIds/{}/{}", p.cw, p.sw))
        .await;
    assert_eq!(by.expect(200)["externalId"], id.as_str());
    assert_eq!(
        t.post(&format!("/api/v1/access-policies/{id}/notes"), json!({"note": "n"}))
            .await
            .status,
        201
    );
    assert_eq!(
        t.get(&format!("/api/v1/access-policies/{id}")).await.body["policyNotes"][0]["note"],
        "n"
    );
    // Another resource set does not see it; DELETE is 204 whether or not it exists.
    let rs = t
        .post("/api/v1/resource-sets", json!({"name": "other", "isActive": true}))
        .await
        .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let other = t
        .send(
            t.client
                .get(t.url(&format!("/api/v1/access-policies/{id}")))
                .bearer_auth(&t.token)
                .header("X-Svc-ResourceSet", &rs),
        )
        .await;
    assert_eq!(other.status, 204);
    t.delete(&format!("/api/v1/access-policies/{id}")).await.expect(204);
    t.delete(&format!("/api/v1/access-policies/{id}")).await.expect(204);
}

#[tokio::test]
async fn v2_policies_follow_the_callers_resource_sets() {
    let t = TestApp::start().await;
    let b = t
        .post("/api/v1/resource-sets", json!({"name": "team-b", "isActive": true}))
        .await
        .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let role = t
        .post("/api/v1/roles", json!({"name": "b-policies", "isActive": true, "permissions": [{"name": "Access Policies", "write": true}], "resourceSets": [{"externalId": b}]}))
        .await
        .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    t.create_user("b@acme.test", "a-long-enough-password", &[&role]).await;
    let tok = t.login("b@acme.test", "a-long-enough-password").await;
    let p = parts(&t, "f").await;
    let id = t
        .post("/api/v2/access-policies", body(&p, "default-set"))
        .await
        .expect(200)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    // B's role sees nothing of the default set and cannot write there.
    assert_eq!(
        t.get_as(&tok, "/api/v2/access-policies").await.expect(200)["recordsTotal"],
        0
    );
    // Another set's policy is invisible, as an unknown id (§1.4 rules 4 and 5): no status tells
    // that it exists.
    let r = t.get_as(&tok, &format!("/api/v2/access-policies/{id}")).await;
    assert_eq!((r.status, r.text.as_str()), (204, ""));
    for path in [
        format!("/api/v2/access-policies/{id}/notes"),
        format!("/api/v2/access-policies/{id}/credential-mappings"),
        format!("/api/v2/access-policies/getByWorkloadIds/{}/{}", p.cw, p.sw),
    ] {
        t.get_as(&tok, &path).await.expect_error(404, "Not found.");
    }
    let patch = t
        .call(
            reqwest::Method::PATCH,
            &format!("/api/v2/access-policies/{id}"),
            Some(&tok),
            Some(json!({"name": "y"})),
        )
        .await;
    patch.expect_error(404, "Not found.");
    let del = t
        .call(
            reqwest::Method::DELETE,
            &format!("/api/v2/access-policies/{id}"),
            Some(&tok),
            None,
        )
        .await;
    del.expect_error(404, "Not found.");
    t.post_as(&tok, "/api/v2/access-policies", body(&p, "x"))
        .await
        .expect_error(403, "Forbidden.");
    // Without the permission in any set, every call is 403, whatever the id or body; with read
    // only, every write is.
    let nop = t
        .user_with_role("nop@acme.test", json!([{"name": "Users", "read": true}]))
        .await;
    let unknown = "00000000-0000-4000-8000-000000000001";
    for path in [
        "/api/v2/access-policies".to_string(),
        format!("/api/v2/access-policies/{unknown}"),
    ] {
        t.get_as(&nop, &path).await.expect_error(403, "Forbidden.");
    }
    let ro = t
        .user_with_role("ro@acme.test", json!([{"name": "Access Policies", "read": true}]))
        .await;
    t.post_as(&ro, "/api/v2/access-policies", json!({"isActive": false}))
        .await
        .expect_error(403, "Forbidden.");
    t.post_as(
        &ro,
        &format!("/api/v2/access-policies/{unknown}/notes"),
        json!({"note": "n"}),
    )
    .await
    .expect_error(403, "Forbidden.");
    t.get_as(&ro, &format!("/api/v2/access-policies/{id}"))
        .await
        .expect(200);
    // Writing into B with default-set references fails on the references, not the permission.
    let mut in_b = body(&p, "in-b");
    in_b["resourceSet"] = json!(b);
    t.post_as(&tok, "/api/v2/access-policies", in_b)
        .await
        .expect_error_prefix(400, "clientWorkload: unknown client workload");
}

#[tokio::test]
async fn deletion_respects_references() {
    let t = TestApp::start().await;
    let p = parts(&t, "g").await;
    let id = t.post("/api/v2/access-policies", body(&p, "g")).await.expect(200)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let msg = format!("referenced by access policy 'g' ({id})");
    t.delete(&format!("/api/v1/trust-providers/{}", p.tp))
        .await
        .expect_error(400, &format!("trustProviders: {msg}"));
    t.delete(&format!("/api/v2/credential-providers/{}", p.cp))
        .await
        .expect_error(400, &format!("credentialProviders: {msg}"));
    t.delete(&format!("/api/v1/client-workloads/{}", p.cw))
        .await
        .expect_error(400, &format!("clientWorkload: {msg}"));
    t.delete(&format!("/api/v1/server-workloads/{}", p.sw))
        .await
        .expect_error(400, &format!("serverWorkload: {msg}"));
    // Inactive policy: list references are removed (audited), workload references still block.
    t.patch(&format!("/api/v2/access-policies/{id}"), json!({"isActive": false}))
        .await
        .expect(200);
    t.delete(&format!("/api/v1/trust-providers/{}", p.tp)).await.expect(204);
    t.delete(&format!("/api/v2/credential-providers/{}", p.cp))
        .await
        .expect(204);
    let g = t.get(&format!("/api/v2/access-policies/{id}")).await;
    assert_eq!(
        (g.body["trustProviders"].clone(), g.body["credentialProviders"].clone()),
        (json!([]), json!([]))
    );
    let updates = t
        .audit("&category=AccessPolicies")
        .await
        .iter()
        .filter(|a| a["activity"] == "Updated" && a["target"] == id.as_str())
        .count();
    assert_eq!(updates, 2);
    t.delete(&format!("/api/v1/client-workloads/{}", p.cw))
        .await
        .expect_error_prefix(400, "clientWorkload: referenced by access policy");
    t.delete(&format!("/api/v2/access-policies/{id}")).await.expect(204);
    t.delete(&format!("/api/v1/client-workloads/{}", p.cw))
        .await
        .expect(204);
}

/// §1.2: an `externalId` is unique per resource type only. A trust provider and a credential
/// provider sharing the client workload's id are not "referenced" by a policy that uses only the
/// workload, and deleting one never touches a policy's reference to the other.
#[tokio::test]
async fn references_are_per_resource_type_when_ids_are_shared() {
    let t = TestApp::start().await;
    let shared = uuid::Uuid::new_v4().to_string();
    let cw = t.post("/api/v1/client-workloads", json!({"externalId": shared, "name": "cw", "isActive": true, "identities": [{"type": "svcClientId", "value": "s"}]})).await;
    assert!(cw.header("location").unwrap().ends_with(&shared));
    let tp = t
        .post(
            "/api/v1/trust-providers",
            json!({"externalId": shared, "name": "tp", "isActive": true, "provider": "CiAIdentityToken"}),
        )
        .await;
    assert_eq!(tp.expect(200)["externalId"], shared.as_str());
    let p = parts(&t, "s").await;
    // Active policy: the shared id as its client workload, another trust provider, and a
    // credential provider whose id is the second trust provider's.
    let cp2 = t
        .post(
            "/api/v2/credential-providers",
            json!({"type": "apikey", "externalId": p.tp, "name": "cp2", "isActive": true, "apiKey": "k"}),
        )
        .await;
    assert_eq!(cp2.expect(201)["externalId"], p.tp.as_str());
    let pol = json!({"name": "s", "isActive": false, "clientWorkload": shared, "serverWorkload": p.sw, "trustProviders": [p.tp],
                     "credentialProviders": [{"credentialProviderId": p.tp, "mappingType": "None"}]});
    let id = t.post("/api/v2/access-policies", pol).await.expect(200)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let count = |path: String| {
        let t = &t;
        async move { t.get(&path).await.body["accessPolicyCount"].clone() }
    };
    assert_eq!(count(format!("/api/v1/client-workloads/{shared}")).await, 1);
    assert_eq!(count(format!("/api/v1/trust-providers/{shared}")).await, 0);
    // The trust provider with the workload's id is not referenced: deleted, policy untouched.
    t.delete(&format!("/api/v1/trust-providers/{shared}")).await.expect(204);
    // Deleting the trust provider p.tp (inactive policy) removes only the trust-provider
    // reference, not the mapping to the credential provider with the same id.
    t.delete(&format!("/api/v1/trust-providers/{}", p.tp)).await.expect(204);
    let g = t.get(&format!("/api/v2/access-policies/{id}")).await;
    assert_eq!(g.body["trustProviders"], json!([]));
    assert_eq!(g.body["credentialProviders"][0]["externalId"], p.tp.as_str());
    assert_eq!(g.body["credentialProviders"][0]["name"], "cp2");
    assert_eq!(g.body["clientWorkload"]["externalId"], shared.as_str());
}

#[tokio::test]
async fn deleting_a_resource_set_deletes_everything_in_it() {
    let t = TestApp::start().await;
    let b = t
        .post("/api/v1/resource-sets", json!({"name": "doomed", "isActive": true}))
        .await
        .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let post = |path: &str, body: Value| {
        t.send(
            t.client
                .post(t.url(path))
                .bearer_auth(&t.token)
                .header("X-Svc-ResourceSet", &b)
                .json(&body),
        )
    };
    let tp = post(
        "/api/v1/trust-providers",
        json!({"name": "tp", "isActive": true, "provider": "CiAIdentityToken"}),
    )
    .await
    .expect(200)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let cw = post("/api/v1/client-workloads", json!({"name": "cw", "isActive": true})).await;
    let cw = cw.header("location").unwrap().rsplit('/').next().unwrap().to_string();
    let sw = post("/api/v1/server-workloads", json!({"name": "sw", "isActive": true, "serviceEndpoint": {"host": "h.example.com", "port": 1, "appProtocol": "HTTP", "transportProtocol": "TCP", "requestedPort": 1, "requestedTls": false, "tls": false, "tlsVerification": "none"}})).await;
    let sw = sw.header("location").unwrap().rsplit('/').next().unwrap().to_string();
    let cp = post(
        "/api/v2/credential-providers",
        json!({"type": "apikey", "name": "cp", "isActive": true, "apiKey": "k"}),
    )
    .await
    .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let pol = post("/api/v2/access-policies", json!({"name": "p", "isActive": true, "resourceSet": b, "clientWorkload": cw, "serverWorkload": sw, "trustProviders": [tp], "credentialProviders": [{"credentialProviderId": cp, "mappingType": "None"}]}))
        .await
        .expect(200)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let rs = t.get(&format!("/api/v1/resource-sets/{b}")).await;
    let rs = rs.expect(200);
    assert_eq!(
        (
            rs["accessPolicyCount"].clone(),
            rs["trustProviderCount"].clone(),
            rs["clientWorkloadCount"].clone()
        ),
        (json!(1), json!(1), json!(1))
    );
    // Its built-in GeoIP and Time integrations (§3.11) go with it.
    let builtins: Vec<String> = t
        .send(
            t.client
                .get(t.url("/api/v2/integrations"))
                .bearer_auth(&t.token)
                .header("X-Svc-ResourceSet", &b),
        )
        .await
        .expect(200)["integrations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["externalId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(builtins.len(), 2);
    t.delete(&format!("/api/v1/resource-sets/{b}")).await.expect(204);
    assert_eq!(t.get(&format!("/api/v2/access-policies/{pol}")).await.status, 204);
    let st = t.app.state();
    assert!(
        st.trust_providers.is_empty()
            && st.client_workloads.is_empty()
            && st.server_workloads.is_empty()
            && st.credential_providers.is_empty()
    );
    drop(st);
    // One audit entry per deleted entity plus one for the set itself, all readable in the default
    // set (under the deleted set's id no one could read them).
    let r = t.get("/api/v1/audit-logs?per-page=1000").await;
    let deleted: Vec<Value> = r.expect(200)["auditLogs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["activity"] == "Deleted")
        .cloned()
        .collect();
    let mut targets: Vec<&str> = deleted.iter().map(|a| a["target"].as_str().unwrap()).collect();
    targets.sort_unstable();
    let mut expected = vec![
        b.as_str(),
        pol.as_str(),
        tp.as_str(),
        cw.as_str(),
        sw.as_str(),
        cp.as_str(),
    ];
    expected.extend(builtins.iter().map(String::as_str));
    expected.sort_unstable();
    assert_eq!(targets, expected);
    assert!(deleted.iter().all(|a| a["resourceSetId"] == DEFAULT_RS));
}

#[tokio::test]
async fn issuer_documents_and_key_rotation() {
    let t = TestApp::start().await;
    let r = t.send(t.client.get(t.url("/.well-known/openid-configuration"))).await;
    let d = r.expect(200).clone();
    assert_eq!(d["issuer"], t.base.as_str());
    assert_eq!(d["jwks_uri"], format!("{}/.well-known/jwks.json", t.base));
    assert_eq!(d["id_token_signing_alg_values_supported"], json!(["ES256", "RS256"]));
    assert_eq!(r.header("cache-control"), Some("public, max-age=300"));
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    let jwks = t.send(t.client.get(t.url("/.well-known/jwks.json"))).await;
    let keys = jwks.expect(200)["keys"].as_array().unwrap().clone();
    assert_eq!(keys.len(), 2);
    let ec = keys.iter().find(|k| k["kty"] == "EC").unwrap();
    let rsa = keys.iter().find(|k| k["kty"] == "RSA").unwrap();
    assert_eq!(
        (ec["alg"].clone(), ec["crv"].clone(), ec["use"].clone()),
        (json!("ES256"), json!("P-256"), json!("sig"))
    );
    assert_eq!(
        ec["kid"],
        svc_server::issuer::keys::ec_thumbprint(ec["x"].as_str().unwrap(), ec["y"].as_str().unwrap())
    );
    assert_eq!(
        rsa["kid"],
        svc_server::issuer::keys::rsa_thumbprint(rsa["n"].as_str().unwrap(), rsa["e"].as_str().unwrap())
    );
    assert!(!jwks.text.contains("\"d\""), "no private part");
    // One rotation step: new keys are published at once (two per algorithm) and sign an hour later.
    let token_before = t.token.clone();
    svc_server::issuer::keys::rotate(&t.app.store, &t.app.cipher, svc_server::clock::now_millis())
        .await
        .unwrap();
    t.app.reload_keys().await.unwrap();
    let keys = t.send(t.client.get(t.url("/.well-known/jwks.json"))).await.body["keys"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(keys, 4);
    assert_eq!(
        t.app.keys().ec_signer(svc_server::clock::now_millis()).kid,
        ec["kid"].as_str().unwrap()
    );
    t.get_as(&token_before, "/api/v1/roles").await.expect(200);
}

/// §5.1: `svc admin keys rotate` runs in a process of its own; the serving node publishes its
/// new keys at once (within its one-second refresh), on SQLite as on PostgreSQL, not at its
/// next hourly key reload.
#[tokio::test]
async fn keys_rotated_by_another_process_are_published_at_once() {
    let t = TestApp::start().await;
    let jwks = || async { t.send(t.client.get(t.url("/.well-known/jwks.json"))).await.body["keys"].clone() };
    assert_eq!(jwks().await.as_array().unwrap().len(), 2);
    // What the CLI command does: its own App on the same database.
    let cli = svc_server::App::open(svc_server::Config::from_map(&t.env).unwrap())
        .await
        .unwrap();
    svc_server::issuer::keys::rotate(&cli.store, &cli.cipher, svc_server::clock::now_millis())
        .await
        .unwrap();
    let mut published = 0;
    for _ in 0..50 {
        published = jwks().await.as_array().unwrap().len();
        if published == 4 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(published, 4, "the rotated keys are in the JWKS within 5 s");
}
