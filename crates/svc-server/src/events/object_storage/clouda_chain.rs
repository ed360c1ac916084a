//! The host's own cloudA credentials for objectStorageA log streams (contract §5.4: "the standard
//! credential chain of the host"), read as the platform SDK's default chain reads them, first
//! match wins:
//!
//! 1. **Environment**: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, optional `AWS_SESSION_TOKEN`.
//! 2. **Shared files**: profile `AWS_PROFILE` (default `default`) of the credentials file
//!    (`AWS_SHARED_CREDENTIALS_FILE`, default `~/.aws/credentials`) over the config file
//!    (`AWS_CONFIG_FILE`, default `~/.aws/config`, sections `[profile name]`): static
//!    `aws_access_key_id`, `aws_secret_access_key`, `aws_session_token`.
//! 3. **Container endpoint**: `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` (on the platform's
//!    `169.254.170.2`) or `AWS_CONTAINER_CREDENTIALS_FULL_URI` (`https`, or `http` to a loopback
//!    or the platform's container addresses), with `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE` or
//!    `AWS_CONTAINER_AUTHORIZATION_TOKEN` as `Authorization`.
//! 4. **Instance metadata v2**: a session token (`PUT /latest/api/token`), then the instance
//!    role's credentials; endpoint `AWS_EC2_METADATA_SERVICE_ENDPOINT` (or
//!    `AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv6`), off with `AWS_EC2_METADATA_DISABLED=true`.
//!
//! Sources 1 and 2 are read at each upload (a rotated file is picked up); the temporary
//! credentials of 3 and 4 are kept in the credential cache until 60 s before their expiry.
//! A source that is configured but unusable (half the environment pair, a profile named by
//! `AWS_PROFILE` that does not exist, one that needs a role assumption, SSO or a process, a bad
//! container URL) ends the chain with its error rather than falling through to the next.
//! Not read (documented in docs/log-streams/object-storage.md): web identity, SSO,
//! `credential_process` and role-assuming profiles; the platform SDK's chain crate would bring
//! its STS/SSO clients and an HTTP stack of its own, this module the four sources above.
//! The variables come from `Config::clouda_chain_env` (taken from the process by `config.rs`).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;
use svc_api::Timestamp;
use svc_api::edge::{CredentialType, EdgeCredentials};

use crate::config::ChainEnv;
use crate::credential::{Issued, Services};
use crate::domain::Secret;
use crate::platform;

/// Instance metadata answers within 1 s on an instance (the SDK's own timeouts are 1 s to
/// connect and 1 s to read); elsewhere its address does not answer at all.
const IMDS_TIMEOUT: Duration = Duration::from_secs(2);
/// The SDK's container-endpoint timeouts (2 s connect, 5 s read) as one bound.
const CONTAINER_TIMEOUT: Duration = Duration::from_secs(5);
/// The metadata session token's lifetime the SDK asks for (6 h).
const IMDS_TOKEN_TTL: &str = "21600";

/// cloudA credentials from the chain.
pub struct Creds {
    pub access_key_id: String,
    pub secret_access_key: Secret<String>,
    pub session_token: Option<Secret<String>>,
}

/// The first credentials of the chain, or why there are none.
pub async fn credentials(svc: &Services<'_>) -> Result<Creds, String> {
    let env = &svc.cfg.clouda_chain_env;
    if let Some(c) = from_env(env)? {
        return Ok(c);
    }
    if let Some(c) = from_profile(env).await? {
        return Ok(c);
    }
    if let Some(c) = from_container(svc, env).await? {
        return Ok(c);
    }
    match from_imds(svc, env).await {
        Ok(Some(c)) => Ok(c),
        Ok(None) => Err(
            "none in the environment, the shared files or a container endpoint, and instance metadata is off".into(),
        ),
        Err(e) => Err(format!(
            "none in the environment, the shared files or a container endpoint; instance metadata: {e}"
        )),
    }
}

fn creds(key: &str, secret: &str, token: Option<&str>) -> Creds {
    Creds {
        access_key_id: key.to_string(),
        secret_access_key: Secret::new(secret.to_string()),
        session_token: token.filter(|t| !t.is_empty()).map(|t| Secret::new(t.to_string())),
    }
}

// ---- 1. environment ------------------------------------------------------------------------------

fn from_env(env: &ChainEnv) -> Result<Option<Creds>, String> {
    match (env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")) {
        (Some(k), Some(s)) => Ok(Some(creds(k, s, env.get("AWS_SESSION_TOKEN")))),
        (None, None) => Ok(None),
        (Some(_), None) => Err("AWS_ACCESS_KEY_ID is set without AWS_SECRET_ACCESS_KEY".into()),
        (None, Some(_)) => Err("AWS_SECRET_ACCESS_KEY is set without AWS_ACCESS_KEY_ID".into()),
    }
}

// ---- 2. shared credentials and config files ------------------------------------------------------

/// A path of the shared files: `~/` is the home directory; `None` without a home.
fn shared_path(env: &ChainEnv, var: &str, default: &str) -> Option<String> {
    let home = env.get("HOME").map(|h| h.trim_end_matches('/'));
    match env.get(var) {
        Some(p) => match p.strip_prefix("~/") {
            Some(rest) => home.map(|h| format!("{h}/{rest}")),
            None => Some(p.to_string()),
        },
        None => home.map(|h| format!("{h}/{default}")),
    }
}

/// A file's text; `None` when it does not exist.
async fn read_optional(path: &str) -> Result<Option<String>, String> {
    match tokio::fs::read_to_string(path).await {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{path}: {e}")),
    }
}

async fn from_profile(env: &ChainEnv) -> Result<Option<Creds>, String> {
    let named = env.get("AWS_PROFILE");
    let profile = named.unwrap_or("default");
    let mut props = BTreeMap::new();
    let mut found = false;
    // The config file first: the credentials file's values win.
    for (var, default, config) in [
        ("AWS_CONFIG_FILE", ".aws/config", true),
        ("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials", false),
    ] {
        let Some(path) = shared_path(env, var, default) else {
            continue;
        };
        let Some(text) = read_optional(&path).await? else {
            continue;
        };
        if let Some(p) = profile_properties(&text, profile, config) {
            found = true;
            props.extend(p);
        }
    }
    if !found {
        return match named {
            Some(p) => Err(format!("AWS_PROFILE {p:?} is in neither shared file")),
            None => Ok(None),
        };
    }
    match (props.get("aws_access_key_id"), props.get("aws_secret_access_key")) {
        (Some(k), Some(s)) => Ok(Some(creds(k, s, props.get("aws_session_token").map(String::as_str)))),
        (Some(_), None) | (None, Some(_)) => Err(format!(
            "profile {profile:?} needs both aws_access_key_id and aws_secret_access_key"
        )),
        (None, None) => {
            let unsupported = [
                "role_arn",
                "credential_process",
                "sso_session",
                "sso_start_url",
                "web_identity_token_file",
            ];
            match unsupported.iter().find(|k| props.contains_key(**k)) {
                Some(k) => Err(format!(
                    "profile {profile:?} uses {k}, which this service does not read: give it static keys, or use the \
                     environment, a container endpoint or instance metadata"
                )),
                // A profile with settings only (a region): the chain goes on, as the SDK's does.
                None => Ok(None),
            }
        }
    }
}

/// The properties (names lower-cased) of `profile` in a shared file; sections of the same name
/// merge, later values winning. In the config file a profile is `[profile name]` (the default
/// also `[default]`); other config sections (`[sso-session x]`, `[services x]`) are not
/// profiles. `#` and `;` start a comment line, or an inline one after whitespace; indented
/// lines continue a property's sub-properties and are skipped.
fn profile_properties(text: &str, profile: &str, config: bool) -> Option<BTreeMap<String, String>> {
    let mut out: Option<BTreeMap<String, String>> = None;
    let mut inside = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix('[') {
            let name = rest.split(']').next().unwrap_or_default().trim();
            let name = if config {
                match name.strip_prefix("profile") {
                    Some(n) if n.starts_with(char::is_whitespace) => Some(n.trim()),
                    _ => (name == "default").then_some(name),
                }
            } else {
                Some(name)
            };
            inside = name == Some(profile);
            if inside {
                out.get_or_insert_with(BTreeMap::new);
            }
            continue;
        }
        if !inside || line.starts_with(char::is_whitespace) {
            continue;
        }
        let Some((k, v)) = trimmed.split_once('=') else {
            continue;
        };
        let v = v.trim();
        let v = v
            .find([' ', '\t'])
            .and_then(|i| {
                let after = v[i..].trim_start();
                (after.starts_with('#') || after.starts_with(';')).then(|| &v[..i])
            })
            .unwrap_or(v);
        if let Some(props) = out.as_mut() {
            props.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    out
}

// ---- temporary credentials: the cache and the answers' shape ---------------------------------------

fn cached(svc: &Services<'_>, key: &str) -> Option<Creds> {
    let Some(Issued::Credential { data, .. }) = svc.cache.get(key) else {
        return None;
    };
    let get = |name: &str| data.0.iter().find(|(k, _)| *k == name).and_then(|(_, v)| v.clone());
    Some(creds(
        &get("cloudAAccessKeyId")?,
        &get("cloudASecretAccessKey")?,
        get("cloudASessionToken").as_deref(),
    ))
}

/// `{AccessKeyId, SecretAccessKey, Token, Expiration}` (the container endpoint's and instance
/// metadata's shape), kept in the cache until 60 s before `Expiration`.
fn temporary(svc: &Services<'_>, key: &str, what: &str, v: &Value) -> Result<Creds, String> {
    let field = |name: &str| v.get(name).and_then(Value::as_str).filter(|s| !s.is_empty());
    let (Some(k), Some(s)) = (field("AccessKeyId"), field("SecretAccessKey")) else {
        return Err(format!("{what} answer has no AccessKeyId and SecretAccessKey"));
    };
    let token = field("Token");
    if let Some(exp) = field("Expiration").and_then(Timestamp::parse) {
        let issued = Issued::Credential {
            credential_type: CredentialType::CloudAStsFederation,
            data: EdgeCredentials(vec![
                ("cloudAAccessKeyId", Some(k.to_string())),
                ("cloudASecretAccessKey", Some(s.to_string())),
                ("cloudASessionToken", token.map(str::to_string)),
            ]),
            expires_at: Some(exp),
        };
        svc.cache.put(key.to_string(), issued, exp.millis());
    }
    Ok(creds(k, s, token))
}

/// Sends a request to a host endpoint (its URL is the host's configuration, `http` by nature).
async fn fetch(
    svc: &Services<'_>,
    what: &str,
    req: reqwest::RequestBuilder,
) -> Result<crate::upstream::Fetched, String> {
    svc.upstream.send(req).await.map_err(|e| format!("{what}: {e}"))
}

fn ok_or_status(what: &str, f: &crate::upstream::Fetched) -> Result<(), String> {
    if (200..300).contains(&f.status) {
        Ok(())
    } else {
        Err(format!("{what} answered {}", f.refusal()))
    }
}

// ---- 3. container credentials endpoint -------------------------------------------------------------

/// The endpoint's URL, if one is configured. A full URI must be `https`, or `http` to a loopback
/// address or one of the platform's container addresses (the SDK's rule: the token must not
/// travel in the clear elsewhere).
fn container_url(env: &ChainEnv) -> Result<Option<reqwest::Url>, String> {
    let raw = match (
        env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
        env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI"),
    ) {
        (Some(rel), _) => format!(
            "{}/{}",
            platform::CLOUDA_CONTAINER_CREDENTIALS_HOST,
            rel.trim_start_matches('/')
        ),
        (None, Some(full)) => full.to_string(),
        (None, None) => return Ok(None),
    };
    let u = reqwest::Url::parse(&raw).map_err(|e| format!("container credentials URL {raw:?}: {e}"))?;
    let allowed_http = match u.host() {
        Some(url::Host::Ipv4(a)) => {
            a.is_loopback() || a.octets() == [169, 254, 170, 2] || a.octets() == [169, 254, 170, 23]
        }
        Some(url::Host::Ipv6(a)) => a.is_loopback() || a.segments() == [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23],
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    match u.scheme() {
        "https" => Ok(Some(u)),
        "http" if allowed_http => Ok(Some(u)),
        _ => Err(format!(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI must be https, or http to a loopback or the container \
             credentials address, got {raw:?}"
        )),
    }
}

async fn from_container(svc: &Services<'_>, env: &ChainEnv) -> Result<Option<Creds>, String> {
    let Some(url) = container_url(env)? else {
        return Ok(None);
    };
    let key = format!("clouda-chain\u{0}container\u{0}{url}");
    if let Some(c) = cached(svc, &key) {
        return Ok(Some(c));
    }
    let token = match env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") {
        Some(path) => Some(
            tokio::fs::read_to_string(path)
                .await
                .map_err(|e| format!("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {path}: {e}"))?
                .trim()
                .to_string(),
        ),
        None => env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN").map(str::to_string),
    };
    let what = "container credentials endpoint";
    let mut req = svc
        .upstream
        .client
        .get(url)
        .header("accept", "application/json")
        .timeout(CONTAINER_TIMEOUT);
    if let Some(t) = token.filter(|t| !t.is_empty()) {
        req = req.header("authorization", t);
    }
    let f = fetch(svc, what, req).await?;
    ok_or_status(what, &f)?;
    let v: Value = serde_json::from_slice(&f.body).map_err(|_| format!("{what} answer is not JSON"))?;
    temporary(svc, &key, what, &v).map(Some)
}

// ---- 4. instance metadata (IMDSv2) -----------------------------------------------------------------

fn imds_endpoint(env: &ChainEnv) -> Result<Option<String>, String> {
    if env
        .get("AWS_EC2_METADATA_DISABLED")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    {
        return Ok(None);
    }
    if let Some(e) = env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT") {
        return Ok(Some(e.trim_end_matches('/').to_string()));
    }
    match env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE") {
        None => Ok(Some(platform::CLOUDA_IMDS_ENDPOINT.into())),
        Some(m) if m.eq_ignore_ascii_case("ipv4") => Ok(Some(platform::CLOUDA_IMDS_ENDPOINT.into())),
        Some(m) if m.eq_ignore_ascii_case("ipv6") => Ok(Some(platform::CLOUDA_IMDS_ENDPOINT_IPV6.into())),
        Some(m) => Err(format!(
            "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE must be IPv4 or IPv6, got {m:?}"
        )),
    }
}

async fn from_imds(svc: &Services<'_>, env: &ChainEnv) -> Result<Option<Creds>, String> {
    let Some(endpoint) = imds_endpoint(env)? else {
        return Ok(None);
    };
    let key = format!("clouda-chain\u{0}imds\u{0}{endpoint}");
    if let Some(c) = cached(svc, &key) {
        return Ok(Some(c));
    }
    let client = &svc.upstream.client;
    let what = "instance metadata";
    let f = fetch(
        svc,
        what,
        client
            .put(format!("{endpoint}/latest/api/token"))
            .header("x-aws-ec2-metadata-token-ttl-seconds", IMDS_TOKEN_TTL)
            .timeout(IMDS_TIMEOUT),
    )
    .await?;
    ok_or_status("instance metadata token", &f)?;
    let token = String::from_utf8_lossy(&f.body).trim().to_string();
    let roles_url = format!("{endpoint}/latest/meta-data/iam/security-credentials/");
    let get = |url: String| {
        client
            .get(url)
            .header("x-aws-ec2-metadata-token", &token)
            .timeout(IMDS_TIMEOUT)
    };
    let f = fetch(svc, what, get(roles_url.clone())).await?;
    if f.status == 404 {
        return Err("the instance has no IAM role".into());
    }
    ok_or_status(what, &f)?;
    let body = String::from_utf8_lossy(&f.body);
    let role = body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .ok_or("the instance has no IAM role")?
        .to_string();
    let f = fetch(
        svc,
        what,
        get(format!(
            "{roles_url}{}",
            percent_encoding::utf8_percent_encode(&role, super::UNRESERVED)
        )),
    )
    .await?;
    ok_or_status(what, &f)?;
    let v: Value = serde_json::from_slice(&f.body).map_err(|_| format!("{what} answer is not JSON"))?;
    match v.get("Code").and_then(Value::as_str) {
        Some("Success") | None => temporary(svc, &key, what, &v).map(Some),
        Some(code) => Err(format!("{what} answered Code {code:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CREDENTIALS: &str = "\
# a comment
[default]
aws_access_key_id = AKIDDEFAULT
aws_secret_access_key = default-secret ; inline comment

[ci]
aws_access_key_id=AKIDCI
aws_secret_access_key=ci/secret+with=equals
s3 =
  max_concurrent_requests = 20
aws_session_token = ci-token
";

    const CONFIG: &str = "\
[default]
region = eu-west-1
[profile ci]
region = us-east-1
aws_access_key_id = AKIDFROMCONFIG
[sso-session ci]
sso_region = x
[profile assumed]
role_arn = arn:aws:iam::123456789012:role/x
source_profile = ci
";

    #[test]
    fn shared_file_profiles() {
        let p = profile_properties(CREDENTIALS, "default", false).unwrap();
        assert_eq!(p["aws_access_key_id"], "AKIDDEFAULT");
        assert_eq!(p["aws_secret_access_key"], "default-secret");
        let p = profile_properties(CREDENTIALS, "ci", false).unwrap();
        assert_eq!(p["aws_secret_access_key"], "ci/secret+with=equals");
        assert_eq!(p["aws_session_token"], "ci-token");
        assert!(!p.contains_key("max_concurrent_requests"));
        assert!(profile_properties(CREDENTIALS, "other", false).is_none());
        // The config file: `[profile ci]`, not `[sso-session ci]`; `[default]`.
        let p = profile_properties(CONFIG, "ci", true).unwrap();
        assert_eq!(p.get("sso_region"), None);
        assert_eq!(p["aws_access_key_id"], "AKIDFROMCONFIG");
        assert_eq!(
            profile_properties(CONFIG, "default", true).unwrap()["region"],
            "eu-west-1"
        );
        assert!(
            profile_properties(CONFIG, "assumed", true)
                .unwrap()
                .contains_key("role_arn")
        );
    }

    fn env(pairs: &[(&str, &str)]) -> ChainEnv {
        let map: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let mut vals = map.clone();
        vals.insert("SVC_DATABASE_URL".into(), "sqlite://./unused/svc.db".into());
        crate::config::Config::from_map(&vals).unwrap().clouda_chain_env
    }

    #[test]
    fn container_urls_must_not_carry_the_token_in_the_clear() {
        let ok = |full: &str| container_url(&env(&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", full)]));
        for good in [
            "http://127.0.0.1:8080/creds",
            "http://localhost/creds",
            "http://[::1]:9/x",
            "http://169.254.170.23/v1/credentials",
            "https://creds.example/x",
        ] {
            assert!(ok(good).unwrap().is_some(), "{good}");
        }
        for bad in ["http://10.0.0.1/creds", "http://creds.example/x", "ftp://127.0.0.1/"] {
            assert!(ok(bad).is_err(), "{bad}");
        }
        let rel = container_url(&env(&[(
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            "/v2/credentials/abc",
        )]));
        assert_eq!(
            rel.unwrap().unwrap().as_str(),
            "http://169.254.170.2/v2/credentials/abc"
        );
        assert!(container_url(&env(&[])).unwrap().is_none());
    }

    #[test]
    fn imds_endpoints() {
        assert_eq!(
            imds_endpoint(&env(&[])).unwrap().as_deref(),
            Some("http://169.254.169.254")
        );
        assert_eq!(
            imds_endpoint(&env(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "IPv6")]))
                .unwrap()
                .as_deref(),
            Some("http://[fd00:ec2::254]")
        );
        assert_eq!(
            imds_endpoint(&env(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9/")]))
                .unwrap()
                .as_deref(),
            Some("http://127.0.0.1:9")
        );
        assert!(
            imds_endpoint(&env(&[("AWS_EC2_METADATA_DISABLED", "TRUE")]))
                .unwrap()
                .is_none()
        );
        assert!(imds_endpoint(&env(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "x")])).is_err());
    }

    /// §1.9: the configuration's `Debug` (a log line, a panic) names the chain's variables, never
    /// their values.
    #[test]
    fn the_chain_variables_print_by_name_only() {
        let mut vals = BTreeMap::new();
        vals.insert("SVC_DATABASE_URL".to_string(), "sqlite://./unused/svc.db".to_string());
        vals.insert("AWS_SECRET_ACCESS_KEY".to_string(), "CANARY-secret-key".to_string());
        vals.insert("AWS_SESSION_TOKEN".to_string(), "CANARY-session".to_string());
        let cfg = crate::config::Config::from_map(&vals).unwrap();
        let printed = format!("{cfg:?}");
        assert!(printed.contains("\"AWS_SECRET_ACCESS_KEY\""), "{printed}");
        assert!(!printed.contains("CANARY"), "{printed}");
        assert_eq!(cfg.clouda_chain_env.get("AWS_SESSION_TOKEN"), Some("CANARY-session"));
    }

    #[test]
    fn half_an_environment_pair_is_an_error() {
        assert!(from_env(&env(&[("AWS_ACCESS_KEY_ID", "AKID")])).is_err());
        assert!(from_env(&env(&[])).unwrap().is_none());
        let c = from_env(&env(&[("AWS_ACCESS_KEY_ID", "AKID"), ("AWS_SECRET_ACCESS_KEY", "s")]))
            .unwrap()
            .unwrap();
        assert_eq!(c.access_key_id, "AKID");
        assert!(c.session_token.is_none());
    }
}
