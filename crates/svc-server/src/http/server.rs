//! The HTTP server loop: hyper's HTTP/1 connections as axum::serve runs them, with a header-read
//! timeout, `Connection: close` on answers that end their connection (`conn.rs`), a bounded
//! graceful shutdown on SIGTERM/SIGINT (`SVC_SHUTDOWN_GRACE_SECONDS`), and the event flush after
//! the last connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::net::TcpListener;

use crate::app::App;

/// Serves HTTP on `listener` until `shutdown` resolves, then lets the open connections finish
/// their requests (those already read, and those still arriving on a keep-alive connection for a
/// short settling time, answered with `Connection: close`), closes what is left after
/// `SVC_SHUTDOWN_GRACE_SECONDS` (a client holding a half-sent request does not hold the stop),
/// and flushes events. The loop is axum::serve's with a header-read timeout:
/// without one, a client that never finishes its request headers (or a keep-alive connection
/// that never sends another request) held its connection and task for ever.
pub async fn serve(
    app: App,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::extract::ConnectInfo;
    use hyper_util::rt::{TokioIo, TokioTimer};
    use tower::ServiceExt as _;

    let router = crate::http::router(app.clone());
    let mut http = hyper::server::conn::http1::Builder::new();
    // `SVC_HTTP_HEADER_TIMEOUT_SECONDS`: also the idle limit of a keep-alive connection
    // (hyper starts the timer when it waits for a request).
    http.timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(app.cfg.http_header_timeout_seconds.into()));
    // Connections hold a receiver; shutdown waits until every one is gone, for the grace period.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (force_tx, force_rx) = tokio::sync::watch::channel(false);
    let (open_tx, open_rx) = tokio::sync::watch::channel(());
    let stopping = Arc::new(AtomicBool::new(false));
    let grace = Duration::from_secs(app.cfg.shutdown_grace_seconds.into());
    let settle = grace.min(Duration::from_secs(1));
    let body_timeout =
        crate::http::extract::BodyTimeout(Duration::from_secs(app.cfg.http_header_timeout_seconds.into()));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Per-connection errors (reset before accept) are not the listener's;
                    // others (too many open files) are retried after a pause, as axum does.
                    if !matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionRefused
                            | std::io::ErrorKind::ConnectionAborted
                            | std::io::ErrorKind::ConnectionReset
                    ) {
                        tracing::error!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let router = router.clone();
        let stopping_now = stopping.clone();
        let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let (mut req, body_done) = super::conn::watch(req);
            req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
            req.extensions_mut().insert(body_timeout);
            let answer = router.clone().oneshot(req);
            let stopping = stopping_now.clone();
            async move {
                let mut resp = answer.await?;
                super::conn::finish(&mut resp, body_done.as_deref(), stopping.load(Ordering::Relaxed));
                Ok::<_, std::convert::Infallible>(resp)
            }
        });
        let conn = http.serve_connection(TokioIo::new(stream), svc);
        let (mut stop, mut force) = (stop_rx.clone(), force_rx.clone());
        let open = open_rx.clone();
        tokio::spawn(crate::clock::scope(app.clock.clone(), async move {
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => return drop(open),
                () = async { drop(stop.wait_for(|s| *s).await) } => {}
            }
            // Stopping: a request already on its way on this connection is still read and
            // answered (with `Connection: close`) while the loop settles; then hyper finishes the
            // request in hand and closes; the grace period's end drops what remains.
            let forced = async move { drop(force.wait_for(|f| *f).await) };
            let mut forced = std::pin::pin!(forced);
            tokio::select! {
                _ = conn.as_mut() => return drop(open),
                () = tokio::time::sleep(settle) => {}
                () = forced.as_mut() => return drop(open),
            }
            conn.as_mut().graceful_shutdown();
            tokio::select! {
                _ = conn.as_mut() => {}
                () = forced.as_mut() => {}
            }
            drop(open);
        }));
    }
    drop(listener);
    stopping.store(true, Ordering::Relaxed);
    let _ = stop_tx.send(true);
    drop(open_rx);
    if tokio::time::timeout(grace, open_tx.closed()).await.is_err() {
        tracing::warn!(
            grace_seconds = grace.as_secs(),
            "connections still open after the shutdown grace period; closing them"
        );
        let _ = force_tx.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(1), open_tx.closed()).await;
    }
    app.events.flush().await;
    // A log-stream transaction in flight ends and records its answer: nothing is sent twice.
    app.streams.stop().await;
    Ok(())
}

/// A future that resolves on SIGTERM or SIGINT. The handlers are installed when this is called,
/// not when the future is first polled (axum polls it from a task of its own, possibly after the
/// first requests were served): a signal that arrives once the server answers is never fatal.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let (term, int) = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::terminate()).ok(),
            signal(SignalKind::interrupt()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        {
            let wait = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = wait(term) => {},
                _ = wait(int) => {},
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        tracing::info!("shutdown requested; draining connections");
    }
}
