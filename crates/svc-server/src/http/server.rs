//! The HTTP server loop: hyper's HTTP/1 connections as axum::serve runs them, with a header-read
//! timeout, graceful shutdown on SIGTERM/SIGINT, and the event flush after the last connection.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpListener;

use crate::app::App;

/// Serves HTTP on `listener` until `shutdown` resolves, then lets the open connections finish
/// their requests and flushes events. The loop is axum::serve's with a header-read timeout:
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
    // Connections hold a receiver; shutdown waits until every one is gone.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (open_tx, open_rx) = tokio::sync::watch::channel(());
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
        let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let mut req = req.map(axum::body::Body::new);
            req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
            router.clone().oneshot(req)
        });
        let conn = http.serve_connection(TokioIo::new(stream), svc);
        let mut stop = stop_rx.clone();
        let open = open_rx.clone();
        tokio::spawn(crate::clock::scope(app.clock.clone(), async move {
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                () = async { drop(stop.wait_for(|s| *s).await) } => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            drop(open);
        }));
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(open_rx);
    open_tx.closed().await;
    app.events.flush().await;
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
