//! The signature-validating moto S3 of scripts/peers.sh, read and prepared with boto3 under the
//! IAM user's real key: buckets for objectStorageA log streams and what landed in them.

use serde_json::{Value, json};

use crate::support::edge::peer;

/// boto3 against the signature-validating moto, with the IAM user's real key: `create` a bucket,
/// or read every `objects` of one as `{key: body}`.
const S3_SCRIPT: &str = r#"
import json, os, sys
for name in [k for k in os.environ if k.startswith("AWS_")]:
    del os.environ[name]
import boto3
req = json.load(sys.stdin)
s3 = boto3.client("s3", endpoint_url=req["url"], region_name="us-east-1",
                  aws_access_key_id=req["key"], aws_secret_access_key=req["secret"])
if req["op"] == "create":
    s3.create_bucket(Bucket=req["bucket"])
    print("{}")
else:
    out = {}
    for o in s3.list_objects_v2(Bucket=req["bucket"]).get("Contents", []):
        out[o["Key"]] = s3.get_object(Bucket=req["bucket"], Key=o["Key"])["Body"].read().decode()
    print(json.dumps(out))
"#;

pub fn s3(op: &str, bucket: &str) -> Value {
    use std::io::Write;
    let mut child = std::process::Command::new(peer("SVC_TEST_PYTHON"))
        .args(["-c", S3_SCRIPT])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run python");
    let req = json!({"op": op, "bucket": bucket, "url": peer("SVC_TEST_MOTO_AUTH_URL"),
                     "key": peer("SVC_TEST_MOTO_KEY_ID"), "secret": peer("SVC_TEST_MOTO_SECRET")});
    child
        .stdin
        .take()
        .unwrap()
        .write_all(req.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "boto3 {op} {bucket} failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A new bucket on the moto S3 (names unique per test and run: moto keeps them).
pub fn new_bucket() -> String {
    let b = format!("svc-logs-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    s3("create", &b);
    b
}
