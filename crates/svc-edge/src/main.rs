//! The `svc-edge` binary: `token`, `credentials`, `exec` and `agent` (docs/edge-client.md).

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use svc_edge::agent::{self, Agent, Listen};
use svc_edge::client::{Client, CredentialRequest, Renewal};
use svc_edge::config::{Config, Flags};
use svc_edge::error::Error;
use svc_edge::format::{self, Format, X509Files};

/// Collects this workload's evidence, authenticates to Svc and hands credentials to programs.
#[derive(Parser)]
#[command(name = "svc-edge", version, about)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

/// Global flags: accepted before or after the command; each falls back to its variable.
#[derive(Args)]
struct Global {
    /// Svc base URL [env: SVC_EDGE_URL]
    #[arg(long, global = true, value_name = "URL")]
    url: Option<String>,
    /// The trust provider's edgeSdkClientId [env: SVC_EDGE_CLIENT_ID]
    #[arg(long = "client-id", global = true, value_name = "ID")]
    client_id: Option<String>,
    /// Resource set sent as X-Svc-ResourceSet [env: SVC_EDGE_RESOURCE_SET]
    #[arg(long = "resource-set", global = true, value_name = "UUID")]
    resource_set: Option<String>,
    /// auto, or one evidence kind (oidc_idtoken, ciA_idtoken, ..., cloudC_idtoken) [env: SVC_EDGE_EVIDENCE]
    #[arg(long, global = true, value_name = "KIND")]
    evidence: Option<String>,
    /// Read the ID token from this file on every authentication [env: SVC_EDGE_TOKEN_FILE]
    #[arg(long = "token-file", global = true, value_name = "PATH")]
    token_file: Option<PathBuf>,
    /// Audience to request where the platform mints tokens on request (default: --url) [env: SVC_EDGE_AUDIENCE]
    #[arg(long, global = true, value_name = "AUD")]
    audience: Option<String>,
    /// Keep the edge access token here between invocations (never credentials) [env: SVC_EDGE_CACHE_DIR]
    #[arg(long = "cache-dir", global = true, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
}

#[derive(Args)]
struct Target {
    /// Target host (server workload)
    #[arg(long, value_name = "H")]
    host: String,
    /// Target port
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// Credential type: ApiKey, UsernamePassword, OAuthToken, CloudAStsFederation, CloudCWorkloadIdentityFederation, X509Svid
    #[arg(long = "type", value_name = "T")]
    credential_type: String,
    /// connectionMetadata selector (accessKeyId, accountName, headerName, headerValue, httpBodyFieldPath, httpBodyFieldValue)
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    meta: Vec<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Authenticate (/edge/v1/auth) and print the TokenDTO.
    Token,
    /// Print a credential (/edge/v1/credentials) as json, env or clouda-process.
    Credentials {
        #[command(flatten)]
        target: Target,
        /// json (as received), env (export lines) or clouda-process (credential_process JSON)
        #[arg(long, default_value = "json", value_name = "F")]
        format: String,
    },
    /// Run CMD with the credential in its environment; exit with CMD's status.
    Exec {
        #[command(flatten)]
        target: Target,
        /// The command and its arguments, after `--`
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<OsString>,
    },
    /// Serve credentials to local programs from a cache (GET /v1/credentials, /v1/token, /healthz).
    Agent {
        /// 127.0.0.1:PORT or unix:PATH
        #[arg(long, value_name = "ADDR")]
        listen: String,
    },
}

fn main() {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("svc-edge: cannot start the runtime: {e}");
            std::process::exit(5);
        }
    };
    let code = match rt.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("svc-edge: {}", e.describe());
            e.exit_code()
        }
    };
    let _ = std::io::stdout().flush();
    std::process::exit(code);
}

fn out(s: &[u8]) -> Result<(), Error> {
    let mut o = std::io::stdout().lock();
    o.write_all(s)
        .and_then(|_| if s.ends_with(b"\n") { Ok(()) } else { o.write_all(b"\n") })
        .and_then(|_| o.flush())
        .map_err(|e| Error::Failure(format!("writing stdout: {e}")))
}

fn request(t: &Target) -> Result<CredentialRequest, Error> {
    let mut meta = vec![];
    for m in &t.meta {
        let Some((k, v)) = m.split_once('=') else {
            return Err(Error::Config(format!("--meta {m:?}: expected KEY=VALUE")));
        };
        meta.push((k.to_string(), v.to_string()));
    }
    CredentialRequest::new(&t.host, t.port, &t.credential_type, meta)
}

async fn run(cli: Cli) -> Result<i32, Error> {
    let g = cli.global;
    let flags = Flags {
        url: g.url,
        client_id: g.client_id,
        resource_set: g.resource_set,
        evidence: g.evidence,
        token_file: g.token_file,
        audience: g.audience,
        cache_dir: g.cache_dir,
    };
    // Everything local is checked before the first network call.
    let cfg = Config::resolve(flags, Config::process_env())?;
    let clock = svc_edge::clock::system();
    match cli.command {
        Command::Token => {
            let client = Client::new(cfg, clock, Renewal::MinLeft(60_000));
            let s = client.authenticate().await?;
            out(&s.raw)?;
            Ok(0)
        }
        Command::Credentials { target, format } => {
            let f = Format::parse(&format)
                .ok_or_else(|| Error::Config(format!("--format {format:?}: one of json, env, clouda-process")))?;
            let req = request(&target)?;
            if f == Format::CloudAProcess && req.credential_type != "CloudAStsFederation" {
                return Err(Error::Config(format!(
                    "--format clouda-process: only for --type CloudAStsFederation, not {}",
                    req.credential_type
                )));
            }
            let client = Client::new(cfg, clock, Renewal::MinLeft(60_000));
            let cred = client.credentials(&req).await?;
            match f {
                Format::Json => out(&cred.body())?,
                Format::Env => {
                    let files = if req.is_x509() {
                        Some(X509Files::write(&cred, true)?)
                    } else {
                        None
                    };
                    out(format::env_text(&format::variables(&cred, files.as_ref())).as_bytes())?
                }
                Format::CloudAProcess => out(format::clouda_process(&cred)?.as_bytes())?,
            }
            Ok(0)
        }
        Command::Exec { target, command } => {
            let req = request(&target)?;
            let client = Client::new(cfg, clock, Renewal::MinLeft(60_000));
            let cred = client.credentials(&req).await?;
            let files = if req.is_x509() {
                Some(X509Files::write(&cred, false)?)
            } else {
                None
            };
            let vars = format::variables(&cred, files.as_ref());
            let code = exec(&command, &vars, &cred).await;
            drop(files);
            code
        }
        Command::Agent { listen } => {
            let listen = Listen::parse(&listen)?;
            svc_edge::log::to_stdout();
            let max = cfg.number("SVC_EDGE_CACHE_MAX", 1_000, 1)?;
            let static_s = cfg.number("SVC_EDGE_STATIC_REFRESH_SECONDS", 300, 1)?;
            let client = Arc::new(Client::new(cfg, clock, Renewal::Fraction(0.2)));
            let agent = Agent::new(
                client,
                agent::Settings {
                    max_entries: max as usize,
                    static_refresh_ms: static_s as i64 * 1000,
                },
            );
            agent::serve(agent, listen).await?;
            Ok(0)
        }
    }
}

/// Runs CMD with the variables added; SIGTERM is passed on, SIGINT left to CMD (it shares the
/// terminal's process group). The exit status is CMD's (128 + N when a signal N ended it).
async fn exec(
    command: &[OsString],
    vars: &[(&'static str, String)],
    cred: &svc_edge::Credential,
) -> Result<i32, Error> {
    use std::os::unix::process::ExitStatusExt;
    let mut cmd = tokio::process::Command::new(&command[0]);
    cmd.args(&command[1..]);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    if cred.response.credential_type == svc_api::edge::CredentialType::CloudAStsFederation
        && cred.response.data.get("cloudASessionToken").is_none()
    {
        // A session token inherited from elsewhere would not belong to these keys.
        cmd.env_remove("AWS_SESSION_TOKEN");
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::Failure(format!("cannot run {}: {e}", command[0].to_string_lossy())))?;
    let pid = child.id();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| Error::Failure(format!("signal handler: {e}")))?;
    let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(|e| Error::Failure(format!("signal handler: {e}")))?;
    let status = loop {
        tokio::select! {
            s = child.wait() => break s.map_err(|e| Error::Failure(format!("waiting for the command: {e}")))?,
            _ = term.recv() => {
                if let Some(pid) = pid {
                    let _ = std::process::Command::new("kill").args(["-s", "TERM", &pid.to_string()]).status();
                }
            }
            _ = int.recv() => {}
        }
    };
    Ok(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}
