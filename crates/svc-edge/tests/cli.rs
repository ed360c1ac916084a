//! The binary's local behaviour, no service needed: usage errors exit 2 naming the flag or the
//! variable, global flags before or after the command, help exits 0. (Also makes
//! `cargo test --workspace` build `target/*/svc-edge` for the server's end-to-end tests.)

use std::process::Command;

const CID: &str = "svc:local:default:identity:oidc_idtoken:0b0d1c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e";

fn edge(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_svc-edge"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .unwrap()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn usage_errors_exit_2_and_name_the_flag() {
    let o = edge(&["token"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--url") && stderr(&o).contains("SVC_EDGE_URL"),
        "{}",
        stderr(&o)
    );
    let o = edge(&["token", "--url", "http://127.0.0.1:9"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--client-id"));
    let o = edge(&["--url", "http://127.0.0.1:9", "--client-id", "x:y", "token"]);
    assert_eq!(o.status.code(), Some(2));
    let base = ["--url", "http://127.0.0.1:9", "--client-id", CID];
    for (extra, flag) in [
        (
            vec!["credentials", "--host", "h", "--port", "1", "--type", "Nope"],
            "--type",
        ),
        (
            vec!["credentials", "--host", "h", "--port", "0", "--type", "ApiKey"],
            "--port",
        ),
        (
            vec![
                "credentials",
                "--host",
                "h",
                "--port",
                "1",
                "--type",
                "ApiKey",
                "--format",
                "xml",
            ],
            "--format",
        ),
        (
            vec![
                "credentials",
                "--host",
                "h",
                "--port",
                "1",
                "--type",
                "ApiKey",
                "--format",
                "clouda-process",
            ],
            "clouda-process",
        ),
        (
            vec![
                "credentials",
                "--host",
                "h",
                "--port",
                "1",
                "--type",
                "ApiKey",
                "--meta",
                "nokey",
            ],
            "--meta",
        ),
        (
            vec![
                "credentials",
                "--host",
                "h",
                "--port",
                "1",
                "--type",
                "ApiKey",
                "--meta",
                "bogus=1",
            ],
            "--meta",
        ),
        (vec!["credentials", "--host", "h", "--port", "1"], "--type"),
        (vec!["agent", "--listen", "0.0.0.0:8080"], "--listen"),
        (vec!["exec", "--host", "h", "--port", "1", "--type", "ApiKey"], "CMD"),
        (vec!["frobnicate"], "frobnicate"),
    ] {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(extra.iter().copied());
        let o = edge(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(flag), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn global_flags_go_before_or_after_the_command() {
    // Both forms get past configuration to the network (nothing listens on port 9: exit 5).
    let before = edge(&["--url", "http://127.0.0.1:9", "--client-id", CID, "token"]);
    let after = edge(&["token", "--url", "http://127.0.0.1:9", "--client-id", CID]);
    for o in [&before, &after] {
        assert_eq!(o.status.code(), Some(2), "no ID token configured yet: {}", stderr(o));
        assert!(stderr(o).contains("SVC_EDGE_TOKEN"), "{}", stderr(o));
    }
    let o = Command::new(env!("CARGO_BIN_EXE_svc-edge"))
        .args(["token", "--client-id", CID])
        .env_clear()
        .env("SVC_EDGE_URL", "http://127.0.0.1:9")
        .env("SVC_EDGE_TOKEN", "a.b.c")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot reach http://127.0.0.1:9"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("a.b.c"));
}

#[test]
fn help_and_version_exit_0() {
    let o = edge(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stdout);
    for c in ["token", "credentials", "exec", "agent"] {
        assert!(text.contains(c), "{text}");
    }
    assert_eq!(edge(&["--version"]).status.code(), Some(0));
}
