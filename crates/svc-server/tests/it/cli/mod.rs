//! The built `svc` binary's command line (docs/cli.md): help, version and usage errors keep their
//! exit codes, and `svc admin list|get|apply|explain` against a test server over its management
//! API. The server-side commands (`serve`, `migrate`, `config check`, `admin token`, `admin keys
//! rotate`) are driven by foundation/auth.rs, config/policies.rs and hardening/server.rs.

mod apply;
mod explain;
mod read;

use std::process::Output;

use crate::support::harness::TestApp;

/// Runs `svc ARGS` with only the given environment (nothing of the test process's).
pub async fn svc_with(env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"));
    cmd.args(args).env_clear();
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().await.expect("run svc")
}

/// Runs `svc ARGS` against the test server as its bootstrap administrator (`SVC_URL`,
/// `SVC_TOKEN`).
pub async fn svc(t: &TestApp, args: &[&str]) -> Output {
    svc_with(&[("SVC_URL", &t.base), ("SVC_TOKEN", &t.token)], args).await
}

/// A new resource set's id.
pub async fn resource_set(t: &TestApp, name: &str) -> String {
    let r = t
        .post(
            "/api/v1/resource-sets",
            serde_json::json!({"name": name, "isActive": true}),
        )
        .await;
    r.expect(201)["externalId"].as_str().unwrap().to_string()
}

/// `svc admin list <resource> -o json FLAGS`: the names of the entries, and stderr.
pub async fn listed(t: &TestApp, resource: &str, flags: &[&str]) -> (Vec<String>, String) {
    let mut args = vec!["admin", "list", resource, "-o", "json"];
    args.extend(flags);
    let o = svc(t, &args).await;
    let out: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
    let names = out
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap_or_default().to_string())
        .collect();
    (names, stderr(&o))
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts success and returns stdout.
pub fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "svc failed ({:?}): {}{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
    stdout(o)
}

/// Asserts the exit code and that stderr contains `message`.
pub fn refused(o: &Output, code: i32, message: &str) {
    assert_eq!(o.status.code(), Some(code), "{}{}", stdout(o), stderr(o));
    assert!(stderr(o).contains(message), "stderr lacks {message:?}: {}", stderr(o));
}

#[tokio::test]
async fn help_version_and_usage_errors_keep_their_exit_codes() {
    // `svc` alone and `svc help` print the help and succeed, as before clap.
    for args in [
        &[][..],
        &["help"],
        &["--help"],
        &["admin", "--help"],
        &["help", "admin"],
    ] {
        let o = svc_with(&[], args).await;
        assert!(ok(&o).contains("Usage: svc"), "{args:?}: {}", stdout(&o));
    }
    let o = svc_with(&[], &["--version"]).await;
    assert_eq!(ok(&o), format!("svc {}\n", env!("CARGO_PKG_VERSION")));
    // Every command answers --help with its usage.
    for cmd in [
        "serve",
        "migrate",
        "config check",
        "admin token",
        "admin keys rotate",
        "admin list",
        "admin get",
        "admin apply",
        "admin explain",
    ] {
        let mut args: Vec<&str> = cmd.split(' ').collect();
        args.push("--help");
        let o = svc_with(&[], &args).await;
        assert!(ok(&o).contains(&format!("Usage: svc {cmd}")), "{cmd}: {}", stdout(&o));
    }
    // Usage errors exit 2.
    refused(&svc_with(&[], &["bogus"]).await, 2, "bogus");
    refused(&svc_with(&[], &["serve", "--nope"]).await, 2, "--nope");
    refused(
        &svc_with(&[], &["admin", "token", "--role", "SuperAdmin", "--ttl", "59"]).await,
        2,
        "--ttl must be 60..86400 seconds",
    );
    refused(
        &svc_with(&[], &["admin", "token", "--role", "SuperAdmin", "--ttl", "ten"]).await,
        2,
        "--ttl: not a number: ten",
    );
    refused(&svc_with(&[], &["admin", "list"]).await, 2, "<RESOURCE>");
    // An invalid configuration is reported before anything else, exit 2; then a missing role.
    refused(
        &svc_with(&[("SVC_LISTEN_ADDR", "nowhere")], &["admin", "token", "--role", "x"]).await,
        2,
        "svc: invalid configuration:\n  - SVC_LISTEN_ADDR",
    );
    let dir = crate::support::harness::temp_dir();
    let db = format!("sqlite://{}/svc.db", dir.display());
    let o = svc_with(&[("SVC_DATABASE_URL", &db)], &["admin", "token"]).await;
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "svc: admin token needs --role (a role name such as SuperAdmin, or a role id)\n"
    );
    // `--config FILE` is accepted before or after the command, and `--config=FILE`.
    let file = dir.join("svc.env");
    std::fs::write(&file, "SVC_STACK=eu1\n").unwrap();
    let f = file.display().to_string();
    for args in [
        ["--config", &f, "config", "check"],
        ["config", "check", "--config", &f],
        ["config", "check", &format!("--config={f}"), "--"],
    ] {
        let args: Vec<&str> = args.into_iter().filter(|a| *a != "--").collect();
        let o = svc_with(&[], &args).await;
        assert!(ok(&o).contains("SVC_STACK = eu1"), "{args:?}: {}", stdout(&o));
    }
}

/// `SVC_URL` and `SVC_TOKEN` are the command line's: `serve` does not warn about them as typos.
#[tokio::test]
async fn serve_takes_the_client_keys_for_no_typos() {
    use tokio::io::AsyncBufReadExt;
    let dir = crate::support::harness::temp_dir();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .arg("serve")
        .current_dir(&dir)
        .env_clear()
        .env("SVC_LISTEN_ADDR", "127.0.0.1:0")
        .env("SVC_METRICS_LISTEN_ADDR", "")
        .env("SVC_LOG", "info")
        .env("SVC_URL", "http://127.0.0.1:1")
        .env("SVC_TOKEN", "x")
        .env("SVC_TYPO", "1")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = String::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while let Ok(Some(l)) = lines.next_line().await {
            seen.push_str(&l);
            seen.push('\n');
            if l.contains("svc is serving") {
                break;
            }
        }
    });
    read.await.expect("svc serve started");
    let _ = child.kill().await;
    assert!(seen.contains("SVC_TYPO"), "{seen}");
    assert!(!seen.contains("SVC_URL") && !seen.contains("SVC_TOKEN"), "{seen}");
}
