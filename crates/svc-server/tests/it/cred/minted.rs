//! Credential types the service mints itself (contract §3.5.2, §4.10, §5.2, §5.3):
//! `svc-access-token`, `signed-jwt` (incl. multi-provider selectors), `oidc-id-token`,
//! `jwt-svid-token` and `x509svid`. Every token is verified independently of the service's own
//! code: JWTs against the published JWKS (or the provider's registered public key), certificates with
//! `openssl verify` against `GET /api/v1/root-ca`.

use der::{Decode, Encode};
use serde_json::{Value, json};
use svc_server::domain::records::{AUDITOR_ROLE, SUPER_ADMIN_ROLE};

use crate::support::cred::*;
use crate::support::edge::*;
use crate::support::harness::{TestApp, temp_dir};

// ---- svc-access-token ------------------------------------------------------------------------------

#[tokio::test]
async fn svc_access_token_carries_the_current_role_and_audits_as_role() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    // Validation first.
    t.post("/api/v2/credential-providers", json!({"type": "svc-access-token", "name": "a", "isActive": true, "roleId": AUDITOR_ROLE, "lifetimeInSeconds": 299}))
        .await
        .expect_error(400, "lifetimeInSeconds: must be 300..43200");
    t.post("/api/v2/credential-providers", json!({"type": "svc-access-token", "name": "a", "isActive": true, "roleId": uuid::Uuid::new_v4(), "lifetimeInSeconds": 600}))
        .await
        .expect_error(400, "roleId: unknown role");
    t.post("/api/v2/credential-providers", json!({"type": "svc-access-token", "name": "a", "isActive": true, "roleId": AUDITOR_ROLE, "lifetimeInSeconds": 600, "absoluteTokenLifetime": 600}))
        .await
        .expect_error(400, "absoluteTokenLifetime: must be greater than lifetimeInSeconds");

    let cp = rig
        .provider(&t, json!({"type": "svc-access-token", "name": "mgmt-reader", "isActive": true, "roleId": AUDITOR_ROLE, "lifetimeInSeconds": 600}))
        .await;
    let shown = t.get(&format!("/api/v2/credential-providers/{cp}")).await;
    assert_eq!(shown.expect(200)["audience"], "svc-api");
    let policy = rig.attach(&t, &cp).await;
    let before = now();
    let v = rig.issue(&t, "OAuthToken").await;
    assert_eq!(v["data"].as_object().unwrap().len(), 1, "data has exactly `token`");
    let token = v["data"]["token"].as_str().unwrap().to_string();
    let c = jwt_payload(&token);
    assert_eq!(c["sub"], format!("credential-provider:{cp}"));
    assert_eq!(
        (c["svc_auth"].clone(), c["aud"].clone()),
        (json!("workload"), json!("svc-api"))
    );
    assert_eq!((c["cp"].clone(), c["ap"].clone()), (json!(cp), json!(policy)));
    assert_eq!(c["roles"], json!([AUDITOR_ROLE.to_string()]));
    assert_eq!(c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(), 600);
    assert_eq!(expires_at_secs(&v), c["exp"].as_i64().unwrap());
    assert!(c["iat"].as_i64().unwrap() >= before - 1);

    // The token reads but cannot write (Auditor).
    t.get_as(&token, "/api/v1/trust-providers").await.expect(200);
    let denied = t
        .post_as(
            &token,
            "/api/v1/client-workloads",
            json!({"name": "x", "isActive": true, "identities": [{"type": "svcClientId", "value": "x"}]}),
        )
        .await;
    assert_eq!(denied.status, 403, "{}", denied.text);
    // The provider's *current* role applies: switch it to SuperAdmin and the same token writes.
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"providerDetailJSON": json!({"roleId": SUPER_ADMIN_ROLE}).to_string()}),
    )
    .await
    .expect(200);
    let w = t
        .post_as(
            &token,
            "/api/v1/client-workloads",
            json!({"name": "by-workload", "isActive": true, "identities": [{"type": "svcClientId", "value": "bw"}]}),
        )
        .await;
    assert_eq!(w.status, 204, "{}", w.text);
    let target = id_of(&w);
    let entry = t
        .audit(&format!("&filter=target:{target}"))
        .await
        .into_iter()
        .find(|a| a["activity"] == "Created")
        .expect("audit entry for the workload's write");
    assert_eq!(entry["actor"]["type"], "Role");
    assert_eq!(entry["actor"]["credentialProviderId"], cp);
    assert_eq!(entry["actor"]["accessPolicyId"], policy);
    // Deactivating the provider revokes every token it issued.
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"isActive": false}),
    )
    .await
    .expect(200);
    t.get_as(&token, "/api/v1/trust-providers").await.expect(401);
}

// ---- signed-jwt ------------------------------------------------------------------------------------

fn verify_rs256_pem(public_pem: &str, token: &str) -> Value {
    let (_, spki) = der::pem::decode_vec(public_pem.trim().as_bytes()).unwrap();
    let spki = x509_cert::spki::SubjectPublicKeyInfoOwned::from_der(&spki).unwrap();
    let rsa_der = spki.subject_public_key.raw_bytes();
    let parts: Vec<&str> = token.split('.').collect();
    let sig = svc_server::crypto::b64url_decode(parts[2]).unwrap();
    aws_lc_rs::signature::UnparsedPublicKey::new(&aws_lc_rs::signature::RSA_PKCS1_2048_8192_SHA256, rsa_der)
        .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
        .expect("signature verifies under keyContent");
    let header: Value = serde_json::from_slice(&svc_server::crypto::b64url_decode(parts[0]).unwrap()).unwrap();
    assert_eq!(header["alg"], "RS256");
    assert_eq!(header["typ"], "JWT");
    jwt_payload(token)
}

fn fingerprint(public_pem: &str) -> String {
    let (_, spki) = der::pem::decode_vec(public_pem.trim().as_bytes()).unwrap();
    svc_server::crypto::b64std(&svc_server::crypto::sha256(&spki))
}

fn signed_jwt(name: &str, subject: &str) -> Value {
    json!({"type": "signed-jwt", "name": name, "isActive": true, "tokenConfiguration": "dataWarehouseA",
           "algorithmType": "RS256", "lifetime": 120, "subject": subject})
}

#[tokio::test]
async fn signed_jwt_generated_and_provided_keys() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    // Generated key: keyContent is the public key; issuer derived from subject + fingerprint.
    let cp = rig.provider(&t, signed_jwt("warehouse", "ACME.LOADER")).await;
    let shown = t
        .get(&format!("/api/v2/credential-providers/{cp}"))
        .await
        .expect(200)
        .clone();
    let pem = shown["keyContent"].as_str().expect("keyContent").to_string();
    assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----"));
    assert_eq!(shown["privateKey"], Value::Null);
    let issuer = format!("ACME.LOADER.SHA256:{}", fingerprint(&pem));
    assert_eq!(shown["issuer"], issuer);
    rig.attach(&t, &cp).await;
    let v = rig.issue(&t, "OAuthToken").await;
    let c = verify_rs256_pem(&pem, v["data"]["token"].as_str().unwrap());
    assert_eq!(c.as_object().unwrap().len(), 4, "exactly iss, sub, iat, exp: {c}");
    assert_eq!(
        (c["iss"].clone(), c["sub"].clone()),
        (json!(issuer), json!("ACME.LOADER"))
    );
    assert_eq!(c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(), 120);
    assert_eq!(expires_at_secs(&v), c["exp"].as_i64().unwrap());

    // Provided key (PKCS#8 PEM from openssl): keyContent is its public half; never echoed back.
    let dir = temp_dir();
    let key_path = dir.join("k.pem");
    openssl(
        &[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            key_path.to_str().unwrap(),
        ],
        b"",
    );
    let private = std::fs::read_to_string(&key_path).unwrap();
    let public = openssl(&["pkey", "-pubout", "-in", key_path.to_str().unwrap()], b"");
    let mut body = signed_jwt("warehouse-2", "ACME.OTHER");
    body["privateKey"] = json!(private);
    body["issuer"] = json!("ACME.OTHER.SHA256:custom");
    let r = t.post("/api/v2/credential-providers", body).await;
    let created = r.expect(201).clone();
    assert!(!r.text.contains("PRIVATE KEY"));
    assert_eq!(created["keyContent"].as_str().unwrap().trim(), public.trim());
    assert_eq!(created["issuer"], "ACME.OTHER.SHA256:custom");
    let cp2 = created["externalId"].as_str().unwrap().to_string();
    rig.attach(&t, &cp2).await;
    let v = rig.issue(&t, "OAuthToken").await;
    let c = verify_rs256_pem(&public, v["data"]["token"].as_str().unwrap());
    assert_eq!(c["iss"], "ACME.OTHER.SHA256:custom");
    if let Some(bytes) = t.sqlite_bytes() {
        let line = private.lines().nth(1).unwrap();
        assert!(
            !crate::support::harness::contains(&bytes, line),
            "private key stored in plaintext"
        );
    }

    // Bad input.
    let mut small = signed_jwt("w", "ACME.X");
    let small_path = dir.join("s.pem");
    openssl(
        &[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:1024",
            "-out",
            small_path.to_str().unwrap(),
        ],
        b"",
    );
    small["privateKey"] = json!(std::fs::read_to_string(&small_path).unwrap());
    t.post("/api/v2/credential-providers", small)
        .await
        .expect_error(400, "privateKey: the RSA key must have at least 2048 bits");
    t.post("/api/v2/credential-providers", signed_jwt("w", "acme.lower"))
        .await
        .expect_error(400, "subject: must be ACCOUNT.USER in upper case");
    let mut bad = signed_jwt("w", "ACME.X");
    bad["algorithmType"] = json!("HS256");
    t.post("/api/v2/credential-providers", bad)
        .await
        .expect_error_prefix(400, "algorithmType: must be one of");
    let mut bad = signed_jwt("w", "ACME.X");
    bad["lifetime"] = json!(3601);
    t.post("/api/v2/credential-providers", bad)
        .await
        .expect_error(400, "lifetime: must be 1..3600");
}

#[tokio::test]
async fn multi_provider_selectors_choose_one_signed_jwt() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let a = rig.provider(&t, signed_jwt("wa", "ACME.A")).await;
    let b = rig.provider(&t, signed_jwt("wb", "ACME.B")).await;
    let c = rig.provider(&t, signed_jwt("wc", "ACME.C")).await;
    let d = rig.provider(&t, signed_jwt("wd", "ACME.D")).await;
    let api = rig
        .provider(
            &t,
            json!({"type": "apikey", "name": "k", "isActive": true, "apiKey": "k"}),
        )
        .await;
    // Mixed types and `None` cannot be combined.
    let mixed = t
        .post(
            "/api/v2/access-policies",
            json!({"name": "p", "isActive": true, "clientWorkload": rig.client_workload, "serverWorkload": rig.server_workload,
                   "credentialProviders": [{"credentialProviderId": a, "mappingType": "AccountName", "accountName": "A"},
                                           {"credentialProviderId": api, "mappingType": "None"}]}),
        )
        .await;
    assert_eq!(mixed.status, 400, "{}", mixed.text);
    rig.policy(
        &t,
        json!([{"credentialProviderId": a, "mappingType": "AccountName", "accountName": "alpha"},
               {"credentialProviderId": b, "mappingType": "AccountName", "accountName": "beta"},
               {"credentialProviderId": c, "mappingType": "HttpHeader", "headerName": "X-Tenant", "headerValue": "gamma"},
               {"credentialProviderId": d, "mappingType": "HttpBody", "httpbodyFieldPath": "tenant.id", "httpbodyFieldValue": "delta"}]),
    )
    .await;
    let sub_of = |r: &crate::support::harness::Resp| -> String {
        assert_eq!(r.status, 200, "{}", r.text);
        jwt_payload(r.body["data"]["token"].as_str().unwrap())["sub"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // No selector → 400 with the step-10 message, event reason SelectorRequired.
    rig.request(&t, "OAuthToken", json!({})).await.expect_error(
        400,
        "connectionMetadata is required: the access policy has several credential providers.",
    );
    assert_eq!(
        last_event(&t, "access.authorization").await["outcome"]["reason"],
        "SelectorRequired"
    );
    rig.request(&t, "OAuthToken", json!({"connectionMetadata": {"accountName": null}}))
        .await
        .expect_error(
            400,
            "connectionMetadata is required: the access policy has several credential providers.",
        );
    let r = rig
        .request(&t, "OAuthToken", json!({"connectionMetadata": {"accountName": "beta"}}))
        .await;
    assert_eq!(sub_of(&r), "ACME.B");
    let r = rig
        .request(
            &t,
            "OAuthToken",
            json!({"connectionMetadata": {"headerName": "x-tenant", "headerValue": "gamma"}}),
        )
        .await;
    assert_eq!(sub_of(&r), "ACME.C", "header names compare case-insensitively");
    let r = rig
        .request(
            &t,
            "OAuthToken",
            json!({"connectionMetadata": {"httpBodyFieldPath": "tenant.id", "httpBodyFieldValue": "delta"}}),
        )
        .await;
    assert_eq!(sub_of(&r), "ACME.D");
    // Values compare exactly; no match → 404 Unknown, reason SelectorMismatch.
    for cm in [
        json!({"accountName": "Beta"}),
        json!({"headerName": "X-Tenant", "headerValue": "GAMMA"}),
        json!({"accountName": "zeta"}),
    ] {
        let r = rig.request(&t, "OAuthToken", json!({"connectionMetadata": cm})).await;
        assert_eq!(
            (r.status, r.body.clone()),
            (404, json!({"credentialType": "Unknown", "expiresAt": null, "data": {}})),
            "{cm}"
        );
    }
    assert_eq!(
        last_event(&t, "access.authorization").await["outcome"]["reason"],
        "SelectorMismatch"
    );
    // An inactive provider is not considered: with only one active left, it is used without a selector.
    for id in [&b, &c, &d] {
        t.patch(
            &format!("/api/v2/credential-providers/{id}"),
            json!({"isActive": false}),
        )
        .await
        .expect(200);
    }
    let r = rig.request(&t, "OAuthToken", json!({})).await;
    assert_eq!(sub_of(&r), "ACME.A");
}

// ---- oidc-id-token / jwt-svid-token ----------------------------------------------------------------

#[tokio::test]
async fn oidc_id_token_verifies_against_published_jwks_with_dynamic_claims() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let cp = rig
        .provider(
            &t,
            json!({"type": "oidc-id-token", "name": "rp-token", "isActive": true, "audience": "https://rp.example.test",
                   "subject": "ci:${oidc.identityToken.decode.payload.sub}", "subjectType": "dynamic",
                   "lifetimeTimeSpanSeconds": 900,
                   "customClaims": [{"key": "team", "value": "${oidc.identityToken.decode.payload.team}", "valueType": "dynamic"},
                                    {"key": "workload", "value": "${svc.clientWorkload.name}", "valueType": "dynamic"},
                                    {"key": "env", "value": "prod"}]}),
        )
        .await;
    let shown = t.get(&format!("/api/v2/credential-providers/{cp}")).await;
    assert_eq!(shown.expect(200)["issuer"], t.base);
    let policy = rig.attach(&t, &cp).await;
    let v = rig.issue(&t, "OAuthToken").await;
    let (h, c) = verify_with_jwks(&t, v["data"]["token"].as_str().unwrap()).await;
    assert_eq!(h["alg"], "ES256", "ES256 by default");
    assert_eq!(c["iss"], t.base);
    assert_eq!(c["sub"], format!("ci:{SUBJECT}"));
    assert_eq!(c["aud"], "https://rp.example.test");
    assert_eq!(
        (c["team"].clone(), c["workload"].clone(), c["env"].clone()),
        (json!("platform"), json!("deploy-job"), json!("prod"))
    );
    assert_eq!(c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(), 900);
    assert!(c["jti"].as_str().is_some_and(|j| uuid::Uuid::parse_str(j).is_ok()));
    assert_eq!(c["svc"]["accessPolicyId"], policy);
    assert_eq!(c["svc"]["credentialProviderId"], cp);
    assert_eq!(c["svc"]["clientWorkloadId"], rig.client_workload);
    assert_eq!(c["svc"]["serverWorkloadId"], rig.server_workload);
    assert_eq!(c["svc"]["trustProviderId"], rig.trust_provider);
    assert_eq!(expires_at_secs(&v), c["exp"].as_i64().unwrap());

    // RS256 on request.
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"providerDetailJSON": "{\"algorithmType\": \"RS256\"}"}),
    )
    .await
    .expect(200);
    let v = rig.issue(&t, "OAuthToken").await;
    let (h, _) = verify_with_jwks(&t, v["data"]["token"].as_str().unwrap()).await;
    assert_eq!(h["alg"], "RS256");

    // A claim the evidence does not have → 403, reason UnresolvableClaim, nothing issued.
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"providerDetailJSON": json!({"customClaims": [{"key": "x", "value": "${oidc.identityToken.decode.payload.missing}", "valueType": "dynamic"}]}).to_string()}),
    )
    .await
    .expect(200);
    rig.request(&t, "OAuthToken", json!({}))
        .await
        .expect_error(403, "Not applicable for this request.");
    assert_eq!(
        last_event(&t, "access.authorization").await["outcome"]["reason"],
        "UnresolvableClaim"
    );
    // Requesting another type than the provider issues → 403 CredentialTypeMismatch.
    rig.request(&t, "ApiKey", json!({}))
        .await
        .expect_error(403, "Not applicable for this request.");
    assert_eq!(
        last_event(&t, "access.authorization").await["outcome"]["reason"],
        "CredentialTypeMismatch"
    );

    // Validation.
    let base = json!({"type": "oidc-id-token", "name": "x", "isActive": true, "audience": "a", "subject": "s"});
    let mut b = base.clone();
    b["customClaims"] = json!([{"key": "iss", "value": "evil"}]);
    t.post("/api/v2/credential-providers", b)
        .await
        .expect_error(400, "customClaims[0].key: cannot be iss, iat, exp, nbf or jti");
    let mut b = base.clone();
    b["lifetimeTimeSpanSeconds"] = json!(59);
    t.post("/api/v2/credential-providers", b)
        .await
        .expect_error(400, "lifetimeTimeSpanSeconds: must be 60..86400");
    let mut b = base.clone();
    b["subjectType"] = json!("dynamic");
    b["subject"] = json!("${nope.thing}");
    t.post("/api/v2/credential-providers", b)
        .await
        .expect_error_prefix(400, "subject: ");
    // `issuer` is read-only here: a value sent is ignored and the service's issuer shown.
    let mut b = base;
    b["issuer"] = json!("https://elsewhere.example");
    assert_eq!(
        t.post("/api/v2/credential-providers", b).await.expect(201)["issuer"],
        t.base
    );
}

#[tokio::test]
async fn jwt_svid_token_requires_a_spiffe_subject_and_omits_svc() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    t.post(
        "/api/v2/credential-providers",
        json!({"type": "jwt-svid-token", "name": "x", "isActive": true, "audience": "a", "subject": "job"}),
    )
    .await
    .expect_error(400, "subject: must start with spiffe://");
    let cp = rig
        .provider(
            &t,
            json!({"type": "jwt-svid-token", "name": "svid", "isActive": true, "audience": "spiffe://acme.test/db",
                   "subject": "spiffe://acme.test/workload/${svc.clientWorkload.id}", "subjectType": "dynamic"}),
        )
        .await;
    rig.attach(&t, &cp).await;
    let v = rig.issue(&t, "OAuthToken").await;
    let (_, c) = verify_with_jwks(&t, v["data"]["token"].as_str().unwrap()).await;
    assert_eq!(c["sub"], format!("spiffe://acme.test/workload/{}", rig.client_workload));
    assert_eq!(c["aud"], "spiffe://acme.test/db");
    assert!(c.get("svc").is_none(), "a JWT-SVID carries no svc claim: {c}");
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        3600,
        "default lifetime"
    );
    // A dynamic subject that does not resolve to a spiffe:// id is refused at issuance.
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"providerDetailJSON": "{\"subject\": \"${oidc.identityToken.decode.payload.sub}\"}"}),
    )
    .await
    .expect(200);
    rig.request(&t, "OAuthToken", json!({}))
        .await
        .expect_error(403, "Not applicable for this request.");
    assert_eq!(
        last_event(&t, "access.authorization").await["outcome"]["reason"],
        "UnresolvableClaim"
    );
}

// ---- x509svid --------------------------------------------------------------------------------------

/// A CSR (PEM) for a fresh key made by openssl; `alg` is `ec` (P-256), `ec384`, `rsa` or `rsa1024`.
fn csr(alg: &str) -> String {
    let dir = temp_dir();
    let key = dir.join("k.pem");
    let k = key.to_str().unwrap();
    match alg {
        "ec" => openssl(
            &[
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-out",
                k,
            ],
            b"",
        ),
        "ec384" => openssl(
            &[
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-384",
                "-out",
                k,
            ],
            b"",
        ),
        "rsa" => openssl(
            &[
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-out",
                k,
            ],
            b"",
        ),
        "rsa1024" => openssl(
            &[
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:1024",
                "-out",
                k,
            ],
            b"",
        ),
        _ => unreachable!(),
    };
    // The CSR asks for its own subject and SANs: the service must ignore all of it.
    openssl(
        &[
            "req",
            "-new",
            "-key",
            k,
            "-subj",
            "/CN=attacker",
            "-addext",
            "subjectAltName=DNS:evil.example,URI:spiffe://evil/x",
        ],
        b"",
    )
}

fn cert_text(pem: &str) -> String {
    openssl(&["x509", "-noout", "-text"], pem.as_bytes())
}

#[tokio::test]
async fn x509svid_issues_from_a_csr_under_the_root_ca() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let root = t.get("/api/v1/root-ca").await;
    assert_eq!(root.status, 200);
    assert_eq!(root.header("content-type"), Some("application/x-pem-file"));
    assert!(root.text.starts_with("-----BEGIN CERTIFICATE-----"));
    let ca_dir = temp_dir();
    let ca_path = ca_dir.join("ca.pem");
    std::fs::write(&ca_path, &root.text).unwrap();
    assert!(cert_text(&root.text).contains("CA:TRUE"));

    let cp = rig
        .provider(
            &t,
            json!({"type": "x509svid", "name": "mtls", "isActive": true,
                   "spiffeId": "spiffe://acme.test/ns/${oidc.identityToken.decode.payload.team}/job", "spiffeIdType": "dynamic",
                   "subject": "CN=deploy-job,O=Acme", "lifetimeTimeSpanSeconds": 7200, "idkpServerAuth": true}),
        )
        .await;
    rig.attach(&t, &cp).await;
    for alg in ["ec", "ec384", "rsa"] {
        let r = rig
            .request(&t, "X509Svid", json!({"certSigningRequest": csr(alg)}))
            .await;
        assert_eq!(r.status, 200, "{alg}: {}", r.text);
        assert_eq!(r.body["credentialType"], "X509Svid");
        assert_eq!(r.body["data"].as_object().unwrap().len(), 1);
        let chain = r.body["data"]["certificateChain"].as_str().unwrap();
        assert_eq!(
            chain.matches("BEGIN CERTIFICATE").count(),
            1,
            "leaf only; the root is not included"
        );
        // Verified by openssl against the published root, for both purposes.
        let ok = openssl(
            &["verify", "-CAfile", ca_path.to_str().unwrap(), "-purpose", "sslclient"],
            chain.as_bytes(),
        );
        assert!(ok.contains("OK"), "{ok}");
        openssl(
            &["verify", "-CAfile", ca_path.to_str().unwrap(), "-purpose", "sslserver"],
            chain.as_bytes(),
        );
        let (_, der) = der::pem::decode_vec(chain.trim().as_bytes()).unwrap();
        let cert = x509_cert::Certificate::from_der(&der).unwrap();
        let tbs = cert.tbs_certificate();
        assert_eq!(tbs.subject().to_string(), "CN=deploy-job,O=Acme");
        let text = cert_text(chain);
        assert!(text.contains("URI:spiffe://acme.test/ns/platform/job"), "{text}");
        assert!(!text.contains("evil"), "nothing from the CSR but its key: {text}");
        assert!(text.contains("CA:FALSE"));
        assert!(text.contains("Digital Signature"));
        assert!(text.contains("TLS Web Client Authentication") && text.contains("TLS Web Server Authentication"));
        let nb = tbs.validity().not_before.to_unix_duration().as_secs() as i64;
        let na = tbs.validity().not_after.to_unix_duration().as_secs() as i64;
        assert!(
            (na - nb - 7210).abs() <= 2,
            "notBefore = now - 10 s, notAfter = now + lifetime"
        );
        assert_eq!(expires_at_secs(&r.body), na);
        assert_eq!(tbs.serial_number().as_bytes().len(), 16);
    }
    // Key binding: the certificate's public key equals the CSR's.
    let req = csr("ec");
    let r = rig.request(&t, "X509Svid", json!({"certSigningRequest": req})).await;
    let chain = r.expect(200)["data"]["certificateChain"].as_str().unwrap().to_string();
    let csr_pub = openssl(&["req", "-noout", "-pubkey"], req.as_bytes());
    let cert_pub = openssl(&["x509", "-noout", "-pubkey"], chain.as_bytes());
    assert_eq!(csr_pub, cert_pub);
    // Two issuances have distinct serials.
    let r2 = rig.request(&t, "X509Svid", json!({"certSigningRequest": req})).await;
    let s = |pem: &str| {
        let (_, der) = der::pem::decode_vec(pem.trim().as_bytes()).unwrap();
        x509_cert::Certificate::from_der(&der)
            .unwrap()
            .tbs_certificate()
            .serial_number()
            .to_der()
            .unwrap()
    };
    assert_ne!(
        s(&chain),
        s(r2.expect(200)["data"]["certificateChain"].as_str().unwrap())
    );

    // Bad CSRs are 400 at step 3.
    let bad = |r: crate::support::harness::Resp| {
        r.expect_error_prefix(400, "The credentials request is invalid. certSigningRequest: ")
    };
    bad(rig.request(&t, "X509Svid", json!({})).await);
    bad(rig
        .request(&t, "X509Svid", json!({"certSigningRequest": "not a csr"}))
        .await);
    bad(rig
        .request(&t, "X509Svid", json!({"certSigningRequest": csr("rsa1024")}))
        .await);
    bad(rig
        .request(&t, "X509Svid", json!({"certSigningRequest": root.text}))
        .await);
    // A CSR whose self-signature does not verify (one signature byte flipped).
    let (_, mut der) = der::pem::decode_vec(req.trim().as_bytes()).unwrap();
    let n = der.len();
    der[n - 5] ^= 0x01;
    let tampered = der::pem::encode_string("CERTIFICATE REQUEST", der::pem::LineEnding::LF, &der).unwrap();
    bad(rig
        .request(&t, "X509Svid", json!({"certSigningRequest": tampered}))
        .await);
    // A CSR is ignored for other types.
    let api = rig
        .provider(
            &t,
            json!({"type": "apikey", "name": "k", "isActive": true, "apiKey": "k1"}),
        )
        .await;
    rig.attach(&t, &api).await;
    let r = rig.request(&t, "ApiKey", json!({"certSigningRequest": "junk"})).await;
    assert_eq!(r.expect(200)["data"]["apiKey"], "k1");
}

/// A dynamic value fills a SPIFFE path segment (or part of one); one holding a `/` cannot add
/// segments, so a self-reported value cannot shape the id's path: the request is denied.
#[tokio::test]
async fn dynamic_spiffe_values_cannot_add_path_segments() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let cp = rig
        .provider(
            &t,
            json!({"type": "x509svid", "name": "pods", "isActive": true,
                   "spiffeId": "spiffe://acme.test/pod/${os.environment.ORCH_POD_NAME}", "spiffeIdType": "dynamic"}),
        )
        .await;
    rig.attach(&t, &cp).await;
    let with_pod = |pod: &str| {
        json!({"certSigningRequest": csr("ec"),
               "client": {"oidc": {"identityToken": rig.id_token}, "os": {"environment": {"ORCH_POD_NAME": pod}}}})
    };
    let r = rig.request(&t, "X509Svid", with_pod("web-1")).await;
    let chain = r.expect(200)["data"]["certificateChain"].as_str().unwrap().to_string();
    assert!(cert_text(&chain).contains("URI:spiffe://acme.test/pod/web-1"));
    for pod in ["web-1/admin", "/admin", "web-1/"] {
        let r = rig.request(&t, "X509Svid", with_pod(pod)).await;
        assert_eq!(r.status, 403, "{pod}: {}", r.text);
        assert!(!r.text.contains("BEGIN CERTIFICATE"), "{pod}");
    }
    // The same for a JWT-SVID's subject.
    let cp = rig
        .provider(
            &t,
            json!({"type": "jwt-svid-token", "name": "svid", "isActive": true, "audience": "spiffe://acme.test/db",
                   "subject": "spiffe://acme.test/pod/${os.environment.ORCH_POD_NAME}", "subjectType": "dynamic"}),
        )
        .await;
    rig.attach(&t, &cp).await;
    let r = rig.request(&t, "OAuthToken", with_pod("web-1")).await;
    let (_, c) = verify_with_jwks(&t, r.expect(200)["data"]["token"].as_str().unwrap()).await;
    assert_eq!(c["sub"], "spiffe://acme.test/pod/web-1");
    let r = rig.request(&t, "OAuthToken", with_pod("web-1/admin")).await;
    assert_eq!(r.status, 403, "{}", r.text);
}

#[tokio::test]
async fn x509svid_validation_and_ca_persistence() {
    let t = TestApp::start().await;
    let base = json!({"type": "x509svid", "name": "m", "isActive": true, "spiffeId": "spiffe://acme.test/a"});
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    t.post(
        "/api/v2/credential-providers",
        with("spiffeId", json!("https://acme.test/a")),
    )
    .await
    .expect_error_prefix(400, "spiffeId: ");
    t.post(
        "/api/v2/credential-providers",
        with("keyUsage", json!(["keyEncipherment"])),
    )
    .await
    .expect_error_prefix(400, "keyUsage");
    // The only usage issued is shown, whatever list of it was sent.
    for usages in [json!([]), json!(["digitalSignature", "digitalSignature"])] {
        let r = t.post("/api/v2/credential-providers", with("keyUsage", usages)).await;
        assert_eq!(r.expect(201)["keyUsage"], json!(["digitalSignature"]));
    }
    t.post(
        "/api/v2/credential-providers",
        with("lifetimeTimeSpanSeconds", json!(899)),
    )
    .await
    .expect_error(400, "lifetimeTimeSpanSeconds: must be 900..124416000");
    t.post("/api/v2/credential-providers", with("subject", json!("not a dn")))
        .await
        .expect_error_prefix(400, "subject: ");
    let ok = t.post("/api/v2/credential-providers", base.clone()).await;
    let v = ok.expect(201).clone();
    assert_eq!(
        (v["idkpClientAuth"].clone(), v["idkpServerAuth"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(v["lifetimeTimeSpanSeconds"], 3600);
    // The CA is generated once and survives a restart.
    let before = t.get("/api/v1/root-ca").await.text;
    let t = t.restart().await;
    assert_eq!(t.get("/api/v1/root-ca").await.text, before);
    // Unauthenticated callers cannot read it.
    let r = t.send(t.client.get(t.url("/api/v1/root-ca"))).await;
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn x509svid_under_a_configured_intermediate_ca_returns_the_chain_without_the_root() {
    let dir = temp_dir();
    let p = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let ext = p("ext.cnf");
    std::fs::write(
        &ext,
        "[ca]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n",
    )
    .unwrap();
    openssl(
        &[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            &p("root.key"),
        ],
        b"",
    );
    openssl(
        &[
            "req",
            "-x509",
            "-new",
            "-key",
            &p("root.key"),
            "-subj",
            "/CN=Acme Root",
            "-days",
            "30",
            "-out",
            &p("root.pem"),
        ],
        b"",
    );
    openssl(
        &[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            &p("int.key"),
        ],
        b"",
    );
    openssl(
        &[
            "req",
            "-new",
            "-key",
            &p("int.key"),
            "-subj",
            "/CN=Acme SVID Intermediate",
            "-out",
            &p("int.csr"),
        ],
        b"",
    );
    openssl(
        &[
            "x509",
            "-req",
            "-in",
            &p("int.csr"),
            "-CA",
            &p("root.pem"),
            "-CAkey",
            &p("root.key"),
            "-CAcreateserial",
            "-days",
            "20",
            "-extfile",
            &ext,
            "-extensions",
            "ca",
            "-out",
            &p("int.pem"),
        ],
        b"",
    );
    let bundle = std::fs::read_to_string(p("int.pem")).unwrap() + &std::fs::read_to_string(p("root.pem")).unwrap();
    std::fs::write(p("bundle.pem"), bundle).unwrap();
    let (bundle_path, key_path) = (p("bundle.pem"), p("int.key"));
    let t = TestApp::start_with(move |env| {
        env.insert("SVC_X509_CA_CERT".into(), bundle_path);
        env.insert("SVC_X509_CA_KEY".into(), key_path);
    })
    .await;
    // The root's key with the intermediate's certificate stops the start, naming both keys.
    let mut env = t.env.clone();
    env.insert("SVC_X509_CA_KEY".into(), p("root.key"));
    let err = svc_server::App::open(svc_server::Config::from_map(&env).unwrap())
        .await
        .err()
        .expect("a key that is not the certificate's must refuse to start");
    assert!(
        err.0
            .contains("SVC_X509_CA_CERT/SVC_X509_CA_KEY: the CA key is not the key of the CA certificate"),
        "{err}"
    );
    let root_ca = t.get("/api/v1/root-ca").await;
    assert!(
        cert_text(&root_ca.text).contains("Acme SVID Intermediate"),
        "root-ca shows the signing CA"
    );
    let rig = Rig::new(&t).await;
    let cp = rig
        .provider(
            &t,
            json!({"type": "x509svid", "name": "m", "isActive": true, "spiffeId": "spiffe://acme.test/job"}),
        )
        .await;
    rig.attach(&t, &cp).await;
    let r = rig
        .request(&t, "X509Svid", json!({"certSigningRequest": csr("ec")}))
        .await;
    let chain = r.expect(200)["data"]["certificateChain"].as_str().unwrap().to_string();
    assert_eq!(
        chain.matches("BEGIN CERTIFICATE").count(),
        2,
        "leaf, then the intermediate; no root"
    );
    std::fs::write(p("chain.pem"), &chain).unwrap();
    let leaf = chain.split("-----END CERTIFICATE-----").next().unwrap().to_string() + "-----END CERTIFICATE-----\n";
    let ok = openssl(
        &["verify", "-CAfile", &p("root.pem"), "-untrusted", &p("chain.pem")],
        leaf.as_bytes(),
    );
    assert!(ok.contains("OK"), "{ok}");
    // The leaf's notAfter is capped at the CA's expiry (20 days) even with a longer lifetime.
    t.patch(
        &format!("/api/v2/credential-providers/{cp}"),
        json!({"lifetimeTimeSpanSeconds": 124416000}),
    )
    .await
    .expect(200);
    let r = rig
        .request(&t, "X509Svid", json!({"certSigningRequest": csr("ec")}))
        .await;
    assert!(expires_at_secs(r.expect(200)) <= now() + 20 * 86400 + 5);
}
