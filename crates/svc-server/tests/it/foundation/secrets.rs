//! Secrets are write-only: never in a response, a log line, an audit entry, or plaintext storage
//! (contract §1.9). Canary values make any leak visible.

use serde_json::json;

use crate::support::harness::{TestApp, contains, logs, totp_now};

#[tokio::test]
async fn passwords_and_totp_seeds_never_leak() {
    let t = TestApp::start().await;
    let canary = format!("canary-password-{}", uuid::Uuid::new_v4().simple());
    let r = t
        .post(
            "/api/v1/users",
            json!({"email": "canary@acme.test", "firstName": "Ca", "lastName": "Nary", "password": canary}),
        )
        .await;
    let uid = r.expect(201)["externalId"].as_str().unwrap().to_string();
    assert!(!r.text.contains(&canary));
    let tok = t.login("canary@acme.test", &canary).await;
    let enrol = t.post_as(&tok, "/api/v1/me/totp", json!({})).await;
    let seed = enrol.expect(201)["secret"].as_str().unwrap().to_string();
    let tid = enrol.body["id"].as_str().unwrap().to_string();
    t.post_as(
        &tok,
        &format!("/api/v1/me/totp/{tid}/verify"),
        json!({"code": totp_now(&seed)}),
    )
    .await
    .expect(200);
    // A failed login with a canary password must not log it either.
    let wrong = format!("wrong-canary-{}", uuid::Uuid::new_v4().simple());
    t.post_anon("/api/v1/login", json!({"email": "canary@acme.test", "password": wrong}))
        .await
        .expect(401);
    t.patch(
        &format!("/api/v1/users/{uid}"),
        json!({"password": format!("{canary}-2")}),
    )
    .await
    .expect(200);

    for path in [
        format!("/api/v1/users/{uid}"),
        "/api/v1/users".to_string(),
        "/api/v1/audit-logs?per-page=1000".to_string(),
    ] {
        let r = t.get(&path).await;
        for secret in [&canary, &seed, &wrong] {
            assert!(!r.text.contains(secret.as_str()), "{path} leaks a secret");
        }
    }
    let log = logs();
    for secret in [&canary, &seed, &wrong] {
        assert!(!log.contains(secret.as_str()), "a log line contains a secret");
    }
    if let Some(bytes) = t.sqlite_bytes() {
        for secret in [&canary, &seed] {
            assert!(!contains(&bytes, secret), "the SQLite file holds a secret in plaintext");
        }
        assert!(contains(&bytes, "canary@acme.test"), "the check reads the right file");
        // The encryption key lives in its own file, never in the database.
        let key = std::fs::read_to_string(t.dir.join("svc-encryption.key")).unwrap();
        assert!(!contains(&bytes, key.trim()));
    }
}

#[tokio::test]
async fn bootstrap_password_is_hashed_and_keys_are_sealed() {
    let t = TestApp::start().await;
    if let Some(bytes) = t.sqlite_bytes() {
        assert!(!contains(&bytes, crate::support::harness::ADMIN_PASSWORD));
        assert!(
            contains(&bytes, "$argon2id$") || !contains(&bytes, "password_hash"),
            "password hashes are sealed too"
        );
        assert!(!contains(&bytes, "$argon2id$"), "even the hash is encrypted at rest");
    }
}

#[tokio::test]
async fn a_wrong_encryption_key_refuses_to_start() {
    let t = TestApp::start().await;
    if crate::support::harness::use_postgres() {
        let mut env = t.env.clone();
        env.insert("SVC_ENCRYPTION_KEY".into(), svc_server::crypto::b64std(&[9u8; 32]));
        env.insert("SVC_PUBLIC_URL".into(), "http://localhost:1".into());
        let cfg = svc_server::Config::from_map(&env).unwrap();
        let err = svc_server::App::open(cfg).await.err().expect("must refuse");
        assert!(
            err.0.contains("is not the key this database was encrypted with"),
            "{err}"
        );
    } else {
        let mut env = t.env.clone();
        env.insert("SVC_ENCRYPTION_KEY".into(), svc_server::crypto::b64std(&[9u8; 32]));
        let cfg = svc_server::Config::from_map(&env).unwrap();
        let err = svc_server::App::open(cfg).await.err().expect("must refuse");
        assert!(
            err.0.contains("is not the key this database was encrypted with"),
            "{err}"
        );
    }
}

/// Architecture invariant 6: a stored row that cannot be read stops the start, whichever kind
/// it is and wherever it sits in the one-pass read, never silently dropped.
#[tokio::test]
async fn an_unreadable_entity_row_refuses_to_start() {
    let t = TestApp::start().await;
    let cfg = svc_server::Config::from_map(&t.env).unwrap();
    let store = svc_server::store::Store::open(&cfg.database_url).await.unwrap();
    for (kind, body, expected) in [
        ("role", "{not json", "role 00000000-0000-7000-8000-00000000bad1: "),
        ("bogus_kind", "{}", "unknown entity kind bogus_kind"),
    ] {
        let row = svc_server::store::EntityRow {
            kind: kind.into(),
            id: "00000000-0000-7000-8000-00000000bad1".into(),
            seq: 1,
            rs: None,
            body: body.into(),
            secrets: None,
            updated_at: 1,
        };
        let mut tx = store.begin().await.unwrap();
        tx.upsert_entity(&row).await.unwrap();
        tx.commit().await.unwrap();
        let err = svc_server::App::open(svc_server::Config::from_map(&t.env).unwrap())
            .await
            .err()
            .expect("must refuse");
        assert!(err.0.contains(expected), "{err}");
        let mut tx = store.begin().await.unwrap();
        tx.delete_entity(kind, &row.id, 2).await.unwrap();
        tx.commit().await.unwrap();
    }
    // With the rows gone, the same database starts again.
    let app = svc_server::App::open(svc_server::Config::from_map(&t.env).unwrap()).await;
    assert!(app.is_ok(), "{:?}", app.err());
    store.close().await;
}
