//! Backup and restore (issue 32, docs/OPERATIONS.md): `svc admin backup --out` takes a
//! consistent copy of a SQLite database under edge load, with a manifest (never the key); `svc
//! admin restore --in` puts it into a fresh data directory, and the restored service issues the
//! same stored credential and lists the same entities and events; restore refuses to overwrite,
//! a running database and a backup of a newer schema. On PostgreSQL, a `pg_dump` is checked by
//! `svc admin backup --verify` (restored into a scratch database, migrated, every secret opened).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::edge::*;
use crate::support::harness::{TestApp, host_command, temp_dir, use_postgres};

const KEY: &str = "pk_live_backup";

fn out(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn err(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The ids of a list (every page of 1000).
async fn ids(t: &TestApp, path: &str, key: &str) -> BTreeSet<String> {
    let r = t.get(&format!("{path}?per-page=1000")).await;
    r.expect(200)[key]
        .as_array()
        .unwrap_or_else(|| panic!("{path}: {}", r.text))
        .iter()
        .map(|e| {
            e["externalId"]
                .as_str()
                .or(e["eventId"].as_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

const LISTS: &[(&str, &str)] = &[
    ("/api/v1/trust-providers", "trustProviders"),
    ("/api/v1/client-workloads", "clientWorkloads"),
    ("/api/v1/server-workloads", "serverWorkloads"),
    ("/api/v2/credential-providers", "credentialProviders"),
    ("/api/v2/access-policies", "entities"),
    ("/api/v1/users", "users"),
    ("/api/v1/roles", "roles"),
];

async fn total(t: &TestApp, list: &str) -> u64 {
    t.get(&format!("/api/v1/{list}?per-page=1&span-last-minutes=120"))
        .await
        .expect(200)["recordsTotal"]
        .as_u64()
        .unwrap()
}

#[tokio::test]
async fn a_backup_taken_under_edge_load_restores_into_a_fresh_directory_and_serves_the_same() {
    if use_postgres() {
        eprintln!("svc admin backup --out is SQLite's; the PostgreSQL dump is checked in its own test");
        return;
    }
    let t = TestApp::start().await;
    let oidc = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let ex = worked_example(&t, &oidc, KEY).await;
    for i in 0..5 {
        t.post(
            "/api/v1/client-workloads",
            json!({"name": format!("extra-{i}"), "isActive": true}),
        )
        .await
        .expect(204);
    }
    let id_token = mock_id_token(&[("sub", "system:job:build"), ("aud", &t.base)]).await;
    let token = auth_oidc(&t, &ex.client_id, &id_token).await;
    let body = example_body(&id_token);

    // Edge load while the backup is taken.
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicU64::new(0));
    let mut load = Vec::new();
    for _ in 0..3 {
        let (client, url, token, body, stop, answered) = (
            t.client.clone(),
            t.url("/edge/v1/credentials"),
            token.clone(),
            body.clone(),
            stop.clone(),
            answered.clone(),
        );
        load.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let r = client.post(&url).bearer_auth(&token).json(&body).send().await.unwrap();
                assert_eq!(r.status(), 200);
                answered.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let dir = temp_dir();
    let file = dir.join("svc.backup");
    let file_s = file.display().to_string();
    let o = host_command(&t.env, &["admin", "backup", "--out", &file_s]).await;
    let during = answered.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    for l in load {
        l.await.unwrap();
    }
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        answered.load(Ordering::Relaxed) > during,
        "the edge answered while the backup was taken"
    );
    let manifest: Value = serde_json::from_str(&out(&o)).unwrap();
    let key_text = std::fs::read_to_string(t.dir.join("svc-encryption.key")).unwrap();
    let key_id = {
        let k = svc_server::crypto::b64std_decode(key_text.trim()).unwrap();
        svc_server::crypto::aead::key_id(&k.try_into().unwrap())
    };
    assert_eq!(manifest["format"], "svc-backup 1");
    assert_eq!(manifest["schemaVersion"], svc_server::store::Store::LATEST_SCHEMA);
    assert_eq!(manifest["keyId"], key_id.as_str());
    assert_eq!(manifest["counts"]["entities.client_workload"], 6, "{manifest}");
    let events = manifest["counts"]["authorizationEvents"].as_i64().unwrap();
    assert!(events > 0, "{manifest}");
    assert!(
        !out(&o).contains(key_text.trim()) && !err(&o).contains(key_text.trim()),
        "never the key"
    );
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "nothing left beside the backup"
    );
    let again = host_command(&t.env, &["admin", "backup", "--out", &file_s]).await;
    assert_eq!(again.status.code(), Some(1));
    assert!(err(&again).contains("exists"), "{}", err(&again));
    let v = host_command(&t.env, &["admin", "backup", "--verify", &file_s]).await;
    assert!(v.status.success(), "{}", err(&v));

    // Not into the running service's own database.
    let busy = host_command(&t.env, &["admin", "restore", "--in", &file_s, "--force"]).await;
    assert_eq!(busy.status.code(), Some(1));
    assert!(err(&busy).contains("open in another process"), "{}", err(&busy));

    // Into a fresh directory, with the backup's key file.
    let fresh = temp_dir();
    let db2 = fresh.join("svc-data/svc.db");
    let env2: BTreeMap<String, String> =
        [("SVC_DATABASE_URL".to_string(), format!("sqlite://{}", db2.display()))].into();
    let key_file = t.dir.join("svc-encryption.key").display().to_string();
    let r = host_command(&env2, &["admin", "restore", "--in", &file_s, "--key-file", &key_file]).await;
    assert!(r.status.success(), "{}", err(&r));
    assert!(out(&r).contains("restored"), "{}", out(&r));
    let twice = host_command(&env2, &["admin", "restore", "--in", &file_s, "--key-file", &key_file]).await;
    assert_eq!(twice.status.code(), Some(1));
    assert!(err(&twice).contains("a database exists at"), "{}", err(&twice));

    let r = TestApp::start_with(|env| {
        env.insert("SVC_DATABASE_URL".into(), format!("sqlite://{}", db2.display()));
    })
    .await;
    for (path, key) in LISTS {
        assert_eq!(ids(&r, path, key).await, ids(&t, path, key).await, "{path}");
    }
    // The events of the backup's moment: as many as its manifest says, each one of the original's.
    assert_eq!(total(&r, "authorization-events").await as i64, events);
    let token = auth_oidc(
        &r,
        &ex.client_id,
        &mock_id_token(&[("sub", "system:job:build"), ("aud", &r.base)]).await,
    )
    .await;
    let c = r
        .send(
            r.client
                .post(r.url("/edge/v1/credentials"))
                .bearer_auth(&token)
                .json(&body),
        )
        .await;
    assert!(
        c.expect(200).to_string().contains(KEY),
        "the stored credential: {}",
        c.text
    );
    let restored = ids(&r, "/api/v1/authorization-events", "authorizationEvents").await;
    let original = ids(&t, "/api/v1/authorization-events", "authorizationEvents").await;
    let new_here: Vec<_> = restored.difference(&original).collect();
    assert!(
        new_here.len() <= 8,
        "only the restored service's own events are new: {new_here:?}"
    );
}

#[tokio::test]
async fn restore_refuses_a_backup_of_a_newer_schema_and_a_file_that_is_not_a_backup() {
    if use_postgres() {
        eprintln!("svc admin restore is SQLite's");
        return;
    }
    let t = TestApp::start().await;
    let dir = temp_dir();
    let file = dir.join("svc.backup");
    let o = host_command(&t.env, &["admin", "backup", "--out", &file.display().to_string()]).await;
    assert!(o.status.success(), "{}", err(&o));
    // A newer svc's backup: its schema has a migration this one does not know.
    {
        use sqlx::Connection;
        let opts = <sqlx::sqlite::SqliteConnectOptions as std::str::FromStr>::from_str(&format!(
            "sqlite://{}",
            file.display()
        ))
        .unwrap()
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Delete);
        let mut c = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
        sqlx::query("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)")
            .execute(&mut c)
            .await
            .unwrap();
        c.close().await.unwrap();
    }
    let fresh = temp_dir();
    let env2: BTreeMap<String, String> = [(
        "SVC_DATABASE_URL".to_string(),
        format!("sqlite://{}", fresh.join("svc.db").display()),
    )]
    .into();
    let key_file = t.dir.join("svc-encryption.key").display().to_string();
    let r = host_command(
        &env2,
        &[
            "admin",
            "restore",
            "--in",
            &file.display().to_string(),
            "--key-file",
            &key_file,
        ],
    )
    .await;
    assert_eq!(r.status.code(), Some(1));
    assert!(
        err(&r).contains("is a backup of a newer svc (schema version 99"),
        "{}",
        err(&r)
    );
    assert!(!fresh.join("svc.db").exists(), "nothing restored");
    // Not a backup at all; no key.
    let junk = dir.join("junk");
    std::fs::write(&junk, "hello").unwrap();
    let r = host_command(
        &env2,
        &[
            "admin",
            "restore",
            "--in",
            &junk.display().to_string(),
            "--key-file",
            &key_file,
        ],
    )
    .await;
    assert_eq!(r.status.code(), Some(1));
    assert!(
        err(&r).contains("is neither a backup of svc admin backup nor a PostgreSQL dump"),
        "{}",
        err(&r)
    );
    let r = host_command(&env2, &["admin", "restore", "--in", &file.display().to_string()]).await;
    assert_eq!(r.status.code(), Some(2), "{}", err(&r));
    assert!(err(&r).contains("no key to open the backup with"), "{}", err(&r));
}

/// `pg_dump` beside the PostgreSQL server the peers run, or on the path.
fn pg_tool(name: &str) -> String {
    for dir in [
        "/usr/lib/postgresql/15/bin",
        "/usr/lib/postgresql/16/bin",
        "/usr/lib/postgresql/17/bin",
    ] {
        let p = format!("{dir}/{name}");
        if std::path::Path::new(&p).exists() {
            return p;
        }
    }
    name.to_string()
}

#[tokio::test]
async fn on_postgresql_a_pg_dump_is_verified_to_restore_and_decrypt() {
    if !use_postgres() {
        eprintln!("the pg_dump check runs in the PostgreSQL pass");
        return;
    }
    let t = TestApp::start().await;
    let oidc = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let ex = worked_example(&t, &oidc, KEY).await;
    let id_token = mock_id_token(&[("sub", "system:job:build"), ("aud", &t.base)]).await;
    auth_oidc(&t, &ex.client_id, &id_token).await;
    t.flush_events().await;
    let dir = temp_dir();
    let dump = dir.join("svc.dump");
    let o = tokio::process::Command::new(pg_tool("pg_dump"))
        .args(["--format=custom", "--file"])
        .arg(&dump)
        .arg(&t.db_url)
        .output()
        .await
        .expect("pg_dump (PostgreSQL's client tools)");
    assert!(o.status.success(), "{}", err(&o));
    let v = host_command(&t.env, &["admin", "backup", "--verify", &dump.display().to_string()]).await;
    assert!(v.status.success(), "{}", err(&v));
    let summary: Value = serde_json::from_str(&out(&v)).unwrap();
    assert_eq!(summary["counts"]["entities.credential_provider"], 1, "{summary}");
    assert!(summary["sealedValues"].as_u64().unwrap() >= 5, "{summary}");
    // Another key opens nothing.
    let mut wrong = t.env.clone();
    wrong.insert(
        "SVC_ENCRYPTION_KEY".into(),
        svc_server::crypto::b64std(&svc_server::crypto::random_bytes::<32>()),
    );
    let v = host_command(&wrong, &["admin", "backup", "--verify", &dump.display().to_string()]).await;
    assert_eq!(v.status.code(), Some(1));
    assert!(
        err(&v).contains("the backup's secrets are sealed with key id"),
        "{}",
        err(&v)
    );
    // No scratch database is left.
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&t.db_url).await.unwrap();
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM pg_database WHERE datname LIKE 'svc_verify_%'")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    assert_eq!(left, 0);
    // --out is SQLite's.
    let o = host_command(
        &t.env,
        &["admin", "backup", "--out", &dir.join("x").display().to_string()],
    )
    .await;
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("pg_dump"), "{}", err(&o));
}

/// Issue 31, the fourth read: only a backup's secrets are sealed, so its manifest authenticates
/// the rest. Whoever can write a backup file (it is kept apart from the key) must not be able to
/// give its own account SuperAdmin in it and have verify and restore take it.
#[tokio::test]
async fn a_backup_changed_after_it_was_made_is_refused() {
    if use_postgres() {
        eprintln!("svc admin backup --out is SQLite's");
        return;
    }
    let t = TestApp::start().await;
    let me = "auditor-intern@example.test";
    t.user_with_role(me, json!([{"name": "Workload Events", "read": true}]))
        .await;
    let users = t.get(&format!("/api/v1/users?filter=email:{me}")).await;
    let my_id = users.expect(200)["users"][0]["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let dir = temp_dir();
    let file = dir.join("svc.backup");
    let file_s = file.display().to_string();
    let o = host_command(&t.env, &["admin", "backup", "--out", &file_s]).await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("\"mac\""),
        "the manifest printed has its MAC"
    );
    let verified = host_command(&t.env, &["admin", "backup", "--verify", &file_s]).await;
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stderr)
    );
    // The attacker edits the file: no key needed.
    {
        use sqlx::Connection;
        let opts = <sqlx::sqlite::SqliteConnectOptions as std::str::FromStr>::from_str(&format!(
            "sqlite://{}",
            file.display()
        ))
        .unwrap()
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Delete);
        let mut c = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
        let super_admin = svc_server::domain::records::SUPER_ADMIN_ROLE.to_string();
        let done = sqlx::query(
            "UPDATE entities SET body = json_set(body, '$.roles', json_array(?)) WHERE kind = 'user' AND id = ?",
        )
        .bind(&super_admin)
        .bind(&my_id)
        .execute(&mut c)
        .await
        .unwrap();
        assert_eq!(done.rows_affected(), 1);
        c.close().await.unwrap();
    }
    let refused = "does not match its manifest's MAC: it was changed after svc admin backup made it";
    let v = host_command(&t.env, &["admin", "backup", "--verify", &file_s]).await;
    assert!(!v.status.success());
    assert!(
        String::from_utf8_lossy(&v.stderr).contains(refused),
        "{}",
        String::from_utf8_lossy(&v.stderr)
    );
    let fresh = temp_dir();
    let db2 = fresh.join("svc-data/svc.db");
    let env2: BTreeMap<String, String> =
        [("SVC_DATABASE_URL".to_string(), format!("sqlite://{}", db2.display()))].into();
    let key_file = t.dir.join("svc-encryption.key").display().to_string();
    let r = host_command(&env2, &["admin", "restore", "--in", &file_s, "--key-file", &key_file]).await;
    assert!(!r.status.success());
    assert!(
        String::from_utf8_lossy(&r.stderr).contains(refused),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(!db2.exists(), "nothing restored");
}
