//! Configuration: each setting from its flag, else its environment variable (flags win), checked
//! once; a bad value is a usage error naming the flag and the variable (exit 2).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::Error;
use crate::evidence::Kind;

/// The global flags as given on the command line (all optional; the environment fills in).
#[derive(Clone, Debug, Default)]
pub struct Flags {
    pub url: Option<String>,
    pub client_id: Option<String>,
    pub resource_set: Option<String>,
    pub evidence: Option<String>,
    pub token_file: Option<PathBuf>,
    pub audience: Option<String>,
    pub cache_dir: Option<PathBuf>,
}

#[derive(Clone, Debug)]
pub struct Config {
    /// Svc base URL without a trailing `/`.
    pub url: String,
    pub client_id: String,
    pub resource_set: Option<String>,
    pub evidence: Kind,
    pub token_file: Option<PathBuf>,
    /// Audience requested from platforms that mint tokens on request; default `url`.
    pub audience: String,
    pub cache_dir: Option<PathBuf>,
    /// The process environment, read once (platform variables, endpoint overrides).
    pub env: BTreeMap<String, String>,
}

/// A UUID in its 8-4-4-4-12 hexadecimal text form.
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

impl Config {
    /// The current process environment.
    pub fn process_env() -> BTreeMap<String, String> {
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect()
    }

    pub fn resolve(flags: Flags, env: BTreeMap<String, String>) -> Result<Config, Error> {
        let get =
            |flag: Option<String>, var: &str| flag.or_else(|| env.get(var).cloned()).filter(|s| !s.trim().is_empty());
        let url = get(flags.url, "SVC_EDGE_URL")
            .ok_or_else(|| Error::Config("--url (or SVC_EDGE_URL) is required: the Svc base URL".into()))?;
        let parsed =
            url::Url::parse(url.trim()).map_err(|e| Error::Config(format!("--url (SVC_EDGE_URL): not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(Error::Config(
                "--url (SVC_EDGE_URL): must be an http:// or https:// URL".into(),
            ));
        }
        let url = url.trim().trim_end_matches('/').to_string();
        let client_id = get(flags.client_id, "SVC_EDGE_CLIENT_ID").ok_or_else(|| {
            Error::Config(
                "--client-id (or SVC_EDGE_CLIENT_ID) is required: the trust provider's edgeSdkClientId".into(),
            )
        })?;
        let segs: Vec<&str> = client_id.split(':').collect();
        if segs.len() != 6 || segs[0] != "svc" || segs[3] != "identity" || !is_uuid(segs[5]) {
            return Err(Error::Config(
                "--client-id (SVC_EDGE_CLIENT_ID): expected svc:<stack>:<tenant>:identity:<type>:<uuid>".into(),
            ));
        }
        let resource_set = get(flags.resource_set, "SVC_EDGE_RESOURCE_SET");
        if let Some(rs) = &resource_set
            && !is_uuid(rs)
        {
            return Err(Error::Config(
                "--resource-set (SVC_EDGE_RESOURCE_SET): not a UUID".into(),
            ));
        }
        let evidence = match get(flags.evidence, "SVC_EDGE_EVIDENCE").as_deref() {
            None | Some("auto") => Kind::parse(segs[4]).ok_or_else(|| {
                Error::Config(format!(
                    "--client-id (SVC_EDGE_CLIENT_ID): unknown type segment {:?}; set --evidence (SVC_EDGE_EVIDENCE)",
                    segs[4]
                ))
            })?,
            Some(k) => Kind::parse(k).ok_or_else(|| {
                Error::Config(format!(
                    "--evidence (SVC_EDGE_EVIDENCE): unknown kind {k:?}; one of auto, {}",
                    Kind::ALL.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
                ))
            })?,
        };
        let token_file = flags.token_file.or_else(|| {
            env.get("SVC_EDGE_TOKEN_FILE")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
        });
        let audience = get(flags.audience, "SVC_EDGE_AUDIENCE").unwrap_or_else(|| url.clone());
        let cache_dir = flags.cache_dir.or_else(|| {
            env.get("SVC_EDGE_CACHE_DIR")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
        });
        Ok(Config {
            url,
            client_id,
            resource_set,
            evidence,
            token_file,
            audience,
            cache_dir,
            env,
        })
    }

    /// A non-empty environment variable.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str).filter(|s| !s.is_empty())
    }

    /// A number from the environment, or `default`; a bad value is a usage error.
    pub fn number(&self, name: &str, default: u64, min: u64) -> Result<u64, Error> {
        match self.var(name) {
            None => Ok(default),
            Some(v) => match v.trim().parse::<u64>() {
                Ok(n) if n >= min => Ok(n),
                _ => Err(Error::Config(format!(
                    "{name}: expected an integer >= {min}, got {v:?}"
                ))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CID: &str = "svc:local:default:identity:oidc_idtoken:0b0d1c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e";

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn flags_win_over_environment_and_errors_name_both() {
        let c = Config::resolve(
            Flags {
                url: Some("http://a.example/".into()),
                ..Default::default()
            },
            env(&[("SVC_EDGE_URL", "http://b.example"), ("SVC_EDGE_CLIENT_ID", CID)]),
        )
        .unwrap();
        assert_eq!(c.url, "http://a.example");
        assert_eq!(c.audience, "http://a.example");
        assert_eq!(c.evidence, Kind::Oidc);
        let e = Config::resolve(Flags::default(), env(&[("SVC_EDGE_CLIENT_ID", CID)])).unwrap_err();
        assert!(
            e.describe().contains("--url") && e.describe().contains("SVC_EDGE_URL"),
            "{e}"
        );
        let e = Config::resolve(
            Flags::default(),
            env(&[("SVC_EDGE_URL", "http://x"), ("SVC_EDGE_CLIENT_ID", "nope")]),
        )
        .unwrap_err();
        assert!(e.describe().contains("--client-id"));
        let e = Config::resolve(
            Flags::default(),
            env(&[
                ("SVC_EDGE_URL", "http://x"),
                ("SVC_EDGE_CLIENT_ID", CID),
                ("SVC_EDGE_EVIDENCE", "cloudZ"),
            ]),
        )
        .unwrap_err();
        assert!(e.describe().contains("SVC_EDGE_EVIDENCE"));
        let e = Config::resolve(
            Flags::default(),
            env(&[
                ("SVC_EDGE_URL", "http://x"),
                ("SVC_EDGE_CLIENT_ID", CID),
                ("SVC_EDGE_RESOURCE_SET", "x"),
            ]),
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let c = Config::resolve(
            Flags::default(),
            env(&[
                ("SVC_EDGE_URL", "http://x"),
                ("SVC_EDGE_CLIENT_ID", CID),
                ("SVC_EDGE_EVIDENCE", "cloudA_role"),
            ]),
        )
        .unwrap();
        assert_eq!(c.evidence, Kind::CloudARole);
    }
}
