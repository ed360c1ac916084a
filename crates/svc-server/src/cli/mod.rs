//! The `svc` command line (clap, derive; docs/cli.md): the commands that run on the server host
//! against the configuration and the database (`serve`, `migrate`, `config check`, `admin token`,
//! `admin keys rotate|rotate-encryption`, `admin backup`, `admin restore`), and the `svc admin` client of a running server's management API
//! (`list`, `get`, `apply`, `explain`). One file per command family; this one parses and
//! dispatches.
//!
//! Exit codes: 0 success; 1 the command failed (a database, a server's error answer, an apply
//! item); 2 the command line or its input is wrong (clap's usage errors, an invalid
//! configuration, an unknown resource, an unreadable apply file).

mod apply;
mod backup;
mod client;
mod config_check;
mod explain;
mod local;
mod read;
mod resources;
mod server;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

/// Workload credential service: management API, Edge API, OIDC issuer.
///
/// Configuration comes from SVC_* environment variables and, optionally, a file of KEY=value
/// lines (--config FILE or SVC_CONFIG_FILE); the environment wins. `svc config check` lists every
/// key. ObjectStorageABucket log streams upload with the host's cloudA credentials, found through
/// the platform SDK's standard chain (AWS_* environment variables, shared files, container
/// endpoint, instance metadata; docs/log-streams/object-storage.md). The `svc admin
/// list|get|apply|explain` commands talk to a running server instead (--url, --token; SVC_URL,
/// SVC_TOKEN).
#[derive(Parser)]
#[command(name = "svc", version)]
struct Cli {
    /// A file of KEY=value configuration lines (the environment wins) [env: SVC_CONFIG_FILE]
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

// Parsed once per process: the size of a variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Run the service (management API, Edge API, OIDC issuer)
    Serve,
    /// Create or upgrade the database schema, then exit
    Migrate,
    /// The configuration
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Administration: on the server host (token, keys, backup, restore) or over the management
    /// API (list, get, apply, explain)
    #[command(subcommand)]
    Admin(AdminCommand),
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Validate the configuration and print it (no secrets)
    Check,
}

#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum AdminCommand {
    /// Print a management token (login response JSON) for a role; needs direct database access
    ///
    /// The role is given by id or name (a system role first; other names must be unique).
    Token(TokenArgs),
    /// The signing and token keys, and the at-rest encryption key
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Back up the SQLite database (an online, consistent copy with a manifest), or check a
    /// backup or a PostgreSQL dump (--verify)
    Backup(BackupArgs),
    /// Restore a backup into a stopped service's SQLite data directory
    Restore(RestoreArgs),
    /// List a resource's entries (GET /api/<version>/<resource>)
    List(ListArgs),
    /// Read one entry by id (GET /api/<version>/<resource>/<id>)
    Get(GetArgs),
    /// Create or update entries from a JSON or YAML file, matched by name (idempotent)
    Apply(ApplyArgs),
    /// Explain what /edge/v1/credentials would answer (POST /api/v1/access-policies/evaluate)
    Explain(explain::ExplainArgs),
}

#[derive(Args)]
struct TokenArgs {
    /// A role name (SuperAdmin, Auditor, ...) or a role id
    #[arg(long, value_name = "ROLE")]
    role: Option<String>,
    /// Lifetime in seconds, 60..86400 [default: SVC_SESSION_TTL_SECONDS]
    #[arg(long, value_name = "SECS", value_parser = ttl_seconds)]
    ttl: Option<i64>,
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Rotate the signing and token keys now (§5.1)
    Rotate,
    /// Seal every stored secret again under a new at-rest encryption key, while the service runs
    ///
    /// With the key file (SQLite without SVC_ENCRYPTION_KEY) the new key is generated into it.
    /// With SVC_ENCRYPTION_KEY, first give every node the new key as SVC_ENCRYPTION_KEY and the
    /// old as SVC_ENCRYPTION_KEY_PREVIOUS, and run this with the same configuration. The old key
    /// is retired once every value is sealed again (docs/OPERATIONS.md).
    RotateEncryption(RotateEncryptionArgs),
}

#[derive(Args)]
struct RotateEncryptionArgs {
    /// How long to wait for every running node to hold, then to seal with, the new key
    #[arg(long, value_name = "SECS", default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=3600))]
    wait: u64,
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["out", "verify"])))]
struct BackupArgs {
    /// Write the backup to FILE (mode 0600; refused when FILE exists, unless --force)
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Check FILE instead: a backup of this command, or a PostgreSQL dump (restored into a
    /// scratch database on SVC_DATABASE_URL's server): it restores, migrates and every secret opens
    #[arg(long, value_name = "FILE")]
    verify: Option<PathBuf>,
    /// With --out: replace FILE
    #[arg(long, requires = "out")]
    force: bool,
    /// With --verify: the key file to open the secrets with [default: the configuration's keys]
    #[arg(long = "key-file", value_name = "FILE", requires = "verify")]
    key_file: Option<PathBuf>,
}

#[derive(Args)]
struct RestoreArgs {
    /// The backup (made by `svc admin backup --out`)
    #[arg(long = "in", value_name = "FILE")]
    input: PathBuf,
    /// Replace the database (and a different key file) there; they are kept beside, renamed
    #[arg(long)]
    force: bool,
    /// The backup's key file (installed beside the restored database when the service uses a
    /// key file) [default: the configuration's keys]
    #[arg(long = "key-file", value_name = "FILE")]
    key_file: Option<PathBuf>,
}

/// `--ttl`: at most the longest token lifetime the key rotation keeps retired keys for (§5.1):
/// a longer token would stop verifying two days after the next rotation.
fn ttl_seconds(v: &str) -> Result<i64, String> {
    let n: i64 = v.parse().map_err(|_| format!("--ttl: not a number: {v}"))?;
    if !(60..=86_400).contains(&n) {
        return Err("--ttl must be 60..86400 seconds".into());
    }
    Ok(n)
}

/// How to reach the management API: shared by the client commands.
#[derive(Args, Clone)]
pub struct Conn {
    /// The server's base URL [env: SVC_URL] [default: http://localhost:8080]
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// A management token: a sign-in's accessToken, or the JSON `svc admin token` prints [env: SVC_TOKEN]
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// The resource set (X-Svc-ResourceSet), by id or name [default: the default resource set]
    #[arg(long = "resource-set", value_name = "ID|NAME")]
    resource_set: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Key columns, aligned
    Table,
    /// JSON as the API answers it (a list: its items)
    Json,
}

#[derive(Args)]
struct ListArgs {
    /// A resource (client-workloads, trust-providers, ...; v1/<resource> for an older view)
    resource: String,
    #[command(flatten)]
    conn: Conn,
    #[arg(long, short, value_enum, default_value = "table")]
    output: Output,
    /// Every page (the page size is --per-page, else 1000)
    #[arg(long)]
    all: bool,
    /// The page to show (1-based)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    page: Option<u32>,
    /// Entries per page, 1..1000
    #[arg(long = "per-page", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    per_page: Option<u32>,
    /// A filter expression: key:value, or text (§1.6)
    #[arg(long, value_name = "EXPR")]
    filter: Option<String>,
    /// An ordering: field [asc|desc]
    #[arg(long, value_name = "ORDER")]
    order: Option<String>,
    /// Another query parameter of the list (span-last-days=7, search=..., category=...)
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
}

#[derive(Args)]
struct GetArgs {
    /// A resource (client-workloads, trust-providers, ...; v1/<resource> for an older view)
    resource: String,
    /// The entry's id (externalId; an event's eventId)
    id: String,
    #[command(flatten)]
    conn: Conn,
    #[arg(long, short, value_enum, default_value = "table")]
    output: Output,
}

#[derive(Args)]
struct ApplyArgs {
    /// A JSON or YAML file of items `{resource: <resource>, ...body}`: a list, or one item per
    /// YAML document; `-` reads standard input
    #[arg(long, short, value_name = "FILE")]
    file: PathBuf,
    #[command(flatten)]
    conn: Conn,
}

/// A command's failure: its message (printed as `svc: <message>`) and exit code.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
    /// The HTTP status of a server's refusal.
    pub status: Option<u16>,
}

impl Failure {
    /// The command line or its input is wrong: exit 2.
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure {
            code: 2,
            message: message.into(),
            status: None,
        }
    }
    /// The command failed: exit 1.
    pub fn failed(message: impl Into<String>) -> Failure {
        Failure {
            code: 1,
            message: message.into(),
            status: None,
        }
    }
}

/// `svc: <message>` on stderr, and the exit code.
pub fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("svc: {e}");
    ExitCode::from(1)
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(command) = cli.command else {
        // `svc` alone prints the help, as it always has.
        let _ = Cli::command().print_help();
        return ExitCode::SUCCESS;
    };
    let config = cli.config;
    match command {
        Command::Serve => server::serve(config.as_deref()),
        Command::Migrate => server::migrate(config.as_deref()),
        Command::Config(ConfigCommand::Check) => config_check::run(config.as_deref()),
        Command::Admin(AdminCommand::Token(a)) => local::token(config.as_deref(), a.role, a.ttl),
        Command::Admin(AdminCommand::Keys(KeysCommand::Rotate)) => local::rotate_keys(config.as_deref()),
        Command::Admin(AdminCommand::Keys(KeysCommand::RotateEncryption(a))) => {
            local::rotate_encryption(config.as_deref(), std::time::Duration::from_secs(a.wait))
        }
        Command::Admin(AdminCommand::Backup(a)) => backup::backup(config.as_deref(), a),
        Command::Admin(AdminCommand::Restore(a)) => backup::restore(config.as_deref(), a),
        Command::Admin(AdminCommand::List(a)) => client_command(read::list(a)),
        Command::Admin(AdminCommand::Get(a)) => client_command(read::get(a)),
        Command::Admin(AdminCommand::Apply(a)) => client_command(apply::run(a)),
        Command::Admin(AdminCommand::Explain(a)) => client_command(explain::run(a)),
    }
}

/// Runs a management API client command on a one-thread runtime (it makes one request at a
/// time); its failure is `svc: <message>` and the failure's exit code.
fn client_command(f: impl std::future::Future<Output = Result<(), Failure>>) -> ExitCode {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match rt.block_on(f) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("svc: {}", e.message);
            ExitCode::from(e.code)
        }
    }
}

/// The multi-thread runtime of the server-side commands.
fn server_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
