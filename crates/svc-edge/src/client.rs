//! The SDK's client: authenticates with freshly collected evidence, keeps the edge token until
//! it is due for renewal, and asks for credentials with the same evidence.

use std::sync::Arc;
use std::time::Duration;

use svc_api::edge::{
    ApiCredentialsRequest, ApiCredentialsResponse, AuthRequest, ClientWorkloadDetails, ConnectionMetadata,
    CredentialType, ServerWorkloadDetails, TokenDto,
};

use crate::clock::Clock;
use crate::config::Config;
use crate::error::Error;
use crate::{disk, evidence};

/// Evidence is reused for a later `/credentials` call for at most this long (time-bound kinds:
/// cloudA role dates and cloudB nonces are checked within ±5 minutes by the server).
const EVIDENCE_REUSE_MS: i64 = 60_000;

/// An edge access token and when it was obtained.
#[derive(Clone, Debug)]
pub struct Session {
    pub token: TokenDto,
    /// The TokenDTO as received.
    pub raw: Vec<u8>,
    pub obtained_ms: i64,
    pub expires_ms: i64,
}

/// When a held token is renewed.
#[derive(Clone, Copy, Debug)]
pub enum Renewal {
    /// When less than this many milliseconds remain (the CLI: 60 s).
    MinLeft(i64),
    /// When less than this fraction of `expiresIn` remains (the agent: 20 %).
    Fraction(f64),
}

impl Session {
    pub fn fresh(&self, now_ms: i64, r: Renewal) -> bool {
        let left = self.expires_ms - now_ms;
        match r {
            Renewal::MinLeft(ms) => left > ms,
            Renewal::Fraction(f) => left as f64 > f * (self.token.expires_in.max(0) as f64 * 1000.0),
        }
    }
}

/// What to ask `/edge/v1/credentials` for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CredentialRequest {
    pub host: String,
    pub port: u16,
    pub credential_type: String,
    /// `connectionMetadata` keys (edge-api.md names) and values, sorted.
    pub meta: Vec<(String, String)>,
}

pub const META_KEYS: [&str; 6] = [
    "accessKeyId",
    "accountName",
    "headerName",
    "headerValue",
    "httpBodyFieldPath",
    "httpBodyFieldValue",
];

impl CredentialRequest {
    /// Checks the type and the metadata keys; `what` names the flag or parameter in errors.
    pub fn new(host: &str, port: u16, credential_type: &str, meta: Vec<(String, String)>) -> Result<Self, Error> {
        if host.trim().is_empty() {
            return Err(Error::Config("--host: must not be empty".into()));
        }
        if port == 0 {
            return Err(Error::Config("--port: must be 1..65535".into()));
        }
        match CredentialType::parse(credential_type) {
            Some(CredentialType::Unknown) | None => {
                return Err(Error::Config(format!(
                    "--type: unknown credential type {credential_type:?}; one of {}",
                    CredentialType::ALL[1..]
                        .iter()
                        .map(|t| t.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            Some(_) => {}
        }
        for (k, _) in &meta {
            if !META_KEYS.contains(&k.as_str()) {
                return Err(Error::Config(format!(
                    "--meta: unknown key {k:?}; one of {}",
                    META_KEYS.join(", ")
                )));
            }
        }
        // Sorted by key; a key given twice keeps its last value, as a repeated flag does.
        let meta: Vec<(String, String)> = meta
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>()
            .into_iter()
            .collect();
        Ok(CredentialRequest {
            host: host.trim().to_string(),
            port,
            credential_type: credential_type.to_string(),
            meta,
        })
    }

    pub fn connection_metadata(&self) -> Option<ConnectionMetadata> {
        if self.meta.is_empty() {
            return None;
        }
        let get = |k: &str| self.meta.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        Some(ConnectionMetadata {
            access_key_id: get("accessKeyId"),
            account_name: get("accountName"),
            header_name: get("headerName"),
            header_value: get("headerValue"),
            http_body_field_path: get("httpBodyFieldPath"),
            http_body_field_value: get("httpBodyFieldValue"),
        })
    }

    pub fn is_x509(&self) -> bool {
        self.credential_type == "X509Svid"
    }
}

/// A credential as received.
#[derive(Clone, Debug)]
pub struct Credential {
    /// The ApiCredentialsResponse body as received.
    pub raw: Vec<u8>,
    pub response: ApiCredentialsResponse,
    /// `X509Svid`: the PKCS#8 PEM private key generated here (only its CSR was sent).
    pub private_key_pem: Option<String>,
}

impl Credential {
    pub fn expires_ms(&self) -> Option<i64> {
        self.response.expires_at.map(|t| t.millis())
    }

    /// The body a local consumer receives: as received, except that an `X509Svid` answer also
    /// carries the locally generated key as `data.privateKey`.
    pub fn body(&self) -> Vec<u8> {
        match &self.private_key_pem {
            None => self.raw.clone(),
            Some(key) => {
                let mut v: serde_json::Value = serde_json::from_slice(&self.raw).unwrap_or_default();
                if let Some(d) = v.get_mut("data").and_then(|d| d.as_object_mut()) {
                    d.insert("privateKey".into(), key.clone().into());
                }
                serde_json::to_vec(&v).unwrap_or_else(|_| self.raw.clone())
            }
        }
    }
}

pub struct Client {
    cfg: Arc<Config>,
    http: reqwest::Client,
    meta_http: reqwest::Client,
    clock: Arc<dyn Clock>,
    renewal: Renewal,
    session: tokio::sync::Mutex<Option<Session>>,
    evidence: tokio::sync::Mutex<Option<(i64, ClientWorkloadDetails)>>,
    disk_checked: std::sync::atomic::AtomicBool,
}

impl Client {
    pub fn new(cfg: Config, clock: Arc<dyn Clock>, renewal: Renewal) -> Client {
        let http = reqwest::Client::builder()
            .user_agent(concat!("svc-edge/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("HTTP client");
        Client {
            cfg: Arc::new(cfg),
            http,
            meta_http: evidence::metadata_http(),
            clock,
            renewal,
            session: tokio::sync::Mutex::new(None),
            evidence: tokio::sync::Mutex::new(None),
            disk_checked: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        let mut r = self.http.post(format!("{}{path}", self.cfg.url));
        if let Some(rs) = &self.cfg.resource_set {
            r = r.header("X-Svc-ResourceSet", rs);
        }
        r
    }

    /// Evidence collected afresh (and kept for reuse by `/credentials` calls).
    async fn fresh_evidence(&self) -> Result<ClientWorkloadDetails, Error> {
        let now = self.clock.now_ms();
        let c = evidence::collect(&self.cfg, &self.meta_http, now).await?;
        *self.evidence.lock().await = Some((now, c.clone()));
        Ok(c)
    }

    /// The evidence of the last collection when recent enough, else collected afresh.
    async fn evidence(&self) -> Result<ClientWorkloadDetails, Error> {
        {
            let e = self.evidence.lock().await;
            if let Some((at, c)) = &*e
                && self.clock.now_ms() - at < EVIDENCE_REUSE_MS
            {
                return Ok(c.clone());
            }
        }
        self.fresh_evidence().await
    }

    /// `/edge/v1/auth` with evidence collected afresh; the new token replaces the held one.
    pub async fn authenticate(&self) -> Result<Session, Error> {
        let mut held = self.session.lock().await;
        let s = self.authenticate_locked().await?;
        *held = Some(s.clone());
        Ok(s)
    }

    async fn authenticate_locked(&self) -> Result<Session, Error> {
        let client = self.fresh_evidence().await?;
        let body = AuthRequest {
            client_id: Some(self.cfg.client_id.clone()),
            client: Some(client),
        };
        let started = self.clock.now_ms();
        let r = self
            .post("/edge/v1/auth")
            .json(&body)
            .send()
            .await
            .map_err(|e| Error::Failure(format!("cannot reach {}: {}", self.cfg.url, transport(&e))))?;
        let status = r.status().as_u16();
        let raw = r
            .bytes()
            .await
            .map_err(|e| Error::Failure(format!("reading the answer of /edge/v1/auth: {}", transport(&e))))?
            .to_vec();
        if status != 200 {
            return Err(Error::Service { status, body: raw });
        }
        let token: TokenDto = serde_json::from_slice(&raw)
            .map_err(|_| Error::Failure("malformed answer from /edge/v1/auth (not a TokenDTO)".into()))?;
        let s = Session {
            expires_ms: started + i64::from(token.expires_in.max(0)) * 1000,
            obtained_ms: started,
            token,
            raw,
        };
        if let Some(dir) = &self.cfg.cache_dir
            && let Err(e) = disk::store(dir, &self.cfg, &s)
        {
            crate::log::warn(
                "cannot write the token cache",
                &[
                    ("cacheDir", dir.display().to_string().into()),
                    ("error", e.to_string().into()),
                ],
            );
        }
        Ok(s)
    }

    /// The held token when fresh (or, once, the one in `--cache-dir`), else a new one.
    pub async fn session(&self) -> Result<Session, Error> {
        Ok(self.session_new().await?.0)
    }

    /// As [`Client::session`], and whether the token was issued by this call.
    async fn session_new(&self) -> Result<(Session, bool), Error> {
        let mut held = self.session.lock().await;
        let now = self.clock.now_ms();
        if let Some(s) = &*held
            && s.fresh(now, self.renewal)
        {
            return Ok((s.clone(), false));
        }
        if !self.disk_checked.swap(true, std::sync::atomic::Ordering::SeqCst)
            && let Some(dir) = &self.cfg.cache_dir
            && let Some(s) = disk::load(dir, &self.cfg)
            && s.fresh(now, self.renewal)
        {
            *held = Some(s.clone());
            return Ok((s, false));
        }
        let s = self.authenticate_locked().await?;
        *held = Some(s.clone());
        Ok((s, true))
    }

    /// The edge token: the held one while fresh, else a new one (the SDK's `token()`).
    pub async fn token(&self) -> Result<TokenDto, Error> {
        Ok(self.session().await?.token)
    }

    /// The held token, if any (fresh or not).
    pub async fn held(&self) -> Option<Session> {
        self.session.lock().await.clone()
    }

    /// Forgets a token the service refused.
    async fn invalidate(&self, refused: &Session) {
        let mut held = self.session.lock().await;
        if held.as_ref().map(|s| &s.token.access_token) == Some(&refused.token.access_token) {
            *held = None;
        }
        if let Some(dir) = &self.cfg.cache_dir {
            disk::forget(dir, &self.cfg);
        }
    }

    /// `/edge/v1/credentials`. A 401 for a token that was reused (not just issued) makes one new
    /// authentication and one retry.
    pub async fn credentials(&self, req: &CredentialRequest) -> Result<Credential, Error> {
        let (csr, key) = if req.is_x509() {
            let (csr, key) = x509_csr()?;
            (Some(csr), Some(key))
        } else {
            (None, None)
        };
        let mut retried = false;
        loop {
            let (session, just_issued) = self.session_new().await?;
            let body = ApiCredentialsRequest {
                client: Some(self.evidence().await?),
                server: Some(ServerWorkloadDetails {
                    transport_protocol: Some("TCP".into()),
                    host: Some(req.host.clone()),
                    port: Some(i64::from(req.port)),
                }),
                credential_type: Some(req.credential_type.clone()),
                connection_metadata: req.connection_metadata(),
                cert_signing_request: csr.clone(),
            };
            let r = self
                .post("/edge/v1/credentials")
                .bearer_auth(&session.token.access_token)
                .json(&body)
                .send()
                .await
                .map_err(|e| Error::Failure(format!("cannot reach {}: {}", self.cfg.url, transport(&e))))?;
            let status = r.status().as_u16();
            let raw = r
                .bytes()
                .await
                .map_err(|e| Error::Failure(format!("reading the answer of /edge/v1/credentials: {}", transport(&e))))?
                .to_vec();
            if status == 401 && !retried && !just_issued {
                retried = true;
                self.invalidate(&session).await;
                continue;
            }
            if status != 200 {
                return Err(Error::Service { status, body: raw });
            }
            let response: ApiCredentialsResponse = serde_json::from_slice(&raw).map_err(|_| {
                Error::Failure("malformed answer from /edge/v1/credentials (not an ApiCredentialsResponse)".into())
            })?;
            if response.credential_type == CredentialType::Unknown {
                return Err(Error::NoCredential { body: raw });
            }
            return Ok(Credential {
                raw,
                response,
                private_key_pem: key,
            });
        }
    }
}

/// The cause of a transport error without the URL's query (no secrets there, but keep it short).
fn transport(e: &reqwest::Error) -> String {
    let mut s = if e.is_timeout() {
        "timed out".to_string()
    } else if e.is_connect() {
        "connection failed".to_string()
    } else {
        "request failed".to_string()
    };
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        s = format!("{s}: {c}");
        src = c.source();
    }
    s
}

/// A fresh ECDSA P-256 key and a CSR for it (PEM); the key never leaves this process.
pub fn x509_csr() -> Result<(String, String), Error> {
    let key = rcgen::KeyPair::generate().map_err(|e| Error::Failure(format!("key generation: {e}")))?;
    let mut params =
        rcgen::CertificateParams::new(Vec::<String>::new()).map_err(|e| Error::Failure(format!("CSR: {e}")))?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    let csr = params
        .serialize_request(&key)
        .map_err(|e| Error::Failure(format!("CSR: {e}")))?;
    let pem = csr.pem().map_err(|e| Error::Failure(format!("CSR: {e}")))?;
    Ok((pem, key.serialize_pem()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(expires_in: i32, obtained: i64) -> Session {
        Session {
            token: TokenDto {
                access_token: "a".into(),
                refresh_token: None,
                token_type: "Bearer".into(),
                expires_in,
            },
            raw: vec![],
            obtained_ms: obtained,
            expires_ms: obtained + i64::from(expires_in) * 1000,
        }
    }

    #[test]
    fn renewal_rules() {
        let s = session(3600, 0);
        // CLI: reuse with more than 60 s left.
        assert!(s.fresh(3_539_000, Renewal::MinLeft(60_000)));
        assert!(!s.fresh(3_540_000, Renewal::MinLeft(60_000)));
        // Agent: renew when less than 20 % of expiresIn remains (720 s of 3600).
        assert!(s.fresh(2_879_000, Renewal::Fraction(0.2)));
        assert!(!s.fresh(2_880_000, Renewal::Fraction(0.2)));
    }

    #[test]
    fn requests_are_checked_and_normalised() {
        let r = CredentialRequest::new(
            "api.example",
            443,
            "ApiKey",
            vec![("headerValue".into(), "v".into()), ("headerName".into(), "h".into())],
        )
        .unwrap();
        assert_eq!(r.meta[0].0, "headerName");
        // A key given twice keeps its last value.
        let twice = CredentialRequest::new(
            "api.example",
            443,
            "ApiKey",
            vec![("accountName".into(), "z".into()), ("accountName".into(), "a".into())],
        )
        .unwrap();
        assert_eq!(twice.meta, vec![("accountName".to_string(), "a".to_string())]);
        let m = r.connection_metadata().unwrap();
        assert_eq!(
            (m.header_name.as_deref(), m.header_value.as_deref()),
            (Some("h"), Some("v"))
        );
        assert!(
            CredentialRequest::new("h", 1, "ApiKey", vec![])
                .unwrap()
                .connection_metadata()
                .is_none()
        );
        for (host, port, t, meta) in [
            ("", 1, "ApiKey", vec![]),
            ("h", 0, "ApiKey", vec![]),
            ("h", 1, "Unknown", vec![]),
            ("h", 1, "Nope", vec![]),
            ("h", 1, "ApiKey", vec![("bogus".to_string(), "x".to_string())]),
        ] {
            assert_eq!(CredentialRequest::new(host, port, t, meta).unwrap_err().exit_code(), 2);
        }
    }

    #[test]
    fn csr_is_pem_and_key_is_pkcs8() {
        let (csr, key) = x509_csr().unwrap();
        assert!(csr.starts_with("-----BEGIN CERTIFICATE REQUEST-----"));
        assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"));
    }
}
