//! The connection rules of the server loop: an answer that closes its connection says
//! `Connection: close`, and a graceful stop finishes the requests already read and those queued on
//! keep-alive connections, within a bound that a half-sent request cannot stretch.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::harness::TestApp;

/// Reads one HTTP/1.1 answer with a `Content-Length` body; returns (head, body).
async fn read_answer(s: &mut TcpStream) -> (String, String) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let len: usize = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = s.read(&mut chunk).await.unwrap();
                assert!(n > 0, "connection closed inside the body: {head}");
                buf.extend_from_slice(&chunk[..n]);
            }
            return (head, String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).to_string());
        }
        let n = tokio::time::timeout(Duration::from_secs(15), s.read(&mut chunk))
            .await
            .expect("an answer within 15 s")
            .unwrap();
        assert!(
            n > 0,
            "connection closed before an answer: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn closes(head: &str) -> bool {
    head.lines().any(|l| l.eq_ignore_ascii_case("connection: close"))
}

const HEALTH: &[u8] = b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n";

#[tokio::test]
async fn an_answer_that_closes_the_connection_says_connection_close() {
    let t = TestApp::start().await;
    // A keep-alive answer does not.
    let mut s = t.raw_connection(HEALTH).await;
    let (head, _) = read_answer(&mut s).await;
    assert!(head.starts_with("HTTP/1.1 200") && !closes(&head), "{head}");
    // A body over the limit is answered before it was read: the connection ends, and says so.
    let len = 1024 * 1024 + 64 * 1024;
    let head = format!(
        "POST /api/v1/roles HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n",
        t.token
    );
    s.write_all(head.as_bytes()).await.unwrap();
    // The body is sent from a task of its own: the server stops reading it.
    let (mut rd, mut wr) = s.into_split();
    let writer = tokio::spawn(async move {
        let _ = wr.write_all(&vec![b' '; len]).await;
        wr
    });
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(15), rd.read_to_end(&mut buf)).await;
    let text = String::from_utf8_lossy(&buf);
    let head = text.split("\r\n\r\n").next().unwrap();
    assert!(head.starts_with("HTTP/1.1 400"), "{text}");
    assert!(closes(head), "{head}");
    assert!(text.contains("body: larger than the 1024 KiB limit"), "{text}");
    writer.abort();
}

#[tokio::test]
async fn graceful_stop_finishes_requests_in_flight_and_queued_within_a_bound() {
    let mut t = TestApp::start_with(|env| {
        env.insert("SVC_SHUTDOWN_GRACE_SECONDS".into(), "3".into());
    })
    .await;
    // A client holding a half-sent header: without the bound it kept the stop waiting (60 s).
    let _half = t.raw_connection(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n").await;
    // A keep-alive connection that has been used once.
    let mut idle = t.raw_connection(HEALTH).await;
    let (head, _) = read_answer(&mut idle).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // A request whose body is still arriving when the stop comes.
    let body = r#"{"email":"nobody@acme.test","password":"not-the-password"}"#;
    let mut slow = t
        .raw_connection(
            format!(
                "POST /api/v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
                body.len(),
                &body[..10]
            )
            .as_bytes(),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    let started = Instant::now();
    let stopping = tokio::spawn(async move {
        t.shutdown().await;
        t
    });
    // Sent as the stop begins, on the keep-alive connection: answered, with Connection: close.
    tokio::time::sleep(Duration::from_millis(150)).await;
    idle.write_all(HEALTH).await.unwrap();
    let (head, _) = read_answer(&mut idle).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(closes(&head), "{head}");
    // The request in flight completes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    slow.write_all(&body.as_bytes()[10..]).await.unwrap();
    let (head, answer) = read_answer(&mut slow).await;
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    assert!(answer.contains("Invalid email or password."), "{answer}");
    // And the stop ends within its grace period, the half-sent header notwithstanding.
    let _t = stopping.await.unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(6), "the stop took {took:?}");
    // No new connection is accepted.
    let addr = _t.base.trim_start_matches("http://").to_string();
    let refused = match TcpStream::connect(&addr).await {
        Err(_) => true,
        Ok(mut s) => {
            let _ = s.write_all(HEALTH).await;
            let mut b = Vec::new();
            matches!(
                tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut b)).await,
                Ok(Ok(0)) | Ok(Err(_))
            )
        }
    };
    assert!(refused, "a connection was accepted after the stop");
}

/// The built binary on SIGTERM, with the default grace: clients holding a half-sent header and a
/// half-sent body do not keep it alive (before, 60 s), a request in flight is answered, and it
/// exits well inside an orchestrator's 30 s.
#[tokio::test]
async fn a_sigterm_stop_is_bounded_by_the_grace_period() {
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
        .env("SVC_LOG", "error");
    cmd.kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let addr = format!("127.0.0.1:{port}");
    let mut up = false;
    for _ in 0..100 {
        if let Ok(mut s) = TcpStream::connect(&addr).await {
            s.write_all(HEALTH).await.unwrap();
            up = read_answer(&mut s).await.0.starts_with("HTTP/1.1 200");
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(up, "the binary did not serve /api/v1/health");
    let connect = |bytes: &'static [u8]| {
        let addr = addr.clone();
        async move {
            let mut s = TcpStream::connect(&addr).await.unwrap();
            s.write_all(bytes).await.unwrap();
            s
        }
    };
    let _half_header = connect(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n").await;
    let _half_body = connect(
        b"POST /api/v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"em",
    )
    .await;
    let body = r#"{"email":"nobody@acme.test","password":"not-the-password"}"#;
    let head = format!(
        "POST /api/v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut in_flight = TcpStream::connect(&addr).await.unwrap();
    in_flight.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let started = Instant::now();
    let pid = child.id().unwrap();
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    in_flight.write_all(body.as_bytes()).await.unwrap();
    let (head, _) = read_answer(&mut in_flight).await;
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    assert!(closes(&head), "{head}");
    let status = tokio::time::timeout(Duration::from_secs(25), child.wait())
        .await
        .expect("stops within 25 s of SIGTERM")
        .unwrap();
    let took = started.elapsed();
    assert!(status.success(), "exit status {status:?}");
    assert!(
        took < Duration::from_secs(15),
        "the default grace (10 s) bounds the stop: {took:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
