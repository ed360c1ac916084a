//! `credentials` in every `--format`, `--meta` selection, `exec`, the exit statuses, the token
//! cache directory, and secrets kept off stderr and out of the cache directory.

use serde_json::json;

use super::*;
use crate::support::harness::TestApp;

fn creds<'a>(host: &'a str, port: &'a str, ty: &'a str) -> Vec<&'a str> {
    vec!["credentials", "--host", host, "--port", port, "--type", ty]
}

/// Runs `script` in sh with `exports` (the output of `--format env`) evaluated first.
fn sh_with(exports: &str, script: &str) -> String {
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{exports}\n{script}"))
        .output()
        .unwrap();
    String::from_utf8(o.stdout).unwrap()
}

#[tokio::test]
async fn credentials_json_env_and_meta_selection() {
    let t = TestApp::start().await;
    let o = oidc_setup(&t, "k-it's $HOME").await;
    let run = |args: Vec<&str>| Edge::new(&t, &o.cid).env("SVC_EDGE_TOKEN", &o.token).args(&args).run();
    // json (the default): the ApiCredentialsResponse as received.
    let out = run(creds("api.partner.example", "443", "ApiKey")).await;
    assert_eq!(
        out.ok().json(),
        json!({"credentialType": "ApiKey", "expiresAt": null, "data": {"apiKey": "k-it's $HOME"}})
    );
    let mut args = creds("api.partner.example", "443", "ApiKey");
    args.extend(["--format", "json"]);
    assert_eq!(run(args).await.ok().json()["data"]["apiKey"], "k-it's $HOME");
    // env: one export line, single-quoted, that a shell reads back verbatim.
    let mut args = creds("api.partner.example", "443", "ApiKey");
    args.extend(["--format", "env"]);
    let out = run(args).await;
    assert_eq!(out.ok().stdout, "export SVC_API_KEY='k-it'\\''s $HOME'\n");
    assert_eq!(sh_with(&out.stdout, r#"printf %s "$SVC_API_KEY""#), "k-it's $HOME");
    // clouda-process is only for CloudAStsFederation: exit 2, nothing printed.
    let mut args = creds("api.partner.example", "443", "ApiKey");
    args.extend(["--format", "clouda-process"]);
    let out = run(args).await;
    assert_eq!((out.code, out.stdout.as_str()), (2, ""));

    // username-password as env.
    grant(
        &t,
        json!({"type": "oidcIdTokenSubject", "value": o.sub}),
        &o.tp,
        "db.partner.example",
        5432,
        vec![(
            json!({"type": "username-password", "username": "svc", "password": "pw 'b'"}),
            json!({}),
        )],
    )
    .await;
    let mut args = creds("db.partner.example", "5432", "UsernamePassword");
    args.extend(["--format", "env"]);
    let out = run(args).await;
    assert_eq!(
        sh_with(&out.ok().stdout, r#"printf '%s|%s' "$SVC_USERNAME" "$SVC_PASSWORD""#),
        "svc|pw 'b'"
    );
    // A policy with two signed-JWT providers selected by accountName (--meta); token as env.
    let jwt = |subject: &str| json!({"type": "signed-jwt", "tokenConfiguration": "dataWarehouseA", "algorithmType": "RS256", "lifetime": 120, "subject": subject});
    grant(
        &t,
        json!({"type": "oidcIdTokenSubject", "value": o.sub}),
        &o.tp,
        "wh.partner.example",
        443,
        vec![
            (
                jwt("ACME.ALPHA"),
                json!({"mappingType": "AccountName", "accountName": "alpha"}),
            ),
            (
                jwt("ACME.BETA"),
                json!({"mappingType": "AccountName", "accountName": "beta"}),
            ),
        ],
    )
    .await;
    let mut args = creds("wh.partner.example", "443", "OAuthToken");
    args.extend(["--meta", "accountName=beta", "--format", "env"]);
    let out = run(args).await;
    let token = sh_with(&out.ok().stdout, r#"printf '%s' "$SVC_TOKEN""#);
    assert!(
        jwt_payload(&token).to_string().contains("ACME.BETA"),
        "{}",
        jwt_payload(&token)
    );
    // Without a selector the service answers 400 (exit 5, its message on stderr); a selector
    // that matches nothing is 404 (exit 4).
    let out = run(creds("wh.partner.example", "443", "OAuthToken")).await;
    assert_eq!(out.code, 5, "{}", out.stderr);
    assert!(out.stderr.contains("connectionMetadata is required"), "{}", out.stderr);
    let mut args = creds("wh.partner.example", "443", "OAuthToken");
    args.extend(["--meta", "accountName=gamma"]);
    assert_eq!(run(args).await.code, 4);
}

#[tokio::test]
async fn clouda_sts_federation_as_credential_process_env_and_exec() {
    let t = TestApp::start_with(|env| {
        env.insert(
            "SVC_CLOUDA_STS_FEDERATION_URL".into(),
            format!("{}/", peer("SVC_TEST_MOTO_URL")),
        );
        env.insert("SVC_CLOUDA_STS_AUDIENCE".into(), "sts.cloud-a.test".into());
    })
    .await;
    let o = oidc_setup(&t, "unused").await;
    grant(
        &t,
        json!({"type": "oidcIdTokenSubject", "value": o.sub}),
        &o.tp,
        "s3.cloud-a.test",
        443,
        vec![(
            json!({"type": "cloudA-sts-oidc", "cloudAIAMRoleArn": "arn:aws:iam::123456789012:role/deployer"}),
            json!({}),
        )],
    )
    .await;
    let run = |extra: &[&str]| {
        let mut args = creds("s3.cloud-a.test", "443", "CloudAStsFederation");
        args.extend(extra);
        Edge::new(&t, &o.cid).env("SVC_EDGE_TOKEN", &o.token).args(&args).run()
    };
    let out = run(&["--format", "clouda-process"]).await;
    let v = out.ok().json();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "Version",
            "AccessKeyId",
            "SecretAccessKey",
            "SessionToken",
            "Expiration"
        ]
    );
    assert_eq!(v["Version"], 1);
    assert!(v["AccessKeyId"].as_str().unwrap().starts_with("ASIA"));
    assert!(svc_api::Timestamp::parse(v["Expiration"].as_str().unwrap()).is_some());
    let out = run(&["--format", "env"]).await;
    let names: Vec<&str> = out.ok().stdout.lines().map(|l| l.split('=').next().unwrap()).collect();
    assert_eq!(
        names,
        [
            "export AWS_ACCESS_KEY_ID",
            "export AWS_SECRET_ACCESS_KEY",
            "export AWS_SESSION_TOKEN"
        ]
    );
    // exec: the variables in CMD's environment.
    let mut args = vec![
        "exec",
        "--host",
        "s3.cloud-a.test",
        "--port",
        "443",
        "--type",
        "CloudAStsFederation",
        "--",
    ];
    args.extend(["sh", "-c", r#"printf '%s' "$AWS_ACCESS_KEY_ID" | cut -c1-4; test -n "$AWS_SECRET_ACCESS_KEY" && test -n "$AWS_SESSION_TOKEN""#]);
    let out = Edge::new(&t, &o.cid)
        .env("SVC_EDGE_TOKEN", &o.token)
        .args(&args)
        .run()
        .await;
    assert_eq!(out.ok().stdout.trim(), "ASIA");
}

#[tokio::test]
async fn exec_passes_variables_and_status_and_removes_x509_files() {
    let t = TestApp::start().await;
    let o = oidc_setup(&t, "exec-key").await;
    let dir = crate::support::harness::temp_dir().keep();
    let out_file = dir.join("seen");
    let script = format!(
        r#"printf '%s|%s' "$SVC_API_KEY" "$KEEP" > {}; exit 7"#,
        out_file.display()
    );
    let out = Edge::new(&t, &o.cid)
        .env("SVC_EDGE_TOKEN", &o.token)
        .env("KEEP", "inherited")
        .args(&[
            "exec",
            "--host",
            "api.partner.example",
            "--port",
            "443",
            "--type",
            "ApiKey",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .run()
        .await;
    assert_eq!(out.code, 7, "CMD's status: {}", out.stderr);
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), "exec-key|inherited");
    // Global flags after the command, before `--`; CMD's own flags after it stay CMD's.
    let out = Edge::bare()
        .env("SVC_EDGE_TOKEN", &o.token)
        .args(&[
            "exec",
            "--host",
            "api.partner.example",
            "--port",
            "443",
            "--type",
            "ApiKey",
            "--url",
            &t.base,
        ])
        .args(&[
            "--client-id",
            &o.cid,
            "--",
            "sh",
            "-c",
            "printf %s \"$SVC_API_KEY\"",
            "--url",
        ])
        .run()
        .await;
    assert_eq!(out.ok().stdout, "exec-key");
    // A command that dies of a signal: 128 + N.
    let out = Edge::new(&t, &o.cid)
        .env("SVC_EDGE_TOKEN", &o.token)
        .args(&[
            "exec",
            "--host",
            "api.partner.example",
            "--port",
            "443",
            "--type",
            "ApiKey",
            "--",
            "sh",
            "-c",
            "kill -TERM $$",
        ])
        .run()
        .await;
    assert_eq!(out.code, 128 + 15);
    // No credential: CMD does not run.
    let marker = dir.join("ran");
    let out = Edge::new(&t, &o.cid)
        .env("SVC_EDGE_TOKEN", &o.token)
        .args(&[
            "exec",
            "--host",
            "nowhere.example",
            "--port",
            "443",
            "--type",
            "ApiKey",
            "--",
            "touch",
            marker.to_str().unwrap(),
        ])
        .run()
        .await;
    assert_eq!(out.code, 4);
    assert!(!marker.exists());

    // X.509-SVID: key generated locally, files 0600 in a private directory, removed afterwards.
    grant(
        &t,
        json!({"type": "oidcIdTokenSubject", "value": o.sub}),
        &o.tp,
        "mtls.partner.example",
        8443,
        vec![(
            json!({"type": "x509svid", "spiffeId": "spiffe://acme.test/job"}),
            json!({}),
        )],
    )
    .await;
    let script = format!(
        r#"stat -c %a "$SVC_KEY_FILE" "$(dirname "$SVC_KEY_FILE")" > {d}/modes; cp "$SVC_CERT_FILE" {d}/chain.pem; head -1 "$SVC_KEY_FILE" > {d}/keyhead; echo "$SVC_KEY_FILE" > {d}/keypath"#,
        d = dir.display()
    );
    let out = Edge::new(&t, &o.cid)
        .env("SVC_EDGE_TOKEN", &o.token)
        .args(&[
            "exec",
            "--host",
            "mtls.partner.example",
            "--port",
            "8443",
            "--type",
            "X509Svid",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .run()
        .await;
    out.ok();
    assert_eq!(std::fs::read_to_string(dir.join("modes")).unwrap(), "600\n700\n");
    assert!(
        std::fs::read_to_string(dir.join("chain.pem"))
            .unwrap()
            .starts_with("-----BEGIN CERTIFICATE-----")
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("keyhead")).unwrap(),
        "-----BEGIN PRIVATE KEY-----\n"
    );
    let key_path = std::fs::read_to_string(dir.join("keypath")).unwrap();
    let key_path = std::path::Path::new(key_path.trim());
    assert!(
        !key_path.exists() && !key_path.parent().unwrap().exists(),
        "removed when CMD exits"
    );
    // json: the chain as received plus the local key.
    let out = Edge::new(&t, &o.cid)
        .env("SVC_EDGE_TOKEN", &o.token)
        .args(&creds("mtls.partner.example", "8443", "X509Svid"))
        .run()
        .await;
    let v = out.ok().json();
    assert_eq!(v["credentialType"], "X509Svid");
    assert!(
        v["data"]["certificateChain"]
            .as_str()
            .unwrap()
            .contains("BEGIN CERTIFICATE")
    );
    assert!(
        v["data"]["privateKey"]
            .as_str()
            .unwrap()
            .starts_with("-----BEGIN PRIVATE KEY-----")
    );
}

#[tokio::test]
async fn exit_statuses() {
    let t = TestApp::start().await;
    let o = oidc_setup(&t, "k").await;
    // 2: usage or configuration, naming the flag or variable.
    let out = Edge::new(&t, &o.cid)
        .env("SVC_EDGE_EVIDENCE", "cloudZ")
        .args(&["token"])
        .run()
        .await;
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("SVC_EDGE_EVIDENCE"), "{}", out.stderr);
    // 3: the service refused authentication (a token for another audience); its message shown.
    let wrong = mint(&[("sub", json!(o.sub)), ("aud", json!("someone-else"))]).await;
    for cmd in [vec!["token"], creds("api.partner.example", "443", "ApiKey")] {
        let out = Edge::new(&t, &o.cid)
            .env("SVC_EDGE_TOKEN", &wrong)
            .args(&cmd)
            .run()
            .await;
        assert_eq!(out.code, 3, "{cmd:?}: {}", out.stderr);
        assert!(out.stderr.contains("Unauthorized."), "{}", out.stderr);
        assert!(out.stdout.is_empty());
    }
    // 4: no credential (404 Unknown).
    let out = Edge::new(&t, &o.cid)
        .env("SVC_EDGE_TOKEN", &o.token)
        .args(&creds("unknown.example", "443", "ApiKey"))
        .run()
        .await;
    assert_eq!(out.code, 4, "{}", out.stderr);
    // 5: the service unreachable; the service failing upstream (500).
    let out = Edge::bare()
        .args(&["--url", "http://127.0.0.1:9", "--client-id", &o.cid, "token"])
        .env("SVC_EDGE_TOKEN", &o.token)
        .run()
        .await;
    assert_eq!(out.code, 5);
    grant(
        &t,
        json!({"type": "oidcIdTokenSubject", "value": o.sub}),
        &o.tp,
        "broken.example",
        443,
        vec![(json!({"type": "oauth-client-credential", "clientID": "c", "clientSecret": "s", "url": "http://127.0.0.1:9/token"}), json!({}))],
    )
    .await;
    let out = Edge::new(&t, &o.cid)
        .env("SVC_EDGE_TOKEN", &o.token)
        .args(&creds("broken.example", "443", "OAuthToken"))
        .run()
        .await;
    assert_eq!(out.code, 5, "{}", out.stderr);
    assert!(
        out.stderr.contains("500") && out.stderr.contains("internal error"),
        "{}",
        out.stderr
    );
}

/// Issue 31: a `--cache-dir` another local user owns, or may write, could read the token or hand
/// over one of theirs: it is not used (a warning says so) and nothing is written there.
#[tokio::test]
async fn a_cache_dir_another_user_controls_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let t = TestApp::start().await;
    let o = oidc_setup(&t, "shared-dir-key").await;
    let base = crate::support::harness::temp_dir().keep();
    let open = base.join("world-writable");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut dirs = vec![open];
    // Owned by another user (needs root to arrange, as CI runs).
    let foreign = base.join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(0o755)).unwrap();
    if std::process::Command::new("chown")
        .args(["65534:65534", foreign.to_str().unwrap()])
        .status()
        .is_ok_and(|s| s.success())
    {
        dirs.push(foreign);
    }
    for dir in dirs {
        let out = Edge::new(&t, &o.cid)
            .env("SVC_EDGE_TOKEN", &o.token)
            .env("SVC_EDGE_CACHE_DIR", dir.to_str().unwrap())
            .args(&creds("api.partner.example", "443", "ApiKey"))
            .run()
            .await;
        assert_eq!(out.ok().json()["data"]["apiKey"], "shared-dir-key");
        assert!(out.stderr.contains("cannot write the token cache"), "{}", out.stderr);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "{}", dir.display());
    }
}

#[tokio::test]
async fn cache_dir_keeps_only_the_edge_token_and_secrets_stay_off_stderr() {
    use std::os::unix::fs::PermissionsExt;
    let t = TestApp::start().await;
    let o = oidc_setup(&t, "cache-canary-key").await;
    let dir = crate::support::harness::temp_dir().keep().join("cache");
    let run = || {
        Edge::new(&t, &o.cid)
            .env("SVC_EDGE_TOKEN", &o.token)
            .env("SVC_EDGE_CACHE_DIR", dir.to_str().unwrap())
            .args(&creds("api.partner.example", "443", "ApiKey"))
            .run()
    };
    let first = run().await;
    let second = run().await;
    for out in [&first, &second] {
        assert_eq!(out.ok().json()["data"]["apiKey"], "cache-canary-key");
        assert!(!out.stderr.contains("cache-canary-key") && !out.stderr.contains(&o.token));
    }
    // The second run reused the cached token: one authentication, two credential calls.
    assert_eq!(auth_calls(&t).await, 1);
    assert_eq!(credential_calls(&t).await, 2);
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert_eq!(
        std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(text.contains("accessToken"));
    assert!(!text.contains("cache-canary-key"), "no credential in the cache dir");
    assert!(!text.contains(&o.token), "no evidence in the cache dir");
    // A cached token the service refuses (here: a damaged file): the client authenticates once
    // more and succeeds.
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["token"]["accessToken"] = json!("not.a.token");
    std::fs::write(&files[0], v.to_string()).unwrap();
    run().await.ok();
    assert_eq!(auth_calls(&t).await, 2);
    // Failing runs print no secret either.
    let out = Edge::new(&t, &o.cid)
        .env("SVC_EDGE_TOKEN", &o.token)
        .args(&creds("unknown.example", "443", "ApiKey"))
        .run()
        .await;
    assert!(!out.stderr.contains(&o.token));
}
