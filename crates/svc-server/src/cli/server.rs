//! `svc serve` and `svc migrate`, and what the server-side commands share: loading the
//! configuration (exit 2 with every problem listed) and the log subscriber.

use std::path::Path;
use std::process::ExitCode;

use svc_server::App;
use svc_server::config::Config;

use super::fail;

/// The configuration; `files`: also the files its keys name, as `serve` reads them (`serve`,
/// `config check`; `migrate` and `admin` do not read them and run without them).
pub fn load_config(path: Option<&Path>, files: bool) -> Result<Config, ExitCode> {
    let check = |cfg: &Config| {
        if files {
            svc_server::service::startup::key_file_errors(cfg)
        } else {
            Vec::new()
        }
    };
    Config::load_checked(path, check).map_err(|errors| {
        eprintln!("svc: invalid configuration:");
        for e in errors {
            eprintln!("  - {e}");
        }
        ExitCode::from(2)
    })
}

fn init_logging(cfg: &Config) {
    use tracing_subscriber::prelude::*;
    let filter: tracing_subscriber::filter::Targets = cfg.log.parse().unwrap_or_else(|_| {
        eprintln!("svc: SVC_LOG {:?} is not a valid filter; using info", cfg.log);
        "info".parse().expect("valid")
    });
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let fmt = tracing_subscriber::fmt::layer().with_target(false).with_ansi(ansi);
    if cfg.log_json {
        tracing_subscriber::registry()
            .with(fmt.json().with_filter(filter))
            .init();
    } else {
        tracing_subscriber::registry().with(fmt.with_filter(filter)).init();
    }
}

/// `svc migrate`: opening the store creates or upgrades the schema.
pub fn migrate(config: Option<&Path>) -> ExitCode {
    let cfg = match load_config(config, false) {
        Ok(c) => c,
        Err(code) => return code,
    };
    super::server_runtime().block_on(async move {
        init_logging(&cfg);
        match svc_server::store::Store::open(&cfg.database_url).await {
            Ok(_) => {
                println!("schema is up to date");
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        }
    })
}

/// `svc serve`.
pub fn serve(config: Option<&Path>) -> ExitCode {
    let cfg = match load_config(config, true) {
        Ok(c) => c,
        Err(code) => return code,
    };
    super::server_runtime().block_on(run(cfg))
}

async fn run(cfg: Config) -> ExitCode {
    init_logging(&cfg);
    for k in Config::unknown_env_keys() {
        tracing::warn!(key = %k, "unknown SVC_ environment variable (typo?)");
    }
    let addr = cfg.listen_addr;
    let public = cfg.public_url.clone();
    let metrics_addr = cfg.metrics_listen_addr;
    if metrics_addr.is_some() {
        // Before the start, so the first snapshot's load is measured too.
        svc_server::metrics::install();
    }
    let app = match App::open(cfg).await {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    // Signal handlers first: a SIGTERM that arrives once the port answers stops the server
    // gracefully.
    let shutdown = svc_server::http::server::shutdown_signal();
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => return fail(format!("cannot listen on {addr}: {e}")),
    };
    if let Some(m) = metrics_addr {
        match tokio::net::TcpListener::bind(m).await {
            Ok(l) => {
                tracing::info!(addr = %m, "metrics at /metrics");
                tokio::spawn(svc_server::http::scrape::serve(app.clone(), l));
            }
            // Metrics are not worth refusing credentials for: a second node on the same host
            // (or a busy default port) serves without them, and says so.
            Err(e) => {
                tracing::error!(addr = %m, error = %e, "cannot listen on SVC_METRICS_LISTEN_ADDR: serving without /metrics")
            }
        }
    }
    svc_server::service::jobs::spawn(&app);
    tracing::info!(%addr, %public, version = env!("CARGO_PKG_VERSION"), "svc is serving");
    let node = app.clone();
    let served = svc_server::http::server::serve(app, listener, shutdown).await;
    // Stopped: the node's row goes (an at-rest key rotation does not wait for it).
    svc_server::service::nodes::leave(&node).await;
    match served {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}
