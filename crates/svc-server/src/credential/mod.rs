//! Credential providers (contract §3.5, §4.10, §5.3): one module per type. Each type declares its
//! variant fields and secrets in a [`types::TypeSpec`] (management validation) and compiles into a
//! [`Backend`] the edge calls after the policy allowed the request (architecture invariant 1).

pub mod access_token;
pub mod apikey;
pub mod types;
pub mod username_password;

use svc_api::Timestamp;
use svc_api::edge::{CredentialType, EdgeCredentials};
use uuid::Uuid;

use crate::app::App;
use crate::domain::credential::CredentialProvider;

/// What a backend produced.
#[derive(Debug)]
pub enum Issued {
    Credential {
        credential_type: CredentialType,
        data: EdgeCredentials,
        expires_at: Option<Timestamp>,
    },
    /// Configured but nothing to give (§4.8 step 12): 200 with `Unknown`.
    Nothing(String),
}

/// An upstream or internal failure (→ 500; the reason goes to the event only).
#[derive(Debug, Clone, PartialEq)]
pub struct IssueError(pub String);

/// The request context a backend may use (dynamic values, assertion claims).
pub struct IssueCx<'a> {
    pub app: &'a App,
    pub client_workload: Uuid,
    pub server_workload: Uuid,
    pub access_policy: Uuid,
    pub trust_provider: Uuid,
}

/// The compiled backend of one provider.
#[derive(Debug)]
pub enum Backend {
    ApiKey(apikey::ApiKey),
    UsernamePassword(username_password::UsernamePassword),
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
    pub backend: Backend,
}

impl CompiledCredential {
    /// The `credentialType` this provider issues (§4.10).
    pub fn credential_type(&self) -> Option<CredentialType> {
        match &self.backend {
            Backend::ApiKey(_) => Some(CredentialType::ApiKey),
            Backend::UsernamePassword(_) => Some(CredentialType::UsernamePassword),
            Backend::Broken(_) => None,
        }
    }

    pub async fn issue(&self, _cx: &IssueCx<'_>) -> Result<Issued, IssueError> {
        match &self.backend {
            Backend::ApiKey(b) => Ok(b.issue()),
            Backend::UsernamePassword(b) => Ok(b.issue()),
            Backend::Broken(e) => Err(IssueError(format!("provider configuration unusable: {e}"))),
        }
    }
}

pub fn compile(p: &CredentialProvider) -> CompiledCredential {
    let backend = match types::spec(&p.cp_type) {
        Some(spec) => (spec.compile)(p),
        None => Backend::Broken(format!("unknown type {}", p.cp_type)),
    };
    CompiledCredential {
        id: p.meta.id,
        rs: p.meta.scope(),
        name: p.meta.name.clone(),
        cp_type: p.cp_type.clone(),
        active: p.meta.active,
        backend,
    }
}

/// `GET …/verification`: one real issuance whose result is discarded (§3.5).
pub async fn verify(app: &App, c: &CompiledCredential) -> Result<(), String> {
    let cx = IssueCx {
        app,
        client_workload: Uuid::nil(),
        server_workload: Uuid::nil(),
        access_policy: Uuid::nil(),
        trust_provider: Uuid::nil(),
    };
    match c.issue(&cx).await {
        Ok(Issued::Credential { .. }) => Ok(()),
        Ok(Issued::Nothing(reason)) => Err(reason),
        Err(IssueError(reason)) => Err(reason),
    }
}

/// Checks an X.509-SVID certificate signing request (§4.10); the reason is the 400 message tail.
pub fn check_csr(_pem: &str) -> Result<(), String> {
    Err("X.509-SVID issuance is not available in this build".into())
}
