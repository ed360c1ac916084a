//! Trust provider records (contract §3.1, §3.2).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Meta, Secret, Timestamp, secret};

/// The `provider` kinds, in the order of their rows in `trust::kinds::KINDS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TrustKind {
    CloudAMetadataService,
    CloudARole,
    CloudBMetadataService,
    CloudCIdentityToken,
    CiAIdentityToken,
    CiBIdentityToken,
    CiCIdentityToken,
    OrchestratorServiceAccount,
    OidcIdToken,
}

// Everything that differs per kind is its row in `trust::kinds::KINDS` (`TrustKind::spec`).

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct MatchRule {
    pub attribute: String,
    pub value: String,
    pub key: Option<String>,
}

/// Public description of a certificate secret (the PEM itself is sealed).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SecretInfo {
    pub id: Uuid,
    pub name: String,
    pub secret_type: String,
    pub subject: Option<String>,
    pub expires_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TrustProvider {
    pub meta: Meta,
    pub kind: TrustKind,
    pub match_rules: Vec<MatchRule>,
    pub certificate: Option<String>,
    pub pem_type: Option<String>,
    pub jwks: Option<String>,
    pub oidc_url: Option<String>,
    pub svc_tenant: bool,
    pub secret_infos: Vec<SecretInfo>,
    /// Set on deactivation: edge tokens issued before it stay revoked after reactivation.
    #[serde(default)]
    pub tokens_valid_after: Option<Timestamp>,
    #[serde(skip)]
    pub secrets: TrustSecrets,
}

/// Certificate secrets (base64 of PEM as sent), by secret id.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct TrustSecrets {
    pub certificates: Vec<SealedCert>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SealedCert {
    pub id: Uuid,
    #[serde(with = "secret::storage")]
    pub pem: Secret<String>,
}

impl TrustProvider {
    /// Certificates are kept to verify evidence with, never sent anywhere.
    pub fn secret_home(&self) -> super::SecretHome {
        super::SecretHome::nowhere()
    }
}
