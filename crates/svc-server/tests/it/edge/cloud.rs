//! The cloud attestation kinds (contract §4.5, §4.6): cloudA instance documents and cloudB
//! attested documents signed by the checked-in test CA (tests/fixtures, evidence built by
//! tests/peers/sign_pkcs7.py), and cloudA role requests signed by botocore and verified by the
//! signature-validating moto STS. Each published attack has its own named test.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::support::edge::*;
use crate::support::harness::TestApp;

// ---- helpers ---------------------------------------------------------------------------------------

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn b64(data: &[u8]) -> String {
    svc_server::crypto::b64std(data)
}

/// Runs tests/peers/sign_pkcs7.py (next to sign_sts.py) on a batch of jobs.
fn sign_jobs(jobs: Vec<Value>) -> Vec<Value> {
    use std::io::Write;
    let sts = peer("SVC_TEST_SIGN_STS");
    let script = std::path::Path::new(&sts).with_file_name("sign_pkcs7.py");
    let mut child = std::process::Command::new(peer("SVC_TEST_PYTHON"))
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run sign_pkcs7.py");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(json!({ "jobs": jobs }).to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "sign_pkcs7.py failed");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["results"].as_array().unwrap().clone()
}

fn sign_one(job: Value) -> String {
    sign_jobs(vec![job])[0].as_str().unwrap().to_string()
}

/// Headers botocore signs for GetCallerIdentity at `url` (sign_sts.py).
fn sts_headers(url: &str, region: &str, key: &str, secret: &str, server_id: Option<&str>) -> Value {
    let mut cmd = std::process::Command::new(peer("SVC_TEST_PYTHON"));
    cmd.arg(peer("SVC_TEST_SIGN_STS"))
        .args(["--url", url, "--region", region, "--key-id", key, "--secret", secret]);
    if let Some(s) = server_id {
        cmd.args(["--server-id-header", s]);
    }
    let out = cmd.output().expect("run sign_sts.py");
    assert!(out.status.success(), "sign_sts.py failed");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["headers"].clone()
}

fn moto_url() -> String {
    format!("{}/", peer("SVC_TEST_MOTO_AUTH_URL"))
}

/// Signed with the moto user's real key.
fn moto_headers(region: &str, server_id: Option<&str>) -> Value {
    sts_headers(
        &moto_url(),
        region,
        &peer("SVC_TEST_MOTO_KEY_ID"),
        &peer("SVC_TEST_MOTO_SECRET"),
        server_id,
    )
}

fn role(headers: &Value, region: &str) -> Value {
    json!({"cloudA": {"stsGetCallerIdentity": {"headers": headers, "region": region}}})
}

fn iid(doc: &[u8], sig: &str) -> Value {
    json!({"cloudA": {"instanceIdentityDocument": b64(doc), "instanceIdentityDocumentSignature": sig}})
}

fn attested(sig: &str, nonce: &str) -> Value {
    json!({"cloudB": {"attestedDocument": {"encoding": "pkcs7", "signature": sig, "nonce": nonce}}})
}

/// The service configured for the test clouds: the fixture signer as the only cloudA
/// certificate, the fixture root for cloudB, the signature-validating moto as STS.
fn cloud_env(env: &mut std::collections::BTreeMap<String, String>) {
    env.insert("SVC_CLOUDA_IID_CERTS".into(), fixture("clouda/signer-cert.pem"));
    env.insert("SVC_CLOUDB_ROOTS".into(), fixture("cloudb/root-cert.pem"));
    env.insert("SVC_CLOUDB_METADATA_DOMAINS".into(), "test-cloudb.example".into());
    env.insert("SVC_CLOUDB_AIA_HOSTS".into(), "aia.invalid".into());
    env.insert("SVC_CLOUDA_STS_URL_TEMPLATE".into(), moto_url());
    env.insert("SVC_CLOUDA_REGIONS".into(), "us-east-1,eu-west-1".into());
}

async fn start() -> TestApp {
    TestApp::start_with(cloud_env).await
}

/// 200; returns the facts recorded in the edge token.
async fn accepted(t: &TestApp, cid: &str, client: Value) -> Value {
    let r = auth(t, cid, client).await;
    let token = r.expect(200)["accessToken"].as_str().unwrap().to_string();
    jwt_payload(&token)["svc"]["facts"].clone()
}

/// A loopback HTTP peer answering every request with a fixed status, content type and body,
/// counting the requests (a fake STS or an AIA server).
struct FakeHttp {
    url: String,
    hits: Arc<AtomicUsize>,
    answer: Arc<Mutex<(u16, String, Vec<u8>)>>,
}

impl FakeHttp {
    async fn start(status: u16, content_type: &str, body: &[u8]) -> FakeHttp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let hits = Arc::new(AtomicUsize::new(0));
        let answer = Arc::new(Mutex::new((status, content_type.to_string(), body.to_vec())));
        let (h, a) = (hits.clone(), answer.clone());
        let app = axum::Router::new().fallback(move || {
            let (h, a) = (h.clone(), a.clone());
            async move {
                h.fetch_add(1, Ordering::SeqCst);
                let (s, ct, b) = a.lock().unwrap().clone();
                axum::http::Response::builder()
                    .status(s)
                    .header("content-type", ct)
                    .body(axum::body::Body::from(b))
                    .unwrap()
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeHttp { url, hits, answer }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    fn answer(&self, status: u16, content_type: &str, body: &[u8]) {
        *self.answer.lock().unwrap() = (status, content_type.to_string(), body.to_vec());
    }
}

// ---- cloudA instance identity documents -------------------------------------------------------

fn sample_doc() -> Vec<u8> {
    std::fs::read(fixture("clouda/sample-document.json")).unwrap()
}

fn doc_with(field: &str, value: Value) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&sample_doc()).unwrap();
    v[field] = value;
    serde_json::to_vec_pretty(&v).unwrap()
}

fn clouda_job(op: &str, doc: &[u8], key: &str, extra: Value) -> Value {
    let mut j = json!({"op": op, "content_b64": b64(doc), "key": fixture(&format!("clouda/{key}-key.pem")),
                       "cert": fixture(&format!("clouda/{key}-cert.pem"))});
    j.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    j
}

#[tokio::test]
async fn clouda_raw_and_pkcs7_forms_are_accepted_with_the_documents_facts() {
    let t = start().await;
    let (_, cid) = provider(&t, json!({"provider": "CloudAMetadataService"})).await;
    let doc = sample_doc();
    let sigs = sign_jobs(vec![
        clouda_job("raw", &doc, "signer", json!({})),
        clouda_job("pkcs7", &doc, "signer", json!({"ber": true})),
        clouda_job("pkcs7", &doc, "signer", json!({"signed_attrs": false, "certs": []})),
        clouda_job("standard", &doc, "signer", json!({})),
    ]);
    let want = json!({
        "CloudAAccountId": "210987654321", "CloudAArchitecture": "x86_64", "CloudAAvailabilityZone": "test-1a",
        "CloudABillingProducts": ["bp-6ba54002"], "CloudAImageId": "ami-0123456789abcdef0",
        "CloudAInstanceId": "i-0fedcba9876543210", "CloudAInstanceType": "t3.micro",
        "CloudAPendingTime": "2026-01-01T00:00:00Z", "CloudAPrivateIp": "10.1.2.3", "CloudARegion": "test-1",
        "CloudAVersion": "2017-09-30"
    });
    for s in &sigs {
        assert_eq!(accepted(&t, &cid, iid(&doc, s.as_str().unwrap())).await, want);
    }
    // The checked-in samples, as a workload would send them (base64 with line breaks).
    let raw = std::fs::read_to_string(fixture("clouda/sample-signature.b64")).unwrap();
    accepted(&t, &cid, iid(&doc, &raw)).await;
    let ev = last_authn(&t).await;
    assert_eq!(ev["trustProviders"][0]["result"], "Attested");
}

#[tokio::test]
async fn clouda_document_substitution_is_rejected() {
    let t = start().await;
    let (_, cid) = provider(&t, json!({"provider": "CloudAMetadataService"})).await;
    let mine = sample_doc();
    let victim = doc_with("accountId", json!("999999999999"));
    let sigs = sign_jobs(vec![
        // SPIRE 1.14.6: a valid PKCS#7 over the attacker's own document, another document sent.
        clouda_job("pkcs7", &mine, "signer", json!({})),
        clouda_job("pkcs7", &mine, "signer", json!({"ber": true, "signed_attrs": false})),
        // The victim's document embedded, the signature over the attacker's.
        clouda_job(
            "pkcs7",
            &victim,
            "signer",
            json!({"signed_content_b64": b64(&mine), "signed_attrs": false}),
        ),
        clouda_job("raw", &mine, "signer", json!({})),
    ]);
    for s in &sigs[..2] {
        refused(&t, &cid, iid(&victim, s.as_str().unwrap()), "InvalidSignature").await;
    }
    refused(&t, &cid, iid(&victim, sigs[2].as_str().unwrap()), "InvalidSignature").await;
    refused(&t, &cid, iid(&victim, sigs[3].as_str().unwrap()), "InvalidSignature").await;
    // The genuine pair still passes.
    accepted(&t, &cid, iid(&mine, sigs[0].as_str().unwrap())).await;
}

#[tokio::test]
async fn clouda_embedded_certificates_are_ignored() {
    let t = start().await;
    let (_, cid) = provider(&t, json!({"provider": "CloudAMetadataService"})).await;
    let doc = sample_doc();
    let sigs = sign_jobs(vec![
        // Signed by the attacker, the attacker's certificate in the bag.
        clouda_job("pkcs7", &doc, "attacker", json!({})),
        clouda_job("standard", &doc, "attacker", json!({})),
        // Naming the trusted signer's certificate (and carrying it), signed by the attacker.
        clouda_job(
            "pkcs7",
            &doc,
            "attacker",
            json!({"sid_cert": fixture("clouda/signer-cert.pem"),
                   "certs": [fixture("clouda/signer-cert.pem"), fixture("clouda/attacker-cert.pem")]}),
        ),
    ]);
    for s in &sigs {
        refused(&t, &cid, iid(&doc, s.as_str().unwrap()), "InvalidSignature").await;
    }
}

#[tokio::test]
async fn clouda_untrusted_signer_is_rejected_unless_the_provider_adds_it() {
    let t = start().await;
    let doc = sample_doc();
    let raw = sign_one(clouda_job("raw", &doc, "attacker", json!({})));
    let p7 = sign_one(clouda_job("pkcs7", &doc, "attacker", json!({})));
    let (_, plain) = provider(&t, json!({"provider": "CloudAMetadataService"})).await;
    refused(&t, &plain, iid(&doc, &raw), "InvalidSignature").await;
    refused(&t, &plain, iid(&doc, &p7), "InvalidSignature").await;

    // The provider's certificate joins the platform's signers (for that provider only).
    let pem = std::fs::read_to_string(fixture("clouda/attacker-cert.pem")).unwrap();
    let (_, own) = provider(
        &t,
        json!({"provider": "CloudAMetadataService", "certificate": pem, "pemType": "Certificate"}),
    )
    .await;
    accepted(&t, &own, iid(&doc, &raw)).await;
    accepted(&t, &own, iid(&doc, &p7)).await;
    refused(&t, &plain, iid(&doc, &raw), "InvalidSignature").await;

    // So does a certificate secret.
    let (tp, via_secret) = provider(&t, json!({"provider": "CloudAMetadataService"})).await;
    let r = t
        .post(
            &format!("/api/v1/trust-providers/{tp}/secrets"),
            json!({"secret": b64(pem.as_bytes())}),
        )
        .await;
    r.expect(200);
    accepted(&t, &via_secret, iid(&doc, &raw)).await;

    // The platform's own RSA-1024 signature-form certificates are accepted as a certificate.
    let bundle = include_str!("../../../assets/platform/clouda-iid-certs.pem");
    let start = bundle.find("-----BEGIN CERTIFICATE-----").unwrap();
    let end = bundle.find("-----END CERTIFICATE-----").unwrap() + "-----END CERTIFICATE-----".len();
    provider(
        &t,
        json!({"provider": "CloudAMetadataService", "certificate": &bundle[start..end], "pemType": "Certificate"}),
    )
    .await;
}

#[tokio::test]
async fn clouda_missing_or_malformed_evidence() {
    let t = start().await;
    let (_, cid) = provider(&t, json!({"provider": "CloudAMetadataService"})).await;
    let doc = sample_doc();
    refused(&t, &cid, json!({}), "NoDataFound").await;
    refused(
        &t,
        &cid,
        json!({"cloudA": {"instanceIdentityDocument": b64(&doc)}}),
        "NoDataFound",
    )
    .await;
    refused(&t, &cid, iid(&doc, "%%% not base64 %%%"), "InvalidEvidence").await;
    refused(&t, &cid, iid(&doc, &b64(&[7u8; 128])), "InvalidSignature").await;
    let sigs = sign_jobs(vec![
        // Signed, but not a JSON document.
        clouda_job("raw", b"not json", "signer", json!({})),
        // Two SignerInfos.
        clouda_job(
            "pkcs7",
            &doc,
            "signer",
            json!({"extra_signers": [{"key": fixture("clouda/signer-key.pem"), "cert": fixture("clouda/signer-cert.pem")}]}),
        ),
    ]);
    refused(&t, &cid, iid(b"not json", sigs[0].as_str().unwrap()), "InvalidEvidence").await;
    refused(&t, &cid, iid(&doc, sigs[1].as_str().unwrap()), "InvalidEvidence").await;
}

#[tokio::test]
async fn clouda_documents_older_than_the_maximum_age_are_stale() {
    let t = TestApp::start_with(|env| {
        cloud_env(env);
        env.insert("SVC_CLOUDA_IID_MAX_AGE_SECONDS".into(), "600".into());
    })
    .await;
    let (_, cid) = provider(&t, json!({"provider": "CloudAMetadataService"})).await;
    let old = sample_doc(); // launched 2026-01-01
    let now = time::OffsetDateTime::from_unix_timestamp(svc_server::clock::now_secs() - 60)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let fresh = doc_with("pendingTime", json!(now));
    let sigs = sign_jobs(vec![
        clouda_job("raw", &old, "signer", json!({})),
        clouda_job("raw", &fresh, "signer", json!({})),
    ]);
    refused(&t, &cid, iid(&old, sigs[0].as_str().unwrap()), "StaleEvidence").await;
    accepted(&t, &cid, iid(&fresh, sigs[1].as_str().unwrap())).await;
}

#[tokio::test]
async fn clouda_match_rules_pass_and_fail_with_the_actual_value() {
    let t = start().await;
    let doc = sample_doc();
    let sig = sign_one(clouda_job("raw", &doc, "signer", json!({})));
    let (_, ok) = provider(
        &t,
        json!({"provider": "CloudAMetadataService", "matchRules": [
            {"attribute": "CloudAAccountId", "value": "210987654321"},
            {"attribute": "CloudABillingProducts", "value": "bp-6ba54002"},
            {"attribute": "CloudARegion", "value": "test-1"}]}),
    )
    .await;
    accepted(&t, &ok, iid(&doc, &sig)).await;
    let (_, no) = provider(
        &t,
        json!({"provider": "CloudAMetadataService", "matchRules": [
            {"attribute": "CloudAAccountId", "value": "111111111111"},
            {"attribute": "CloudAAccountId", "value": "222222222222"}]}),
    )
    .await;
    refused(&t, &no, iid(&doc, &sig), "MatchRuleFailed").await;
    let ev = last_authn(&t).await;
    let p = &ev["trustProviders"][0];
    assert_eq!(
        (
            p["attribute"].clone(),
            p["expectedValues"].clone(),
            p["actualValue"].clone()
        ),
        (
            json!("CloudAAccountId"),
            json!(["111111111111", "222222222222"]),
            json!("210987654321")
        ),
        "{ev}"
    );
    // A fact the document does not have fails the rule.
    let (_, absent) = provider(
        &t,
        json!({"provider": "CloudAMetadataService", "matchRules": [{"attribute": "CloudAKernelId", "value": "aki-1"}]}),
    )
    .await;
    refused(&t, &absent, iid(&doc, &sig), "MatchRuleFailed").await;
}

/// Client workload by `identity`, server workload, API key provider and a policy listing `tp`.
async fn credentials_setup(t: &TestApp, identity: Value, tp: &str, key: &str) {
    let cw = t
        .post(
            "/api/v1/client-workloads",
            json!({"name": "cloud-wl", "isActive": true, "identities": [identity]}),
        )
        .await;
    assert_eq!(cw.status, 204, "{}", cw.text);
    let cw = cw.header("location").unwrap().rsplit('/').next().unwrap().to_string();
    let sw = t
        .post(
            "/api/v1/server-workloads",
            json!({"name": "db", "isActive": true, "serviceEndpoint": {"host": "db.internal.example", "port": 5432,
                   "appProtocol": "HTTP", "transportProtocol": "TCP", "requestedPort": 5432, "requestedTls": true, "tls": true,
                   "tlsVerification": "full"}}),
        )
        .await;
    assert_eq!(sw.status, 204, "{}", sw.text);
    let sw = sw.header("location").unwrap().rsplit('/').next().unwrap().to_string();
    let cp = t
        .post(
            "/api/v2/credential-providers",
            json!({"type": "apikey", "name": "db-key", "isActive": true, "apiKey": key}),
        )
        .await;
    let cp = cp.expect(201)["externalId"].as_str().unwrap().to_string();
    t.post(
        "/api/v2/access-policies",
        json!({"name": "cloud-wl to db", "isActive": true, "clientWorkload": cw, "serverWorkload": sw, "trustProviders": [tp],
               "credentialProviders": [{"credentialProviderId": cp, "mappingType": "None"}]}),
    )
    .await
    .expect(200);
}

fn db_request(client: Value) -> Value {
    json!({"client": client, "server": {"host": "db.internal.example", "port": 5432}, "credentialType": "ApiKey"})
}

#[tokio::test]
async fn clouda_instance_gets_credentials_by_account_id() {
    let t = start().await;
    let (tp, cid) = provider(&t, json!({"provider": "CloudAMetadataService"})).await;
    credentials_setup(
        &t,
        json!({"type": "cloudAAccountId", "value": "210987654321"}),
        &tp,
        "k-clouda",
    )
    .await;
    let doc = sample_doc();
    let sig = sign_one(clouda_job("pkcs7", &doc, "signer", json!({"ber": true})));
    let r = auth(&t, &cid, iid(&doc, &sig)).await;
    let token = r.expect(200)["accessToken"].as_str().unwrap().to_string();
    let r = credentials(&t, &token, db_request(iid(&doc, &sig))).await;
    assert_eq!(r.expect(200)["data"], json!({"apiKey": "k-clouda"}));
    // Another account is another workload: nothing matches.
    let other = doc_with("accountId", json!("123123123123"));
    let sig = sign_one(clouda_job("raw", &other, "signer", json!({})));
    let r = auth(&t, &cid, iid(&other, &sig)).await;
    let token = r.expect(200)["accessToken"].as_str().unwrap().to_string();
    credentials(&t, &token, db_request(iid(&other, &sig))).await.expect(404);
}

// ---- cloudA role: a signed STS GetCallerIdentity ------------------------------------------------

async fn role_provider(t: &TestApp) -> (String, String) {
    provider(t, json!({"provider": "CloudARole"})).await
}

#[tokio::test]
async fn clouda_role_signed_by_botocore_passes_with_account_and_arn_facts() {
    let t = start().await;
    let (tp, cid) = role_provider(&t).await;
    let headers = moto_headers("us-east-1", None);
    let facts = accepted(&t, &cid, role(&headers, "us-east-1")).await;
    let user_id = facts["CloudAUsername"].as_str().unwrap_or_default().to_string();
    assert!(!user_id.is_empty(), "{facts}");
    assert_eq!(
        facts,
        json!({"CloudAAccountId": peer("SVC_TEST_MOTO_ACCOUNT"), "CloudARoleARN": peer("SVC_TEST_MOTO_USER_ARN"),
               "CloudAUsername": user_id, "CloudARegion": "us-east-1"})
    );
    // The same signed headers verify again at /credentials (no one-time cache), and feed the
    // cloudAAccountId identity.
    credentials_setup(
        &t,
        json!({"type": "cloudAAccountId", "value": peer("SVC_TEST_MOTO_ACCOUNT")}),
        &tp,
        "k-role",
    )
    .await;
    let r = auth(&t, &cid, role(&headers, "us-east-1")).await;
    let token = r.expect(200)["accessToken"].as_str().unwrap().to_string();
    let r = credentials(&t, &token, db_request(role(&headers, "us-east-1"))).await;
    assert_eq!(r.expect(200)["data"], json!({"apiKey": "k-role"}));
    // A rule on the ARN.
    let (_, ruled) = provider(
        &t,
        json!({"provider": "CloudARole", "matchRules": [{"attribute": "CloudARoleARN", "value": "arn:aws:iam::123456789012:user/other"}]}),
    )
    .await;
    refused(&t, &ruled, role(&headers, "us-east-1"), "MatchRuleFailed").await;
    assert_eq!(
        last_authn(&t).await["trustProviders"][0]["actualValue"],
        json!(peer("SVC_TEST_MOTO_USER_ARN"))
    );
}

#[tokio::test]
async fn clouda_role_tampered_signature_is_401() {
    let t = start().await;
    let (_, cid) = role_provider(&t).await;
    let mut h = moto_headers("us-east-1", None);
    let auth_value = h["Authorization"].as_str().unwrap().to_string();
    let last = auth_value.chars().last().unwrap();
    let flipped = if last == '0' { '1' } else { '0' };
    h["Authorization"] = json!(format!("{}{flipped}", &auth_value[..auth_value.len() - 1]));
    refused(&t, &cid, role(&h, "us-east-1"), "InvalidSignature").await;
    // A wrong secret: moto refuses the signature as well.
    let h = sts_headers(
        &moto_url(),
        "us-east-1",
        &peer("SVC_TEST_MOTO_KEY_ID"),
        "wrong-secret",
        None,
    );
    refused(&t, &cid, role(&h, "us-east-1"), "InvalidSignature").await;
}

#[tokio::test]
async fn clouda_role_extra_header_is_rejected() {
    let t = start().await;
    let (_, cid) = role_provider(&t).await;
    let good = moto_headers("us-east-1", None);
    for (name, value) in [
        ("X-Forwarded-Host", "sts.evil.example"),
        ("X-Amz-Target", "AWSSecurityTokenServiceV20110615.GetCallerIdentity"),
        ("Content-Length", "43"),
    ] {
        let mut h = good.clone();
        h[name] = json!(value);
        refused(&t, &cid, role(&h, "us-east-1"), "InvalidEvidence").await;
    }
    // The same name twice in different cases.
    let mut h = good.clone();
    h["authorization"] = good["Authorization"].clone();
    refused(&t, &cid, role(&h, "us-east-1"), "InvalidEvidence").await;
    accepted(&t, &cid, role(&good, "us-east-1")).await;
}

#[tokio::test]
async fn clouda_role_wrong_region_is_rejected() {
    let t = start().await;
    let (_, cid) = role_provider(&t).await;
    // Signed for a region outside SVC_CLOUDA_REGIONS.
    let h = moto_headers("eu-central-1", None);
    refused(&t, &cid, role(&h, "eu-central-1"), "InvalidEvidence").await;
    // The region field and the signed scope disagree (both allowed).
    let h = moto_headers("eu-west-1", None);
    refused(&t, &cid, role(&h, "us-east-1"), "InvalidEvidence").await;
    refused(
        &t,
        &cid,
        json!({"cloudA": {"stsGetCallerIdentity": {"headers": h}}}),
        "InvalidEvidence",
    )
    .await;
    // eu-west-1 is allowed: moto accepts a request signed for it.
    accepted(&t, &cid, role(&h, "eu-west-1")).await;
}

#[tokio::test]
async fn clouda_role_wrong_service_in_the_scope_is_rejected() {
    let t = start().await;
    let (_, cid) = role_provider(&t).await;
    let mut h = moto_headers("us-east-1", None);
    let a = h["Authorization"]
        .as_str()
        .unwrap()
        .replace("/us-east-1/sts/", "/us-east-1/iam/");
    h["Authorization"] = json!(a);
    refused(&t, &cid, role(&h, "us-east-1"), "InvalidEvidence").await;
    // Not SigV4 at all.
    h["Authorization"] = json!("Bearer abc");
    refused(&t, &cid, role(&h, "us-east-1"), "InvalidEvidence").await;
}

#[tokio::test]
async fn clouda_role_stale_amz_date_is_rejected() {
    let t = start().await;
    let (_, cid) = role_provider(&t).await;
    let mut h = moto_headers("us-east-1", None);
    let stale = time::OffsetDateTime::from_unix_timestamp(svc_server::clock::now_secs() - 3600).unwrap();
    let fmt = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    h["X-Amz-Date"] = json!(stale.format(&fmt).unwrap());
    refused(&t, &cid, role(&h, "us-east-1"), "StaleEvidence").await;
    h["X-Amz-Date"] = json!("yesterday");
    refused(&t, &cid, role(&h, "us-east-1"), "InvalidEvidence").await;
}

#[tokio::test]
async fn clouda_role_client_supplied_url_host_and_body_are_not_used() {
    let t = start().await;
    let (_, cid) = role_provider(&t).await;
    // A forged "STS" the attacker controls: it would vouch for any account.
    let forged = "<GetCallerIdentityResponse><GetCallerIdentityResult><Arn>arn:aws:iam::999999999999:user/admin</Arn>\
         <UserId>AIDAFORGED</UserId><Account>999999999999</Account></GetCallerIdentityResult></GetCallerIdentityResponse>";
    let evil = FakeHttp::start(200, "text/xml", forged.as_bytes()).await;

    // Extra fields naming another URL, method and body are ignored: the server calls its own STS.
    let h = moto_headers("us-east-1", None);
    let client = json!({"cloudA": {"stsGetCallerIdentity": {"headers": h, "region": "us-east-1",
        "url": format!("{}/", evil.url), "method": "GET", "body": "Action=AssumeRole&Version=2011-06-15",
        "requestUrl": format!("{}/?Action=GetCallerIdentity", evil.url)}}});
    let facts = accepted(&t, &cid, client).await;
    assert_eq!(facts["CloudAAccountId"], json!(peer("SVC_TEST_MOTO_ACCOUNT")));
    assert_eq!(evil.hits(), 0);

    // A request signed for the attacker's host: its Host header is not the configured STS host.
    let h = sts_headers(&format!("{}/", evil.url), "us-east-1", "AKIAFORGED", "secret", None);
    refused(&t, &cid, role(&h, "us-east-1"), "InvalidEvidence").await;
    // Without the Host header the server still sends it to its own STS, which refuses the
    // signature made for another host.
    let mut h2 = h.clone();
    h2.as_object_mut().unwrap().remove("Host");
    refused(&t, &cid, role(&h2, "us-east-1"), "InvalidSignature").await;
    assert_eq!(evil.hits(), 0, "the client never chooses the verifier");
}

#[tokio::test]
async fn clouda_role_sts_answer_with_the_wrong_content_type_is_500() {
    let good =
        "<GetCallerIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><GetCallerIdentityResult>\
         <Arn>arn:aws:sts::123456789012:assumed-role/builder/i-0abc</Arn><UserId>AROAEXAMPLE:i-0abc</UserId>\
         <Account>123456789012</Account></GetCallerIdentityResult></GetCallerIdentityResponse>"
            .to_string();
    let sts = FakeHttp::start(200, "application/json", good.as_bytes()).await;
    let t = TestApp::start_with(|env| {
        cloud_env(env);
        env.insert("SVC_CLOUDA_STS_URL_TEMPLATE".into(), format!("{}/", sts.url));
    })
    .await;
    let (_, cid) = role_provider(&t).await;
    let h = sts_headers(&format!("{}/", sts.url), "us-east-1", "AKIAEXAMPLE", "secret", None);
    let client = role(&h, "us-east-1");
    let r = auth(&t, &cid, client.clone()).await;
    r.expect_error(500, "Authentication failed due to an internal error.");
    let ev = last_authn(&t).await;
    assert_eq!(ev["trustProviders"][0]["reason"], "UpstreamError", "{ev}");
    assert_eq!(sts.hits(), 1);

    // Other malformed answers are upstream errors too; a 4xx is a refused signature.
    for (status, ct, body, code) in [
        (
            200,
            "text/xml",
            good.replace("GetCallerIdentityResponse", "AssumeRoleResponse"),
            500,
        ),
        (200, "text/xml", format!("{{\"forged\": true}}{good}"), 500),
        (503, "text/xml", good.clone(), 500),
        (403, "text/xml", "<ErrorResponse/>".to_string(), 401),
    ] {
        sts.answer(status, ct, body.as_bytes());
        let r = auth(&t, &cid, client.clone()).await;
        assert_eq!(r.status, code, "{status} {ct}: {}", r.text);
    }
    // The well-formed answer passes, with the assumed role as a fact.
    sts.answer(200, "text/xml; charset=utf-8", good.as_bytes());
    let facts = accepted(&t, &cid, client.clone()).await;
    assert_eq!(facts["CloudAAssumedRole"], "builder");
    assert_eq!(facts["CloudAUsername"], "AROAEXAMPLE:i-0abc");
}

#[tokio::test]
async fn clouda_role_server_id_header_rules() {
    let t = TestApp::start_with(|env| {
        cloud_env(env);
        env.insert("SVC_CLOUDA_ROLE_SERVER_ID".into(), "prod.svc.test".into());
    })
    .await;
    let (_, cid) = role_provider(&t).await;
    let bound = moto_headers("us-east-1", Some("prod.svc.test"));
    accepted(&t, &cid, role(&bound, "us-east-1")).await;
    // Missing.
    let unbound = moto_headers("us-east-1", None);
    refused(&t, &cid, role(&unbound, "us-east-1"), "InvalidEvidence").await;
    // Signed for another server (a dev deployment's request replayed against prod).
    let dev = moto_headers("us-east-1", Some("dev.svc.test"));
    refused(&t, &cid, role(&dev, "us-east-1"), "InvalidEvidence").await;
    // Right value, but not covered by the signature.
    let mut unsigned = unbound.clone();
    unsigned["X-Svc-Server-Id"] = json!("prod.svc.test");
    refused(&t, &cid, role(&unsigned, "us-east-1"), "InvalidEvidence").await;
}

#[tokio::test]
async fn clouda_role_sts_unreachable_is_500() {
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}/", l.local_addr().unwrap().port())
    };
    let t = TestApp::start_with(|env| {
        cloud_env(env);
        env.insert("SVC_CLOUDA_STS_URL_TEMPLATE".into(), dead.clone());
    })
    .await;
    let (_, cid) = role_provider(&t).await;
    let h = sts_headers(&dead, "us-east-1", "AKIAEXAMPLE", "secret", None);
    auth(&t, &cid, role(&h, "us-east-1"))
        .await
        .expect_error(500, "Authentication failed due to an internal error.");
    assert_eq!(last_authn(&t).await["trustProviders"][0]["reason"], "UpstreamError");
    refused(
        &t,
        &cid,
        json!({"cloudA": {"stsGetCallerIdentity": {"headers": {}}}}),
        "NoDataFound",
    )
    .await;
}

// ---- cloudB attested documents -----------------------------------------------------------------

fn vm_content(nonce: &str, vm_id: &str) -> Vec<u8> {
    json!({"licenseType": "", "nonce": nonce, "plan": {"name": "", "product": "", "publisher": ""},
           "sku": "22_04-lts-gen2", "subscriptionId": "0a1b2c3d-0000-4000-8000-000000000001",
           "timeStamp": {"createdOn": "01/01/26 00:00:00 -0000", "expiresOn": "01/01/26 06:00:00 -0000"},
           "vmId": vm_id})
    .to_string()
    .into_bytes()
}

const VM: &str = "dc18de58-292f-4794-9a5d-a4192bad0039";

fn now_nonce() -> String {
    svc_server::clock::now_secs().to_string()
}

/// A cloudB job signed by fixture `signer` with the intermediate in the bag.
fn cloudb_job(content: &[u8], signer: &str, extra: Value) -> Value {
    let mut j = json!({"op": "pkcs7", "content_b64": b64(content),
        "key": fixture(&format!("cloudb/{signer}-key.pem")), "cert": fixture(&format!("cloudb/{signer}-cert.pem")),
        "certs": [fixture(&format!("cloudb/{signer}-cert.pem")), fixture("cloudb/intermediate-cert.pem")],
        "digest": "sha256WithRSAEncryption", "signed_attrs": false});
    j.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    j
}

async fn cloudb_provider(t: &TestApp) -> (String, String) {
    provider(t, json!({"provider": "CloudBMetadataService"})).await
}

#[tokio::test]
async fn cloudb_attested_document_is_accepted_with_its_facts() {
    let t = start().await;
    let (_, cid) = cloudb_provider(&t).await;
    let n = now_nonce();
    let c = vm_content(&n, VM);
    let docs = sign_jobs(vec![
        cloudb_job(&c, "signer", json!({})),
        cloudb_job(&c, "signer", json!({"signed_attrs": true})),
        cloudb_job(&c, "signer", json!({"digest": "sha256", "signed_attrs": true})),
    ]);
    let want = json!({"CloudBSku": "22_04-lts-gen2", "CloudBVmId": VM,
                      "CloudBSubscriptionId": "0a1b2c3d-0000-4000-8000-000000000001"});
    for d in &docs {
        assert_eq!(accepted(&t, &cid, attested(d.as_str().unwrap(), &n)).await, want);
    }
    // `encoding` may be absent, and is case-insensitive; anything else is refused.
    let d = docs[0].as_str().unwrap();
    accepted(
        &t,
        &cid,
        json!({"cloudB": {"attestedDocument": {"signature": d, "nonce": n}}}),
    )
    .await;
    accepted(
        &t,
        &cid,
        json!({"cloudB": {"attestedDocument": {"encoding": "PKCS7", "signature": d, "nonce": n}}}),
    )
    .await;
    refused(
        &t,
        &cid,
        json!({"cloudB": {"attestedDocument": {"encoding": "jwt", "signature": d, "nonce": n}}}),
        "InvalidEvidence",
    )
    .await;
    refused(
        &t,
        &cid,
        json!({"cloudB": {"attestedDocument": {"nonce": n}}}),
        "NoDataFound",
    )
    .await;
}

#[tokio::test]
async fn cloudb_first_bag_certificate_trusted_but_signer_is_not() {
    let t = start().await;
    let (_, cid) = cloudb_provider(&t).await;
    let n = now_nonce();
    let c = vm_content(&n, VM);
    let docs = sign_jobs(vec![
        // The bag starts with the genuine signer (and its intermediate); the SignerInfo is the
        // rogue signer's, whose certificate has the right name but an untrusted root.
        cloudb_job(
            &c,
            "rogue-signer",
            json!({"certs": [fixture("cloudb/signer-cert.pem"), fixture("cloudb/intermediate-cert.pem"),
                             fixture("cloudb/rogue-signer-cert.pem")]}),
        ),
        // The SignerInfo names the genuine signer, but the rogue key made the signature.
        cloudb_job(
            &c,
            "rogue-signer",
            json!({"sid_cert": fixture("cloudb/signer-cert.pem"),
                   "certs": [fixture("cloudb/signer-cert.pem"), fixture("cloudb/intermediate-cert.pem")]}),
        ),
        // The genuine signer is in the bag but the SignerInfo's certificate is not.
        cloudb_job(
            &c,
            "rogue-signer",
            json!({"certs": [fixture("cloudb/signer-cert.pem"), fixture("cloudb/intermediate-cert.pem")]}),
        ),
    ]);
    for d in &docs {
        refused(&t, &cid, attested(d.as_str().unwrap(), &n), "InvalidSignature").await;
    }
}

#[tokio::test]
async fn cloudb_expired_signer_is_rejected() {
    let t = start().await;
    let (_, cid) = cloudb_provider(&t).await;
    let n = now_nonce();
    let d = sign_one(cloudb_job(&vm_content(&n, VM), "expired", json!({})));
    refused(&t, &cid, attested(&d, &n), "InvalidSignature").await;
}

#[tokio::test]
async fn cloudb_wrong_domain_signer_is_rejected() {
    let t = start().await;
    let (_, cid) = cloudb_provider(&t).await;
    let n = now_nonce();
    // Chains to the configured root, but its name is metadata.evil.example.
    let d = sign_one(cloudb_job(&vm_content(&n, VM), "wrongdomain", json!({})));
    refused(&t, &cid, attested(&d, &n), "InvalidEvidence").await;
    // "Subdomain" means a label boundary.
    let t2 = TestApp::start_with(|env| {
        cloud_env(env);
        env.insert("SVC_CLOUDB_METADATA_DOMAINS".into(), "cloudb.example".into());
    })
    .await;
    let (_, cid2) = cloudb_provider(&t2).await;
    let d = sign_one(cloudb_job(&vm_content(&n, VM), "signer", json!({})));
    refused(&t2, &cid2, attested(&d, &n), "InvalidEvidence").await;
}

#[tokio::test]
async fn cloudb_stale_nonce_is_rejected() {
    let t = start().await;
    let (_, cid) = cloudb_provider(&t).await;
    // Well outside the 300 s window (the exact boundary is a unit test of trust::cloudb), so
    // the seconds spent signing and starting cannot bring them back inside.
    let old = (svc_server::clock::now_secs() - 1800).to_string();
    let future = (svc_server::clock::now_secs() + 1800).to_string();
    let docs = sign_jobs(vec![
        cloudb_job(&vm_content(&old, VM), "signer", json!({})),
        cloudb_job(&vm_content(&future, VM), "signer", json!({})),
        // The platform's default nonce (a timestamp text) is not a Unix time.
        cloudb_job(&vm_content("20260626-005645", VM), "signer", json!({})),
    ]);
    refused(&t, &cid, attested(docs[0].as_str().unwrap(), &old), "StaleEvidence").await;
    refused(&t, &cid, attested(docs[1].as_str().unwrap(), &future), "StaleEvidence").await;
    refused(
        &t,
        &cid,
        attested(docs[2].as_str().unwrap(), "20260626-005645"),
        "InvalidEvidence",
    )
    .await;
}

#[tokio::test]
async fn cloudb_mismatched_nonce_is_rejected() {
    let t = start().await;
    let (_, cid) = cloudb_provider(&t).await;
    let signed = (svc_server::clock::now_secs() - 10).to_string();
    let d = sign_one(cloudb_job(&vm_content(&signed, VM), "signer", json!({})));
    refused(&t, &cid, attested(&d, &now_nonce()), "StaleEvidence").await;
    refused(
        &t,
        &cid,
        json!({"cloudB": {"attestedDocument": {"encoding": "pkcs7", "signature": d}}}),
        "InvalidEvidence",
    )
    .await;
    accepted(&t, &cid, attested(&d, &signed)).await;
}

#[tokio::test]
async fn cloudb_two_signer_infos_are_rejected() {
    let t = start().await;
    let (_, cid) = cloudb_provider(&t).await;
    let n = now_nonce();
    let d = sign_one(cloudb_job(
        &vm_content(&n, VM),
        "signer",
        json!({"extra_signers": [{"key": fixture("cloudb/rogue-signer-key.pem"), "cert": fixture("cloudb/rogue-signer-cert.pem")}]}),
    ));
    refused(&t, &cid, attested(&d, &n), "InvalidEvidence").await;
}

#[tokio::test]
async fn cloudb_vm_id_must_be_a_uuid() {
    let t = start().await;
    let (_, cid) = cloudb_provider(&t).await;
    let n = now_nonce();
    let docs = sign_jobs(vec![
        cloudb_job(&vm_content(&n, "vm-1"), "signer", json!({})),
        cloudb_job(&vm_content(&n, "dc18de58292f47949a5da4192bad0039"), "signer", json!({})),
        cloudb_job(b"not json", "signer", json!({})),
        cloudb_job(&vm_content(&n, VM), "signer", json!({"detached": true})),
    ]);
    for d in &docs {
        refused(&t, &cid, attested(d.as_str().unwrap(), &n), "InvalidEvidence").await;
    }
}

#[tokio::test]
async fn cloudb_signer_issued_directly_by_a_root_is_accepted() {
    // The rogue hierarchy as the configured root: its signer is issued by the root itself.
    let t = TestApp::start_with(|env| {
        cloud_env(env);
        env.insert("SVC_CLOUDB_ROOTS".into(), fixture("cloudb/rogue-root-cert.pem"));
    })
    .await;
    let (_, cid) = cloudb_provider(&t).await;
    let n = now_nonce();
    let d = sign_one(cloudb_job(
        &vm_content(&n, VM),
        "rogue-signer",
        json!({"certs": [fixture("cloudb/rogue-signer-cert.pem")]}),
    ));
    accepted(&t, &cid, attested(&d, &n)).await;
    // The genuine hierarchy is not trusted by this deployment (same root name, another key).
    let d = sign_one(cloudb_job(&vm_content(&n, VM), "signer", json!({})));
    refused(&t, &cid, attested(&d, &n), "InvalidSignature").await;
}

#[tokio::test]
async fn cloudb_intermediates_are_fetched_only_from_allowed_aia_hosts() {
    let inter = std::fs::read_to_string(fixture("cloudb/intermediate-cert.pem")).unwrap();
    let inter_der = svc_server::crypto::x509::pem_blocks(&inter).unwrap()[0].1.clone();
    let aia = FakeHttp::start(200, "application/pkix-cert", &inter_der).await;
    // A signer whose bag holds only itself, as the platform's documents do.
    let leaf = sign_jobs(vec![
        json!({"op": "leaf", "issuer_key": fixture("cloudb/intermediate-key.pem"),
        "issuer_cert": fixture("cloudb/intermediate-cert.pem"), "san": ["westus.metadata.test-cloudb.example"],
        "aia": format!("{}/pkiops/intermediate.crt", aia.url)}),
    ])[0]
        .clone();
    let dir = crate::support::harness::temp_dir();
    let (cert, key) = (dir.join("leaf-cert.pem"), dir.join("leaf-key.pem"));
    std::fs::write(&cert, leaf["cert"].as_str().unwrap()).unwrap();
    std::fs::write(&key, leaf["key"].as_str().unwrap()).unwrap();
    let n = now_nonce();
    let d = sign_one(
        json!({"op": "pkcs7", "content_b64": b64(&vm_content(&n, VM)), "key": key, "cert": cert,
        "digest": "sha256WithRSAEncryption", "signed_attrs": false}),
    );

    // The AIA host is not allowed: nothing is fetched, no chain.
    let t = start().await;
    let (_, cid) = cloudb_provider(&t).await;
    refused(&t, &cid, attested(&d, &n), "InvalidSignature").await;
    assert_eq!(aia.hits(), 0);

    // Allowed: fetched once, then served from the cache.
    let t = TestApp::start_with(|env| {
        cloud_env(env);
        env.insert("SVC_CLOUDB_AIA_HOSTS".into(), "www.example.invalid, 127.0.0.1".into());
    })
    .await;
    let (_, cid) = cloudb_provider(&t).await;
    assert_eq!(accepted(&t, &cid, attested(&d, &n)).await["CloudBVmId"], VM);
    accepted(&t, &cid, attested(&d, &n)).await;
    assert_eq!(aia.hits(), 1);

    // An intermediate already in the bag: no fetch at all.
    let t = TestApp::start_with(|env| {
        cloud_env(env);
        env.insert("SVC_CLOUDB_AIA_HOSTS".into(), "127.0.0.1".into());
    })
    .await;
    let (_, cid) = cloudb_provider(&t).await;
    let d2 = sign_one(
        json!({"op": "pkcs7", "content_b64": b64(&vm_content(&n, VM)), "key": key, "cert": cert,
        "certs": [cert, fixture("cloudb/intermediate-cert.pem")], "signed_attrs": false}),
    );
    accepted(&t, &cid, attested(&d2, &n)).await;
    assert_eq!(aia.hits(), 1);

    // The AIA server failing is an upstream error (500) when the chain needs it.
    aia.answer(503, "text/plain", b"down");
    let t = TestApp::start_with(|env| {
        cloud_env(env);
        env.insert("SVC_CLOUDB_AIA_HOSTS".into(), "127.0.0.1".into());
    })
    .await;
    let (_, cid) = cloudb_provider(&t).await;
    auth(&t, &cid, attested(&d, &n))
        .await
        .expect_error(500, "Authentication failed due to an internal error.");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn cloudb_vm_gets_credentials_by_vm_id() {
    let t = start().await;
    let (tp, cid) = cloudb_provider(&t).await;
    credentials_setup(&t, json!({"type": "cloudBVmId", "value": VM}), &tp, "k-cloudb").await;
    let n = now_nonce();
    let d = sign_one(cloudb_job(&vm_content(&n, VM), "signer", json!({})));
    let r = auth(&t, &cid, attested(&d, &n)).await;
    let token = r.expect(200)["accessToken"].as_str().unwrap().to_string();
    let r = credentials(&t, &token, db_request(attested(&d, &n))).await;
    assert_eq!(r.expect(200)["data"], json!({"apiKey": "k-cloudb"}));
    // A match rule on the subscription.
    let (_, ruled) = provider(
        &t,
        json!({"provider": "CloudBMetadataService", "matchRules": [{"attribute": "CloudBSubscriptionId", "value": "0a1b2c3d-0000-4000-8000-000000000002"}]}),
    )
    .await;
    refused(&t, &ruled, attested(&d, &n), "MatchRuleFailed").await;
    assert_eq!(
        last_authn(&t).await["trustProviders"][0]["actualValue"],
        "0a1b2c3d-0000-4000-8000-000000000001"
    );
}

#[tokio::test]
async fn cloud_evidence_never_reaches_the_logs() {
    let t = start().await;
    let (_, cid) = role_provider(&t).await;
    let mut h = moto_headers("us-east-1", None);
    let sig = h["Authorization"]
        .as_str()
        .unwrap()
        .rsplit('=')
        .next()
        .unwrap()
        .to_string();
    accepted(&t, &cid, role(&h, "us-east-1")).await;
    h["Authorization"] = json!(h["Authorization"].as_str().unwrap().replace(&sig[..8], "00000000"));
    refused(&t, &cid, role(&h, "us-east-1"), "InvalidSignature").await;
    let logs = crate::support::harness::logs();
    assert!(!logs.contains(&sig), "the SigV4 signature was logged");
    assert!(
        !logs.contains(&peer("SVC_TEST_MOTO_KEY_ID")),
        "the access key id was logged"
    );
}
