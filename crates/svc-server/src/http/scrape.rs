//! The `/metrics` listener on `SVC_METRICS_LISTEN_ADDR` (docs/metrics.md): the gauges read at
//! scrape time from the `App`, and a minimal HTTP/1.1 responder; the recorder and the metric names
//! are `crate::metrics`, which stays below every module that records.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::app::App;
use crate::metrics;

/// Sets the gauges read at scrape time (queue depth, snapshot size, change-log lag), then
/// renders every metric in the Prometheus text format.
pub async fn render(app: &App) -> String {
    let Some(handle) = metrics::handle() else {
        return String::new();
    };
    ::metrics::gauge!(metrics::EVENT_QUEUE_DEPTH).set(app.events.depth() as f64);
    let st = app.state_full();
    for (kind, n) in [
        ("resource_sets", st.resource_sets.len()),
        ("roles", st.roles.len()),
        ("users", st.users.len()),
        ("trust_providers", st.trust_providers.len()),
        ("client_workloads", st.client_workloads.len()),
        ("server_workloads", st.server_workloads.len()),
        ("credential_providers", st.credential_providers.len()),
        ("credential_integrations", st.credential_integrations.len()),
        ("access_policies", st.policies.len()),
        ("routings", st.routings.len()),
        ("agent_controllers", st.agent_controllers.len()),
        ("sso_idps", st.sso_idps.len()),
        ("integrations", st.integrations.len()),
        ("access_conditions", st.access_conditions.len()),
        ("content_security", st.content_security.len()),
        ("discovery_integrations", st.discovery_integrations.len()),
        ("server_workload_drafts", st.server_workload_drafts.len()),
        ("log_streams", st.log_streams.len()),
    ] {
        ::metrics::gauge!(metrics::STATE_ENTITIES, "kind" => kind).set(n as f64);
    }
    drop(st);
    if app.store.dialect() == crate::store::Dialect::Postgres {
        let read = tokio::time::timeout(Duration::from_secs(2), app.store.last_change()).await;
        if let Ok(Ok(last)) = read {
            let mine = app.last_change.load(std::sync::atomic::Ordering::Acquire);
            ::metrics::gauge!(metrics::CHANGELOG_LAG).set((last - mine).max(0) as f64);
        }
    }
    handle.run_upkeep();
    handle.render()
}

/// Serves `GET /metrics` on `listener` until the process ends: a minimal HTTP/1.1 responder (one
/// request per connection, then close), so no second HTTP stack is linked. Anything else is 404.
pub async fn serve(app: App, listener: tokio::net::TcpListener) {
    metrics::install();
    // Histograms are drained at render; between scrapes upkeep keeps their buffers short.
    tokio::spawn(async {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            if let Some(h) = metrics::handle() {
                h.run_upkeep();
            }
        }
    });
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let app = app.clone();
        tokio::spawn(async move {
            let mut buf = Vec::with_capacity(1024);
            let head = tokio::time::timeout(Duration::from_secs(10), async {
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return false,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                true
            })
            .await;
            if !matches!(head, Ok(true)) {
                return;
            }
            let line = buf.split(|b| *b == b'\n').next().unwrap_or_default();
            let mut words = line.split(|b| *b == b' ');
            let (method, target) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
            let path = target.split(|b| *b == b'?').next().unwrap_or_default();
            let (status, ctype, body) = if method == b"GET" && path == b"/metrics" {
                ("200 OK", "text/plain; version=0.0.4; charset=utf-8", render(&app).await)
            } else {
                ("404 Not Found", "text/plain; charset=utf-8", "not found\n".to_string())
            };
            let head = format!(
                "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(body.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}
