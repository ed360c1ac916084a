//! Configuration: the `SVC_*` keys of contract §5.5, read from the environment and an optional
//! env-style file (`KEY=value` lines, the same names). `Config::load` validates every key and
//! reports every problem at once, each naming its key.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use crate::net::IpNet;
use crate::platform;

/// Where the data lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DatabaseUrl {
    Sqlite(PathBuf),
    Postgres(String),
}

impl DatabaseUrl {
    pub fn is_postgres(&self) -> bool {
        matches!(self, DatabaseUrl::Postgres(_))
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    pub public_url: String,
    pub listen_addr: SocketAddr,
    pub database_url: DatabaseUrl,
    pub encryption_key: Option<[u8; 32]>,
    /// `SVC_ENCRYPTION_KEY_PREVIOUS`: during an at-rest key rotation (docs/OPERATIONS.md), the key
    /// the database's secrets were sealed with before `SVC_ENCRYPTION_KEY`.
    pub encryption_key_previous: Option<[u8; 32]>,
    pub stack: String,
    pub tenant: String,
    pub bootstrap_admin_email: Option<String>,
    pub bootstrap_admin_password: Option<String>,
    pub session_ttl_seconds: u32,
    /// Time a client has to send a request's headers; also the idle limit of a keep-alive
    /// connection (ours, not the contract's).
    pub http_header_timeout_seconds: u32,
    /// Failed password sign-ins a source address may make per minute (and at once) before its
    /// sign-ins are refused with 429 (issue 22: password spraying); 0 switches it off.
    pub login_failures_per_minute: u32,
    /// How long a stopping server (SIGTERM) waits for requests in flight before it closes the
    /// remaining connections (issue 22: a bounded graceful stop).
    pub shutdown_grace_seconds: u32,
    /// `SVC_EVENTS_FAIL_OPEN`: an edge answer leaves without waiting for its events to be
    /// committed (issue 19; the default, false, holds every answer until they are).
    pub events_fail_open: bool,
    /// `SVC_EVENTS_COMMIT_TIMEOUT_MS`: how long an edge answer waits for its events' commit before
    /// it answers 503 instead (fail closed).
    pub events_commit_timeout_ms: u32,
    /// `SVC_METRICS_LISTEN_ADDR`: where `/metrics` (Prometheus text) is served; `None` (set
    /// empty): no metrics listener and no recorder.
    pub metrics_listen_addr: Option<SocketAddr>,
    pub edge_token_ttl_seconds: u32,
    pub edge_audience: String,
    pub edge_max_skew_seconds: u32,
    pub jwt_leeway_seconds: u32,
    pub edge_auth_rate: u32,
    pub edge_auth_burst: u32,
    pub edge_credentials_rate: u32,
    pub edge_credentials_burst: u32,
    pub trusted_proxies: Vec<IpNet>,
    pub allow_insecure_upstream: bool,
    /// Link-local or metadata networks entity URLs may reach after all (issue 31; default none).
    pub upstream_allowed_networks: Vec<IpNet>,
    pub upstream_ca_bundle: Option<PathBuf>,
    pub clouda_iid_certs: Option<PathBuf>,
    pub clouda_iid_max_age_seconds: u64,
    pub clouda_sts_url_template: String,
    pub clouda_regions: Vec<String>,
    pub clouda_role_server_id: Option<String>,
    pub cloudb_roots: Option<PathBuf>,
    pub cloudb_metadata_domains: Vec<String>,
    pub cloudb_aia_hosts: Vec<String>,
    pub cloudc_jwks_url: String,
    pub cloudc_issuers: Vec<String>,
    pub cia_issuer: String,
    pub cib_issuer: String,
    pub cic_issuer: String,
    pub clouda_sts_federation_url: String,
    pub clouda_sts_audience: String,
    pub cloudc_sts_url: String,
    pub cloudc_iamcredentials_url: String,
    pub cloudc_scope: String,
    pub cloudb_login_url: String,
    pub cloudb_keyvault_url_template: String,
    pub cloudb_keyvault_scope: String,
    pub aia_token_url: String,
    pub aib_token_url: String,
    pub objectstoragea_url_template: String,
    pub objectstoragec_upload_url: String,
    pub hec_auth_scheme: String,
    /// `SVC_LOG_STREAM_INTERVAL_SECONDS`: how often each active log stream sends a transaction
    /// (§3.14: 60 s).
    pub log_stream_interval_seconds: u32,
    /// `SVC_EVENTS_RETENTION_DAYS`: audit entries and events older than this are deleted (never
    /// ones an active log stream has not delivered; on PostgreSQL a UTC day at a time,
    /// `Store::retention_cutoff`); 0 keeps everything.
    pub events_retention_days: u32,
    pub geoip_db: Option<PathBuf>,
    pub signing_key_rotation_days: u32,
    pub x509_ca_cert: Option<PathBuf>,
    pub x509_ca_key: Option<PathBuf>,
    /// `SVC_LOG`: log filter such as `info` or `svc_server=debug,info`.
    pub log: String,
    /// `SVC_LOG_FORMAT`: `text` (default) or `json`.
    pub log_json: bool,
    /// The host's cloudA credential-chain variables ([`CLOUDA_CHAIN_VARS`]), for objectStorageA
    /// log streams (`events::object_storage::clouda_chain`).
    pub clouda_chain_env: ChainEnv,
}

/// The variables the cloudA platform SDK's standard credential chain reads, under the SDK's own
/// names (not `SVC_*` keys: the host's credentials are the platform's business, and an operator
/// sets them as for any program on that host). Only these are taken from the process
/// environment; `HOME` locates the default shared credentials and config files.
pub const CLOUDA_CHAIN_VARS: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
    "HOME",
];

/// The values of [`CLOUDA_CHAIN_VARS`] that are set (and not blank). Its `Debug` names the
/// variables only: the secret key and session token are among them.
#[derive(Clone, Default)]
pub struct ChainEnv(BTreeMap<String, String>);

impl ChainEnv {
    /// A variable's value, `None` when unset or blank.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// Every value (the chain's endpoints among them).
    pub fn values(&self) -> impl Iterator<Item = &str> {
        self.0.values().map(String::as_str)
    }
}

impl std::fmt::Debug for ChainEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

/// The process environment this service reads: its `SVC_*` keys and the cloudA chain's variables.
fn process_env() -> BTreeMap<String, String> {
    std::env::vars()
        .filter(|(k, _)| k.starts_with("SVC_") || CLOUDA_CHAIN_VARS.contains(&k.as_str()))
        .collect()
}

/// Every key this service reads, with its default as text (`None` = unset), for `--help`, the
/// README table and unknown-key detection.
pub const KEYS: &[(&str, Option<&str>)] = &[
    ("SVC_CONFIG_FILE", None),
    ("SVC_PUBLIC_URL", Some("http://localhost:8080")),
    ("SVC_LISTEN_ADDR", Some("0.0.0.0:8080")),
    ("SVC_DATABASE_URL", Some("sqlite://./svc-data/svc.db")),
    ("SVC_ENCRYPTION_KEY", None),
    ("SVC_ENCRYPTION_KEY_PREVIOUS", None),
    ("SVC_STACK", Some("local")),
    ("SVC_TENANT", Some("default")),
    ("SVC_BOOTSTRAP_ADMIN_EMAIL", None),
    ("SVC_BOOTSTRAP_ADMIN_PASSWORD", None),
    ("SVC_SESSION_TTL_SECONDS", Some("3600")),
    ("SVC_HTTP_HEADER_TIMEOUT_SECONDS", Some("60")),
    ("SVC_LOGIN_FAILURES_PER_MINUTE", Some("100")),
    ("SVC_SHUTDOWN_GRACE_SECONDS", Some("10")),
    ("SVC_EVENTS_FAIL_OPEN", Some("false")),
    ("SVC_EVENTS_COMMIT_TIMEOUT_MS", Some("5000")),
    ("SVC_METRICS_LISTEN_ADDR", Some("127.0.0.1:9464")),
    ("SVC_EDGE_TOKEN_TTL_SECONDS", Some("3600")),
    ("SVC_EDGE_AUDIENCE", None),
    ("SVC_EDGE_MAX_SKEW_SECONDS", Some("300")),
    ("SVC_JWT_LEEWAY_SECONDS", Some("60")),
    ("SVC_EDGE_AUTH_RATE", Some("50")),
    ("SVC_EDGE_AUTH_BURST", Some("200")),
    ("SVC_EDGE_CREDENTIALS_RATE", Some("100")),
    ("SVC_EDGE_CREDENTIALS_BURST", Some("400")),
    ("SVC_TRUSTED_PROXIES", Some("")),
    ("SVC_ALLOW_INSECURE_UPSTREAM", Some("false")),
    ("SVC_UPSTREAM_ALLOWED_NETWORKS", Some("")),
    ("SVC_UPSTREAM_CA_BUNDLE", None),
    ("SVC_CLOUDA_IID_CERTS", None),
    ("SVC_CLOUDA_IID_MAX_AGE_SECONDS", Some("0")),
    ("SVC_CLOUDA_STS_URL_TEMPLATE", Some(platform::CLOUDA_STS_URL_TEMPLATE)),
    ("SVC_CLOUDA_REGIONS", None),
    ("SVC_CLOUDA_ROLE_SERVER_ID", None),
    ("SVC_CLOUDB_ROOTS", None),
    ("SVC_CLOUDB_METADATA_DOMAINS", None),
    ("SVC_CLOUDB_AIA_HOSTS", None),
    ("SVC_CLOUDC_JWKS_URL", Some(platform::CLOUDC_JWKS_URL)),
    ("SVC_CLOUDC_ISSUERS", None),
    ("SVC_CIA_ISSUER", Some(platform::CIA_ISSUER)),
    ("SVC_CIB_ISSUER", Some(platform::CIB_ISSUER)),
    ("SVC_CIC_ISSUER", Some(platform::CIC_ISSUER)),
    (
        "SVC_CLOUDA_STS_FEDERATION_URL",
        Some(platform::CLOUDA_STS_FEDERATION_URL),
    ),
    ("SVC_CLOUDA_STS_AUDIENCE", Some(platform::CLOUDA_STS_AUDIENCE)),
    ("SVC_CLOUDC_STS_URL", Some(platform::CLOUDC_STS_URL)),
    (
        "SVC_CLOUDC_IAMCREDENTIALS_URL",
        Some(platform::CLOUDC_IAMCREDENTIALS_URL),
    ),
    ("SVC_CLOUDC_SCOPE", Some(platform::CLOUDC_SCOPE)),
    ("SVC_CLOUDB_LOGIN_URL", Some(platform::CLOUDB_LOGIN_URL)),
    (
        "SVC_CLOUDB_KEYVAULT_URL_TEMPLATE",
        Some(platform::CLOUDB_KEYVAULT_URL_TEMPLATE),
    ),
    ("SVC_CLOUDB_KEYVAULT_SCOPE", Some(platform::CLOUDB_KEYVAULT_SCOPE)),
    ("SVC_AIA_TOKEN_URL", Some(platform::AIA_TOKEN_URL)),
    ("SVC_AIB_TOKEN_URL", Some(platform::AIB_TOKEN_URL)),
    (
        "SVC_OBJECTSTORAGEA_URL_TEMPLATE",
        Some(platform::OBJECTSTORAGEA_URL_TEMPLATE),
    ),
    (
        "SVC_OBJECTSTORAGEC_UPLOAD_URL",
        Some(platform::OBJECTSTORAGEC_UPLOAD_URL),
    ),
    ("SVC_HEC_AUTH_SCHEME", Some(platform::HEC_AUTH_SCHEME)),
    ("SVC_LOG_STREAM_INTERVAL_SECONDS", Some("60")),
    ("SVC_EVENTS_RETENTION_DAYS", Some("90")),
    ("SVC_GEOIP_DB", None),
    ("SVC_SIGNING_KEY_ROTATION_DAYS", Some("30")),
    ("SVC_X509_CA_CERT", None),
    ("SVC_X509_CA_KEY", None),
    ("SVC_LOG", Some("info")),
    ("SVC_LOG_FORMAT", Some("text")),
];

/// Reads a `KEY=value` file: `#` comments, blank lines, optional `export ` prefix and quotes.
pub fn parse_env_file(text: &str) -> Result<BTreeMap<String, String>, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut errors = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((k, v)) = line.split_once('=') else {
            errors.push(format!("line {}: expected KEY=value", n + 1));
            continue;
        };
        let k = k.trim();
        let mut v = v.trim();
        if v.len() >= 2 && ((v.starts_with('"') && v.ends_with('"')) || (v.starts_with('\'') && v.ends_with('\''))) {
            v = &v[1..v.len() - 1];
        }
        if !KEYS.iter().any(|(name, _)| *name == k) {
            errors.push(format!("line {}: unknown key {k}", n + 1));
            continue;
        }
        out.insert(k.to_string(), v.to_string());
    }
    if errors.is_empty() { Ok(out) } else { Err(errors) }
}

struct Reader<'a> {
    vals: &'a BTreeMap<String, String>,
    errors: Vec<String>,
}

impl Reader<'_> {
    /// A key's value; an empty (or blank) value is no value, so the key takes its default, as
    /// `KEY=` in a compose file or an env file means (lists excepted: [`Reader::list`]).
    fn raw(&self, key: &str) -> Option<&str> {
        self.vals.get(key).map(|s| s.as_str()).filter(|s| !s.trim().is_empty())
    }
    fn err(&mut self, key: &str, msg: impl std::fmt::Display) {
        self.errors.push(format!("{key}: {msg}"));
    }
    fn string(&mut self, key: &str, default: &str) -> String {
        self.raw(key).unwrap_or(default).to_string()
    }
    fn opt_string(&mut self, key: &str) -> Option<String> {
        self.raw(key).filter(|s| !s.is_empty()).map(str::to_string)
    }
    fn num<T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy>(
        &mut self,
        key: &str,
        default: T,
        min: T,
        max: T,
    ) -> T {
        match self.raw(key) {
            None | Some("") => default,
            Some(s) => match s.trim().parse::<T>() {
                Ok(v) if v >= min && v <= max => v,
                _ => {
                    self.err(key, format!("must be an integer in {min}..{max}, got {s:?}"));
                    default
                }
            },
        }
    }
    fn boolean(&mut self, key: &str, default: bool) -> bool {
        match self.raw(key).map(|s| s.trim().to_ascii_lowercase()) {
            None => default,
            Some(s) if s.is_empty() => default,
            Some(s) if matches!(s.as_str(), "true" | "1" | "yes" | "on") => true,
            Some(s) if matches!(s.as_str(), "false" | "0" | "no" | "off") => false,
            Some(s) => {
                self.err(key, format!("must be true or false, got {s:?}"));
                default
            }
        }
    }
    /// A comma-separated list. Unlike other keys, an empty value is the empty list: `KEY=` turns
    /// an allow-list off (no AIA host, no region) rather than back to the platform's defaults.
    fn list(&mut self, key: &str, default: &[&str]) -> Vec<String> {
        match self.vals.get(key).map(String::as_str) {
            None => default.iter().map(|s| s.to_string()).collect(),
            Some(s) => s
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        }
    }
    fn url(&mut self, key: &str, default: &str) -> String {
        let v = self.string(key, default);
        if !absolute_http_url(&v) {
            self.err(key, format!("must be an absolute http(s) URL, got {v:?}"));
        }
        v
    }
    fn file(&mut self, key: &str) -> Option<PathBuf> {
        let p = self.opt_string(key)?;
        let path = PathBuf::from(&p);
        if !path.is_file() {
            self.err(key, format!("file {p:?} does not exist"));
        }
        Some(path)
    }
}

fn parse_database_url(s: &str) -> Result<DatabaseUrl, String> {
    if let Some(rest) = s.strip_prefix("sqlite://") {
        let path = rest.split('?').next().unwrap_or("");
        if path.is_empty() {
            return Err("sqlite URL needs a path, e.g. sqlite://./svc-data/svc.db".into());
        }
        return Ok(DatabaseUrl::Sqlite(PathBuf::from(path)));
    }
    if s.starts_with("postgres://") || s.starts_with("postgresql://") {
        return Ok(DatabaseUrl::Postgres(s.to_string()));
    }
    Err(format!(
        "must be sqlite://<path> or postgres://user:pass@host:port/db, got {s:?}"
    ))
}

/// An absolute `http`/`https` URL with a host; `{placeholders}` (URL templates) stand for a label.
fn absolute_http_url(v: &str) -> bool {
    let mut filled = String::with_capacity(v.len());
    let mut in_placeholder = false;
    for c in v.chars() {
        match c {
            '{' => in_placeholder = true,
            '}' if in_placeholder => {
                in_placeholder = false;
                filled.push('x');
            }
            _ if in_placeholder => {}
            c => filled.push(c),
        }
    }
    url::Url::parse(&filled)
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty()))
        && !v.chars().any(char::is_whitespace)
}

/// The `svc admin` client's own keys: the management API's base URL and a management token. Read
/// by the command line's HTTP commands only (never by the server), so `serve` does not warn about
/// them and `config check` does not list them.
pub const CLIENT_KEYS: &[&str] = &["SVC_URL", "SVC_TOKEN"];

/// A client key's value from the environment (one of [`CLIENT_KEYS`]); empty counts as unset.
pub fn client_env(key: &str) -> Option<String> {
    debug_assert!(CLIENT_KEYS.contains(&key), "{key} is not a client key");
    std::env::var(key).ok().filter(|v| !v.trim().is_empty())
}

/// The keys whose values `svc config check` never prints.
pub const SECRET_KEYS: &[&str] = &[
    "SVC_ENCRYPTION_KEY",
    "SVC_ENCRYPTION_KEY_PREVIOUS",
    "SVC_BOOTSTRAP_ADMIN_PASSWORD",
];

impl Config {
    /// The values `Config::load` reads (the file under the environment), as given; for
    /// `svc config check`.
    pub fn given_values(file: Option<&Path>) -> Result<BTreeMap<String, String>, Vec<String>> {
        let env: BTreeMap<String, String> = std::env::vars().filter(|(k, _)| k.starts_with("SVC_")).collect();
        Self::merged(file, env)
    }

    /// Loads from the process environment (and `SVC_CONFIG_FILE` or `file`).
    pub fn load(file: Option<&Path>) -> Result<Config, Vec<String>> {
        Self::from_sources(file, process_env())
    }

    /// As [`Config::load`], and also checks the contents of the files the values name with
    /// `files` (the caller's: PEM bundles and keys are read by other modules). Its errors are
    /// reported with the values' own, all at once; a key whose value is already refused is not
    /// reported twice.
    pub fn load_checked(file: Option<&Path>, files: impl Fn(&Config) -> Vec<String>) -> Result<Config, Vec<String>> {
        Self::from_map_checked(&Self::merged(file, process_env())?, files)
    }

    /// Merges the file (if any) under the given environment, then validates.
    pub fn from_sources(file: Option<&Path>, env: BTreeMap<String, String>) -> Result<Config, Vec<String>> {
        Self::from_map(&Self::merged(file, env)?)
    }

    fn merged(file: Option<&Path>, env: BTreeMap<String, String>) -> Result<BTreeMap<String, String>, Vec<String>> {
        let file = file
            .map(Path::to_path_buf)
            .or_else(|| env.get("SVC_CONFIG_FILE").map(PathBuf::from));
        let mut vals = BTreeMap::new();
        if let Some(f) = &file {
            let text = std::fs::read_to_string(f)
                .map_err(|e| vec![format!("SVC_CONFIG_FILE: cannot read {}: {e}", f.display())])?;
            vals = parse_env_file(&text).map_err(|errs| {
                errs.into_iter()
                    .map(|e| format!("{}: {e}", f.display()))
                    .collect::<Vec<_>>()
            })?;
        }
        vals.extend(env);
        Ok(vals)
    }

    pub fn from_map(vals: &BTreeMap<String, String>) -> Result<Config, Vec<String>> {
        Self::from_map_checked(vals, |_| Vec::new())
    }

    /// [`Config::from_map`] with the file check of [`Config::load_checked`].
    pub fn from_map_checked(
        vals: &BTreeMap<String, String>,
        files: impl Fn(&Config) -> Vec<String>,
    ) -> Result<Config, Vec<String>> {
        let mut r = Reader {
            vals,
            errors: Vec::new(),
        };

        let mut public_url = r.url("SVC_PUBLIC_URL", "http://localhost:8080");
        while public_url.ends_with('/') {
            public_url.pop();
        }
        let listen_raw = r.string("SVC_LISTEN_ADDR", "0.0.0.0:8080");
        let listen_addr = listen_raw
            .parse()
            .ok()
            .or_else(|| {
                // A host name (`localhost:8080`): its first address.
                std::net::ToSocketAddrs::to_socket_addrs(listen_raw.as_str())
                    .ok()
                    .and_then(|mut a| a.next())
            })
            .unwrap_or_else(|| {
                r.err(
                    "SVC_LISTEN_ADDR",
                    format!("must be host:port such as 0.0.0.0:8080, got {listen_raw:?}"),
                );
                SocketAddr::from(([0, 0, 0, 0], 8080))
            });
        // Set but empty disables metrics (unlike other keys, where empty means the default).
        let metrics_raw = match r.vals.get("SVC_METRICS_LISTEN_ADDR") {
            Some(v) => v.trim().to_string(),
            None => "127.0.0.1:9464".to_string(),
        };
        let metrics_listen_addr = match metrics_raw.as_str() {
            "" => None,
            raw => raw
                .parse()
                .ok()
                .or_else(|| {
                    std::net::ToSocketAddrs::to_socket_addrs(raw)
                        .ok()
                        .and_then(|mut a| a.next())
                })
                .or_else(|| {
                    r.err(
                        "SVC_METRICS_LISTEN_ADDR",
                        format!("must be host:port such as 127.0.0.1:9464, or empty to disable, got {raw:?}"),
                    );
                    None
                }),
        };
        let db_raw = r.string("SVC_DATABASE_URL", "sqlite://./svc-data/svc.db");
        let database_url = parse_database_url(&db_raw).unwrap_or_else(|e| {
            r.err("SVC_DATABASE_URL", e);
            DatabaseUrl::Sqlite(PathBuf::from("./svc-data/svc.db"))
        });
        let key = |r: &mut Reader, name: &str| match r.opt_string(name) {
            None => None,
            Some(s) => match crate::crypto::b64std_decode(s.trim()) {
                Some(k) if k.len() == 32 => {
                    let mut key = [0u8; 32];
                    key.copy_from_slice(&k);
                    Some(key)
                }
                _ => {
                    r.err(
                        name,
                        "must be standard base64 of exactly 32 bytes (e.g. `openssl rand -base64 32`)",
                    );
                    None
                }
            },
        };
        let encryption_key = key(&mut r, "SVC_ENCRYPTION_KEY");
        let encryption_key_previous = key(&mut r, "SVC_ENCRYPTION_KEY_PREVIOUS");
        if encryption_key_previous.is_some() {
            if r.raw("SVC_ENCRYPTION_KEY").is_none_or(|v| v.trim().is_empty()) {
                r.err(
                    "SVC_ENCRYPTION_KEY_PREVIOUS",
                    "needs SVC_ENCRYPTION_KEY (the new key of a rotation; with the key file the file holds both)",
                );
            } else if encryption_key == encryption_key_previous {
                r.err("SVC_ENCRYPTION_KEY_PREVIOUS", "is the same key as SVC_ENCRYPTION_KEY");
            }
        }
        if database_url.is_postgres()
            && encryption_key.is_none()
            && !r.errors.iter().any(|e| e.starts_with("SVC_ENCRYPTION_KEY"))
        {
            r.err(
                "SVC_ENCRYPTION_KEY",
                "is required with PostgreSQL: every node must share the same explicit key",
            );
        }
        let stack = r.string("SVC_STACK", "local");
        let tenant = r.string("SVC_TENANT", "default");
        for (k, v) in [("SVC_STACK", &stack), ("SVC_TENANT", &tenant)] {
            if v.is_empty() || v.contains(':') || v.chars().any(char::is_whitespace) {
                r.err(
                    k,
                    format!("must be non-empty without ':' or spaces (it is a clientId segment), got {v:?}"),
                );
            }
        }
        let bootstrap_admin_email = r.opt_string("SVC_BOOTSTRAP_ADMIN_EMAIL");
        let bootstrap_admin_password = r.opt_string("SVC_BOOTSTRAP_ADMIN_PASSWORD");
        if bootstrap_admin_email.is_some() != bootstrap_admin_password.is_some() {
            r.err(
                "SVC_BOOTSTRAP_ADMIN_PASSWORD",
                "SVC_BOOTSTRAP_ADMIN_EMAIL and SVC_BOOTSTRAP_ADMIN_PASSWORD must be set together",
            );
        }
        if let Some(p) = &bootstrap_admin_password {
            let n = p.chars().count();
            if !(12..=128).contains(&n) {
                r.err("SVC_BOOTSTRAP_ADMIN_PASSWORD", "must be 12..128 characters");
            }
        }
        if let Some(e) = &bootstrap_admin_email
            && !crate::util::is_email(e)
        {
            r.err(
                "SVC_BOOTSTRAP_ADMIN_EMAIL",
                format!("must be an e-mail address, got {e:?}"),
            );
        }
        // Any positive lifetime up to a day (the contract gives only the default). Tokens are
        // still accepted 30 s past their `exp` (§2.5 leeway).
        let session_ttl_seconds = r.num("SVC_SESSION_TTL_SECONDS", 3600u32, 1, 86400);
        let edge_token_ttl_seconds = r.num("SVC_EDGE_TOKEN_TTL_SECONDS", 3600u32, 300, 86400);
        let http_header_timeout_seconds = r.num("SVC_HTTP_HEADER_TIMEOUT_SECONDS", 60u32, 1, 3600);
        let login_failures_per_minute = r.num("SVC_LOGIN_FAILURES_PER_MINUTE", 100u32, 0, 1_000_000);
        let shutdown_grace_seconds = r.num("SVC_SHUTDOWN_GRACE_SECONDS", 10u32, 0, 3600);
        let events_fail_open = r.boolean("SVC_EVENTS_FAIL_OPEN", false);
        let events_commit_timeout_ms = r.num("SVC_EVENTS_COMMIT_TIMEOUT_MS", 5000u32, 10, 600_000);
        let edge_audience = r.opt_string("SVC_EDGE_AUDIENCE").unwrap_or_else(|| public_url.clone());
        let edge_max_skew_seconds = r.num("SVC_EDGE_MAX_SKEW_SECONDS", 300u32, 1, 3600);
        let jwt_leeway_seconds = r.num("SVC_JWT_LEEWAY_SECONDS", 60u32, 0, 600);
        let edge_auth_rate = r.num("SVC_EDGE_AUTH_RATE", 50u32, 1, 10_000_000);
        let edge_auth_burst = r.num("SVC_EDGE_AUTH_BURST", 200u32, 1, 10_000_000);
        let edge_credentials_rate = r.num("SVC_EDGE_CREDENTIALS_RATE", 100u32, 1, 10_000_000);
        let edge_credentials_burst = r.num("SVC_EDGE_CREDENTIALS_BURST", 400u32, 1, 10_000_000);
        let mut trusted_proxies = Vec::new();
        for item in r.list("SVC_TRUSTED_PROXIES", &[]) {
            match IpNet::parse(&item) {
                Some(n) => trusted_proxies.push(n),
                None => r.err("SVC_TRUSTED_PROXIES", format!("{item:?} is not an IP address or CIDR")),
            }
        }
        let allow_insecure_upstream = r.boolean("SVC_ALLOW_INSECURE_UPSTREAM", false);
        let mut upstream_allowed_networks = Vec::new();
        for item in r.list("SVC_UPSTREAM_ALLOWED_NETWORKS", &[]) {
            match IpNet::parse(&item) {
                Some(n) => upstream_allowed_networks.push(n),
                None => r.err(
                    "SVC_UPSTREAM_ALLOWED_NETWORKS",
                    format!("{item:?} is not an IP address or CIDR"),
                ),
            }
        }
        let upstream_ca_bundle = r.file("SVC_UPSTREAM_CA_BUNDLE");
        let clouda_iid_certs = r.file("SVC_CLOUDA_IID_CERTS");
        let clouda_iid_max_age_seconds = r.num("SVC_CLOUDA_IID_MAX_AGE_SECONDS", 0u64, 0, u32::MAX as u64);
        let clouda_sts_url_template = r.url("SVC_CLOUDA_STS_URL_TEMPLATE", platform::CLOUDA_STS_URL_TEMPLATE);
        let clouda_regions = r.list("SVC_CLOUDA_REGIONS", platform::CLOUDA_REGIONS);
        let clouda_role_server_id = r.opt_string("SVC_CLOUDA_ROLE_SERVER_ID");
        let cloudb_roots = r.file("SVC_CLOUDB_ROOTS");
        let cloudb_metadata_domains = r.list("SVC_CLOUDB_METADATA_DOMAINS", platform::CLOUDB_METADATA_DOMAINS);
        let cloudb_aia_hosts = r.list("SVC_CLOUDB_AIA_HOSTS", platform::CLOUDB_AIA_HOSTS);
        let cloudc_jwks_url = r.url("SVC_CLOUDC_JWKS_URL", platform::CLOUDC_JWKS_URL);
        let cloudc_issuers = r.list("SVC_CLOUDC_ISSUERS", platform::CLOUDC_ISSUERS);
        let cia_issuer = r.url("SVC_CIA_ISSUER", platform::CIA_ISSUER);
        let cib_issuer = r.url("SVC_CIB_ISSUER", platform::CIB_ISSUER);
        let cic_issuer = r.url("SVC_CIC_ISSUER", platform::CIC_ISSUER);
        let clouda_sts_federation_url = r.url("SVC_CLOUDA_STS_FEDERATION_URL", platform::CLOUDA_STS_FEDERATION_URL);
        let clouda_sts_audience = r.string("SVC_CLOUDA_STS_AUDIENCE", platform::CLOUDA_STS_AUDIENCE);
        let cloudc_sts_url = r.url("SVC_CLOUDC_STS_URL", platform::CLOUDC_STS_URL);
        let cloudc_iamcredentials_url = r.url("SVC_CLOUDC_IAMCREDENTIALS_URL", platform::CLOUDC_IAMCREDENTIALS_URL);
        let cloudc_scope = r.string("SVC_CLOUDC_SCOPE", platform::CLOUDC_SCOPE);
        let cloudb_login_url = r.url("SVC_CLOUDB_LOGIN_URL", platform::CLOUDB_LOGIN_URL);
        let cloudb_keyvault_url_template = r.url(
            "SVC_CLOUDB_KEYVAULT_URL_TEMPLATE",
            platform::CLOUDB_KEYVAULT_URL_TEMPLATE,
        );
        let cloudb_keyvault_scope = r.string("SVC_CLOUDB_KEYVAULT_SCOPE", platform::CLOUDB_KEYVAULT_SCOPE);
        let aia_token_url = r.url("SVC_AIA_TOKEN_URL", platform::AIA_TOKEN_URL);
        let aib_token_url = r.url("SVC_AIB_TOKEN_URL", platform::AIB_TOKEN_URL);
        let objectstoragea_url_template =
            r.url("SVC_OBJECTSTORAGEA_URL_TEMPLATE", platform::OBJECTSTORAGEA_URL_TEMPLATE);
        let objectstoragec_upload_url = r.url("SVC_OBJECTSTORAGEC_UPLOAD_URL", platform::OBJECTSTORAGEC_UPLOAD_URL);
        let hec_auth_scheme = r.string("SVC_HEC_AUTH_SCHEME", platform::HEC_AUTH_SCHEME);
        let log_stream_interval_seconds = r.num("SVC_LOG_STREAM_INTERVAL_SECONDS", 60u32, 1, 86400);
        let events_retention_days = r.num("SVC_EVENTS_RETENTION_DAYS", 90u32, 0, 36500);
        let geoip_db = r.file("SVC_GEOIP_DB");
        let signing_key_rotation_days = r.num("SVC_SIGNING_KEY_ROTATION_DAYS", 30u32, 1, 3650);
        let x509_ca_cert = r.file("SVC_X509_CA_CERT");
        let x509_ca_key = r.file("SVC_X509_CA_KEY");
        if x509_ca_cert.is_some() != x509_ca_key.is_some() {
            r.err(
                "SVC_X509_CA_KEY",
                "SVC_X509_CA_CERT and SVC_X509_CA_KEY must be set together",
            );
        }
        let log = r.string("SVC_LOG", "info");
        let log_format = r.string("SVC_LOG_FORMAT", "text");
        if log_format != "text" && log_format != "json" {
            r.err("SVC_LOG_FORMAT", format!("must be text or json, got {log_format:?}"));
        }

        // Not `SVC_*` keys: taken as given (the chain reports what it cannot use when it runs).
        let clouda_chain_env = ChainEnv(
            CLOUDA_CHAIN_VARS
                .iter()
                .filter_map(|k| Some((k.to_string(), r.raw(k)?.to_string())))
                .collect(),
        );

        let cfg = Config {
            public_url,
            listen_addr,
            database_url,
            encryption_key,
            encryption_key_previous,
            stack,
            tenant,
            bootstrap_admin_email,
            bootstrap_admin_password,
            session_ttl_seconds,
            http_header_timeout_seconds,
            login_failures_per_minute,
            shutdown_grace_seconds,
            events_fail_open,
            events_commit_timeout_ms,
            metrics_listen_addr,
            edge_token_ttl_seconds,
            edge_audience,
            edge_max_skew_seconds,
            jwt_leeway_seconds,
            edge_auth_rate,
            edge_auth_burst,
            edge_credentials_rate,
            edge_credentials_burst,
            trusted_proxies,
            allow_insecure_upstream,
            upstream_allowed_networks,
            upstream_ca_bundle,
            clouda_iid_certs,
            clouda_iid_max_age_seconds,
            clouda_sts_url_template,
            clouda_regions,
            clouda_role_server_id,
            cloudb_roots,
            cloudb_metadata_domains,
            cloudb_aia_hosts,
            cloudc_jwks_url,
            cloudc_issuers,
            cia_issuer,
            cib_issuer,
            cic_issuer,
            clouda_sts_federation_url,
            clouda_sts_audience,
            cloudc_sts_url,
            cloudc_iamcredentials_url,
            cloudc_scope,
            cloudb_login_url,
            cloudb_keyvault_url_template,
            cloudb_keyvault_scope,
            aia_token_url,
            aib_token_url,
            objectstoragea_url_template,
            objectstoragec_upload_url,
            hec_auth_scheme,
            log_stream_interval_seconds,
            events_retention_days,
            geoip_db,
            signing_key_rotation_days,
            x509_ca_cert,
            x509_ca_key,
            log,
            log_json: log_format == "json",
            clouda_chain_env,
        };
        let mut errors = r.errors;
        let refused = |e: &str, errors: &[String]| {
            let key = e.split([':', '/']).next().unwrap_or(e);
            errors.iter().any(|o| o.starts_with(key))
        };
        for e in files(&cfg) {
            if !refused(&e, &errors) {
                errors.push(e);
            }
        }
        if errors.is_empty() { Ok(cfg) } else { Err(errors) }
    }

    /// Whether the TCP peer is a trusted proxy (§4.3).
    pub fn is_trusted_proxy(&self, ip: IpAddr) -> bool {
        self.trusted_proxies.iter().any(|n| n.contains(ip))
    }

    /// The `{issuer}` placeholder.
    pub fn issuer(&self) -> &str {
        &self.public_url
    }

    /// Unknown `SVC_*` environment names: reported as warnings at start (likely typos).
    pub fn unknown_env_keys() -> Vec<String> {
        std::env::vars()
            .map(|(k, _)| k)
            .filter(|k| {
                k.starts_with("SVC_")
                    && !k.starts_with("SVC_TEST_")
                    && !KEYS.iter().any(|(n, _)| n == k)
                    && !CLIENT_KEYS.contains(&k.as_str())
            })
            .collect()
    }
}

/// Where a node's at-rest keys come from (`service::rekey` decides it at start-up; `App` keeps it).
#[derive(Clone, Debug)]
pub enum KeySource {
    /// `SVC_ENCRYPTION_KEY` (and `SVC_ENCRYPTION_KEY_PREVIOUS`).
    Environment,
    /// The key file beside the SQLite database.
    File(std::path::PathBuf),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn defaults_are_valid() {
        let c = Config::from_map(&BTreeMap::new()).unwrap();
        assert_eq!(c.public_url, "http://localhost:8080");
        assert_eq!(c.database_url, DatabaseUrl::Sqlite("./svc-data/svc.db".into()));
        assert_eq!(c.edge_audience, "http://localhost:8080");
        assert_eq!(c.edge_token_ttl_seconds, 3600);
    }

    #[test]
    fn every_invalid_value_is_reported_at_once() {
        let errs = Config::from_map(&map(&[
            ("SVC_LISTEN_ADDR", "nope"),
            ("SVC_EDGE_TOKEN_TTL_SECONDS", "10"),
            ("SVC_DATABASE_URL", "mysql://x"),
            ("SVC_ENCRYPTION_KEY", "short"),
            ("SVC_TRUSTED_PROXIES", "10.0.0.0/8, banana"),
        ]))
        .unwrap_err();
        let joined = errs.join("\n");
        for key in [
            "SVC_LISTEN_ADDR",
            "SVC_EDGE_TOKEN_TTL_SECONDS",
            "SVC_DATABASE_URL",
            "SVC_ENCRYPTION_KEY",
            "SVC_TRUSTED_PROXIES",
        ] {
            assert!(joined.contains(key), "{key} missing from {joined}");
        }
    }

    #[test]
    fn urls_are_parsed_not_only_prefixed() {
        for ok in [
            "http://db",
            "https://sts.{region}.amazonaws.com",
            "https://{vault}.vault.azure.net",
            "http://127.0.0.1:5000/x?y=1",
        ] {
            assert!(absolute_http_url(ok), "{ok}");
        }
        for bad in [
            "http://a b c d",
            "ftp://example.com",
            "https://",
            "example.com",
            "http://",
        ] {
            assert!(!absolute_http_url(bad), "{bad}");
        }
        let c = Config::from_map(&map(&[("SVC_LISTEN_ADDR", "localhost:18999")])).unwrap();
        assert_eq!(c.listen_addr.port(), 18999);
        assert!(c.listen_addr.ip().is_loopback());
    }

    #[test]
    fn sign_in_tokens_may_live_a_second_to_a_day() {
        for (v, ok) in [("1", true), ("86400", true), ("0", false), ("86401", false)] {
            let c = Config::from_map(&map(&[("SVC_SESSION_TTL_SECONDS", v)]));
            assert_eq!(
                c.as_ref().map(|c| c.session_ttl_seconds).ok(),
                ok.then(|| v.parse().unwrap()),
                "{v}"
            );
        }
    }

    #[test]
    fn postgres_requires_an_explicit_key() {
        let errs = Config::from_map(&map(&[("SVC_DATABASE_URL", "postgres://u:p@127.0.0.1:5432/db")])).unwrap_err();
        assert!(errs[0].starts_with("SVC_ENCRYPTION_KEY: is required with PostgreSQL"));
    }

    #[test]
    fn the_previous_encryption_key_needs_the_new_one_and_differs_from_it() {
        let (a, b) = (crate::crypto::b64std(&[1u8; 32]), crate::crypto::b64std(&[2u8; 32]));
        let c = Config::from_map(&map(&[("SVC_ENCRYPTION_KEY", &a), ("SVC_ENCRYPTION_KEY_PREVIOUS", &b)])).unwrap();
        assert_eq!(c.encryption_key_previous, Some([2u8; 32]));
        let errs = Config::from_map(&map(&[("SVC_ENCRYPTION_KEY_PREVIOUS", &b)])).unwrap_err();
        assert!(
            errs[0].starts_with("SVC_ENCRYPTION_KEY_PREVIOUS: needs SVC_ENCRYPTION_KEY"),
            "{errs:?}"
        );
        let errs =
            Config::from_map(&map(&[("SVC_ENCRYPTION_KEY", &a), ("SVC_ENCRYPTION_KEY_PREVIOUS", &a)])).unwrap_err();
        assert_eq!(
            errs,
            ["SVC_ENCRYPTION_KEY_PREVIOUS: is the same key as SVC_ENCRYPTION_KEY"]
        );
        let errs = Config::from_map(&map(&[
            ("SVC_ENCRYPTION_KEY", &a),
            ("SVC_ENCRYPTION_KEY_PREVIOUS", "short"),
        ]))
        .unwrap_err();
        assert!(
            errs[0].starts_with("SVC_ENCRYPTION_KEY_PREVIOUS: must be standard base64"),
            "{errs:?}"
        );
        assert!(
            SECRET_KEYS.contains(&"SVC_ENCRYPTION_KEY_PREVIOUS"),
            "config check hides it"
        );
    }

    #[test]
    fn an_empty_value_takes_the_default_and_an_empty_list_is_empty() {
        let c = Config::from_map(&map(&[
            ("SVC_CLOUDB_AIA_HOSTS", ""),
            ("SVC_CLOUDA_STS_AUDIENCE", " "),
            ("SVC_PUBLIC_URL", ""),
            ("SVC_EDGE_AUTH_RATE", ""),
            ("SVC_BOOTSTRAP_ADMIN_EMAIL", ""),
        ]))
        .unwrap();
        let d = Config::from_map(&map(&[])).unwrap();
        // A list's empty value is the empty list (an allow-list turned off, never widened).
        assert!(c.cloudb_aia_hosts.is_empty() && !d.cloudb_aia_hosts.is_empty());
        assert_eq!(c.clouda_sts_audience, d.clouda_sts_audience);
        assert_eq!(c.public_url, "http://localhost:8080");
        assert_eq!(c.edge_auth_rate, d.edge_auth_rate);
        assert_eq!(c.bootstrap_admin_email, None);
    }

    #[test]
    fn env_file_rejects_unknown_keys() {
        let m = parse_env_file("# c\nexport SVC_TENANT=\"acme\"\nSVC_STACK=prod\n").unwrap();
        assert_eq!(m["SVC_TENANT"], "acme");
        assert!(parse_env_file("SVC_TENNANT=x").unwrap_err()[0].contains("unknown key SVC_TENNANT"));
    }

    #[test]
    fn the_metrics_listener_defaults_to_loopback_and_empty_disables_it() {
        let c = Config::from_map(&map(&[])).unwrap();
        assert_eq!(c.metrics_listen_addr, Some(SocketAddr::from(([127, 0, 0, 1], 9464))));
        let c = Config::from_map(&map(&[("SVC_METRICS_LISTEN_ADDR", "")])).unwrap();
        assert_eq!(c.metrics_listen_addr, None);
        let errs = Config::from_map(&map(&[("SVC_METRICS_LISTEN_ADDR", "nope")])).unwrap_err();
        assert!(errs.join("\n").contains("SVC_METRICS_LISTEN_ADDR"), "{errs:?}");
    }
}
