//! `ObjectStorageABucket` (contract §5.4): a SigV4-signed `PUT` to the signature-validating moto
//! S3 (scripts/peers.sh: an IAM user allowed `s3:*`; every request must be signed with its key),
//! read back with boto3; the host's credentials from each source of the standard chain
//! (environment, shared file and profile, container endpoint, instance metadata v2); a wrong
//! secret is a 403 whose text carries no secret.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use svc_server::events::object_storage::{ObjectA, put_a};

use super::*;
use crate::support::cred::{Answer, Recorder, Seen};
use crate::support::edge::peer;
use crate::support::harness::{TestApp, logs, temp_dir};
use crate::support::s3::{new_bucket, s3};

const REGION: &str = "us-east-1";

/// The service with objectStorageA at the moto S3 (path style) and the chain's variables `chain`.
async fn app(chain: &[(&str, &str)]) -> TestApp {
    let chain: BTreeMap<String, String> = chain.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    TestApp::start_with(move |env| {
        env.insert(
            "SVC_OBJECTSTORAGEA_URL_TEMPLATE".into(),
            format!("{}/{{bucket}}", peer("SVC_TEST_MOTO_AUTH_URL")),
        );
        env.extend(chain);
    })
    .await
}

/// The service with the moto user's key in the environment variables of the chain.
async fn app_with_environment_keys() -> TestApp {
    app(&[
        ("AWS_ACCESS_KEY_ID", &peer("SVC_TEST_MOTO_KEY_ID")),
        ("AWS_SECRET_ACCESS_KEY", &peer("SVC_TEST_MOTO_SECRET")),
    ])
    .await
}

async fn put(t: &TestApp, bucket: &str, prefix: Option<&str>) -> Result<(), String> {
    let dest = ObjectA {
        region: REGION,
        bucket,
        prefix,
    };
    put_a(&t.app.services(), &dest, &upload()).await
}

/// Uploads to a new bucket and checks that exactly the one named NDJSON object arrived there
/// (`prefix` with its `/`, or `""`); returns the bucket.
async fn upload_lands(t: &TestApp, prefix: Option<&str>) -> String {
    let bucket = new_bucket();
    put(t, &bucket, prefix).await.unwrap();
    let (key, body) = only_object(&bucket);
    assert_object_name(&key, &prefix.map(|p| format!("{p}/")).unwrap_or_default());
    assert_eq!(body, NDJSON);
    bucket
}

/// The one object of `bucket`: its key and body.
fn only_object(bucket: &str) -> (String, String) {
    let objects = s3("objects", bucket);
    let m = objects.as_object().unwrap();
    assert_eq!(m.len(), 1, "{objects}");
    let (k, v) = m.iter().next().unwrap();
    (k.clone(), v.as_str().unwrap().to_string())
}

#[tokio::test]
async fn an_upload_signed_with_environment_credentials_lands_as_named_ndjson() {
    let t = app_with_environment_keys().await;
    upload_lands(&t, Some("svc/audit")).await;
    // Without a prefix the objects sit at the bucket's root; each upload is a new object.
    let bucket = new_bucket();
    put(&t, &bucket, None).await.unwrap();
    put(&t, &bucket, None).await.unwrap();
    let objects = s3("objects", &bucket);
    let objects = objects.as_object().unwrap();
    assert_eq!(objects.len(), 2, "{objects:?}");
    for (key, body) in objects {
        assert_object_name(key, "");
        assert_eq!(body, NDJSON);
    }
}

/// S3 signs the key as it `UriEncode`s it: a prefix with spaces, `+`, `=`, `*`, `(`, `)`, `!`,
/// `$`, `@`, `:` and `,` is signed as the server computes it, and the key arrives unchanged.
#[tokio::test]
async fn keys_with_reserved_characters_are_signed_as_s3_encodes_them() {
    let t = app_with_environment_keys().await;
    upload_lands(&t, Some("svc logs/a+b=c*(d)!$@:,")).await;
}

#[tokio::test]
async fn a_wrong_secret_is_a_403_whose_text_carries_no_secret() {
    let canary = "wrong-secret-CANARY-7f3a9c";
    let t = app(&[
        ("AWS_ACCESS_KEY_ID", &peer("SVC_TEST_MOTO_KEY_ID")),
        ("AWS_SECRET_ACCESS_KEY", canary),
    ])
    .await;
    let bucket = new_bucket();
    let e = put(&t, &bucket, Some("svc")).await.unwrap_err();
    assert!(
        e.starts_with("objectStorageA answered 403: SignatureDoesNotMatch"),
        "{e}"
    );
    assert!(!e.contains(canary) && !e.contains(&peer("SVC_TEST_MOTO_SECRET")), "{e}");
    assert!(!logs().contains(canary));
    assert_eq!(s3("objects", &bucket), json!({}), "nothing was stored");
    // A key the store does not know.
    let t = app(&[
        ("AWS_ACCESS_KEY_ID", "AKIDUNKNOWN0000000"),
        ("AWS_SECRET_ACCESS_KEY", canary),
    ])
    .await;
    let e = put(&t, &bucket, None).await.unwrap_err();
    // The S3 error code, never its message (body text, issue 31).
    assert_eq!(e, "objectStorageA answered 403: InvalidAccessKeyId");
    assert!(!e.contains(canary), "{e}");
}

#[tokio::test]
async fn credentials_come_from_the_profile_of_the_shared_files() {
    let dir = temp_dir();
    let credentials = dir.join("credentials");
    std::fs::write(
        &credentials,
        format!(
            "[default]\naws_access_key_id = {key}\naws_secret_access_key = not-this-one\n\n\
             # the profile AWS_PROFILE names\n[svc-logs]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\n",
            key = peer("SVC_TEST_MOTO_KEY_ID"),
            secret = peer("SVC_TEST_MOTO_SECRET")
        ),
    )
    .unwrap();
    let config = dir.join("config");
    std::fs::write(&config, "[profile svc-logs]\nregion = us-east-1\n").unwrap();
    let (credentials, config) = (credentials.display().to_string(), config.display().to_string());
    let t = app(&[
        ("AWS_SHARED_CREDENTIALS_FILE", &credentials),
        ("AWS_CONFIG_FILE", &config),
        ("AWS_PROFILE", "svc-logs"),
    ])
    .await;
    let bucket = upload_lands(&t, Some("p")).await;
    // The default profile (its secret is wrong) when none is named: the file is what the chain
    // read, not some other source.
    let t = app(&[
        ("AWS_SHARED_CREDENTIALS_FILE", &credentials),
        ("AWS_CONFIG_FILE", &config),
    ])
    .await;
    let e = put(&t, &bucket, Some("p")).await.unwrap_err();
    assert!(e.contains("403"), "{e}");
    // A named profile that is in neither file ends the chain with that error.
    let t = app(&[
        ("AWS_SHARED_CREDENTIALS_FILE", &credentials),
        ("AWS_CONFIG_FILE", &config),
        ("AWS_PROFILE", "missing"),
    ])
    .await;
    let e = put(&t, &bucket, None).await.unwrap_err();
    assert_eq!(
        e,
        "objectStorageA credentials: AWS_PROFILE \"missing\" is in neither shared file"
    );
}

/// The container endpoint's answer: the moto user's key (the signature-validating moto refuses
/// every session token, docs/TESTING.md), an hour to live; 401 without the expected token.
fn container(s: &Seen) -> (u16, Value) {
    if s.header("authorization") != Some("container-auth-token") {
        return (401, json!({"message": "no"}));
    }
    let exp = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let exp = exp.format(&time::format_description::well_known::Rfc3339).unwrap();
    (
        200,
        json!({"AccessKeyId": peer("SVC_TEST_MOTO_KEY_ID"), "SecretAccessKey": peer("SVC_TEST_MOTO_SECRET"),
               "Expiration": exp, "RoleArn": "arn:aws:iam::123456789012:role/svc"}),
    )
}

#[tokio::test]
async fn credentials_come_from_the_container_endpoint_and_are_kept_until_expiry() {
    let endpoint = Recorder::start(Answer::Func(container)).await;
    let dir = temp_dir();
    let token_file = dir.join("token");
    std::fs::write(&token_file, "container-auth-token\n").unwrap();
    let t = app(&[
        (
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            &format!("{}/v1/credentials", endpoint.url),
        ),
        (
            "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
            &token_file.display().to_string(),
        ),
        ("AWS_CONTAINER_AUTHORIZATION_TOKEN", "not-this-one"),
    ])
    .await;
    let bucket = upload_lands(&t, Some("c")).await;
    put(&t, &bucket, Some("c")).await.unwrap();
    assert_eq!(s3("objects", &bucket).as_object().unwrap().len(), 2);
    let seen = endpoint.seen();
    assert_eq!(seen.len(), 1, "cached until shortly before Expiration");
    assert_eq!(
        (seen[0].method.as_str(), seen[0].uri.as_str()),
        ("GET", "/v1/credentials")
    );
    // A refusal of the endpoint is the chain's error, with no secret of the request.
    let t = app(&[
        (
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            &format!("{}/v1/credentials", endpoint.url),
        ),
        ("AWS_CONTAINER_AUTHORIZATION_TOKEN", "wrong-container-token"),
    ])
    .await;
    let e = put(&t, &bucket, None).await.unwrap_err();
    assert!(
        e.starts_with("objectStorageA credentials: container credentials endpoint answered 401"),
        "{e}"
    );
    assert!(!e.contains("wrong-container-token"), "{e}");
}

/// Instance metadata v2: a session token first, then the role's name, then its credentials.
fn imds(s: &Seen) -> (u16, &'static str, String) {
    let token_ok = s.header("x-aws-ec2-metadata-token") == Some("imds-session-token");
    match (s.method.as_str(), s.uri.as_str()) {
        ("PUT", "/latest/api/token") if s.header("x-aws-ec2-metadata-token-ttl-seconds") == Some("21600") => {
            (200, "text/plain", "imds-session-token".into())
        }
        (_, _) if !token_ok => (401, "text/plain", String::new()),
        ("GET", "/latest/meta-data/iam/security-credentials/") => (200, "text/plain", "svc-role".into()),
        ("GET", "/latest/meta-data/iam/security-credentials/svc-role") => {
            let exp = time::OffsetDateTime::now_utc() + time::Duration::hours(6);
            let exp = exp.format(&time::format_description::well_known::Rfc3339).unwrap();
            let v = json!({"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": peer("SVC_TEST_MOTO_KEY_ID"),
                           "SecretAccessKey": peer("SVC_TEST_MOTO_SECRET"), "Expiration": exp});
            (200, "text/plain", v.to_string())
        }
        _ => (404, "text/plain", String::new()),
    }
}

#[tokio::test]
async fn credentials_come_from_instance_metadata_v2_last() {
    let endpoint = Recorder::start(Answer::Raw(imds)).await;
    let t = app(&[
        ("AWS_EC2_METADATA_DISABLED", "false"),
        ("AWS_EC2_METADATA_SERVICE_ENDPOINT", &format!("{}/", endpoint.url)),
    ])
    .await;
    let bucket = new_bucket();
    put(&t, &bucket, None).await.unwrap();
    put(&t, &bucket, None).await.unwrap();
    assert_eq!(s3("objects", &bucket).as_object().unwrap().len(), 2);
    let calls: Vec<String> = endpoint
        .seen()
        .iter()
        .map(|s| format!("{} {}", s.method, s.uri))
        .collect();
    assert_eq!(
        calls,
        [
            "PUT /latest/api/token",
            "GET /latest/meta-data/iam/security-credentials/",
            "GET /latest/meta-data/iam/security-credentials/svc-role"
        ],
        "once: cached until shortly before Expiration"
    );
    // Nothing anywhere, instance metadata off (as every test has it): the chain says so.
    let t = app(&[]).await;
    let e = put(&t, &bucket, None).await.unwrap_err();
    assert_eq!(
        e,
        "objectStorageA credentials: none in the environment, the shared files or a container endpoint, and \
         instance metadata is off"
    );
}

/// Session credentials sign `x-amz-security-token` too, and the payload hash is S3's
/// `x-amz-content-sha256` (checked on a recorder: the signature-validating moto refuses every
/// session token).
#[tokio::test]
async fn session_credentials_sign_their_token_and_the_payload_hash() {
    let store = Recorder::start(Answer::Func(|_| (200, json!({})))).await;
    let url = store.url.clone();
    let t = TestApp::start_with(move |env| {
        env.insert("SVC_OBJECTSTORAGEA_URL_TEMPLATE".into(), format!("{url}/{{bucket}}"));
        env.insert("AWS_ACCESS_KEY_ID".into(), "ASIATESTKEY".into());
        env.insert("AWS_SECRET_ACCESS_KEY".into(), "session-secret".into());
        env.insert("AWS_SESSION_TOKEN".into(), "session-token-CANARY".into());
    })
    .await;
    put(&t, "logs", Some("s")).await.unwrap();
    let seen = store.seen();
    let r = &seen[0];
    assert_eq!(r.method, "PUT");
    assert_object_name(r.uri.strip_prefix("/logs/").unwrap(), "s/");
    assert_eq!(r.body, NDJSON.as_bytes());
    assert_eq!(r.header("content-type"), Some("application/x-ndjson"));
    assert_eq!(r.header("x-amz-security-token"), Some("session-token-CANARY"));
    let sha = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, NDJSON.as_bytes());
    let hex: String = sha.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(r.header("x-amz-content-sha256"), Some(hex.as_str()));
    let auth = r.header("authorization").unwrap();
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=ASIATESTKEY/20") && auth.contains("/us-east-1/s3/aws4_request"),
        "{auth}"
    );
    assert!(
        auth.contains("SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token,"),
        "{auth}"
    );
}
