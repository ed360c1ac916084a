//! Issue 31, findings 2 and 4: a limited administrator pulling stored secrets out by moving an
//! entity's URL, or reading internal services through the answers of entity URLs (SSRF
//! read-back). A stored secret goes only to the URL it was stored with; no upstream answer body
//! reaches a caller; base URLs with a query or fragment and link-local or metadata addresses are
//! refused.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::cred::{Answer, Recorder};
use crate::support::harness::TestApp;

const SECRET: &str = "canary-stored-secret-5b1d";

fn id(v: &Value) -> String {
    v["externalId"].as_str().unwrap().to_string()
}

/// A GET of `path/{id}` as a PUT body (write-only secrets come back `null`), with `edit`.
async fn moved(t: &TestApp, path: &str, id: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let mut b = t.get(&format!("{path}/{id}")).await.body.clone();
    edit(&mut b);
    b
}

fn token_answer(_: &crate::support::cred::Seen) -> (u16, Value) {
    (
        200,
        json!({"access_token": "tok", "expires_in": 3600, "data": {"cloudResources": {"nodes": [], "pageInfo": {"hasNextPage": false}}}}),
    )
}

#[tokio::test]
async fn a_stored_secret_never_follows_a_moved_url() {
    let t = TestApp::start().await;
    let home = Recorder::start(Answer::Func(token_answer)).await;
    let attacker = Recorder::start(Answer::Func(token_answer)).await;

    // Discovery integration (the confirmed case): `tokenUrl` inside the JSON text.
    let disc = "/api/v1/discovery-integrations";
    let j =
        json!({"tokenUrl": format!("{}/token", home.url), "clientId": "c", "clientSecret": SECRET, "audience": "a"});
    let d = t
        .post(disc, json!({"name": "inv", "isActive": true, "type": "CloudSecurityAIntegrationApi",
            "syncFrequencySeconds": 3600, "endpoint": format!("{}/graphql", home.url), "discoveryIntegrationJSON": j.to_string()}))
        .await;
    let d = id(d.expect(201));
    let to_attacker = |b: &mut Value| {
        let mut j: Value = serde_json::from_str(b["discoveryIntegrationJSON"].as_str().unwrap()).unwrap();
        j["tokenUrl"] = json!(format!("{}/token", attacker.url));
        b["discoveryIntegrationJSON"] = json!(j.to_string());
    };
    t.put(disc, moved(&t, disc, &d, to_attacker).await)
        .await
        .expect_error(400, "clientSecret: is required when tokenUrl changes");
    // The sync still goes where the secret was stored; the attacker's URL saw nothing.
    t.post(&format!("{disc}/{d}/sync"), json!({})).await.expect(202);
    for _ in 0..40 {
        if !home.seen.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!home.seen.lock().unwrap().is_empty());
    assert!(attacker.seen.lock().unwrap().is_empty());
    // With a secret of its own, the move is the writer's business.
    let with_new = |b: &mut Value| {
        to_attacker(b);
        let mut j: Value = serde_json::from_str(b["discoveryIntegrationJSON"].as_str().unwrap()).unwrap();
        j["clientSecret"] = json!("a-new-secret");
        b["discoveryIntegrationJSON"] = json!(j.to_string());
    };
    t.put(disc, moved(&t, disc, &d, with_new).await).await.expect(200);

    // Integrations (v2 and v1): `tokenUrl` and `endpoint`.
    let v2 = "/api/v2/integrations";
    let i = t
        .post(
            v2,
            json!({"name": "sensor", "isActive": true, "integrationType": "SensorA", "syncFrequencySeconds": 3600,
            "endpoint": home.url, "clientId": "c", "clientSecret": SECRET, "tokenUrl": format!("{}/token", home.url)}),
        )
        .await;
    let i = id(i.expect(201));
    for (field, msg) in [
        ("tokenUrl", "clientSecret: is required when tokenUrl changes"),
        ("endpoint", "clientSecret: is required when endpoint changes"),
    ] {
        let b = moved(&t, v2, &i, |b| b[field] = json!(format!("{}/x", attacker.url))).await;
        t.put(v2, b).await.expect_error(400, msg);
    }
    let v1 = "/api/v1/integrations";
    let b = moved(&t, v1, &i, |b| {
        b["integrationJSON"]["tokenUrl"] = json!(format!("{}/token", attacker.url));
    })
    .await;
    t.put(v1, b)
        .await
        .expect_error(400, "clientSecret: is required when tokenUrl changes");

    // Credential-provider integration (ciB): the administrator token (`PRIVATE-TOKEN`).
    let ci = "/api/v1/credential-integrations";
    let c = t
        .post(
            ci,
            json!({"type": "CiB", "name": "gl", "isActive": true, "url": home.url, "personalAccessToken": SECRET}),
        )
        .await;
    let c = id(c.expect(201));
    let b = moved(&t, ci, &c, |b| b["url"] = json!(attacker.url)).await;
    t.put(ci, b)
        .await
        .expect_error(400, "personalAccessToken: is required when url changes");

    // OAuth-type credential providers (v2 and v1).
    let cp2 = "/api/v2/credential-providers";
    let p = t
        .post(
            cp2,
            json!({"type": "oauth-client-credential", "name": "cc", "isActive": true, "clientID": "c",
            "clientSecret": SECRET, "url": format!("{}/token", home.url)}),
        )
        .await;
    let p = id(p.expect(201));
    let b = moved(&t, cp2, &p, |b| b["url"] = json!(format!("{}/token", attacker.url))).await;
    t.put(cp2, b)
        .await
        .expect_error(400, "clientSecret: is required when url changes");
    let cp1 = "/api/v1/credential-providers";
    let b = moved(&t, cp1, &p, |b| {
        let mut d: Value = serde_json::from_str(b["providerDetailJSON"].as_str().unwrap()).unwrap();
        d["url"] = json!(format!("{}/token", attacker.url));
        b["providerDetailJSON"] = json!(d.to_string());
    })
    .await;
    t.put(cp1, b)
        .await
        .expect_error(400, "clientSecret: is required when url changes");
    let ac = t
        .post(
            cp2,
            json!({"type": "oauth-authorization-code", "name": "ac", "isActive": true, "clientID": "c",
            "clientSecret": SECRET, "oAuthUrl": home.url, "authorizationUrl": format!("{}/auth", home.url),
            "tokenUrl": format!("{}/token", home.url)}),
        )
        .await;
    let ac = id(ac.expect(201));
    let b = moved(&t, cp2, &ac, |b| {
        b["tokenUrl"] = json!(format!("{}/token", attacker.url))
    })
    .await;
    t.put(cp2, b)
        .await
        .expect_error(400, "clientSecret: is required when tokenUrl changes");

    // Content security: the vendor token follows `baseUrl` nowhere.
    let cs = "/api/v1/content-security";
    let s = t
        .post(cs, json!({"type": "SensorAAIDR", "name": "aidr", "isActive": true, "baseUrl": home.url, "encryptedToken": SECRET}))
        .await;
    let s = id(s.expect(201));
    let b = moved(&t, cs, &s, |b| b["baseUrl"] = json!(attacker.url)).await;
    t.put(cs, b)
        .await
        .expect_error(400, "encryptedToken: is required when baseUrl changes");

    // Nothing of it reached the attacker, and every refused write changed nothing.
    assert!(attacker.seen.lock().unwrap().is_empty());
    let got = t.get(&format!("{cp2}/{p}")).await;
    assert_eq!(got.body["url"], format!("{}/token", home.url));
}

/// An upstream that answers a page of an internal service.
fn internal_page(_: &crate::support::cred::Seen) -> (u16, &'static str, String) {
    (403, "text/html", "<h1>INTERNAL-ADMIN-PAGE db=10.0.0.7</h1>".to_string())
}

#[tokio::test]
async fn an_upstream_answer_is_never_echoed_to_the_caller() {
    let t = TestApp::start().await;
    let internal = Recorder::start(Answer::Raw(internal_page)).await;
    let idp = t
        .post("/api/v1/sso-idps", json!({"type": "OIDCv1", "name": "probe", "isActive": true, "userAccessEnabled": false,
            "oidcBaseURL": internal.url, "clientId": "c", "clientSecret": "s", "scopes": "openid", "authType": "ClientSecret"}))
        .await;
    let idp = id(idp.expect(201));
    let v = t.get(&format!("/api/v1/sso-idps/{idp}/verification")).await;
    let v = v.expect(200);
    assert_eq!(v["success"], false);
    // One message whether nothing answered or something refused: no body, and no port scanner
    // (the log has the cause).
    assert_eq!(v["message"], "discovery document could not be read");
    // SAML metadata from a URL: neither the body nor the parser's quote of it.
    let saml = t
        .post(
            "/api/v1/sso-idps",
            json!({"type": "SAMLv2", "name": "saml", "isActive": true, "userAccessEnabled": false,
            "metadataUrl": internal.url}),
        )
        .await;
    let saml = id(saml.expect(201));
    *internal.answer.lock().unwrap() = Answer::Raw(|_| (200, "text/html", "<a><INTERNAL-TAG></a>".to_string()));
    let v = t.get(&format!("/api/v1/sso-idps/{saml}/verification")).await;
    let message = v.expect(200)["message"].as_str().unwrap().to_string();
    assert!(!message.contains("INTERNAL"), "{message}");
}

#[tokio::test]
async fn a_base_url_with_a_query_or_a_fragment_is_refused() {
    let t = TestApp::start().await;
    let base = json!({"type": "OIDCv1", "name": "q", "isActive": true, "userAccessEnabled": false,
        "clientId": "c", "clientSecret": "s", "scopes": "openid", "authType": "ClientSecret"});
    for url in [
        "https://idp.example/?x=",
        "https://idp.example/#frag",
        "https://idp.example/path?a=b",
    ] {
        let mut b = base.clone();
        b["oidcBaseURL"] = json!(url);
        t.post("/api/v1/sso-idps", b)
            .await
            .expect_error(400, "oidcBaseURL: must not have a query or a fragment");
    }
    t.post(
        "/api/v2/integrations",
        json!({"name": "s", "isActive": true, "integrationType": "SensorA",
        "syncFrequencySeconds": 3600, "endpoint": "https://api.sensor.example/?x=", "clientId": "c",
        "clientSecret": "s", "tokenUrl": "https://login.sensor.example/token"}),
    )
    .await
    .expect_error(400, "endpoint: must not have a query or a fragment");
}

#[tokio::test]
async fn link_local_and_metadata_addresses_are_refused_for_entity_urls() {
    let t = TestApp::start().await;
    let idp = |url: &str| {
        json!({"type": "OIDCv1", "name": "imds", "isActive": true, "userAccessEnabled": false, "oidcBaseURL": url,
               "clientId": "c", "clientSecret": "s", "scopes": "openid", "authType": "ClientSecret"})
    };
    for url in [
        "http://169.254.169.254",
        "https://169.254.170.2/v2",
        "https://[fd00:ec2::254]",
        "https://[::ffff:169.254.169.254]",
        "https://168.63.129.16",
    ] {
        t.post("/api/v1/sso-idps", idp(url))
            .await
            .expect_error(400, "oidcBaseURL: must not be a link-local or metadata address");
    }
    t.post(
        "/api/v2/credential-providers",
        json!({"type": "oauth-client-credential", "name": "cc", "isActive": true,
        "clientID": "c", "clientSecret": "s", "url": "http://169.254.169.254/latest/meta-data/iam/"}),
    )
    .await
    .expect_error(400, "url: must not be a link-local or metadata address");
    // The operator's allow-list says otherwise.
    let t = TestApp::start_with(|env| {
        env.insert("SVC_UPSTREAM_ALLOWED_NETWORKS".into(), "169.254.169.254/32".into());
    })
    .await;
    t.post("/api/v1/sso-idps", idp("http://169.254.169.254"))
        .await
        .expect(201);
}

/// A `Log Streams` administrator turns TLS (or its verification) off on a collector stream,
/// same host and port, and leaves the token out: the stored token does not travel in clear
/// text (or to whoever answers unverified); given again, the write is taken.
#[tokio::test]
async fn a_log_stream_keeps_no_token_when_tls_is_turned_off() {
    use crate::streams::{PATH, create, cycle, id, la, manual};
    use crate::support::hec::Collector;
    let t = manual().await;
    let token = uuid::Uuid::new_v4().to_string();
    let c = Collector::start(&format!("Splunk {token}")).await;
    let mut body = la(&c, "AuditLogs", &token);
    body["tls"] = json!(true);
    body["tlsVerification"] = json!("full");
    let s = create(&t, body.clone()).await;
    let attacker = t
        .user_with_role(
            "streams-admin@example.test",
            json!([{"name": "Log Streams", "read": true, "write": true}]),
        )
        .await;
    let mut base = body.clone();
    base["externalId"] = json!(id(&s));
    base.as_object_mut().unwrap().remove("authenticationToken");
    let mut plain = base.clone();
    plain["tls"] = json!(false);
    t.put_as(&attacker, PATH, plain.clone())
        .await
        .expect_error(400, "authenticationToken: is required when tls changes");
    let mut unverified = base.clone();
    unverified["tlsVerification"] = json!("none");
    t.put_as(&attacker, PATH, unverified)
        .await
        .expect_error(400, "authenticationToken: is required when tlsVerification changes");
    cycle(&t).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let leaked = c
        .requests()
        .iter()
        .any(|r| r.header("authorization").is_some_and(|a| a.contains(&token)));
    assert!(!leaked, "the stored token went out over plain http");
    // With a token of its own, the administrator may run the stream without TLS.
    let own = uuid::Uuid::new_v4().to_string();
    plain["authenticationToken"] = json!(own);
    t.put_as(&attacker, PATH, plain).await.expect(200);
}

#[tokio::test]
async fn credential_provider_verification_does_not_tell_a_closed_port_from_a_refusing_one() {
    let t = TestApp::start().await;
    let attacker = t
        .user_with_role(
            "cp-admin@example.test",
            json!([{"name": "Credential Providers", "read": true, "write": true}]),
        )
        .await;
    let internal = Recorder::start(Answer::Fixed(
        403,
        "text/html",
        b"<h1>internal admin</h1>".to_vec(),
        Duration::ZERO,
    ))
    .await;
    let oauth = Recorder::start(Answer::Fixed(
        400,
        "application/json",
        br#"{"error":"invalid_grant","error_description":"internal detail"}"#.to_vec(),
        Duration::ZERO,
    ))
    .await;
    let port_of = |url: &str| -> i64 { url.rsplit(':').next().unwrap().parse().unwrap() };
    let closed = i64::from(
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port(),
    );
    let mut said = Vec::new();
    for port in [port_of(&internal.url), closed, port_of(&oauth.url)] {
        let cp = t
            .post_as(
                &attacker,
                "/api/v2/credential-providers",
                json!({"type": "vaultClientToken", "name": format!("scan {port}"), "isActive": true, "subject": "probe",
                       "lifetime": 60, "vaultHost": "127.0.0.1", "port": port, "tls": false, "authenticationPath": "x"}),
            )
            .await
            .expect(201)["externalId"]
            .as_str()
            .unwrap()
            .to_string();
        let v = t
            .get_as(&attacker, &format!("/api/v2/credential-providers/{cp}/verification"))
            .await;
        assert_eq!(v.expect(200)["success"], false, "{}", v.text);
        said.push(v.body["message"].as_str().unwrap().to_string());
    }
    // A closed port and a service answering something else read alike; a protocol's own error
    // code is named (it tells the operator what to fix), nothing else of the answer.
    assert_eq!(said[0], said[1], "{said:?}");
    assert_eq!(said[0], "the upstream did not issue a credential");
    assert_eq!(said[2], "the upstream did not issue a credential: invalid_grant");
}

#[tokio::test]
async fn a_policy_reader_sees_only_the_names_of_providers_it_may_not_read() {
    use crate::support::cred::Rig;
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let cp = rig
        .provider(
            &t,
            json!({"type": "vaultClientToken", "name": "bao", "isActive": true, "subject": "workload:deploy-job",
                   "lifetime": 60, "vaultHost": "vault.internal.example", "port": 8200,
                   "authenticationPath": "auth/jwt", "role": "deployer"}),
        )
        .await;
    let policy = rig.attach(&t, &cp).await;
    let reader = t
        .user_with_role(
            "policy-reader@example.test",
            json!([{"name": "Access Policies", "read": true}]),
        )
        .await;
    let path = format!("/api/v1/access-policies/{policy}");
    let v = t.get_as(&reader, &path).await;
    let body = v.expect(200).clone();
    for hidden in [
        "vault.internal.example",
        rig._iss.url.as_str(),
        crate::support::cred::SUBJECT,
        "upstream.example.test",
    ] {
        assert!(!v.text.contains(hidden), "{hidden} in {}", v.text);
    }
    // The names a reader of the policy sees in v2 as well.
    assert_eq!(body["credentialProvider"], json!({"externalId": cp, "name": "bao"}));
    assert_eq!(
        body["trustProviders"][0],
        json!({"externalId": rig.trust_provider, "name": "ci"})
    );
    assert_eq!(body["clientWorkload"]["name"], "deploy-job");
    // A reader of everything reads them in full.
    let full = t.get(&path).await;
    assert!(full.text.contains("vault.internal.example"), "{}", full.text);
    assert!(full.text.contains(&rig._iss.url), "{}", full.text);
}

#[tokio::test]
async fn a_condition_reader_does_not_read_the_integration_it_may_not_read() {
    let t = TestApp::start().await;
    let sensor = id(t
        .post(
            "/api/v2/integrations",
            json!({"name": "sensor", "isActive": true, "integrationType": "SensorA", "syncFrequencySeconds": 300,
                   "endpoint": "https://api.sensor.internal.test", "clientId": "sensor-client-7f3a",
                   "clientSecret": "not-shown", "tokenUrl": "https://idp.internal.test/oauth/token"}),
        )
        .await
        .expect(201));
    let cond = id(t
        .post(
            "/api/v2/access-conditions",
            json!({"name": "managed device", "isActive": true, "integrationType": "SensorA", "integrationID": sensor,
                   "maxLastSeenSeconds": 600}),
        )
        .await
        .expect(201));
    let reader = t
        .user_with_role(
            "conditions-reader@example.test",
            json!([{"name": "Access Conditions", "read": true}]),
        )
        .await;
    let both = t
        .user_with_role(
            "conditions-and-integrations@example.test",
            json!([{"name": "Access Conditions", "read": true}, {"name": "Integrations", "read": true}]),
        )
        .await;
    for path in [
        format!("/api/v2/access-conditions/{cond}"),
        format!("/api/v1/access-conditions/{cond}"),
        "/api/v2/access-conditions".to_string(),
    ] {
        let r = t.get_as(&reader, &path).await;
        assert_eq!(r.status, 200, "{}", r.text);
        for hidden in ["sensor-client-7f3a", "idp.internal.test", "api.sensor.internal.test"] {
            assert!(!r.text.contains(hidden), "{hidden} in {}", r.text);
        }
        assert!(r.text.contains(&sensor), "the integration's id stays: {}", r.text);
        // A reader of both reads the integration in the condition.
        let r = t.get_as(&both, &path).await;
        assert!(r.text.contains("sensor-client-7f3a"), "{}", r.text);
    }
}

#[tokio::test]
async fn a_resource_set_reader_does_not_list_its_administrators() {
    use crate::support::harness::{ADMIN_EMAIL, DEFAULT_RS};
    let t = TestApp::start().await;
    let reader = t
        .user_with_role(
            "events-reader@example.test",
            json!([{"name": "Workload Events", "read": true}]),
        )
        .await;
    let path = format!("/api/v1/resource-sets/{DEFAULT_RS}");
    let r = t.get_as(&reader, &path).await;
    let body = r.expect(200).clone();
    assert_eq!(body["users"], json!([]), "{}", r.text);
    assert_eq!(body["roles"], json!([]), "{}", r.text);
    assert_eq!(body["rolesDetails"], json!([]), "{}", r.text);
    let l = t.get_as(&reader, "/api/v1/resource-sets").await;
    assert!(!l.text.contains(ADMIN_EMAIL), "{}", l.text);
    // Users read shows the users, Roles read the roles.
    let admin = t
        .user_with_role(
            "people@example.test",
            json!([{"name": "Users", "read": true}, {"name": "Roles", "read": true}]),
        )
        .await;
    let r = t.get_as(&admin, &path).await;
    assert!(r.text.contains(ADMIN_EMAIL), "{}", r.text);
    assert!(
        r.body["rolesDetails"]
            .as_array()
            .unwrap()
            .iter()
            .any(|role| role["name"] == "SuperAdmin"),
        "{}",
        r.text
    );
}

#[tokio::test]
async fn a_collector_is_not_a_link_local_address() {
    let t = TestApp::start().await;
    for host in ["169.254.169.254:80", "168.63.129.16:443"] {
        t.post(
            "/api/v1/log-streams",
            json!({"type": "LogAnalyticsAHttpEventCollector", "name": "siem", "isActive": true, "dataType": "AuditLogs",
                   "hecHostPort": host, "authenticationToken": uuid::Uuid::new_v4().to_string(),
                   "hecSourceName": "x", "tls": false}),
        )
        .await
        .expect_error(400, "hecHostPort: must not be a link-local or metadata address");
    }
}
