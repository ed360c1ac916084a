//! Output forms of a credential: the environment variables of `exec` and `--format env`, shell
//! quoting, cloudA's `credential_process` JSON, and the X.509 files.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;

use svc_api::edge::CredentialType;

use crate::client::Credential;
use crate::error::Error;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Env,
    CloudAProcess,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "json" => Some(Format::Json),
            "env" => Some(Format::Env),
            "clouda-process" => Some(Format::CloudAProcess),
            _ => None,
        }
    }
}

/// `'value'` with every `'` written as `'\''` (POSIX shells).
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The variables of edge-client.md's table for this credential, in table order. `files` holds the
/// X.509 file paths when the credential is an `X509Svid`. A null value gives no variable.
pub fn variables(cred: &Credential, files: Option<&X509Files>) -> Vec<(&'static str, String)> {
    let d = &cred.response.data;
    let mut out = Vec::new();
    let mut push = |name: &'static str, key: &str| {
        if let Some(v) = d.get(key) {
            out.push((name, v.to_string()));
        }
    };
    push("SVC_API_KEY", "apiKey");
    push("SVC_USERNAME", "username");
    push("SVC_PASSWORD", "password");
    push("SVC_TOKEN", "token");
    push("AWS_ACCESS_KEY_ID", "cloudAAccessKeyId");
    push("AWS_SECRET_ACCESS_KEY", "cloudASecretAccessKey");
    push("AWS_SESSION_TOKEN", "cloudASessionToken");
    if let Some(f) = files {
        out.push(("SVC_CERT_FILE", f.cert.display().to_string()));
        out.push(("SVC_KEY_FILE", f.key.display().to_string()));
    }
    out
}

/// `--format env`: one `export NAME='value'` line per variable.
pub fn env_text(vars: &[(&'static str, String)]) -> String {
    vars.iter().map(|(k, v)| format!("export {k}={}\n", quote(v))).collect()
}

/// `--format clouda-process`: the cloudA SDK's `credential_process` JSON (`Version` 1; the
/// session token and expiry only when the credential has them).
pub fn clouda_process(cred: &Credential) -> Result<String, Error> {
    if cred.response.credential_type != CredentialType::CloudAStsFederation {
        return Err(Error::Config(format!(
            "--format clouda-process: only for CloudAStsFederation credentials, not {}",
            cred.response.credential_type.as_str()
        )));
    }
    let d = &cred.response.data;
    let mut m = serde_json::Map::new();
    m.insert("Version".into(), 1.into());
    m.insert(
        "AccessKeyId".into(),
        d.get("cloudAAccessKeyId").unwrap_or_default().into(),
    );
    m.insert(
        "SecretAccessKey".into(),
        d.get("cloudASecretAccessKey").unwrap_or_default().into(),
    );
    if let Some(t) = d.get("cloudASessionToken") {
        m.insert("SessionToken".into(), t.into());
    }
    if let Some(e) = cred.response.expires_at {
        m.insert("Expiration".into(), e.to_rfc3339().into());
    }
    Ok(serde_json::Value::Object(m).to_string())
}

/// An X.509-SVID's chain and key in a private directory (0700, files 0600); removed on drop
/// unless kept.
pub struct X509Files {
    pub dir: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    keep: bool,
}

impl X509Files {
    pub fn write(cred: &Credential, keep: bool) -> Result<X509Files, Error> {
        let chain = cred
            .response
            .data
            .get("certificateChain")
            .ok_or_else(|| Error::Failure("X509Svid answer has no certificateChain".into()))?;
        let key = cred
            .private_key_pem
            .as_deref()
            .ok_or_else(|| Error::Failure("X509Svid: no local private key".into()))?;
        let mut rnd = [0u8; 8];
        let _ = aws_lc_rs::rand::fill(&mut rnd);
        let dir = std::env::temp_dir().join(format!(
            "svc-edge-{}",
            rnd.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| Error::Failure(format!("creating {}: {e}", dir.display())))?;
        let files = X509Files {
            cert: dir.join("svid.pem"),
            key: dir.join("svid-key.pem"),
            dir,
            keep,
        };
        for (path, content) in [(&files.cert, chain), (&files.key, key)] {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .map_err(|e| Error::Failure(format!("writing {}: {e}", path.display())))?;
            f.write_all(content.as_bytes())
                .map_err(|e| Error::Failure(format!("writing {}: {e}", path.display())))?;
        }
        Ok(files)
    }
}

impl Drop for X509Files {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cred(body: &str) -> Credential {
        Credential {
            raw: body.as_bytes().to_vec(),
            response: serde_json::from_str(body).unwrap(),
            private_key_pem: None,
        }
    }

    #[test]
    fn quoting_survives_a_shell() {
        assert_eq!(quote("a'b"), r"'a'\''b'");
        assert_eq!(quote(""), "''");
        let v = "it's $HOME `x` \"q\" \\ \n end";
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "{}printf %s \"$SVC_API_KEY\"",
                env_text(&[("SVC_API_KEY", v.into())])
            ))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), v);
    }

    #[test]
    fn variables_per_type() {
        let names = |b: &str| {
            variables(&cred(b), None)
                .into_iter()
                .map(|(k, _)| k)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(r#"{"credentialType":"ApiKey","expiresAt":null,"data":{"apiKey":"k"}}"#),
            ["SVC_API_KEY"]
        );
        assert_eq!(
            names(r#"{"credentialType":"UsernamePassword","expiresAt":null,"data":{"username":"u","password":"p"}}"#),
            ["SVC_USERNAME", "SVC_PASSWORD"]
        );
        assert_eq!(
            names(r#"{"credentialType":"OAuthToken","expiresAt":null,"data":{"token":"t"}}"#),
            ["SVC_TOKEN"]
        );
        assert_eq!(
            names(r#"{"credentialType":"CloudCWorkloadIdentityFederation","expiresAt":null,"data":{"token":"t"}}"#),
            ["SVC_TOKEN"]
        );
        let sts = r#"{"credentialType":"CloudAStsFederation","expiresAt":"2030-01-01T00:00:00.000Z","data":{"cloudAAccessKeyId":"AK","cloudASecretAccessKey":"S","cloudASessionToken":"T"}}"#;
        assert_eq!(
            names(sts),
            ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]
        );
        let no_session = r#"{"credentialType":"CloudAStsFederation","expiresAt":null,"data":{"cloudAAccessKeyId":"AK","cloudASecretAccessKey":"S","cloudASessionToken":null}}"#;
        assert_eq!(names(no_session), ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]);
        assert_eq!(
            env_text(&variables(&cred(sts), None)),
            "export AWS_ACCESS_KEY_ID='AK'\nexport AWS_SECRET_ACCESS_KEY='S'\nexport AWS_SESSION_TOKEN='T'\n"
        );
    }

    #[test]
    fn clouda_process_shape() {
        let sts = r#"{"credentialType":"CloudAStsFederation","expiresAt":"2030-01-01T00:00:00.000Z","data":{"cloudAAccessKeyId":"AK","cloudASecretAccessKey":"S","cloudASessionToken":"T"}}"#;
        assert_eq!(
            clouda_process(&cred(sts)).unwrap(),
            r#"{"Version":1,"AccessKeyId":"AK","SecretAccessKey":"S","SessionToken":"T","Expiration":"2030-01-01T00:00:00.000Z"}"#
        );
        let e = clouda_process(&cred(
            r#"{"credentialType":"ApiKey","expiresAt":null,"data":{"apiKey":"k"}}"#,
        ))
        .unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn x509_files_are_private_and_removed() {
        use std::os::unix::fs::PermissionsExt;
        let mut c = cred(r#"{"credentialType":"X509Svid","expiresAt":null,"data":{"certificateChain":"CHAIN"}}"#);
        c.private_key_pem = Some("KEY".into());
        let f = X509Files::write(&c, false).unwrap();
        assert_eq!(std::fs::read_to_string(&f.cert).unwrap(), "CHAIN");
        assert_eq!(std::fs::metadata(&f.key).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(&f.dir).unwrap().permissions().mode() & 0o777, 0o700);
        let names: Vec<_> = variables(&c, Some(&f)).into_iter().map(|(k, _)| k).collect();
        assert_eq!(names, ["SVC_CERT_FILE", "SVC_KEY_FILE"]);
        let dir = f.dir.clone();
        drop(f);
        assert!(!dir.exists());
    }
}
