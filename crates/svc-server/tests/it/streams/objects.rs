//! The object-storage destinations end to end (§5.4): a stream's transaction lands as one NDJSON
//! object, named `<prefix>/<dataType>/<yyyy>/<MM>/<dd>/<yyyyMMddTHHmmssZ>-<uuid>.ndjson`, in the
//! signature-validating moto S3 (objectStorageA) and at the loopback cloudC fake (objectStorageC),
//! its lines the records the audit log returns.

use serde_json::{Value, json};

use super::*;
use crate::support::cloudc;
use crate::support::cred::{Answer, Recorder};
use crate::support::edge::{jwt_payload, peer};
use crate::support::s3::{new_bucket, s3};

/// Asserts `name` is `<prefix>/AuditLogs/<yyyy>/<MM>/<dd>/<yyyyMMddTHHmmssZ>-<uuid>.ndjson`.
#[track_caller]
fn assert_named(name: &str, prefix: &str) {
    let rest = name
        .strip_prefix(&format!("{prefix}/AuditLogs/"))
        .unwrap_or_else(|| panic!("{name}"));
    let parts: Vec<&str> = rest.split('/').collect();
    assert_eq!(parts.len(), 4, "{name}");
    let (stamp, uuid) = parts[3].strip_suffix(".ndjson").unwrap().split_once('-').unwrap();
    assert_eq!(&stamp[..8], format!("{}{}{}", parts[0], parts[1], parts[2]), "{name}");
    assert!(
        stamp.len() == 16 && stamp.ends_with('Z') && &stamp[8..9] == "T",
        "{name}"
    );
    uuid::Uuid::parse_str(uuid).unwrap();
}

/// Asserts the NDJSON lines are exactly the audit entries since the stream's creation.
async fn assert_records(t: &crate::support::harness::TestApp, ndjson: &str, stream: &Value) {
    assert!(ndjson.ends_with('\n'), "one record per line");
    let lines: Vec<Value> = ndjson.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let expected = audit_since(t, &stream["createdAt"]).await;
    assert_unique(&lines);
    assert_eq!(lines.len(), expected.len());
    for l in &lines {
        assert_eq!(l, &expected[&id(l)]);
    }
}

#[tokio::test]
async fn an_object_storage_a_stream_lands_its_records_in_s3_as_named_ndjson() {
    let t = manual_with(|env| {
        env.insert(
            "SVC_OBJECTSTORAGEA_URL_TEMPLATE".into(),
            format!("{}/{{bucket}}", peer("SVC_TEST_MOTO_AUTH_URL")),
        );
        env.insert("AWS_ACCESS_KEY_ID".into(), peer("SVC_TEST_MOTO_KEY_ID"));
        env.insert("AWS_SECRET_ACCESS_KEY".into(), peer("SVC_TEST_MOTO_SECRET"));
    })
    .await;
    let bucket = new_bucket();
    let s = create(
        &t,
        json!({"type": "ObjectStorageABucket", "name": "archive", "isActive": true, "dataType": "AuditLogs",
               "objectStorageABucketRegion": "us-east-1", "objectStorageABucketName": bucket,
               "objectStorageAPathPrefix": "svc/audit"}),
    )
    .await;
    let m = marker(&t).await;
    touch(&t, &m, 2).await;
    cycle(&t).await;
    let objects = s3("objects", &bucket);
    let objects = objects.as_object().unwrap();
    assert_eq!(objects.len(), 1, "one object per transaction");
    let (name, body) = objects.iter().next().unwrap();
    assert_named(name, "svc/audit");
    assert_records(&t, body.as_str().unwrap(), &s).await;
    assert_eq!(counts(&t, &id(&s)).await, (0, 1, 0));
    cycle(&t).await;
    assert_eq!(
        s3("objects", &bucket).as_object().unwrap().len(),
        1,
        "nothing new, no object"
    );
}

#[tokio::test]
async fn an_object_storage_c_stream_uploads_its_records_with_its_own_assertion() {
    let fake = Recorder::start(Answer::Func(cloudc::answer)).await;
    let url = fake.url.clone();
    let t = manual_with(move |env| cloudc::env(&url, env)).await;
    let s = create(
        &t,
        json!({"type": "ObjectStorageCBucket", "name": "archive", "isActive": true, "dataType": "AuditLogs",
               "objectStorageCBucketName": "svc-logs", "objectStorageCPathPrefix": "svc/audit",
               "audience": "//iam.cloud-c.test/projects/1/locations/global/workloadIdentityPools/p/providers/svc",
               "serviceAccountEmail": "writer@proj.iam.cloud-c.test", "tokenLifetime": 900}),
    )
    .await;
    let m = marker(&t).await;
    touch(&t, &m, 2).await;
    cycle(&t).await;
    let seen = fake.seen();
    let sts: Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(
        jwt_payload(sts["subjectToken"].as_str().unwrap())["sub"],
        format!("svc-log-stream:{}", id(&s))
    );
    let upload = seen.last().unwrap();
    assert!(
        upload.uri.starts_with("/upload/b/svc-logs/o?uploadType=media&name="),
        "{}",
        upload.uri
    );
    assert_named(&cloudc::query(upload, "name").unwrap(), "svc/audit");
    assert_records(&t, std::str::from_utf8(&upload.body).unwrap(), &s).await;
    assert_eq!(counts(&t, &id(&s)).await, (0, 1, 0));
}
