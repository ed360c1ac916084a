//! Every evidence kind collected by `svc-edge token` and verified by the real service: the token
//! kinds with tokens of the real OIDC peer (file, variable, ciA's token-request URL), cloudA,
//! cloudB and cloudC through the loopback metadata fake, `cloudA_role` signed by the client and
//! verified through the SigV4-checking moto STS.

use serde_json::json;

use super::*;
use crate::support::harness::TestApp;

#[tokio::test]
async fn oidc_token_from_a_file_reread_on_every_authentication_or_from_the_variable() {
    let t = TestApp::start().await;
    let mock = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let (_, cid) = trust_provider(&t, json!({"provider": "OidcIdToken", "oidcUrl": mock})).await;
    let dir = crate::support::harness::temp_dir().keep();
    let file = dir.join("token");
    std::fs::write(
        &file,
        format!("{}\n", mint(&[("sub", json!("first")), ("aud", json!(t.base))]).await),
    )
    .unwrap();
    let out = Edge::new(&t, &cid)
        .args(&["token", "--token-file", file.to_str().unwrap()])
        .run()
        .await;
    let v = out.ok().json();
    assert_eq!(v["tokenType"], "Bearer");
    assert_eq!(v["expiresIn"], 3600);
    assert_eq!(facts(&v)["OidcSubject"], "first");
    // Rotated underneath: the next authentication reads the new token (SVC_EDGE_TOKEN_FILE).
    std::fs::write(&file, mint(&[("sub", json!("second")), ("aud", json!(t.base))]).await).unwrap();
    let out = Edge::new(&t, &cid)
        .env("SVC_EDGE_TOKEN_FILE", file.to_str().unwrap())
        .args(&["token"])
        .run()
        .await;
    assert_eq!(facts(&out.ok().json())["OidcSubject"], "second");
    // The token itself in SVC_EDGE_TOKEN; evidence chosen explicitly.
    let tok = mint(&[("sub", json!("third")), ("aud", json!(t.base))]).await;
    let out = Edge::new(&t, &cid)
        .env("SVC_EDGE_TOKEN", &tok)
        .args(&["token", "--evidence", "oidc_idtoken"])
        .run()
        .await;
    assert_eq!(facts(&out.ok().json())["OidcSubject"], "third");
    assert!(!out.stderr.contains(&tok));
    // Every flag and variable in the environment only.
    let out = Edge::bare()
        .env("SVC_EDGE_URL", &t.base)
        .env("SVC_EDGE_CLIENT_ID", &cid)
        .env("SVC_EDGE_TOKEN", &tok)
        .args(&["token"])
        .run()
        .await;
    out.ok();
}

#[tokio::test]
async fn cia_token_is_requested_from_the_job_token_url_for_the_audience() {
    let t = TestApp::start().await;
    let p = Platform::start().await;
    let mock = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let (_, cid) = trust_provider(
        &t,
        json!({"provider": "CiAIdentityToken", "oidcUrl": mock,
               "matchRules": [{"attribute": "CiARepository", "value": "acme/app"}]}),
    )
    .await;
    let out = Edge::new(&t, &cid)
        .env(
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            &format!("{}/cia/token?api-version=2.0", p.url),
        )
        .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", CIA_REQUEST_TOKEN)
        .args(&["token"])
        .run()
        .await;
    let f = facts(&out.ok().json());
    assert_eq!(
        (f["CiARepository"].clone(), f["CiARepositoryId"].clone()),
        (json!("acme/app"), json!("123456"))
    );
    let aud: String = url::form_urlencoded::byte_serialize(t.base.as_bytes()).collect();
    assert_eq!(p.seen(), vec![format!("GET /cia/token?api-version=2.0&audience={aud}")]);
    // Without the job's variables: a configuration error naming them.
    let out = Edge::new(&t, &cid).args(&["token"]).run().await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("ACTIONS_ID_TOKEN_REQUEST_URL"), "{}", out.stderr);
    // --audience changes what is requested (and the service then refuses the token: 401 → 3).
    let out = Edge::new(&t, &cid)
        .env(
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            &format!("{}/cia/token?api-version=2.0", p.url),
        )
        .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", CIA_REQUEST_TOKEN)
        .args(&["token", "--audience", "other-audience"])
        .run()
        .await;
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(p.seen().last().unwrap().ends_with("audience=other-audience"));
}

#[tokio::test]
async fn cib_and_cic_tokens_come_from_the_jobs_variables() {
    let t = TestApp::start().await;
    let mock = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let (_, cib) = trust_provider(&t, json!({"provider": "CiBIdentityToken", "oidcUrl": mock})).await;
    let (_, cic) = trust_provider(&t, json!({"provider": "CiCIdentityToken", "oidcUrl": mock})).await;
    let b = mint(&[
        ("aud", json!(t.base)),
        ("project_path", json!("g/p")),
        ("sub", json!("project_path:g/p")),
    ])
    .await;
    let out = Edge::new(&t, &cib).env("SVC_ID_TOKEN", &b).args(&["token"]).run().await;
    assert_eq!(facts(&out.ok().json())["CiBProjectPath"], "g/p");
    // SVC_EDGE_TOKEN_ENV names another variable.
    let out = Edge::new(&t, &cib)
        .env("SVC_EDGE_TOKEN_ENV", "GITLAB_OIDC_TOKEN")
        .env("GITLAB_OIDC_TOKEN", &b)
        .args(&["token"])
        .run()
        .await;
    out.ok();
    let c = mint(&[("aud", json!(t.base)), ("terraform_workspace_id", json!("ws-123"))]).await;
    let out = Edge::new(&t, &cic)
        .env("TFC_WORKLOAD_IDENTITY_TOKEN", &c)
        .args(&["token"])
        .run()
        .await;
    assert_eq!(facts(&out.ok().json())["CiCWorkspaceId"], "ws-123");
    let out = Edge::new(&t, &cic).args(&["token"]).run().await;
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("TFC_WORKLOAD_IDENTITY_TOKEN"), "{}", out.stderr);
}

#[tokio::test]
async fn orchestrator_service_account_token_from_its_file() {
    let t = TestApp::start().await;
    let mock = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let (_, cid) = trust_provider(&t, json!({"provider": "OrchestratorServiceAccount", "oidcUrl": mock})).await;
    let tok = mint(&[
        ("aud", json!([t.base])),
        ("sub", json!("system:serviceaccount:ns1:builder")),
        (
            "kubernetes.io",
            json!({"namespace": "ns1", "pod": {"name": "builder-7d9f", "uid": "u1"}, "serviceaccount": {"name": "builder", "uid": "u2"}}),
        ),
    ])
    .await;
    let dir = crate::support::harness::temp_dir().keep();
    std::fs::write(dir.join("token"), &tok).unwrap();
    let out = Edge::new(&t, &cid)
        .args(&["token", "--token-file", dir.join("token").to_str().unwrap()])
        .run()
        .await;
    let f = facts(&out.ok().json());
    assert_eq!(
        (
            f["OrchestratorIoNamespace"].clone(),
            f["OrchestratorIoServiceAccountName"].clone()
        ),
        (json!("ns1"), json!("builder"))
    );
    // The default is the projected token path; absent here: exit 2 naming --token-file.
    let out = Edge::new(&t, &cid).args(&["token"]).run().await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("/var/run/secrets/kubernetes.io/serviceaccount/token")
            && out.stderr.contains("--token-file"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn cloudc_identity_token_from_the_metadata_server() {
    let t = TestApp::start_with(cloud_env).await;
    let p = Platform::start().await;
    let (_, cid) = trust_provider(
        &t,
        json!({"provider": "CloudCIdentityToken", "matchRules": [{"attribute": "Email", "value": CLOUDC_EMAIL}]}),
    )
    .await;
    let out = Edge::new(&t, &cid)
        .env("SVC_EDGE_CLOUDC_METADATA_URL", &p.url)
        .args(&["token"])
        .run()
        .await;
    assert_eq!(facts(&out.ok().json())["Email"], CLOUDC_EMAIL);
    let aud: String = url::form_urlencoded::byte_serialize(t.base.as_bytes()).collect();
    assert_eq!(
        p.seen(),
        vec![format!(
            "GET /computeMetadata/v1/instance/service-accounts/default/identity?audience={aud}&format=full"
        )]
    );
    // Metadata server down: exit 5 naming it.
    let out = Edge::new(&t, &cid)
        .env("SVC_EDGE_CLOUDC_METADATA_URL", "http://127.0.0.1:9")
        .args(&["token"])
        .run()
        .await;
    assert_eq!(out.code, 5);
    assert!(out.stderr.contains("cloudC metadata server"), "{}", out.stderr);
}

/// The fixture document signed as `/rsa2048` (PKCS#7, BER like the platform's).
fn clouda_signed() -> (Vec<u8>, String) {
    let doc = std::fs::read(fixture("clouda/sample-document.json")).unwrap();
    let job = json!({"op": "pkcs7", "content_b64": b64(&doc), "key": fixture("clouda/signer-key.pem"),
                     "cert": fixture("clouda/signer-cert.pem"), "ber": true});
    let sig = sign_jobs(vec![job])[0].as_str().unwrap().to_string();
    (doc, sig)
}

#[tokio::test]
async fn clouda_instance_document_through_imdsv2_and_credentials_by_account() {
    let t = TestApp::start_with(cloud_env).await;
    let p = Platform::start().await;
    *p.clouda_doc.lock().unwrap() = clouda_signed();
    let (tp, cid) = trust_provider(&t, json!({"provider": "CloudAMetadataService"})).await;
    grant(
        &t,
        json!({"type": "cloudAAccountId", "value": "210987654321"}),
        &tp,
        "db.internal.example",
        5432,
        vec![(json!({"type": "apikey", "apiKey": "clouda-db-key"}), json!({}))],
    )
    .await;
    let out = Edge::new(&t, &cid)
        .env("SVC_EDGE_CLOUDA_IMDS_URL", &p.url)
        .args(&["token"])
        .run()
        .await;
    let f = facts(&out.ok().json());
    assert_eq!(
        (f["CloudAAccountId"].clone(), f["CloudAInstanceId"].clone()),
        (json!("210987654321"), json!("i-0fedcba9876543210"))
    );
    assert_eq!(
        p.seen(),
        [
            "PUT /latest/api/token",
            "GET /latest/dynamic/instance-identity/document",
            "GET /latest/dynamic/instance-identity/rsa2048"
        ]
    );
    let out = Edge::new(&t, &cid)
        .env("SVC_EDGE_CLOUDA_IMDS_URL", &p.url)
        .args(&[
            "credentials",
            "--host",
            "db.internal.example",
            "--port",
            "5432",
            "--type",
            "ApiKey",
        ])
        .run()
        .await;
    assert_eq!(out.ok().json()["data"]["apiKey"], "clouda-db-key");
    // A document signed by someone else: the service refuses (exit 3, its message on stderr).
    let doc = std::fs::read(fixture("clouda/sample-document.json")).unwrap();
    let job = json!({"op": "pkcs7", "content_b64": b64(&doc), "key": fixture("clouda/attacker-key.pem"),
                     "cert": fixture("clouda/attacker-cert.pem")});
    let bad = sign_jobs(vec![job])[0].as_str().unwrap().to_string();
    *p.clouda_doc.lock().unwrap() = (doc, bad);
    let out = Edge::new(&t, &cid)
        .env("SVC_EDGE_CLOUDA_IMDS_URL", &p.url)
        .args(&["token"])
        .run()
        .await;
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(out.stderr.contains("Unauthorized."), "{}", out.stderr);
}

#[tokio::test]
async fn clouda_role_signed_by_the_client_is_verified_through_moto() {
    let t = TestApp::start_with(cloud_env).await;
    let (tp, cid) = trust_provider(&t, json!({"provider": "CloudARole"})).await;
    let key = peer("SVC_TEST_MOTO_KEY_ID");
    let secret = peer("SVC_TEST_MOTO_SECRET");
    // Environment keys, region and STS endpoint from the variables.
    let out = Edge::new(&t, &cid)
        .env("AWS_ACCESS_KEY_ID", &key)
        .env("AWS_SECRET_ACCESS_KEY", &secret)
        .env("SVC_EDGE_CLOUDA_REGION", "us-east-1")
        .env("SVC_EDGE_CLOUDA_STS_URL", &moto_auth_url())
        .args(&["token"])
        .run()
        .await;
    let f = facts(&out.ok().json());
    assert_eq!(f["CloudAAccountId"], peer("SVC_TEST_MOTO_ACCOUNT"));
    assert_eq!(f["CloudARoleARN"], peer("SVC_TEST_MOTO_USER_ARN"));
    assert!(!out.stderr.contains(&secret));
    // The instance role from IMDS (no session token: this moto refuses them), region from IMDS,
    // the endpoint from the cloudA SDK's own variable.
    let p = Platform::start().await;
    *p.clouda_role.lock().unwrap() = json!({"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": key,
        "SecretAccessKey": secret, "Expiration": "2030-01-01T00:00:00Z"});
    grant(
        &t,
        json!({"type": "cloudAAccountId", "value": peer("SVC_TEST_MOTO_ACCOUNT")}),
        &tp,
        "db.internal.example",
        5432,
        vec![(json!({"type": "apikey", "apiKey": "role-db-key"}), json!({}))],
    )
    .await;
    let out = Edge::new(&t, &cid)
        .env("SVC_EDGE_CLOUDA_IMDS_URL", &p.url)
        .env("AWS_ENDPOINT_URL_STS", &moto_auth_url())
        .args(&[
            "credentials",
            "--host",
            "db.internal.example",
            "--port",
            "5432",
            "--type",
            "ApiKey",
        ])
        .run()
        .await;
    assert_eq!(out.ok().json()["data"]["apiKey"], "role-db-key");
    let seen = p.seen();
    assert!(
        seen.contains(&"GET /latest/meta-data/iam/security-credentials/svc-instance-role".to_string()),
        "{seen:?}"
    );
    assert!(
        seen.contains(&"GET /latest/meta-data/placement/region".to_string()),
        "{seen:?}"
    );
    // A wrong secret: moto refuses the signature, the service answers 401 → exit 3.
    let out = Edge::new(&t, &cid)
        .env("AWS_ACCESS_KEY_ID", &key)
        .env("AWS_SECRET_ACCESS_KEY", "wrong-secret")
        .env("AWS_REGION", "us-east-1")
        .env("SVC_EDGE_CLOUDA_STS_URL", &moto_auth_url())
        .args(&["token"])
        .run()
        .await;
    assert_eq!(out.code, 3, "{}", out.stderr);
}

#[tokio::test]
async fn cloudb_attested_document_with_a_fresh_nonce() {
    let t = TestApp::start_with(cloud_env).await;
    let p = Platform::start().await;
    let (_, cid) = trust_provider(&t, json!({"provider": "CloudBMetadataService"})).await;
    let before = svc_server::clock::now_secs();
    let out = Edge::new(&t, &cid)
        .env("SVC_EDGE_CLOUDB_IMDS_URL", &p.url)
        .args(&["token"])
        .run()
        .await;
    let f = facts(&out.ok().json());
    assert_eq!(f["CloudBVmId"], CLOUDB_VM);
    let seen = p.seen();
    assert_eq!(seen.len(), 1);
    let nonce: i64 = seen[0].rsplit("nonce=").next().unwrap().parse().unwrap();
    assert!((before..=before + 10).contains(&nonce), "{seen:?}");
    assert!(seen[0].starts_with("GET /metadata/attested/document?api-version=2020-09-01&nonce="));
}
