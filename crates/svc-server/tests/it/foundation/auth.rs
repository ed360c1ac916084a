//! Sign-in (contract §2.2), lock-out and unlock, MFA with TOTP (§2.4, §3.19), the CLI token (§2.1)
//! and the real binary.

use serde_json::json;

use crate::support::harness::{ADMIN_EMAIL, TestApp, totp_now, totp_step_offset};

const PW: &str = "a-long-enough-password";

#[tokio::test]
async fn login_wrong_password_and_unknown_user_are_401() {
    let t = TestApp::start().await;
    t.post_anon(
        "/api/v1/login",
        json!({"email": ADMIN_EMAIL, "password": "wrong-password-123"}),
    )
    .await
    .expect_error(401, "Invalid email or password.");
    t.post_anon(
        "/api/v1/login",
        json!({"email": "nobody@acme.test", "password": "whatever-123456"}),
    )
    .await
    .expect_error(401, "Invalid email or password.");
    t.post_anon("/api/v1/login", json!({"email": ADMIN_EMAIL}))
        .await
        .expect_error(400, "password: is required");
    // E-mail is case-insensitive.
    let r = t
        .post_anon(
            "/api/v1/login",
            json!({"email": "ADMIN@Acme.Test", "password": crate::support::harness::ADMIN_PASSWORD}),
        )
        .await;
    let b = r.expect(200);
    assert_eq!(b["tokenType"], "Bearer");
    assert_eq!(b["expiresIn"], 3600);
}

#[tokio::test]
async fn fifth_failure_locks_and_unlock_restores() {
    let t = TestApp::start().await;
    let uid = t.create_user("locky@acme.test", PW, &[]).await;
    for _ in 0..4 {
        t.post_anon(
            "/api/v1/login",
            json!({"email": "locky@acme.test", "password": "wrong-password-1"}),
        )
        .await
        .expect_error(401, "Invalid email or password.");
    }
    // Still unlocked after four failures: the right password works and resets the counter.
    t.login("locky@acme.test", PW).await;
    for _ in 0..5 {
        t.post_anon(
            "/api/v1/login",
            json!({"email": "locky@acme.test", "password": "wrong-password-1"}),
        )
        .await
        .expect_error(401, "Invalid email or password.");
    }
    // Locked: even the right password is refused.
    t.post_anon("/api/v1/login", json!({"email": "locky@acme.test", "password": PW}))
        .await
        .expect_error(401, "The account is locked.");
    let u = t.get(&format!("/api/v1/users/{uid}")).await;
    assert_eq!(u.expect(201)["isLocked"], true);
    let audit = t.audit("&category=Authentication").await;
    assert_eq!(
        audit
            .iter()
            .filter(|a| a["activity"] == "LoginFailed" && a["target"] == uid.as_str())
            .count(),
        10
    );
    let locked = t.audit("&category=Users").await;
    let lock = locked
        .iter()
        .find(|a| a["activity"] == "Locked")
        .expect("Locked audit entry");
    assert_eq!(lock["target"], uid.as_str());
    assert_eq!(lock["severity"], "Warning");

    let r = t.post(&format!("/api/v1/users/{uid}/unlock"), json!({})).await;
    assert_eq!(
        *r.expect(200),
        json!({"success": true, "message": "User unlocked.", "id": 0})
    );
    t.login("locky@acme.test", PW).await;
    let unlocked = t.audit("&category=Users").await;
    assert!(
        unlocked
            .iter()
            .any(|a| a["activity"] == "Unlocked" && a["actor"]["email"] == ADMIN_EMAIL)
    );
    t.post(&format!("/api/v1/users/{}/unlock", uuid::Uuid::new_v4()), json!({}))
        .await
        .expect_error(404, "Not found.");
}

/// A deleted user's token stays dead when a new user takes the deleted one's id (ids may be
/// chosen on create): it was issued before that user existed.
#[tokio::test]
async fn a_deleted_users_token_does_not_come_back_with_its_id() {
    let t = TestApp::start().await;
    const PW: &str = "a-long-enough-password";
    let id = t.create_user("ghost@acme.test", PW, &[]).await;
    let old = t.login("ghost@acme.test", PW).await;
    t.delete(&format!("/api/v1/users/{id}")).await.expect(204);
    t.advance_clock(1100);
    t.post(
        "/api/v1/users",
        json!({"externalId": id, "email": "heir@acme.test", "firstName": "He", "lastName": "Ir", "password": PW}),
    )
    .await
    .expect(201);
    t.get_as(&old, "/api/v1/users")
        .await
        .expect_error(401, "Not authenticated.");
    let new = t.login("heir@acme.test", PW).await;
    assert_eq!(
        t.get_as(&new, "/api/v1/users").await.status,
        403,
        "authenticated, no role"
    );
}

/// CLI token for SuperAdmin, minted by the real binary against the test database.
async fn cli_token(t: &TestApp) -> String {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"));
    cmd.args(["admin", "token", "--role", "SuperAdmin", "--ttl", "600"]);
    cmd.env_clear();
    for (k, v) in &t.env {
        cmd.env(k, v);
    }
    if !crate::support::harness::use_postgres() {
        cmd.current_dir(&t.dir);
    }
    let out = cmd.output().await.expect("run svc admin token");
    assert!(
        out.status.success(),
        "svc admin token failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("login response JSON");
    assert_eq!(v["tokenType"], "Bearer");
    assert_eq!(v["expiresIn"], 600);
    v["accessToken"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn cli_token_acts_as_system_with_its_role() {
    let t = TestApp::start().await;
    // A planted role of the same name, ordered before the system role by its id, is not the
    // one the operator gets.
    t.post(
        "/api/v1/roles",
        json!({"externalId": "00000000-0000-4000-8000-000000000001", "name": "SuperAdmin", "isActive": true, "permissions": []}),
    )
    .await
    .expect(201);
    let cli = cli_token(&t).await;
    t.get_as(&cli, "/api/v1/users").await.expect(200);
    let r = t
        .post_as(&cli, "/api/v1/roles", json!({"name": "made-by-cli", "isActive": true}))
        .await;
    let id = r.expect(201)["externalId"].as_str().unwrap().to_string();
    assert_eq!(r.body["createdBy"], "system");
    let audit = t.audit("&category=Roles").await;
    let e = audit.iter().find(|a| a["target"] == id.as_str()).unwrap();
    assert_eq!(e["actor"]["type"], "System");
    // CLI tokens cannot enrol TOTP (user endpoints).
    t.post_as(&cli, "/api/v1/me/totp", json!({}))
        .await
        .expect_error(403, "Forbidden.");
}

#[tokio::test]
async fn mfa_requires_a_real_totp_code() {
    let t = TestApp::start().await;
    t.create_user("mfa@acme.test", PW, &[]).await;
    let tok = t.login("mfa@acme.test", PW).await;
    let enrol = t.post_as(&tok, "/api/v1/me/totp", json!({})).await;
    let e = enrol.expect(201).clone();
    let secret = e["secret"].as_str().unwrap().to_string();
    assert_eq!(secret.len(), 32, "160-bit base32 secret");
    assert!(e["otpauthUri"].as_str().unwrap().starts_with("otpauth://totp/"));
    let tid = e["id"].as_str().unwrap();
    assert_eq!(
        enrol.header("location").map(str::to_string),
        Some(format!("/api/v1/me/totp/{tid}")),
        "§1.5: a create names what it created"
    );
    t.post_as(
        &tok,
        &format!("/api/v1/me/totp/{tid}/verify"),
        json!({"code": "000000"}),
    )
    .await
    .expect_error_prefix(400, "code:");
    let r = t
        .post_as(
            &tok,
            &format!("/api/v1/me/totp/{tid}/verify"),
            json!({"code": totp_now(&secret)}),
        )
        .await;
    assert_eq!(r.expect(200)["success"], true);

    // The admin has no authenticator: as a user it may not require MFA (self lock-out guard).
    t.put("/api/v1/signin-policies/mfa", json!({"mfaRequired": true}))
        .await
        .expect(403);
    let cli = cli_token(&t).await;
    let r = t
        .call(
            reqwest::Method::PUT,
            "/api/v1/signin-policies/mfa",
            Some(&cli),
            Some(json!({"mfaRequired": true})),
        )
        .await;
    assert_eq!(*r.expect(200), json!({"mfaRequired": true}));
    assert_eq!(
        *t.get("/api/v1/signin-policies").await.expect(200),
        json!({"ssoRequired": false, "mfaRequired": true})
    );

    t.post_anon("/api/v1/login", json!({"email": "mfa@acme.test", "password": PW}))
        .await
        .expect_error(401, "A valid TOTP code is required.");
    t.post_anon(
        "/api/v1/login",
        json!({"email": "mfa@acme.test", "password": PW, "totpCode": "123456"}),
    )
    .await
    .expect_error(401, "A valid TOTP code is required.");
    // Not 6 digits: an invalid body (400), which never counts towards the lock (5 of them here).
    for bad in ["12345", "1234567", "12345a", "", " 123456"] {
        t.post_anon(
            "/api/v1/login",
            json!({"email": "mfa@acme.test", "password": PW, "totpCode": bad}),
        )
        .await
        .expect_error(400, "totpCode: must be 6 digits");
    }
    // The enrolment's code is spent (RFC 6238 §5.2, issue 22): the next step's code signs in.
    let ok = t
        .post_anon(
            "/api/v1/login",
            json!({"email": "mfa@acme.test", "password": PW, "totpCode": totp_step_offset(&secret, 1)}),
        )
        .await;
    ok.expect(200);
    // The user now shows two-factor enabled.
    let users = t.get("/api/v1/users?filter=email:mfa@acme.test").await;
    assert_eq!(users.expect(200)["users"][0]["twoFactorEnabled"], true);
    // Users without an authenticator still sign in during the 24 h grace period.
    t.login(ADMIN_EMAIL, crate::support::harness::ADMIN_PASSWORD).await;
}

#[tokio::test]
async fn mfa_grace_period_over_locks_the_account() {
    let t = TestApp::start().await;
    let uid = t.create_user("late@acme.test", PW, &[]).await;
    let cli = cli_token(&t).await;
    t.call(
        reqwest::Method::PUT,
        "/api/v1/signin-policies/mfa",
        Some(&cli),
        Some(json!({"mfaRequired": true})),
    )
    .await
    .expect(200);
    // Move the grace-period anchors 25 hours into the past in storage, then restart.
    let t = age_mfa_anchors(t, &uid).await;
    t.post_anon("/api/v1/login", json!({"email": "late@acme.test", "password": PW}))
        .await
        .expect_error(401, "The account is locked.");
    let u = t.get(&format!("/api/v1/users/{uid}")).await;
    assert_eq!(u.expect(201)["isLocked"], true);
    // Unlock restarts the grace period.
    t.post(&format!("/api/v1/users/{uid}/unlock"), json!({}))
        .await
        .expect(200);
    t.login("late@acme.test", PW).await;
}

async fn age_mfa_anchors(t: TestApp, uid: &str) -> TestApp {
    use sqlx::Row;
    let past = svc_api::Timestamp(svc_server::clock::now_millis() - 25 * 3600 * 1000);
    let pool = sqlx::AnyPool::connect(&any_url(&t.db_url)).await.unwrap();
    for (kind, id, fields) in [
        ("user", uid.to_string(), vec!["created_at", "mfa_grace_from"]),
        ("settings", uuid::Uuid::nil().to_string(), vec!["mfa_enabled_at"]),
    ] {
        let row = sqlx::query("SELECT body FROM entities WHERE kind = $1 AND id = $2")
            .bind(kind)
            .bind(&id)
            .fetch_one(&pool)
            .await
            .unwrap();
        let mut body: serde_json::Value = serde_json::from_str(&row.get::<String, _>(0)).unwrap();
        for f in fields {
            body[f] = serde_json::to_value(past).unwrap();
        }
        sqlx::query("UPDATE entities SET body = $1 WHERE kind = $2 AND id = $3")
            .bind(body.to_string())
            .bind(kind)
            .bind(&id)
            .execute(&pool)
            .await
            .unwrap();
    }
    pool.close().await;
    t.restart().await
}

/// sqlx's Any driver wants `mode=rwc`-free SQLite URLs for an existing file.
pub fn any_url(db_url: &str) -> String {
    sqlx::any::install_default_drivers();
    db_url.to_string()
}

#[tokio::test]
async fn sso_required_needs_an_identity_provider() {
    let t = TestApp::start().await;
    t.put("/api/v1/signin-policies/sso", json!({"ssoRequired": true}))
        .await
        .expect_error_prefix(400, "ssoRequired:");
    let r = t
        .put("/api/v1/signin-policies/sso", json!({"ssoRequired": false}))
        .await;
    assert_eq!(*r.expect(200), json!({"ssoRequired": false}));
    // The flags are not required by their DTOs: absent or null is the default, false.
    for body in [json!({}), json!({"ssoRequired": null})] {
        assert_eq!(
            *t.put("/api/v1/signin-policies/sso", body).await.expect(200),
            json!({"ssoRequired": false})
        );
    }
    for body in [json!({}), json!({"mfaRequired": null})] {
        assert_eq!(
            *t.put("/api/v1/signin-policies/mfa", body).await.expect(200),
            json!({"mfaRequired": false})
        );
    }
    t.put("/api/v1/signin-policies/mfa", json!({"mfaRequired": "yes"}))
        .await
        .expect_error_prefix(400, "mfaRequired:");
}

#[tokio::test]
async fn restart_keeps_data_keys_and_tokens() {
    let t = TestApp::start().await;
    let r = t
        .post("/api/v1/roles", json!({"name": "survivor", "isActive": true}))
        .await;
    let id = r.expect(201)["externalId"].as_str().unwrap().to_string();
    let token = t.token.clone();
    let jwks_before = t.app.keys().jwks(svc_server::clock::now_millis());
    let t = t.restart().await;
    // The token minted before the restart still works; the data and the keys are the same.
    let r = t.get_as(&token, &format!("/api/v1/roles/{id}")).await;
    assert_eq!(r.expect(200)["name"], "survivor");
    assert_eq!(t.app.keys().jwks(svc_server::clock::now_millis()), jwks_before);
    // The bootstrap admin was not created twice.
    let users = t.get("/api/v1/users").await;
    assert_eq!(users.expect(200)["recordsTotal"], 1);
}

#[tokio::test]
async fn real_binary_serves_and_stops_on_sigterm() {
    let dir = crate::support::harness::temp_dir();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"));
    cmd.arg("serve")
        .current_dir(&dir)
        .env_clear()
        .env("SVC_LISTEN_ADDR", format!("127.0.0.1:{port}"))
        .env("SVC_LOG", "warn");
    cmd.kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let client = reqwest::Client::new();
    let mut healthy = false;
    for _ in 0..100 {
        if let Ok(r) = client
            .get(format!("http://127.0.0.1:{port}/api/v1/health"))
            .send()
            .await
        {
            healthy = r.status() == 200;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(healthy, "the binary did not serve /api/v1/health");
    // The default database and the generated key file were created with no set-up.
    assert!(dir.join("svc-data/svc.db").exists());
    let key = dir.join("svc-data/svc-encryption.key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let pid = child.id().unwrap();
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    let status = tokio::time::timeout(std::time::Duration::from_secs(15), child.wait())
        .await
        .expect("stops on SIGTERM")
        .unwrap();
    assert!(status.success(), "exit status {status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bad values and bad files are reported together, each once: the PEM files' contents are
/// checked with the values, not one at a time after them.
#[tokio::test]
async fn invalid_configuration_is_reported_at_once() {
    let dir = crate::support::harness::temp_dir();
    let no_cert = dir.join("no-cert.pem");
    std::fs::write(&no_cert, "no certificate here\n").unwrap();
    let missing = dir.join("missing.pem");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .arg("serve")
        .env_clear()
        .env("SVC_LISTEN_ADDR", "nowhere")
        .env("SVC_EDGE_TOKEN_TTL_SECONDS", "5")
        .env("SVC_DATABASE_URL", "postgres://u:p@127.0.0.1:1/db")
        .env("SVC_UPSTREAM_CA_BUNDLE", &no_cert)
        .env("SVC_CLOUDA_IID_CERTS", &no_cert)
        .env("SVC_CLOUDB_ROOTS", &no_cert)
        .env("SVC_X509_CA_CERT", &missing)
        .env("SVC_X509_CA_KEY", &no_cert)
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for key in [
        "SVC_LISTEN_ADDR",
        "SVC_EDGE_TOKEN_TTL_SECONDS",
        "SVC_ENCRYPTION_KEY",
        "SVC_UPSTREAM_CA_BUNDLE",
        "SVC_CLOUDA_IID_CERTS",
        "SVC_CLOUDB_ROOTS",
        "SVC_X509_CA_CERT",
    ] {
        assert_eq!(
            err.lines().filter(|l| l.starts_with(&format!("  - {key}"))).count(),
            1,
            "{key} not reported once in: {err}"
        );
    }
}

/// `svc migrate` reads no key file, so it runs where they are not mounted (a migration job).
#[tokio::test]
async fn migrate_runs_without_the_key_files() {
    let dir = crate::support::harness::temp_dir();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .arg("migrate")
        .env_clear()
        .env("SVC_DATABASE_URL", format!("sqlite://{}/svc.db", dir.display()))
        .env("SVC_UPSTREAM_CA_BUNDLE", "/etc/hostname")
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// `svc config check` prints the effective configuration (the file's values too), never a
/// secret (the database password included), and checks the key files `serve` would refuse.
#[tokio::test]
async fn config_check_prints_the_effective_configuration_without_secrets() {
    let dir = crate::support::harness::temp_dir();
    let file = dir.join("svc.env");
    std::fs::write(
        &file,
        "SVC_DATABASE_URL=postgres://svc:hunter2-pw@127.0.0.1:5432/db\nSVC_ENCRYPTION_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\nSVC_STACK=eu1\n",
    )
    .unwrap();
    let check = |extra: &[(&str, String)]| {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"));
        cmd.args(["config", "check", "--config"]).arg(&file).env_clear();
        for (k, v) in extra {
            cmd.env(k, v);
        }
        cmd.output()
    };
    let out = check(&[]).await.unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("SVC_STACK = eu1"), "{text}");
    assert!(
        text.contains("SVC_DATABASE_URL = postgres://svc:***@127.0.0.1:5432/db"),
        "{text}"
    );
    assert!(text.contains("SVC_ENCRYPTION_KEY = (set, hidden)"), "{text}");
    assert!(!text.contains("hunter2") && !text.contains("AAAAAAAA"), "{text}");
    // A CA bundle without a certificate is refused here as `serve` refuses it.
    let bundle = dir.join("bundle.pem");
    std::fs::write(&bundle, "no certificate here\n").unwrap();
    let out = check(&[("SVC_UPSTREAM_CA_BUNDLE", bundle.display().to_string())])
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("SVC_UPSTREAM_CA_BUNDLE"),
        "{out:?}"
    );
    // Every command answers --help.
    let help = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .args(["serve", "--help"])
        .output()
        .await
        .unwrap();
    assert!(help.status.success() && String::from_utf8_lossy(&help.stdout).contains("svc serve"));
}
