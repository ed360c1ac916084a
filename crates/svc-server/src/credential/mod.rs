//! Credential providers (contract §3.5, §4.10, §5.3): one module per type. Each type declares its
//! variant fields and secrets in a [`types::TypeSpec`] (management validation) and compiles into a
//! [`Backend`] that the edge calls only after the policy allowed the request (architecture
//! invariant 1): first `prepare` (dynamic values, §3.5.3; an unresolvable one is a 403), then
//! `issue` (the upstream exchange, §5.3). Upstream credentials are reused from [`cache`] until 60 s
//! before their expiry, never beyond.

pub mod access_token;
pub mod ai_wif;
pub mod apikey;
pub mod assertion;
pub mod authorization_code;
pub mod cache;
pub mod cib_account;
pub mod clouda_sts;
pub mod cloudb;
pub mod cloudc_wif;
pub mod dynamic;
pub mod issued_jwt;
pub mod oauth;
pub mod signed_jwt;
pub mod types;
pub mod upstream_call;
pub mod username_password;
pub mod vault;
pub mod x509svid;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use svc_api::Timestamp;
use svc_api::edge::{CredentialType, EdgeCredentials};
use uuid::Uuid;

use crate::config::Config;
use crate::domain::credential::{CredentialIntegration, CredentialProvider};
use crate::issuer::KeyRing;
use crate::issuer::ca::Ca;
use crate::upstream::Upstream;

/// What a credential type reads of the configuration besides its own provider (the `check`s of
/// `types.rs`, issuance through [`Renewals::current`]): a narrow view of `state::State`, which
/// implements it, so `credential` stays below `state` (whose indexes hold compiled providers).
pub trait Lookup: Send + Sync {
    fn credential_provider(&self, id: &Uuid) -> Option<&Arc<CredentialProvider>>;
    fn credential_integration(&self, id: &Uuid) -> Option<&Arc<CredentialIntegration>>;
    fn has_role(&self, id: &Uuid) -> bool;
    fn has_client_workload(&self, id: &Uuid) -> bool;
}

/// What a backend produced.
#[derive(Debug, Clone)]
pub enum Issued {
    Credential {
        credential_type: CredentialType,
        data: EdgeCredentials,
        expires_at: Option<Timestamp>,
    },
    /// Configured but nothing to give (§4.8 step 12): 200 with `Unknown`.
    Nothing(String),
}

/// An upstream or internal failure (→ 500; the reason goes to the event only, never a secret).
#[derive(Debug, Clone, PartialEq)]
pub struct IssueError {
    /// The cause, for the event and the server's log.
    pub reason: String,
    /// `Some` when the cause is what an upstream did or did not answer, with the protocol's error
    /// code when its refusal carried one the protocols define ([`crate::upstream::Fetched::code`]).
    upstream: Option<Option<String>>,
}

impl IssueError {
    /// A failure of the configuration or of the service itself.
    pub fn new(reason: impl Into<String>) -> Self {
        IssueError {
            reason: reason.into(),
            upstream: None,
        }
    }

    /// A failure of the upstream: it did not answer, refused (`code` when it named a protocol
    /// error code) or answered something unusable.
    pub fn upstream(reason: impl Into<String>, code: Option<String>) -> Self {
        IssueError {
            reason: reason.into(),
            upstream: Some(code),
        }
    }

    /// What whoever configured the provider may be told (verification, the authorization
    /// callback, a provider's status): the reason, except for what an upstream answered, of which
    /// only the protocol's error code is named — the URL may point at a service inside the
    /// network, and whether or how it answers must not reach them (issue 31: no port scanner).
    pub fn told(&self) -> String {
        match &self.upstream {
            None => self.reason.clone(),
            Some(Some(code)) => format!("{UPSTREAM_FAILED}: {code}"),
            Some(None) => UPSTREAM_FAILED.to_string(),
        }
    }
}

/// The one message for an upstream that gave no credential (see [`IssueError::told`]).
pub const UPSTREAM_FAILED: &str = "the upstream did not issue a credential";

impl From<crate::upstream::UpstreamError> for IssueError {
    fn from(e: crate::upstream::UpstreamError) -> Self {
        use crate::upstream::UpstreamError as U;
        match &e {
            U::Unreachable(_) | U::Malformed(_) => IssueError::upstream(e.to_string(), None),
            U::Status(_, code) => IssueError::upstream(e.to_string(), code.clone()),
            U::BadUrl(_) => IssueError::new(e.to_string()),
        }
    }
}

/// What a credential backend may use: the configuration, the upstream client, the service's
/// keys and X.509 CA, the reuse cache and, for the two backends that keep a renewed upstream
/// credential, [`Renewals`]. Never the application nor the database directly (invariant 2).
#[derive(Clone, Copy)]
pub struct Services<'a> {
    pub cfg: &'a Config,
    pub upstream: &'a Upstream,
    pub keys: &'a arc_swap::ArcSwap<KeyRing>,
    pub ca: &'a Ca,
    pub cache: &'a cache::CredentialCache,
    pub renewals: &'a dyn Renewals,
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The one door from a backend to storage: how `oauth-authorization-code` (a rotated refresh
/// token) and `ciB-managed-account` (a minted token, the provisioning outcome) keep what they
/// renewed. Implemented by the service (`service::renewal`), so a backend sees no database type.
pub trait Renewals: Send + Sync {
    /// The configuration as committed now (a provider's stored tokens, its integration).
    fn current(&self) -> Arc<dyn Lookup>;
    /// One renewal of `provider` at a time, on this node and across nodes; once held, the
    /// state has caught up with other nodes' writes, so a token another node just stored is
    /// seen instead of renewed again (a spent rotating refresh token would otherwise be
    /// presented twice).
    fn lock(&self, provider: Uuid) -> BoxFuture<'_, Result<RenewalGuard<'_>, IssueError>>;
    /// Applies `f` to the stored provider in one write of the service's own (no audit entry:
    /// server-maintained state). An error when the provider no longer exists.
    fn update<'s>(
        &'s self,
        provider: Uuid,
        f: Box<dyn FnOnce(&mut CredentialProvider) + Send + 's>,
    ) -> BoxFuture<'s, Result<(), IssueError>>;
}

/// Held while a stored upstream credential is renewed ([`Renewals::lock`]).
pub struct RenewalGuard<'a>(pub Box<dyn Send + 'a>);

/// The request context a backend may use.
pub struct IssueCx<'a> {
    pub svc: Services<'a>,
    pub rs: Uuid,
    /// The matched client workload (id, name); `None` for `verification`.
    pub client_workload: Option<(Uuid, &'a str)>,
    pub server_workload: Uuid,
    pub access_policy: Uuid,
    pub credential_provider: Uuid,
    pub trust_provider: Uuid,
    /// Sources of dynamic values; `None` when there is no request (verification).
    pub values: Option<&'a dynamic::Values<'a>>,
    /// The request's PEM CSR (X509Svid).
    pub csr: Option<&'a str>,
}

/// Inputs resolved before issuance (dynamic values), by name; also the cache key's inputs.
#[derive(Debug, Default, Clone)]
pub struct Prepared(pub BTreeMap<String, String>);

impl Prepared {
    pub fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }
    fn cache_inputs(&self) -> String {
        self.0
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("\u{1f}")
    }
}

/// The compiled backend of one provider.
#[derive(Debug)]
pub enum Backend {
    ApiKey(apikey::ApiKey),
    UsernamePassword(username_password::UsernamePassword),
    AccessToken(access_token::AccessToken),
    SignedJwt(signed_jwt::SignedJwt),
    IssuedJwt(issued_jwt::IssuedJwt),
    OAuthClientCredentials(oauth::ClientCredentials),
    AuthorizationCode(authorization_code::AuthorizationCode),
    CloudASts(clouda_sts::CloudASts),
    Vault(vault::Vault),
    X509Svid(x509svid::X509Svid),
    AiWif(ai_wif::AiWif),
    CloudCWif(cloudc_wif::CloudCWif),
    CloudBDirectory(cloudb::DirectoryFederation),
    CloudBKeyVault(cloudb::KeyVaultValue),
    CiBAccount(cib_account::ManagedAccount),
    /// The stored configuration cannot be used (never for data written by this version).
    Broken(String),
}

#[derive(Debug)]
pub struct CompiledCredential {
    pub id: Uuid,
    pub rs: Uuid,
    pub name: String,
    pub cp_type: String,
    pub active: bool,
    /// Changes whenever the provider does (cache key).
    pub version: i64,
    pub issues: Option<CredentialType>,
    pub backend: Backend,
}

impl CompiledCredential {
    /// The `credentialType` this provider issues (§4.10).
    pub fn credential_type(&self) -> Option<CredentialType> {
        self.issues
    }

    /// Resolves dynamic values; `Err(expression)` when one cannot be resolved.
    pub fn prepare(&self, cx: &IssueCx<'_>) -> Result<Prepared, String> {
        match &self.backend {
            Backend::IssuedJwt(b) => b.prepare(cx),
            Backend::Vault(b) => b.prepare(cx),
            Backend::X509Svid(b) => b.prepare(cx),
            Backend::CloudASts(_) | Backend::AiWif(_) | Backend::CloudCWif(_) | Backend::CloudBDirectory(_) => {
                // The assertion's subject (and cloudA's RoleSessionName) name the client workload;
                // its `svc` claim does in every case, so reuse is per client workload.
                let mut p = Prepared::default();
                p.0.insert("clientWorkload".into(), assertion::default_subject(cx));
                Ok(p)
            }
            _ => Ok(Prepared::default()),
        }
    }

    fn cacheable(&self) -> bool {
        matches!(
            self.backend,
            Backend::OAuthClientCredentials(_)
                | Backend::CloudASts(_)
                | Backend::Vault(_)
                | Backend::AiWif(_)
                | Backend::CloudCWif(_)
                | Backend::CloudBDirectory(_)
        )
    }

    pub async fn issue(&self, prepared: &Prepared, cx: &IssueCx<'_>) -> Result<Issued, IssueError> {
        let started = std::time::Instant::now();
        let r = self.issue_with(prepared, cx, true).await;
        if crate::metrics::enabled() {
            let kind = types::spec(&self.cp_type).map_or("other", |s| s.name);
            crate::metrics::credential_issued(kind, r.is_ok(), started.elapsed());
        }
        r
    }

    /// Issues, reusing a cached upstream credential only when `reuse` (verification never does).
    async fn issue_with(&self, prepared: &Prepared, cx: &IssueCx<'_>, reuse: bool) -> Result<Issued, IssueError> {
        // Everything an assertion's claims name is part of the key: a credential obtained for
        // one policy, server workload or attestation is never handed out for another.
        let key = (reuse && self.cacheable()).then(|| {
            format!(
                "{}:{}:{}:{}:{}:{}",
                self.id,
                self.version,
                cx.access_policy,
                cx.server_workload,
                cx.trust_provider,
                prepared.cache_inputs()
            )
        });
        if let Some(k) = &key
            && let Some(hit) = cx.svc.cache.get(k)
        {
            return Ok(hit);
        }
        let issued = match &self.backend {
            Backend::ApiKey(b) => Ok(b.issue()),
            Backend::UsernamePassword(b) => Ok(b.issue()),
            Backend::AccessToken(b) => Ok(b.issue(cx)),
            Backend::SignedJwt(b) => b.issue(),
            Backend::IssuedJwt(b) => Ok(b.issue(prepared, cx)),
            Backend::OAuthClientCredentials(b) => b.issue(cx).await,
            Backend::AuthorizationCode(b) => b.issue(cx).await,
            Backend::CloudASts(b) => b.issue(prepared, cx).await,
            Backend::Vault(b) => b.issue(prepared, cx).await,
            Backend::X509Svid(b) => b.issue(prepared, cx),
            Backend::AiWif(b) => b.issue(prepared, cx).await,
            Backend::CloudCWif(b) => b.issue(prepared, cx).await,
            Backend::CloudBDirectory(b) => b.issue(cx).await,
            Backend::CloudBKeyVault(b) => b.issue(cx).await,
            Backend::CiBAccount(b) => b.issue(cx).await,
            Backend::Broken(e) => Err(IssueError::new(format!("provider configuration unusable: {e}"))),
        }?;
        if let (
            Some(k),
            Issued::Credential {
                expires_at: Some(exp), ..
            },
        ) = (&key, &issued)
        {
            cx.svc.cache.put(k.clone(), issued.clone(), exp.millis());
        }
        Ok(issued)
    }
}

pub fn compile(p: &CredentialProvider) -> CompiledCredential {
    let (backend, issues) = match types::spec(&p.cp_type) {
        Some(spec) => ((spec.compile)(p), Some((spec.credential_type)(&p.config))),
        None => (Backend::Broken(format!("unknown type {}", p.cp_type)), None),
    };
    CompiledCredential {
        id: p.meta.id,
        rs: p.meta.scope(),
        name: p.meta.name.clone(),
        cp_type: p.cp_type.clone(),
        active: p.meta.active,
        version: p.meta.modified_at.millis(),
        issues,
        backend,
    }
}

/// `GET …/verification`: one real issuance whose result is discarded (§3.5). An X.509-SVID
/// provider signs a certificate for a throw-away key, since no workload sent a CSR.
pub async fn verify(svc: Services<'_>, c: &CompiledCredential) -> Result<(), String> {
    let probe_csr = match &c.backend {
        Backend::X509Svid(_) => Some(x509svid::probe_csr()?),
        _ => None,
    };
    let cx = IssueCx {
        svc,
        rs: c.rs,
        client_workload: None,
        server_workload: Uuid::nil(),
        access_policy: Uuid::nil(),
        credential_provider: c.id,
        trust_provider: Uuid::nil(),
        values: None,
        csr: probe_csr.as_deref(),
    };
    let prepared = c
        .prepare(&cx)
        .map_err(|expr| format!("{expr} can only be resolved for a workload request"))?;
    match c.issue_with(&prepared, &cx, false).await {
        Ok(Issued::Credential { .. }) => Ok(()),
        Ok(Issued::Nothing(reason)) => Err(reason),
        Err(e) => {
            tracing::info!(provider = %c.id, reason = %e.reason, "verification obtained no credential");
            Err(e.told())
        }
    }
}

/// Checks an X.509-SVID certificate signing request (§4.10); the reason is the 400 message tail.
pub fn check_csr(pem: &str) -> Result<(), String> {
    x509svid::check_csr(pem)
}
