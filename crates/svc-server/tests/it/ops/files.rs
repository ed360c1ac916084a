//! Safe files and host commands (issue 32, docs/OPERATIONS.md): the SQLite database, its WAL and
//! shared memory and the key file are created mode 0600 in a 0700 data directory (older, more
//! open files are tightened); `svc serve` refuses a missing or read-only data directory with a
//! message naming it; the host commands never create a database; `svc admin token` says when
//! its token names another issuer than the server's, and the server says why it refuses one.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::support::harness::{
    ADMIN_EMAIL, ADMIN_PASSWORD, TestApp, fresh_database, host_command, logs, temp_dir, use_postgres,
};
use crate::support::node::Node;
use crate::support::tmpfs::Tmpfs;

/// `svc serve` in `dir` with `env`: the child and its base URL once it answers (or its output
/// when it exits first).
async fn serve_in(dir: &Path, env: &[(&str, &str)]) -> Result<(tokio::process::Child, String), String> {
    let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Node::spawn(dir, &env).await.map(|n| (n.child, n.base))
}

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

#[tokio::test]
async fn the_database_its_wal_and_the_key_file_are_private_to_the_service() {
    if use_postgres() {
        eprintln!("the SQLite files are checked in the SQLite pass");
        return;
    }
    let dir = temp_dir();
    let env = [
        ("SVC_BOOTSTRAP_ADMIN_EMAIL", ADMIN_EMAIL),
        ("SVC_BOOTSTRAP_ADMIN_PASSWORD", ADMIN_PASSWORD),
    ];
    let (mut child, base) = serve_in(&dir, &env).await.unwrap();
    // A sign-in writes (an audit entry): the WAL has content.
    let r = reqwest::Client::new()
        .post(format!("{base}/api/v1/login"))
        .json(&json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let data = dir.join("svc-data");
    assert_eq!(mode(&data), 0o700, "the data directory");
    for f in ["svc.db", "svc.db-wal", "svc.db-shm", "svc-encryption.key"] {
        assert_eq!(mode(&data.join(f)), 0o600, "{f}");
    }
    child.kill().await.unwrap();
    // A database an older version left readable by others is made private at the next start.
    use std::os::unix::fs::PermissionsExt;
    for f in ["svc.db", "svc.db-wal", "svc.db-shm"] {
        let p = data.join(f);
        if p.exists() {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
    let (mut child, _) = serve_in(&dir, &env).await.unwrap();
    for f in ["svc.db", "svc.db-wal", "svc.db-shm"] {
        assert_eq!(mode(&data.join(f)), 0o600, "{f} after the restart");
    }
    child.kill().await.unwrap();
}

#[tokio::test]
async fn host_commands_refuse_a_database_that_does_not_exist() {
    let dir = temp_dir();
    let mut env = std::collections::BTreeMap::new();
    let expected = if use_postgres() {
        // An empty PostgreSQL database: no schema is made in it either.
        let url = fresh_database(&dir).await;
        env.insert("SVC_DATABASE_URL".to_string(), url);
        env.insert(
            "SVC_ENCRYPTION_KEY".to_string(),
            svc_server::crypto::b64std(&svc_server::crypto::random_bytes::<32>()),
        );
        "the database holds no svc schema".to_string()
    } else {
        let db = dir.join("elsewhere/svc-data/svc.db");
        env.insert("SVC_DATABASE_URL".to_string(), format!("sqlite://{}", db.display()));
        format!("no database at {}", db.display())
    };
    for args in [
        &["admin", "token", "--role", "SuperAdmin"][..],
        &["admin", "keys", "rotate"],
        &["admin", "keys", "rotate-encryption"],
    ] {
        let out = host_command(&env, args).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(&expected), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} printed nothing");
    }
    assert!(!dir.join("elsewhere").exists(), "no data directory was made");
    if use_postgres() {
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&env["SVC_DATABASE_URL"]).await.unwrap();
        let n: i64 = sqlx::query_scalar::<_, i64>(
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema()",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(n, 0, "no table was made");
        pool.close().await;
    }
}

#[tokio::test]
async fn a_token_for_another_issuer_is_named_by_the_command_and_logged_by_the_server() {
    let t = TestApp::start().await;
    // The node's row is written as it starts.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut other = t.env.clone();
    other.insert("SVC_PUBLIC_URL".into(), "http://svc.other.example".into());
    let out = host_command(&other, &["admin", "token", "--role", "SuperAdmin"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: this token names the issuer http://svc.other.example")
            && err.contains(&format!("the server was last seen as {}", t.base)),
        "{err}"
    );
    let token: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let token = token["accessToken"].as_str().unwrap();
    t.get_as(token, "/api/v1/users")
        .await
        .expect_error(401, "Not authenticated.");
    assert!(
        logs().contains("management token refused: it names another issuer than this server's SVC_PUBLIC_URL"),
        "the server says why"
    );
    assert!(!logs().contains(token), "never the token");

    let out = host_command(&t.env, &["admin", "token", "--role", "SuperAdmin"]).await;
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let token: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    t.get_as(token["accessToken"].as_str().unwrap(), "/api/v1/users")
        .await
        .expect(200);
}

#[tokio::test]
async fn serve_refuses_a_missing_or_read_only_data_directory_naming_it() {
    if use_postgres() {
        eprintln!("the data directory is SQLite's: checked in the SQLite pass");
        return;
    }
    let dir = temp_dir();
    let db = dir.join("missing/deeper/svc.db");
    let err = serve_in(&dir, &[("SVC_DATABASE_URL", &format!("sqlite://{}", db.display()))])
        .await
        .expect_err("refused");
    assert!(
        err.contains(&format!(
            "data directory {} does not exist, nor does {}",
            dir.join("missing/deeper").display(),
            dir.join("missing").display()
        )),
        "{err}"
    );
    assert!(!dir.join("missing").exists());

    let Some(fs) = Tmpfs::mount(4 << 20) else {
        eprintln!("skipped the read-only part: it needs a tmpfs of the test's own");
        return;
    };
    // A data directory with a database (made by `svc migrate`), then read-only; and a new one.
    std::fs::create_dir(fs.join("old")).unwrap();
    std::fs::create_dir(fs.join("new")).unwrap();
    let old_db = format!("sqlite://{}", fs.join("old/svc.db").display());
    let m = host_command(
        &[("SVC_DATABASE_URL".to_string(), old_db.clone())].into_iter().collect(),
        &["migrate"],
    )
    .await;
    assert!(m.status.success(), "{}", String::from_utf8_lossy(&m.stderr));
    fs.remount(true);
    let err = serve_in(&dir, &[("SVC_DATABASE_URL", &old_db)])
        .await
        .expect_err("refused");
    assert!(
        err.contains(&format!(
            "database file {} is not writable",
            fs.join("old/svc.db").display()
        )),
        "{err}"
    );
    let new_db = format!("sqlite://{}", fs.join("new/svc.db").display());
    let err = serve_in(&dir, &[("SVC_DATABASE_URL", &new_db)])
        .await
        .expect_err("refused");
    assert!(
        err.contains(&format!("data directory {} is not writable", fs.join("new").display()))
            && err.contains("Read-only file system"),
        "{err}"
    );
}
