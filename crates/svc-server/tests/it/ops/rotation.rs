//! At-rest encryption-key rotation without downtime (issue 32, docs/OPERATIONS.md): `svc admin
//! keys rotate-encryption` under edge and management load seals every stored secret again under
//! a new key; every secret still opens after a restart with the new key alone, and the old key
//! alone no longer opens the database. SQLite rotates the key file; PostgreSQL the environment
//! keys of two nodes (`SVC_ENCRYPTION_KEY` new, `SVC_ENCRYPTION_KEY_PREVIOUS` old).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::json;
use sqlx::Row;

use crate::support::edge::*;
use crate::support::harness::{ADMIN_EMAIL, ADMIN_PASSWORD, TestApp, host_command, use_postgres};

const KEY: &str = "pk_live_rotation";

/// Every sealed value (`v1:<kid>:…`) in any text column of any table: (table.column, kid).
pub async fn sealed_values(db_url: &str) -> Vec<(String, String)> {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(db_url).await.unwrap();
    let columns: Vec<(String, String)> = if db_url.starts_with("postgres") {
        sqlx::query(
            "SELECT c.table_name::text, c.column_name::text FROM information_schema.columns c \
             JOIN information_schema.tables t ON t.table_name = c.table_name AND t.table_schema = c.table_schema \
             WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' AND c.data_type = 'text'",
        )
        .fetch_all(&pool)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
    } else {
        let tables: Vec<String> = sqlx::query("SELECT name FROM sqlite_master WHERE type = 'table'")
            .fetch_all(&pool)
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let mut out = Vec::new();
        for t in tables {
            for r in sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT name, type FROM pragma_table_info('{t}')"
            )))
            .fetch_all(&pool)
            .await
            .unwrap()
            {
                let ty: String = r.get(1);
                if ty.eq_ignore_ascii_case("TEXT") {
                    out.push((t.clone(), r.get(0)));
                }
            }
        }
        out
    };
    let mut found = Vec::new();
    for (t, c) in columns {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT CAST({c} AS TEXT) FROM {t} WHERE CAST({c} AS TEXT) LIKE 'v1:%'"
        )))
        .fetch_all(&pool)
        .await
        .unwrap();
        for r in rows {
            let v: String = r.get(0);
            let kid = v.split(':').nth(1).unwrap_or_default().to_string();
            found.push((format!("{t}.{c}"), kid));
        }
    }
    pool.close().await;
    found
}

/// The key id of a base64 key (as the service names it).
fn kid(b64: &str) -> String {
    let k = svc_server::crypto::b64std_decode(b64.trim()).unwrap();
    svc_server::crypto::aead::key_id(&k.try_into().unwrap())
}

struct Load {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    bad: Arc<AtomicU64>,
    writes: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// Edge requests on every node and management writes (credential providers, each with a
/// secret) on the first, until stopped.
async fn load(nodes: &[&TestApp], token: &str, body: &serde_json::Value) -> Load {
    let l = Load {
        stop: Arc::new(AtomicBool::new(false)),
        ok: Arc::new(AtomicU64::new(0)),
        bad: Arc::new(AtomicU64::new(0)),
        writes: Arc::new(AtomicU64::new(0)),
        tasks: Vec::new(),
    };
    let mut tasks = Vec::new();
    for n in nodes {
        for _ in 0..2 {
            let (url, client, token, body) = (
                n.url("/edge/v1/credentials"),
                n.client.clone(),
                token.to_string(),
                body.clone(),
            );
            let (stop, ok, bad) = (l.stop.clone(), l.ok.clone(), l.bad.clone());
            tasks.push(tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let r = client.post(&url).bearer_auth(&token).json(&body).send().await.unwrap();
                    let status = r.status().as_u16();
                    let text = r.text().await.unwrap();
                    if status == 200 && text.contains(KEY) {
                        ok.fetch_add(1, Ordering::Relaxed);
                    } else {
                        eprintln!("edge answer during the rotation: {status} {text}");
                        bad.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
    }
    let (url, client, admin) = (
        nodes[0].url("/api/v2/credential-providers"),
        nodes[0].client.clone(),
        nodes[0].token.clone(),
    );
    let (stop, writes, bad) = (l.stop.clone(), l.writes.clone(), l.bad.clone());
    tasks.push(tokio::spawn(async move {
        let mut i = 0;
        while !stop.load(Ordering::Relaxed) {
            i += 1;
            let r = client
                .post(&url)
                .bearer_auth(&admin)
                .json(&json!({"type": "apikey", "name": format!("during-rotation-{i}"), "isActive": true, "apiKey": format!("k-{i}")}))
                .send()
                .await
                .unwrap();
            if r.status().as_u16() == 201 {
                writes.fetch_add(1, Ordering::Relaxed);
            } else {
                eprintln!("write during the rotation: {}", r.status());
                bad.fetch_add(1, Ordering::Relaxed);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }));
    Load { tasks, ..l }
}

impl Load {
    async fn stop(self) -> (u64, u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            t.await.unwrap();
        }
        (
            self.ok.load(Ordering::Relaxed),
            self.writes.load(Ordering::Relaxed),
            self.bad.load(Ordering::Relaxed),
        )
    }
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The worked example, an edge token and body for it, and a second user with a password.
async fn configured(t: &TestApp) -> (String, serde_json::Value) {
    let oidc = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let ex = worked_example(t, &oidc, KEY).await;
    t.create_user("rotated@acme.test", "a-long-enough-password", &[]).await;
    let id_token = mock_id_token(&[("sub", "system:job:build"), ("aud", &t.base)]).await;
    let token = auth_oidc(t, &ex.client_id, &id_token).await;
    (token, example_body(&id_token))
}

/// What must hold after the rotation: every sealed value under `new`, in a sealed column.
async fn all_under(db_url: &str, new: &str, old: &str) {
    let sealed = sealed_values(db_url).await;
    assert!(sealed.len() >= 6, "{sealed:?}");
    for (place, k) in &sealed {
        assert!(
            svc_server::store::sealed::SEALED
                .iter()
                .any(|c| format!("{}.{}", c.table, c.column) == *place),
            "a sealed value outside the store's sealed columns: {place}"
        );
        assert_eq!(k, new, "{place} still under {k} (old {old})");
    }
}

/// After a restart on the new key alone: the stored API key is issued, the users sign in.
async fn still_serves(t: &TestApp, token: &str, body: &serde_json::Value) {
    let r = t
        .send(
            t.client
                .post(t.url("/edge/v1/credentials"))
                .bearer_auth(token)
                .json(body),
        )
        .await;
    assert!(r.expect(200).to_string().contains(KEY), "{}", r.text);
    t.login("rotated@acme.test", "a-long-enough-password").await;
    t.login(ADMIN_EMAIL, ADMIN_PASSWORD).await;
    let cps = t.get("/api/v2/credential-providers?per-page=1000").await;
    assert!(cps.expect(200)["credentialProviders"].as_array().unwrap().len() > 1);
}

#[tokio::test]
async fn rotating_the_key_file_under_load_reseals_every_secret_and_retires_the_old_key() {
    if use_postgres() {
        eprintln!("the key-file rotation is SQLite's (PostgreSQL nodes take their keys from the environment)");
        return;
    }
    let t = TestApp::start().await;
    let (token, body) = configured(&t).await;
    let key_file = t.dir.join("svc-encryption.key");
    let old_text = std::fs::read_to_string(&key_file).unwrap();
    let old = kid(&old_text);
    let l = load(&[&t], &token, &body).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let out = host_command(&t.env, &["admin", "keys", "rotate-encryption"]).await;
    let (ok, writes, bad) = l.stop().await;
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    eprintln!(
        "rotation: {} | {}",
        stdout(&out).trim(),
        stderr(&out).trim().replace('\n', " | ")
    );
    assert!(stdout(&out).starts_with("rotated: "), "{}", stdout(&out));
    assert_eq!(
        bad, 0,
        "every answer during the rotation was 200 / 201 ({ok} edge, {writes} writes)"
    );
    assert!(ok > 0 && writes > 0);
    let new_text = std::fs::read_to_string(&key_file).unwrap();
    assert_eq!(new_text.lines().count(), 1, "the old key left the key file");
    let new = kid(&new_text);
    assert_ne!(new, old);
    all_under(&t.db_url, &new, &old).await;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    // Running it again rotates again, the idle service as well.
    let again = host_command(&t.env, &["admin", "keys", "rotate-encryption"]).await;
    assert!(again.status.success(), "{}", stderr(&again));
    let (old, new_text) = (new, std::fs::read_to_string(&key_file).unwrap());
    let new = kid(&new_text);
    assert!(
        stdout(&again).contains(&format!("under key id {new}")),
        "{}",
        stdout(&again)
    );
    assert_ne!(new, old);
    all_under(&t.db_url, &new, &old).await;

    // The new key alone opens everything; the old key alone opens nothing.
    let t = t.restart().await;
    still_serves(&t, &token, &body).await;
    let env = t.env.clone();
    let mut t = t;
    t.shutdown().await;
    std::fs::write(&key_file, &old_text).unwrap();
    let refused = svc_server::App::open(svc_server::Config::from_map(&env).unwrap())
        .await
        .err()
        .expect("the old key does not open the database");
    assert!(
        refused.to_string().contains(&format!("re-encrypted with key id {new}")),
        "{refused}"
    );
    std::fs::write(&key_file, &new_text).unwrap();
}

#[tokio::test]
async fn rotating_the_environment_keys_of_two_nodes_under_load_reseals_every_secret() {
    if !use_postgres() {
        eprintln!("the environment-key rotation across nodes runs in the PostgreSQL pass");
        return;
    }
    let t = TestApp::start().await;
    let (token, body) = configured(&t).await;
    let old_b64 = t.env["SVC_ENCRYPTION_KEY"].clone();
    let new_b64 = svc_server::crypto::b64std(&svc_server::crypto::random_bytes::<32>());
    let (old, new) = (kid(&old_b64), kid(&new_b64));
    let mut both: BTreeMap<String, String> = t.env.clone();
    both.insert("SVC_ENCRYPTION_KEY".into(), new_b64.clone());
    both.insert("SVC_ENCRYPTION_KEY_PREVIOUS".into(), old_b64.clone());

    // A running node without the new key: the rotation does not start.
    let early = host_command(&both, &["admin", "keys", "rotate-encryption", "--wait", "2"]).await;
    assert_eq!(early.status.code(), Some(1), "{}", stderr(&early));
    assert!(
        stderr(&early).contains(&format!("do not hold key id {new}")),
        "{}",
        stderr(&early)
    );
    assert!(
        sealed_values(&t.db_url).await.iter().all(|(_, k)| *k == old),
        "nothing changed"
    );

    // Every node gets both keys (a rolling restart): they keep sealing with the old.
    let (new2, old2) = (new_b64.clone(), old_b64.clone());
    let a = t
        .restart_with(move |env| {
            env.insert("SVC_ENCRYPTION_KEY".into(), new2);
            env.insert("SVC_ENCRYPTION_KEY_PREVIOUS".into(), old2);
        })
        .await;
    let b = a.join().await;
    a.post(
        "/api/v2/credential-providers",
        json!({"type": "apikey", "name": "before-switch", "isActive": true, "apiKey": "k"}),
    )
    .await
    .expect(201);
    assert!(
        sealed_values(&a.db_url).await.iter().all(|(_, k)| *k == old),
        "still sealed with the old key"
    );

    let l = load(&[&a, &b], &token, &body).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let out = host_command(&both, &["admin", "keys", "rotate-encryption"]).await;
    let (ok, writes, bad) = l.stop().await;
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    eprintln!(
        "rotation: {} | {}",
        stdout(&out).trim(),
        stderr(&out).trim().replace('\n', " | ")
    );
    assert!(
        stdout(&out).contains("remove SVC_ENCRYPTION_KEY_PREVIOUS"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        bad, 0,
        "every answer during the rotation was 200 / 201 ({ok} edge, {writes} writes)"
    );
    assert!(ok > 0 && writes > 0);
    all_under(&a.db_url, &new, &old).await;
    // A write on the other node after the rotation: under the new key too.
    b.post(
        "/api/v2/credential-providers",
        json!({"type": "apikey", "name": "after", "isActive": true, "apiKey": "k"}),
    )
    .await
    .expect(201);
    all_under(&a.db_url, &new, &old).await;

    let mut b = b;
    b.shutdown().await;
    let new3 = new_b64.clone();
    let a = a
        .restart_with(move |env| {
            env.insert("SVC_ENCRYPTION_KEY".into(), new3);
            env.remove("SVC_ENCRYPTION_KEY_PREVIOUS");
        })
        .await;
    still_serves(&a, &token, &body).await;
    let mut only_old = a.env.clone();
    only_old.insert("SVC_ENCRYPTION_KEY".into(), old_b64);
    let refused = svc_server::App::open(svc_server::Config::from_map(&only_old).unwrap())
        .await
        .err()
        .expect("the old key does not open the database");
    assert!(
        refused.to_string().contains(&format!("re-encrypted with key id {new}")),
        "{refused}"
    );
}
