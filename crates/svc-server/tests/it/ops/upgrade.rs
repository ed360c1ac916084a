//! Upgrades (issue 32, docs/OPERATIONS.md): databases written by older svc binaries
//! (`tests/fixtures/upgrade/<commit>/`, made by `make.sh` there with that commit's own binary: a
//! SQLite file with its key file, a PostgreSQL dump with its key) migrate forward with the
//! current code with everything intact — the same entities, events and users, every secret
//! opening, the stored credential issued — migrating again changes nothing, and a node whose
//! binary is older than the database's schema refuses to start.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::edge::*;
use crate::support::harness::{TestApp, fresh_database, host_command, temp_dir, use_postgres};

/// The fixtures, oldest first: (commit, schema version its binary wrote).
const FIXTURES: &[(&str, i64)] = &[("449e7f1", 3), ("7f61204", 5)];

fn fixture(commit: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/upgrade")
        .join(commit)
}

/// A fresh database holding the fixture of `commit` as its binary left it; the configuration
/// changes that start a service on it.
async fn old_database(commit: &str) -> (crate::support::harness::TempDir, Vec<(String, String)>) {
    let dir = temp_dir();
    let f = fixture(commit);
    if use_postgres() {
        let url = fresh_database(&dir).await;
        let sql: String = std::fs::read_to_string(f.join("postgres.sql")).unwrap();
        {
            use sqlx::Connection;
            // A connection of its own: the dump empties its search_path.
            let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut c).await.unwrap();
            c.close().await.unwrap();
        }
        let key = std::fs::read_to_string(f.join("postgres.key"))
            .unwrap()
            .trim()
            .to_string();
        (
            dir,
            vec![("SVC_DATABASE_URL".into(), url), ("SVC_ENCRYPTION_KEY".into(), key)],
        )
    } else {
        std::fs::copy(f.join("svc.db"), dir.join("svc.db")).unwrap();
        std::fs::copy(f.join("svc-encryption.key"), dir.join("svc-encryption.key")).unwrap();
        let url = format!("sqlite://{}", dir.join("svc.db").display());
        (dir, vec![("SVC_DATABASE_URL".into(), url)])
    }
}

async fn schema_versions(url: &str) -> Vec<i64> {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(url).await.unwrap();
    let v: Vec<i64> = sqlx::query_scalar::<_, i64>("SELECT version FROM schema_migrations ORDER BY version")
        .fetch_all(&pool)
        .await
        .unwrap();
    pool.close().await;
    v
}

#[tokio::test]
async fn databases_written_by_older_releases_migrate_forward_with_everything_intact() {
    for (commit, old_schema) in FIXTURES {
        let f = fixture(commit);
        if !f.exists() {
            panic!(
                "fixture {} missing: make it with tests/fixtures/upgrade/make.sh",
                f.display()
            );
        }
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(f.join(if use_postgres() {
                "expected-postgres.json"
            } else {
                "expected-sqlite.json"
            }))
            .unwrap(),
        )
        .unwrap();
        let (dir, config) = old_database(commit).await;
        let url = config[0].1.clone();
        assert_eq!(*schema_versions(&url).await.last().unwrap(), *old_schema, "{commit}");
        let t = TestApp::start_with(|env| {
            for (k, v) in &config {
                env.insert(k.clone(), v.clone());
            }
        })
        .await;
        // Every migration ran once, in order.
        let latest = svc_server::store::Store::LATEST_SCHEMA;
        assert_eq!(
            schema_versions(&url).await,
            svc_server::store::Store::schema_versions(),
            "{commit}"
        );
        // The same entities.
        for (path, ids) in expected["lists"].as_object().unwrap() {
            let key = match path.as_str() {
                "/api/v1/trust-providers" => "trustProviders",
                "/api/v1/client-workloads" => "clientWorkloads",
                "/api/v1/server-workloads" => "serverWorkloads",
                "/api/v2/credential-providers" => "credentialProviders",
                "/api/v1/users" => "users",
                "/api/v1/log-streams" => "logStreams",
                _ => "entities",
            };
            let now: BTreeSet<String> = t.get(&format!("{path}?per-page=1000")).await.expect(200)[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["externalId"].as_str().unwrap().to_string())
                .collect();
            let then: BTreeSet<String> = ids
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            assert_eq!(now, then, "{commit} {path}");
        }
        // The same events (the fixture's edge traffic is days old: span-last-days).
        for (list, field) in [
            ("authorization-events", "authorizationEvents"),
            ("workload-events", "workloadEvents"),
        ] {
            let total = t
                .get(&format!("/api/v1/{list}?per-page=1&span-last-days=3650"))
                .await
                .expect(200)["recordsTotal"]
                .as_u64()
                .unwrap();
            assert_eq!(total, expected[field].as_u64().unwrap(), "{commit} {list}");
        }
        // The old users sign in (password hashes), the stored API key is issued (sealed secrets):
        // the trust provider is pointed at today's mock issuer first.
        t.login("operator@acme.test", "an-operator-password").await;
        let tp_id = expected["lists"]["/api/v1/trust-providers"][0].as_str().unwrap();
        let tp = t
            .get(&format!("/api/v1/trust-providers/{tp_id}"))
            .await
            .expect(200)
            .clone();
        let oidc = peer("SVC_TEST_OAUTH2_MOCK_URL");
        let put = t
            .put(
                "/api/v1/trust-providers",
                json!({"externalId": tp_id, "name": tp["name"], "isActive": true, "provider": "OidcIdToken", "oidcUrl": oidc,
                       "matchRules": [{"attribute": "OidcIssuer", "value": oidc},
                                      {"attribute": "OidcSubject", "value": "system:job:build"}]}),
            )
            .await;
        assert!(put.status == 200 || put.status == 204, "{}", put.text);
        let id_token = mock_id_token(&[("sub", "system:job:build"), ("aud", &t.base)]).await;
        let token = auth_oidc(&t, tp["edgeSdkClientId"].as_str().unwrap(), &id_token).await;
        let r = t
            .send(
                t.client
                    .post(t.url("/edge/v1/credentials"))
                    .bearer_auth(&token)
                    .json(&example_body(&id_token)),
            )
            .await;
        assert!(
            r.expect(200).to_string().contains("pk_live_upgrade_fixture"),
            "{commit}: {}",
            r.text
        );

        // Migrating again changes nothing.
        let mut env = t.env.clone();
        let t = t.restart().await;
        let m = host_command(&env, &["migrate"]).await;
        assert!(m.status.success(), "{}", String::from_utf8_lossy(&m.stderr));
        assert_eq!(schema_versions(&url).await, svc_server::store::Store::schema_versions());
        t.login("operator@acme.test", "an-operator-password").await;
        drop(t);

        // A newer svc's migration: this one refuses the database, naming why.
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&url).await.unwrap();
        sqlx::query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, 'from the future', 0)")
            .bind(latest + 1)
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
        env.insert("SVC_LOG".into(), "error".into());
        let refused = svc_server::App::open(svc_server::Config::from_map(&env).unwrap())
            .await
            .err()
            .expect("an older binary refuses a newer schema");
        assert!(
            refused.to_string().contains(&format!(
                "the database's schema is version {}, newer than this svc",
                latest + 1
            )),
            "{refused}"
        );
        let m = host_command(&env, &["admin", "token", "--role", "SuperAdmin"]).await;
        assert_eq!(m.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&m.stderr).contains("newer than this svc"));
        drop(dir);
    }
}
