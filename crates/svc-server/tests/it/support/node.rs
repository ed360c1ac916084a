//! The built `svc serve` as a child process (a node a test can `kill -9`, or a start that must
//! be refused), with exactly the environment it is given.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

pub struct Node {
    pub child: tokio::process::Child,
    pub base: String,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Node {
    /// Starts `svc serve` in `dir` with `env` (and its own listen port, no metrics listener);
    /// returns once `/api/v1/health` answers, or the start's error output when it exits first.
    pub async fn spawn(dir: &Path, env: &BTreeMap<String, String>) -> Result<Node, String> {
        let port = free_port();
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"));
        cmd.arg("serve")
            .current_dir(dir)
            .env_clear()
            .env("SVC_LOG", "error")
            .envs(env)
            .env("SVC_LISTEN_ADDR", format!("127.0.0.1:{port}"))
            .env("SVC_METRICS_LISTEN_ADDR", "")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().unwrap();
        let base = format!("http://127.0.0.1:{port}");
        for _ in 0..400 {
            if let Some(status) = child.try_wait().unwrap() {
                let out = child.wait_with_output().await.unwrap();
                return Err(format!("{status}: {}", String::from_utf8_lossy(&out.stderr)));
            }
            if reqwest::get(format!("{base}/api/v1/health")).await.is_ok() {
                return Ok(Node { child, base });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("svc serve neither answered nor exited in 20 s");
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `kill -9`: no graceful stop, no node row removed, connections cut by the kernel.
    pub async fn kill9(&mut self) {
        self.child.start_kill().unwrap();
        self.child.wait().await.unwrap();
    }
}
