//! `ObjectStorageCBucket` (contract §5.4, §5.3, §5.2): our assertion (`sub` =
//! `svc-log-stream:<externalId>`, `aud` = the stream's `audience`, verified against the published
//! JWKS) → the STS exchange → `generateAccessToken` with the stream's `tokenLifetime` → the media
//! upload, against the loopback cloudC fake; the access token is reused until shortly before its
//! expiry; refusals are errors without a secret.

use serde_json::{Value, json};
use svc_server::events::object_storage::{ObjectC, put_c};

use super::*;
use crate::support::cloudc::{self, ACCESS_TOKEN, FEDERATED_TOKEN, SCOPE};
use crate::support::cred::{Answer, Recorder, Seen, json_answer, verify_with_jwks};
use crate::support::harness::{TestApp, logs};

const AUDIENCE: &str = "//iam.cloud-c.test/projects/123/locations/global/workloadIdentityPools/svc/providers/logs";
const ACCOUNT: &str = "log-writer@proj.iam.cloud-c.test";

async fn app(fake: &Recorder) -> TestApp {
    let url = fake.url.clone();
    TestApp::start_with(move |env| cloudc::env(&url, env)).await
}

fn dest<'a>(stream: uuid::Uuid, bucket: &'a str, audience: &'a str) -> ObjectC<'a> {
    ObjectC {
        stream,
        bucket: Some(bucket),
        prefix: Some("svc/audit"),
        audience: Some(audience),
        service_account_email: Some(ACCOUNT),
        token_lifetime: 900,
    }
}

/// `put_c` on the node's clock (the tests move it past the token's expiry).
async fn put(t: &TestApp, d: &ObjectC<'_>) -> Result<(), String> {
    svc_server::clock::scope(t.app.clock.clone(), put_c(&t.app.services(), d, &upload())).await
}

fn paths(seen: &[Seen]) -> Vec<&str> {
    seen.iter().map(|s| s.uri.split('?').next().unwrap()).collect()
}

#[tokio::test]
async fn an_upload_exchanges_the_streams_assertion_then_posts_the_ndjson() {
    let fake = Recorder::start(Answer::Func(cloudc::answer)).await;
    let t = app(&fake).await;
    let stream = uuid::Uuid::new_v4();
    put(&t, &dest(stream, "svc-logs", AUDIENCE)).await.unwrap();
    let seen = fake.seen();
    assert_eq!(
        paths(&seen),
        [
            "/sts/v1/token",
            "/iam/v1/projects/-/serviceAccounts/log-writer@proj.iam.cloud-c.test:generateAccessToken",
            "/upload/b/svc-logs/o"
        ]
    );
    // (1) The STS exchange of §5.3, unauthenticated, with our assertion of §5.2.
    let (sts, iam, up) = (&seen[0], &seen[1], &seen[2]);
    assert!(sts.header("authorization").is_none());
    let body: Value = serde_json::from_slice(&sts.body).unwrap();
    let assertion = body["subjectToken"].as_str().unwrap().to_string();
    assert_eq!(
        body,
        json!({"grantType": "urn:ietf:params:oauth:grant-type:token-exchange", "audience": AUDIENCE, "scope": SCOPE,
               "requestedTokenType": "urn:ietf:params:oauth:token-type:access_token",
               "subjectToken": assertion, "subjectTokenType": "urn:ietf:params:oauth:token-type:jwt"})
    );
    let (header, claims) = verify_with_jwks(&t, &assertion).await;
    assert_eq!(header["alg"], "RS256");
    assert_eq!(claims["iss"], t.base.as_str());
    assert_eq!(claims["sub"], format!("svc-log-stream:{stream}"));
    assert_eq!(claims["aud"], AUDIENCE);
    assert_eq!(claims["svc"], json!({"tenant": "default"}));
    assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 300);
    assert_eq!(claims["nbf"], claims["iat"]);
    assert!(uuid::Uuid::parse_str(claims["jti"].as_str().unwrap()).is_ok());
    // (2) generateAccessToken with the federated token and the stream's tokenLifetime.
    assert_eq!(
        iam.header("authorization"),
        Some(format!("Bearer {FEDERATED_TOKEN}").as_str())
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&iam.body).unwrap(),
        json!({"scope": [SCOPE], "lifetime": "900s"})
    );
    // (3) The media upload: the object name URL-encoded in `name`, the records as the body.
    assert_eq!(
        up.header("authorization"),
        Some(format!("Bearer {ACCESS_TOKEN}").as_str())
    );
    assert_eq!(up.header("content-type"), Some("application/x-ndjson"));
    assert_eq!(cloudc::query(up, "uploadType").as_deref(), Some("media"));
    let name = cloudc::query(up, "name").unwrap();
    assert_object_name(&name, "svc/audit/");
    assert!(
        up.uri
            .contains("&name=svc%2Faudit%2FAuditLogs%2F2026%2F03%2F04%2F20260304T050607Z-"),
        "{}",
        up.uri
    );
    assert_eq!(up.body, NDJSON.as_bytes());
}

#[tokio::test]
async fn the_access_token_is_reused_until_shortly_before_its_expiry() {
    let fake = Recorder::start(Answer::Func(cloudc::answer)).await;
    let t = app(&fake).await;
    let stream = uuid::Uuid::new_v4();
    let d = dest(stream, "svc-logs", AUDIENCE);
    put(&t, &d).await.unwrap();
    put(&t, &d).await.unwrap();
    put(&t, &d).await.unwrap();
    let p = paths(&fake.seen()).iter().map(|p| p.to_string()).collect::<Vec<_>>();
    assert_eq!(p.iter().filter(|p| *p == "/sts/v1/token").count(), 1, "{p:?}");
    assert_eq!(p.iter().filter(|p| p.starts_with("/upload/")).count(), 3, "{p:?}");
    // Another stream (its own subject) exchanges its own.
    put(&t, &dest(uuid::Uuid::new_v4(), "svc-logs", AUDIENCE))
        .await
        .unwrap();
    assert_eq!(fake.seen().iter().filter(|s| s.uri == "/sts/v1/token").count(), 2);
    // Within 60 s of the token's expireTime (2030-01-02T03:04:05Z) a new one is exchanged.
    let expire_ms = 1_893_553_445_000;
    t.advance_clock(expire_ms - 59_000 - svc_server::clock::now_millis());
    put(&t, &d).await.unwrap();
    assert_eq!(fake.seen().iter().filter(|s| s.uri == "/sts/v1/token").count(), 3);
}

#[tokio::test]
async fn upstream_refusals_are_errors_without_secrets() {
    let fake = Recorder::start(Answer::Func(cloudc::answer)).await;
    let t = app(&fake).await;
    let stream = uuid::Uuid::new_v4();
    // The store refuses, echoing the request's bearer token.
    let e = put(&t, &dest(stream, cloudc::FORBIDDEN_BUCKET, AUDIENCE))
        .await
        .unwrap_err();
    // What failed, never the store's text (which echoed the request; issue 31).
    assert_eq!(e, "objectStorageC upload answered 403");
    assert!(!e.contains(ACCESS_TOKEN), "{e}");
    let e = put(&t, &dest(stream, cloudc::BROKEN_BUCKET, AUDIENCE))
        .await
        .unwrap_err();
    assert_eq!(e, "objectStorageC upload answered 500");
    // The STS refuses, echoing our assertion.
    let e = put(&t, &dest(stream, "svc-logs", cloudc::ECHOING_AUDIENCE))
        .await
        .unwrap_err();
    let assertion = fake
        .seen()
        .iter()
        .rev()
        .find(|s| s.uri == "/sts/v1/token")
        .map(|s| {
            serde_json::from_slice::<Value>(&s.body).unwrap()["subjectToken"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .unwrap();
    assert_eq!(e, "objectStorageC token: STS answered 403: access_denied");
    assert!(!e.contains(&assertion), "{e}");
    // generateAccessToken fails: nothing is cached, nothing uploaded.
    fake.set(json_answer(500, json!({"error": {"code": 500, "message": "internal"}})));
    let other = uuid::Uuid::new_v4();
    let e = put(&t, &dest(other, "svc-logs", AUDIENCE)).await.unwrap_err();
    assert_eq!(e, "objectStorageC token: STS answered 500");
    for secret in [ACCESS_TOKEN, FEDERATED_TOKEN, assertion.as_str()] {
        assert!(!logs().contains(secret), "a log line carries {secret}");
    }
    // A stream without its destination's fields says which are missing.
    let d = ObjectC {
        bucket: None,
        audience: None,
        ..dest(stream, "x", AUDIENCE)
    };
    assert_eq!(
        put(&t, &d).await.unwrap_err(),
        "objectStorageC: objectStorageCBucketName, audience not set"
    );
}

/// A token the store refuses with 401 before its expiry (revoked) is not reused.
#[tokio::test]
async fn a_token_the_store_refuses_is_exchanged_again() {
    let fake = Recorder::start(Answer::Func(cloudc::answer)).await;
    let t = app(&fake).await;
    let d = dest(uuid::Uuid::new_v4(), "svc-logs", AUDIENCE);
    put(&t, &d).await.unwrap();
    fake.set(json_answer(
        401,
        json!({"error": {"code": 401, "message": "Invalid Credentials"}}),
    ));
    let e = put(&t, &d).await.unwrap_err();
    assert_eq!(e, "objectStorageC upload answered 401");
    fake.set(Answer::Func(cloudc::answer));
    put(&t, &d).await.unwrap();
    assert_eq!(fake.seen().iter().filter(|s| s.uri == "/sts/v1/token").count(), 2);
}
