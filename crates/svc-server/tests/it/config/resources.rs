//! Management resources of the edge configuration: trust providers and secrets (§3.1, §3.2),
//! client and server workloads (§3.3, §3.4), credential providers v2 and v1 (§3.5, §3.6).

use serde_json::{Value, json};

use crate::support::edge::*;
use crate::support::fake_issuer::FakeIssuer;
use crate::support::harness::{TestApp, contains};

pub fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The RSA key of a PKCS#8 PEM fixture.
pub fn fixture_key(name: &str) -> aws_lc_rs::rsa::KeyPair {
    let (_, der) = der::pem::decode_vec(fixture(name).as_bytes()).unwrap();
    aws_lc_rs::rsa::KeyPair::from_pkcs8(&der).unwrap()
}

#[tokio::test]
async fn trust_provider_validation() {
    let t = TestApp::start().await;
    let p = |extra: Value| {
        let mut b = json!({"name": "p", "isActive": true});
        b.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        b
    };
    let cases = [
        (json!({}), "provider: is required"),
        (json!({"provider": "Nope"}), "provider: must be one of"),
        (
            json!({"provider": "OidcIdToken"}),
            "oidcUrl: exactly one of oidcUrl, jwks, certificate or isSvcTenantOidcToken is required",
        ),
        (
            json!({"provider": "OidcIdToken", "oidcUrl": "https://a.example", "isSvcTenantOidcToken": true}),
            "isSvcTenantOidcToken: exactly one of",
        ),
        (
            json!({"provider": "CiAIdentityToken", "jwks": "{}"}),
            "jwks: is not allowed for provider CiAIdentityToken",
        ),
        (
            json!({"provider": "CloudARole", "oidcUrl": "https://a.example"}),
            "oidcUrl: is not allowed for provider CloudARole",
        ),
        (
            json!({"provider": "OidcIdToken", "oidcUrl": "ftp://a.example"}),
            "oidcUrl: must be an https URL",
        ),
        (
            json!({"provider": "OidcIdToken", "jwks": "{\"keys\": []}"}),
            "jwks: no usable key",
        ),
        (json!({"provider": "OidcIdToken", "jwks": "nope"}), "jwks: not JSON"),
        (
            json!({"provider": "OidcIdToken", "certificate": fixture("tp-cert.pem")}),
            "pemType: is required with certificate",
        ),
        (
            json!({"provider": "OidcIdToken", "certificate": fixture("tp-cert.pem"), "pemType": "PublicKey"}),
            "pemType: PublicKey does not match the PEM block CERTIFICATE",
        ),
        (
            json!({"provider": "OidcIdToken", "certificate": "garbage", "pemType": "Certificate"}),
            "certificate: neither PEM text nor base64 of PEM text",
        ),
        (
            json!({"provider": "OidcIdToken", "oidcUrl": "https://a.example", "matchRules": [{"attribute": "CiARepository", "value": "x"}]}),
            "matchRules[0].attribute: must be one of OidcIssuer",
        ),
        (
            json!({"provider": "OidcIdToken", "oidcUrl": "https://a.example", "matchRules": [{"attribute": "OidcCustom", "value": "x"}]}),
            "matchRules[0].key: is required for OidcCustom",
        ),
        (
            json!({"provider": "OidcIdToken", "oidcUrl": "https://a.example", "matchRules": [{"attribute": "OidcSubject", "value": "x", "key": "k"}]}),
            "matchRules[0].key: is only allowed for OidcCustom",
        ),
        (
            json!({"provider": "OidcIdToken", "oidcUrl": "https://a.example", "matchRules": [{"attribute": "OidcSubject", "value": ""}]}),
            "matchRules[0].value: must be 1..1024 characters",
        ),
    ];
    for (body, msg) in cases {
        t.post("/api/v1/trust-providers", p(body))
            .await
            .expect_error_prefix(400, msg);
    }
    // Provider is immutable; PUT needs externalId; PATCH rejects a different provider.
    let r = t
        .post("/api/v1/trust-providers", p(json!({"provider": "CiAIdentityToken"})))
        .await;
    let b = r.expect(200).clone();
    let id = b["externalId"].as_str().unwrap();
    assert_eq!(
        r.header("location"),
        Some(format!("/api/v1/trust-providers/{id}").as_str())
    );
    let mut put = b.clone();
    put["provider"] = json!("CiBIdentityToken");
    t.put("/api/v1/trust-providers", put)
        .await
        .expect_error(400, "provider: cannot be changed");
    t.patch(
        &format!("/api/v1/trust-providers/{id}"),
        json!({"provider": "CiBIdentityToken"}),
    )
    .await
    .expect_error(400, "provider: must equal the stored provider");
    // The GET body can be sent back in a PUT.
    let mut same = b.clone();
    same["description"] = json!("round trip");
    assert_eq!(
        t.put("/api/v1/trust-providers", same).await.expect(200)["description"],
        "round trip"
    );
    // Lists: provider filter and the `active` parameter.
    t.post(
        "/api/v1/trust-providers",
        p(json!({"provider": "CiBIdentityToken", "isActive": false})),
    )
    .await
    .expect(200);
    assert_eq!(
        t.get("/api/v1/trust-providers?filter=provider:cibidentitytoken")
            .await
            .expect(200)["recordsTotal"],
        1
    );
    assert_eq!(
        t.get("/api/v1/trust-providers?active=true").await.expect(200)["recordsTotal"],
        1
    );
    assert_eq!(
        t.get("/api/v1/trust-providers?active=false").await.expect(200)["trustProviders"][0]["provider"],
        "CiBIdentityToken"
    );
    let missing = t
        .get(&format!("/api/v1/trust-providers/{}", uuid::Uuid::new_v4()))
        .await;
    assert_eq!(missing.status, 204);
    t.delete(&format!("/api/v1/trust-providers/{}", uuid::Uuid::new_v4()))
        .await
        .expect_error(404, "Not found.");
}

#[tokio::test]
async fn trust_provider_certificate_key_source_and_validation_facts() {
    let t = TestApp::start().await;
    let cert = fixture("tp-cert.pem");
    let r = t.post("/api/v1/trust-providers", json!({"name": "k8s", "isActive": true, "provider": "OrchestratorServiceAccount", "certificate": cert, "pemType": "Certificate"})).await;
    let b = r.expect(200).clone();
    assert_eq!(b["certificate"], cert.as_str(), "returned as sent");
    let v = &b["publicKeyValidation"];
    let der = der::pem::decode_vec(cert.as_bytes()).unwrap().1;
    assert_eq!(
        v["thumbprint"],
        svc_server::crypto::hex(&svc_server::crypto::sha256(&der))
    );
    assert_eq!(v["isValidContent"], true);
    assert_eq!(v["serialNumber"], "5ec1");
    assert_eq!(v["pemType"], "Certificate");
    assert_eq!(v["expirationDate"], "2045-12-27T00:00:00.000Z");
    assert!(
        v["certificateSubject"]
            .as_str()
            .unwrap()
            .contains("CN=svc-test-trust-provider")
    );
    // The certificate's key verifies orchestrator tokens.
    let key = fixture_key("tp-key.pem");
    let now = svc_server::clock::now_secs();
    let claims =
        json!({"iss": "cluster", "sub": "system:serviceaccount:a:b", "aud": t.base, "iat": now, "exp": now + 60});
    let token = FakeIssuer::sign_rs256_with(&key, json!({"alg": "RS256"}), &claims);
    let cid = b["edgeSdkClientId"].as_str().unwrap();
    auth(&t, cid, json!({"orchestrator": {"serviceAccountToken": token}}))
        .await
        .expect(200);
    // An expired certificate is stored but reported invalid.
    let r = t.post("/api/v1/trust-providers", json!({"name": "old", "isActive": true, "provider": "OidcIdToken", "certificate": fixture("tp-cert-expired.pem"), "pemType": "Certificate"})).await;
    let v = r.expect(200)["publicKeyValidation"].clone();
    assert_eq!(
        (v["isValidContent"].clone(), v["message"].clone()),
        (json!(false), json!("The certificate has expired."))
    );
}

#[tokio::test]
async fn trust_provider_secrets_add_signers() {
    let t = TestApp::start().await;
    let iss = FakeIssuer::start().await;
    let jwks = json!({"keys": [crate::support::fake_issuer::rsa_jwk(&iss.rsa, "k1")]}).to_string();
    let r = t
        .post(
            "/api/v1/trust-providers",
            json!({"name": "p", "isActive": true, "provider": "OidcIdToken", "jwks": jwks}),
        )
        .await;
    let tp = r.expect(200).clone();
    let (id, cid) = (
        tp["externalId"].as_str().unwrap().to_string(),
        tp["edgeSdkClientId"].as_str().unwrap().to_string(),
    );
    let key = fixture_key("tp-key.pem");
    let now = svc_server::clock::now_secs();
    let token = FakeIssuer::sign_rs256_with(
        &key,
        json!({"alg": "RS256"}),
        &json!({"iss": "x", "sub": "s", "aud": t.base, "exp": now + 60}),
    );
    auth(&t, &cid, json!({"oidc": {"identityToken": token}}))
        .await
        .expect(401);

    let secrets = format!("/api/v1/trust-providers/{id}/secrets");
    let b64 = svc_server::crypto::b64std(fixture("tp-cert.pem").as_bytes());
    let r = t.post(&secrets, json!({"secret": b64})).await;
    let s = r.expect(200).clone();
    let sid = s["externalId"].as_str().unwrap().to_string();
    assert_eq!(
        r.header("location").unwrap(),
        format!("/api/v1/trust-providers/{id}/secrets/{sid}"),
        "a create sends Location (§1.5)"
    );
    assert_eq!(s["type"], "Certificate");
    assert_eq!(s["name"].as_str().unwrap().len(), 64, "thumbprint");
    assert!(s["subject"].as_str().unwrap().contains("svc-test-trust-provider"));
    assert!(!r.text.contains(&b64[..40]), "the secret is write-only");
    // Now the certificate's key is an additional signer.
    auth(&t, &cid, json!({"oidc": {"identityToken": token}}))
        .await
        .expect(200);
    let list = t.get(&secrets).await;
    assert_eq!(list.expect(200)["entities"][0]["externalId"], sid.as_str());
    let one = t.get(&format!("{secrets}/{sid}")).await;
    let one = one.expect(200);
    assert_eq!(one["externalId"], id.as_str(), "the owning provider");
    assert_eq!(one["secret"]["externalId"], sid.as_str());
    assert_eq!(
        t.get(&format!("/api/v1/trust-providers/{id}")).await.body["secret"],
        Value::Null
    );
    // Rules: expired, wrong kind, SymmetricKey, unknown provider.
    t.post(&secrets, json!({"secret": fixture("tp-cert-expired.pem")}))
        .await
        .expect_error(400, "secret: the certificate is expired");
    // Not valid yet (notBefore a day ahead) is not expired: accepted (§3.2).
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["future.example".into()]).unwrap();
    params.not_before = time::OffsetDateTime::now_utc() + time::Duration::days(1);
    params.not_after = time::OffsetDateTime::now_utc() + time::Duration::days(30);
    let future = params.self_signed(&key).unwrap().pem();
    t.post(
        &secrets,
        json!({"secret": svc_server::crypto::b64std(future.as_bytes())}),
    )
    .await
    .expect(200);
    t.post(&secrets, json!({"secret": b64, "type": "SymmetricKey"}))
        .await
        .expect_error(400, "type: SymmetricKey is not supported");
    t.post(&secrets, json!({"secret": "not pem"}))
        .await
        .expect_error_prefix(400, "secret:");
    let ci = t
        .post(
            "/api/v1/trust-providers",
            json!({"name": "ci", "isActive": true, "provider": "CiAIdentityToken"}),
        )
        .await
        .expect(200)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    t.post(&format!("/api/v1/trust-providers/{ci}/secrets"), json!({"secret": b64}))
        .await
        .expect_error(400, "secret: is not accepted for provider CiAIdentityToken");
    t.post(
        &format!("/api/v1/trust-providers/{}/secrets", uuid::Uuid::new_v4()),
        json!({"secret": b64}),
    )
    .await
    .expect_error(404, "Not found.");
    // Two are stored (the first and the one not valid yet); eight more make ten.
    for _ in 0..8 {
        t.post(&secrets, json!({"secret": b64})).await.expect(200);
    }
    t.post(&secrets, json!({"secret": b64}))
        .await
        .expect_error(400, "secret: at most 10 secrets per provider");
    // Delete: 204, then 404; the signer is gone with it.
    t.delete(&format!("{secrets}/{sid}")).await.expect(204);
    t.delete(&format!("{secrets}/{sid}"))
        .await
        .expect_error(404, "Not found.");
    let audit = t.audit("&category=TrustProviders").await;
    assert!(
        audit
            .iter()
            .any(|a| a["activity"] == "SecretAdded" && a["target"] == id.as_str())
    );
    assert!(audit.iter().any(|a| a["activity"] == "SecretDeleted"));
}

#[tokio::test]
async fn client_workloads_crud_filters_and_catalogue() {
    let t = TestApp::start().await;
    let r = t
        .post(
            "/api/v1/client-workloads",
            json!({"name": "api", "isActive": true, "type": "service", "identities": [{"type": "hostname", "value": "web-1"}, {"type": "oidcIdToken", "key": "team", "value": "blue"}]}),
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (204, ""));
    let loc = r.header("location").unwrap().to_string();
    let id = loc.rsplit('/').next().unwrap().to_string();
    assert_eq!(loc, format!("/api/v1/client-workloads/{id}"));
    let g = t.get(&loc).await;
    let g = g.expect(200).clone();
    assert_eq!(
        g["identities"][1],
        json!({"type": "oidcIdToken", "value": "blue", "key": "team"})
    );
    assert_eq!(
        (
            g["enforceSso"].clone(),
            g["ssoIdentityProviders"].clone(),
            g["type"].clone(),
            g["accessPolicyCount"].clone()
        ),
        (json!(false), json!([]), json!("service"), json!(0))
    );
    let bad = [
        (
            json!([{"type": "nope", "value": "x"}]),
            "identities[0].type: unknown identity type",
        ),
        (
            json!([{"type": "oidcIdToken", "value": "x"}]),
            "identities[0].key: is required for oidcIdToken",
        ),
        (
            json!([{"type": "hostname", "value": "x", "key": "k"}]),
            "identities[0].key: is only allowed for oidcIdToken",
        ),
        (
            json!([{"type": "sourceIPAddress", "value": "not-ip"}]),
            "identities[0].value: must be an IP address or CIDR",
        ),
        (
            json!([{"type": "hostname", "value": ""}]),
            "identities[0].value: must be 1..1024 characters",
        ),
    ];
    for (ids, msg) in bad {
        t.post(
            "/api/v1/client-workloads",
            json!({"name": "x", "isActive": true, "identities": ids}),
        )
        .await
        .expect_error_prefix(400, msg);
    }
    t.post(
        "/api/v1/client-workloads",
        json!({"name": "x", "isActive": true, "ssoIdentityProviders": [uuid::Uuid::new_v4()]}),
    )
    .await
    .expect_error_prefix(400, "ssoIdentityProviders[0]");
    assert_eq!(
        t.get("/api/v1/client-workloads?filter=identityType:HOSTNAME")
            .await
            .expect(200)["recordsTotal"],
        1
    );
    assert_eq!(
        t.get("/api/v1/client-workloads?filter=identity:web-1")
            .await
            .expect(200)["recordsTotal"],
        1
    );
    assert_eq!(
        t.get("/api/v1/client-workloads?filter=type:service").await.expect(200)["clientWorkloads"][0]["externalId"],
        id.as_str()
    );
    // PATCH replaces identities; PUT replaces everything.
    let p = t
        .patch(&loc, json!({"identities": [{"type": "processName", "value": "nginx"}]}))
        .await;
    assert_eq!(
        p.expect(200)["identities"],
        json!([{"type": "processName", "value": "nginx", "key": null}])
    );
    let mut put = g.clone();
    put["identities"] = json!([]);
    put.as_object_mut().unwrap().remove("type");
    let r = t.put("/api/v1/client-workloads", put.clone()).await;
    assert_eq!(
        (r.expect(200)["identities"].clone(), r.body["type"].clone()),
        (json!([]), Value::Null)
    );
    // A body naming another resource set: PUT is checked against the header (§1.4 rule 3),
    // PATCH is a change of resource set (rule 7).
    let other_rs = "0b8e3c1a-58b1-4c39-9d35-0c37a8e0f2a4";
    put["resourceSet"] = json!(other_rs);
    t.put("/api/v1/client-workloads", put)
        .await
        .expect_error(400, "resourceSet: does not match X-Svc-ResourceSet");
    t.patch(&loc, json!({"resourceSet": other_rs}))
        .await
        .expect_error(400, "resourceSet: cannot be changed");
    // The catalogue lists every identity type.
    let cat = t.get("/api/v1/client-workloads/identifiers").await;
    let names: Vec<&str> = cat
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    for n in [
        "svcClientId",
        "oidcIdTokenSubject",
        "orchestratorPodNamePrefix",
        "sourceIPAddress",
        "cloudAEcsTaskFamily",
    ] {
        assert!(names.contains(&n), "{n}");
    }
    assert!(
        cat.body
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["isSupported"] == true && i["environmentPath"].is_string())
    );
    t.delete(&loc).await.expect(204);
    t.delete(&loc).await.expect_error(404, "Not found.");
}

fn endpoint(host: &str, port: i32) -> Value {
    json!({"host": host, "port": port, "appProtocol": "HTTP", "transportProtocol": "TCP", "requestedPort": port, "requestedTls": true, "tls": true, "tlsVerification": "full"})
}

#[tokio::test]
async fn server_workloads_validation_and_uniqueness() {
    let t = TestApp::start().await;
    let sw = |ep: Value| json!({"name": "s", "isActive": true, "serviceEndpoint": ep});
    let with = |k: &str, v: Value| {
        let mut e = endpoint("api.example.com", 443);
        e[k] = v;
        sw(e)
    };
    let cases = [
        (json!({"name": "s", "isActive": true}), "serviceEndpoint: is required"),
        (
            with("host", json!("*.com")),
            "serviceEndpoint.host: a wildcard needs a suffix of at least two labels",
        ),
        (
            with("host", json!("bad host")),
            "serviceEndpoint.host: must be a host name",
        ),
        (
            with("appProtocol", json!("FTP")),
            "serviceEndpoint.appProtocol: must be one of",
        ),
        (
            with("transportProtocol", json!("UDP")),
            "serviceEndpoint.transportProtocol: must be one of TCP",
        ),
        (with("port", json!(0)), "serviceEndpoint.port: must be 1..65535"),
        (
            with("requestedPort", json!(65536)),
            "serviceEndpoint.requestedPort: must be 1..65535",
        ),
        (
            with("tlsVerification", json!("partial")),
            "serviceEndpoint.tlsVerification: must be one of full, none",
        ),
        (
            with("urlPath", json!("/token")),
            "serviceEndpoint.urlPath: is only allowed with appProtocol OAuth",
        ),
        (
            with(
                "workloadServiceAuthentication",
                json!({"method": "API Key", "scheme": "Basic"}),
            ),
            "serviceEndpoint.workloadServiceAuthentication.scheme: must be one of Header, Query Parameter",
        ),
        (
            with(
                "workloadServiceAuthentication",
                json!({"method": "API Key", "scheme": "Header"}),
            ),
            "serviceEndpoint.workloadServiceAuthentication.config: is required",
        ),
        (with("colour", json!("red")), "serviceEndpoint.colour: unknown property"),
    ];
    for (body, msg) in cases {
        t.post("/api/v1/server-workloads", body)
            .await
            .expect_error_prefix(400, msg);
    }
    let mut mcp = endpoint("mcp.example.com", 443);
    mcp["appProtocol"] = json!("MCP");
    mcp["port"] = json!(8443);
    t.post("/api/v1/server-workloads", sw(mcp))
        .await
        .expect_error_prefix(400, "serviceEndpoint.port: MCP requires");
    let mut mcp = endpoint("mcp.example.com", 443);
    mcp["appProtocol"] = json!("MCP");
    mcp["tls"] = json!(false);
    t.post("/api/v1/server-workloads", sw(mcp))
        .await
        .expect_error_prefix(400, "serviceEndpoint.tls: MCP requires");
    let r = t
        .post("/api/v1/server-workloads", sw(endpoint("api.example.com", 443)))
        .await;
    assert_eq!(r.status, 204);
    let loc = r.header("location").unwrap().to_string();
    // A second active workload on the same host and port is refused; an inactive one is fine.
    t.post("/api/v1/server-workloads", sw(endpoint("API.example.com", 443)))
        .await
        .expect_error_prefix(400, "serviceEndpoint.host: active server workload");
    let r = t
        .post(
            "/api/v1/server-workloads",
            json!({"name": "s2", "isActive": false, "serviceEndpoint": endpoint("api.example.com", 443)}),
        )
        .await;
    assert_eq!(r.status, 204);
    let loc2 = r.header("location").unwrap().to_string();
    t.patch(&loc2, json!({"isActive": true}))
        .await
        .expect_error_prefix(400, "serviceEndpoint.host: active server workload");
    let g = t.get(&loc).await.expect(200).clone();
    assert_eq!(g["serviceEndpoint"]["workloadServiceAuthentication"], Value::Null);
    assert!(g["serviceEndpoint"]["externalId"].is_string());
    assert_eq!(g["serviceEndpoint"]["httpHeaders"], json!([]));
    // PATCH changes the base only; the endpoint changes through PUT (its id is kept).
    t.patch(&loc, json!({"serviceEndpoint": endpoint("x.example.com", 1)}))
        .await
        .expect_error(400, "serviceEndpoint: unknown property");
    let mut put = g.clone();
    put["serviceEndpoint"]["port"] = json!(8443);
    let r = t.put("/api/v1/server-workloads", put).await;
    assert_eq!(
        r.expect(200)["serviceEndpoint"]["externalId"],
        g["serviceEndpoint"]["externalId"]
    );
    assert_eq!(
        t.get("/api/v1/server-workloads?filter=host:API.EXAMPLE.COM")
            .await
            .expect(200)["recordsTotal"],
        2
    );
    assert_eq!(
        t.get("/api/v1/server-workloads?filter=port:443&filter=isActive:true")
            .await
            .expect(200)["recordsTotal"],
        2
    );
    assert_eq!(
        t.get("/api/v1/server-workloads?order=serviceEndpoint.host%20desc")
            .await
            .expect(200)["order"],
        "serviceEndpoint.host desc"
    );
    // DELETE: 204, also for a missing id.
    t.delete(&loc).await.expect(204);
    t.delete(&loc).await.expect(204);
}

#[tokio::test]
async fn credential_providers_v2_and_v1_views() {
    let t = TestApp::start().await;
    let canary = format!("api-key-canary-{}", uuid::Uuid::new_v4().simple());
    let r = t.post("/api/v2/credential-providers", json!({"type": "apikey", "name": "k", "isActive": true, "apiKey": canary, "tags": [{"key": "team", "value": "a"}]})).await;
    let b = r.expect(201).clone();
    let id = b["externalId"].as_str().unwrap().to_string();
    assert_eq!(
        r.header("location"),
        Some(format!("/api/v2/credential-providers/{id}").as_str())
    );
    assert_eq!(b["apiKey"], Value::Null);
    assert!(!r.text.contains(&canary));
    // Validation.
    t.post(
        "/api/v2/credential-providers",
        json!({"type": "apikey", "name": "k", "isActive": true}),
    )
    .await
    .expect_error(400, "apiKey: is required");
    t.post(
        "/api/v2/credential-providers",
        json!({"type": "teleport", "name": "k", "isActive": true}),
    )
    .await
    .expect_error_prefix(400, "type: must be one of");
    t.post("/api/v2/credential-providers", json!({"name": "k", "isActive": true}))
        .await
        .expect_error(400, "type: is required");
    t.post(
        "/api/v2/credential-providers",
        json!({"type": "username-password", "name": "u", "isActive": true, "password": "pw"}),
    )
    .await
    .expect_error(400, "username: is required");
    t.post(
        "/api/v2/credential-providers",
        json!({"type": "apikey", "name": "k", "isActive": true, "apiKey": "x", "username": "u"}),
    )
    .await
    .expect_error(400, "username: unknown property");
    // PUT without the secret keeps it; PATCH providerDetailJSON replaces it.
    let mut put = b.clone();
    put["name"] = json!("renamed");
    assert_eq!(
        t.put("/api/v2/credential-providers", put.clone()).await.expect(200)["name"],
        "renamed"
    );
    put["type"] = json!("username-password");
    t.put("/api/v2/credential-providers", put)
        .await
        .expect_error(400, "type: cannot be changed");
    let st = t.app.state();
    let compiled = st
        .idx
        .credentials
        .get(&uuid::Uuid::parse_str(&id).unwrap())
        .cloned()
        .unwrap();
    drop(st);
    assert!(
        format!("{:?}", compiled.backend).contains("***"),
        "Debug never prints the key"
    );
    let r = t
        .patch(
            &format!("/api/v2/credential-providers/{id}"),
            json!({"providerDetailJSON": "{\"apiKey\": \"rotated-key\"}", "description": "d"}),
        )
        .await;
    assert_eq!(r.expect(200)["description"], "d");
    t.patch(
        &format!("/api/v2/credential-providers/{id}"),
        json!({"providerDetailJSON": "{\"colour\": 1}"}),
    )
    .await
    .expect_error(400, "providerDetailJSON.colour: unknown property");
    t.patch(
        &format!("/api/v2/credential-providers/{id}"),
        json!({"type": "username-password"}),
    )
    .await
    .expect_error(400, "type: must equal the stored type");
    // Verification performs a real fetch; authorize is only for authorization-code providers.
    let v = t.get(&format!("/api/v2/credential-providers/{id}/verification")).await;
    assert_eq!(
        *v.expect(200),
        json!({"success": true, "message": "A credential was obtained.", "id": 0})
    );
    t.get(&format!("/api/v2/credential-providers/{id}/authorize"))
        .await
        .expect_error_prefix(400, "type: authorize applies only");

    // The v1 view of the same entity: variant fields as JSON text, secrets removed.
    let v1 = t.get(&format!("/api/v1/credential-providers/{id}")).await;
    let v1 = v1.expect(200).clone();
    assert_eq!(
        (
            v1["type"].clone(),
            v1["providerDetailJSON"].clone(),
            v1["roleId"].clone()
        ),
        (json!("apikey"), json!("{}"), Value::Null)
    );
    let r = t
        .post("/api/v1/credential-providers", json!({"type": "username-password", "name": "db", "isActive": true, "providerDetailJSON": "{\"username\": \"svc\", \"password\": \"pw-canary\"}"}))
        .await;
    let up = r.expect(201).clone();
    assert_eq!(up["providerDetailJSON"], "{\"username\":\"svc\"}");
    let up_id = up["externalId"].as_str().unwrap();
    assert_eq!(
        t.get(&format!("/api/v2/credential-providers/{up_id}")).await.body["username"],
        "svc"
    );
    t.post("/api/v1/credential-providers", json!({"type": "username-password", "name": "db", "isActive": true, "providerDetailJSON": "{\"username\": \"svc\"}"}))
        .await
        .expect_error(400, "providerDetailJSON.password: is required");
    // Rules across fields name the field inside providerDetailJSON too (§3.6), on v1 POST and
    // PUT; on v2 the same rule names the field itself.
    let bad_final = json!({"type": "oauth-authorization-code", "name": "ac", "isActive": true,
        "providerDetailJSON": "{\"clientID\": \"c\", \"oAuthUrl\": \"https://idp.example\", \"authorizationUrl\": \"https://idp.example/auth\", \"tokenUrl\": \"https://idp.example/token\", \"finalCallbackUrl\": \"not a url\"}"});
    t.post("/api/v1/credential-providers", bad_final.clone())
        .await
        .expect_error(
            400,
            "providerDetailJSON.finalCallbackUrl: must be an absolute http(s) URL",
        );
    t.post(
        "/api/v2/credential-providers",
        json!({"type": "oauth-authorization-code", "name": "ac", "isActive": true,
            "clientID": "c", "oAuthUrl": "https://idp.example", "authorizationUrl": "https://idp.example/auth",
            "tokenUrl": "https://idp.example/token", "finalCallbackUrl": "not a url"}),
    )
    .await
    .expect_error(400, "finalCallbackUrl: must be an absolute http(s) URL");
    let good = bad_final["providerDetailJSON"]
        .as_str()
        .unwrap()
        .replace("not a url", "https://app.example/done");
    let mut ac = bad_final.clone();
    ac["providerDetailJSON"] = json!(good);
    let ac = t.post("/api/v1/credential-providers", ac).await.expect(201).clone();
    let mut put = bad_final;
    put["externalId"] = ac["externalId"].clone();
    t.put("/api/v1/credential-providers", put).await.expect_error(
        400,
        "providerDetailJSON.finalCallbackUrl: must be an absolute http(s) URL",
    );
    let r = t
        .patch(
            &format!("/api/v1/credential-providers/{up_id}"),
            json!({"providerDetailJSON": "{\"username\": \"svc2\"}"}),
        )
        .await;
    assert_eq!(r.expect(201)["providerDetailJSON"], "{\"username\":\"svc2\"}");
    let mut v1put = up.clone();
    v1put["providerDetailJSON"] = json!("{\"username\": \"svc3\"}");
    assert_eq!(
        t.put("/api/v1/credential-providers", v1put).await.expect(201)["providerDetailJSON"],
        "{\"username\":\"svc3\"}"
    );
    let list = t
        .get("/api/v1/credential-providers?filter=type:username-password")
        .await;
    assert_eq!(list.expect(200)["credentialProviders"][0]["externalId"], up_id);
    assert_eq!(
        t.get("/api/v2/credential-providers?filter=tag:team=a")
            .await
            .expect(200)["recordsTotal"],
        1
    );

    // Secrets are sealed at rest.
    if let Some(bytes) = t.sqlite_bytes() {
        for s in [canary.as_str(), "rotated-key", "pw-canary"] {
            assert!(!contains(&bytes, s), "a credential is stored in plaintext");
        }
    }
    // v1 DELETE of a missing id is 204; v2 is 404.
    t.delete(&format!("/api/v1/credential-providers/{}", uuid::Uuid::new_v4()))
        .await
        .expect(204);
    t.delete(&format!("/api/v2/credential-providers/{}", uuid::Uuid::new_v4()))
        .await
        .expect_error(404, "Not found.");
}
