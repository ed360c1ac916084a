//! The `svc` command: `serve`, `migrate`, `admin token`, `admin keys rotate`, `config check`.

use std::path::PathBuf;
use std::process::ExitCode;

use svc_server::App;
use svc_server::config::{Config, KEYS};

/// mimalloc instead of glibc's allocator: the edge path allocates and frees many small buffers
/// (request bodies, JSON, event rows) and glibc's `malloc`/`free`/`malloc_consolidate` took ~18% of
/// the request thread's CPU in the profiles (docs/PERFORMANCE.md). Built without transparent huge
/// pages (`no_thp`): with them every first touch of its arenas zeroed a whole 2 MiB page, 18% of
/// the start-up with 100,000 policies and ~13 MB of peak RSS; the edge points stayed within noise.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const HELP: &str = "\
svc — workload credential service

USAGE:
    svc serve [--config FILE]                 run the service (management API, Edge API, OIDC issuer)
    svc migrate [--config FILE]               create or upgrade the database schema, then exit
    svc admin token --role ROLE [--ttl SECS]  print a management token (login response JSON) for a
                                              role given by id or name (a system role first; other
                                              names must be unique); SECS 60..86400, default
                                              SVC_SESSION_TTL_SECONDS; needs direct database access
    svc admin keys rotate                     rotate the signing and token keys now (§5.1)
    svc config check [--config FILE]          validate the configuration and print it (no secrets)
    svc --version | --help

Configuration comes from SVC_* environment variables and, optionally, a file of KEY=value lines
(--config FILE or SVC_CONFIG_FILE); the environment wins. `svc config check` lists every key.
ObjectStorageABucket log streams upload with the host's cloudA credentials, found through the
platform SDK's standard chain (AWS_* environment variables, shared files, container endpoint,
instance metadata; docs/log-streams/object-storage.md).
";

struct Args {
    words: Vec<String>,
    config: Option<PathBuf>,
    role: Option<String>,
    ttl: Option<i64>,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        words: vec![],
        config: None,
        role: None,
        ttl: None,
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--config" => a.config = Some(it.next().ok_or("--config needs a file")?.into()),
            "--role" => a.role = Some(it.next().ok_or("--role needs a role name or id")?),
            "--ttl" => {
                let v = it.next().ok_or("--ttl needs a number of seconds")?;
                let n: i64 = v.parse().map_err(|_| format!("--ttl: not a number: {v}"))?;
                // At most the longest token lifetime the key rotation keeps retired keys for
                // (§5.1): a longer token would stop verifying two days after the next rotation.
                if !(60..=86_400).contains(&n) {
                    return Err("--ttl must be 60..86400 seconds".into());
                }
                a.ttl = Some(n);
            }
            s if s.starts_with("--config=") => a.config = Some(s["--config=".len()..].into()),
            s if s.starts_with("--") && !matches!(s, "--help" | "--version") => {
                return Err(format!("unknown option {s}"));
            }
            _ => a.words.push(arg),
        }
    }
    Ok(a)
}

/// The configuration; `files`: also the files its keys name, as `serve` reads them (`serve`,
/// `config check`; `migrate` and `admin` do not read them and run without them).
fn load_config(path: Option<&std::path::Path>, files: bool) -> Result<Config, ExitCode> {
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

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("svc: {e}\n\n{HELP}");
            return ExitCode::from(2);
        }
    };
    let words: Vec<&str> = args.words.iter().map(String::as_str).collect();
    match words.as_slice() {
        // `svc <command> --help` as well.
        [] | ["help", ..] => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        w if w.contains(&"--help") => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        ["--version"] => {
            println!("svc {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    let files = matches!(words.as_slice(), ["serve"] | ["config", "check"]);
    let cfg = match load_config(args.config.as_deref(), files) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async move {
        match words.as_slice() {
            ["serve"] => serve(cfg).await,
            ["migrate"] => {
                init_logging(&cfg);
                match svc_server::store::Store::open(&cfg.database_url).await {
                    Ok(_) => {
                        println!("schema is up to date");
                        ExitCode::SUCCESS
                    }
                    Err(e) => fail(e),
                }
            }
            ["admin", "token"] => admin_token(cfg, args.role, args.ttl).await,
            ["admin", "keys", "rotate"] => match App::open(cfg).await {
                Ok(app) => match svc_server::issuer::keys::rotate(&app.store, &app.cipher, svc_server::clock::now_millis()).await {
                    Ok(()) => {
                        println!("new keys published; they sign from one hour from now, the previous keys verify for 48 hours after that");
                        ExitCode::SUCCESS
                    }
                    Err(e) => fail(e),
                },
                Err(e) => fail(e),
            },
            ["config", "check"] => {
                // The key files were checked with the values (`load_config`), as `serve` does.
                let given = Config::given_values(args.config.as_deref()).unwrap_or_default();
                println!("configuration is valid:");
                for (k, default) in KEYS {
                    let shown = match given.get(*k).filter(|v| !v.trim().is_empty()) {
                        Some(_) if svc_server::config::SECRET_KEYS.contains(k) => "(set, hidden)".to_string(),
                        Some(v) if *k == "SVC_DATABASE_URL" => without_password(v),
                        Some(v) => v.clone(),
                        None => match default {
                            Some(d) if !d.is_empty() => format!("{d} (default)"),
                            _ => "(default)".to_string(),
                        },
                    };
                    println!("  {k} = {shown}");
                }
                ExitCode::SUCCESS
            }
            _ => {
                eprintln!("svc: unknown command {:?}\n\n{HELP}", words.join(" "));
                ExitCode::from(2)
            }
        }
    })
}

/// A database URL with its password replaced by `***`.
fn without_password(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("svc: {e}");
    ExitCode::from(1)
}

async fn serve(cfg: Config) -> ExitCode {
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
                tokio::spawn(svc_server::metrics::serve(app.clone(), l));
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
    match svc_server::http::server::serve(app, listener, shutdown).await {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

async fn admin_token(cfg: Config, role: Option<String>, ttl: Option<i64>) -> ExitCode {
    let Some(role) = role else {
        eprintln!("svc: admin token needs --role (a role name such as SuperAdmin, or a role id)");
        return ExitCode::from(2);
    };
    let app = match App::open(cfg).await {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    let st = app.state();
    // An id names one role; a name is looked up among the system roles first (anyone with
    // `Roles` write can create another role called "SuperAdmin"), and must otherwise be unique.
    let by_id = uuid::Uuid::parse_str(role.trim()).ok().and_then(|id| st.roles.get(&id));
    let named: Vec<_> = st.roles.values().filter(|r| r.meta.name == role).collect();
    let r = match by_id {
        Some(r) => r,
        None => match (named.iter().find(|r| r.system), named.as_slice()) {
            (Some(r), _) | (None, [r]) => r,
            (None, []) => return fail(format!("no role named {role:?}")),
            (None, _) => {
                return fail(format!(
                    "{} roles are named {role:?}; give the role's id (--role <uuid>)",
                    named.len()
                ));
            }
        },
    };
    let ttl = ttl.unwrap_or(app.cfg.session_ttl_seconds as i64);
    let resp = svc_server::service::auth::mint_cli_token(&app, r.meta.id, ttl);
    println!("{}", serde_json::to_string(&resp).expect("serialises"));
    ExitCode::SUCCESS
}
