//! Trust provider records (contract §3.1, §3.2).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Meta, Secret, Timestamp, secret};

/// The `provider` kinds.
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

impl TrustKind {
    pub const ALL: [TrustKind; 9] = [
        TrustKind::CloudAMetadataService,
        TrustKind::CloudARole,
        TrustKind::CloudBMetadataService,
        TrustKind::CloudCIdentityToken,
        TrustKind::CiAIdentityToken,
        TrustKind::CiBIdentityToken,
        TrustKind::CiCIdentityToken,
        TrustKind::OrchestratorServiceAccount,
        TrustKind::OidcIdToken,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TrustKind::CloudAMetadataService => "CloudAMetadataService",
            TrustKind::CloudARole => "CloudARole",
            TrustKind::CloudBMetadataService => "CloudBMetadataService",
            TrustKind::CloudCIdentityToken => "CloudCIdentityToken",
            TrustKind::CiAIdentityToken => "CiAIdentityToken",
            TrustKind::CiBIdentityToken => "CiBIdentityToken",
            TrustKind::CiCIdentityToken => "CiCIdentityToken",
            TrustKind::OrchestratorServiceAccount => "OrchestratorServiceAccount",
            TrustKind::OidcIdToken => "OidcIdToken",
        }
    }

    pub fn parse(s: &str) -> Option<TrustKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The clientId `<type>` segment (§4.2).
    pub fn client_id_type(self) -> &'static str {
        match self {
            TrustKind::CloudAMetadataService => "cloudA_metadata",
            TrustKind::CloudARole => "cloudA_role",
            TrustKind::CloudBMetadataService => "cloudB_metadata",
            TrustKind::CloudCIdentityToken => "cloudC_idtoken",
            TrustKind::CiAIdentityToken => "ciA_idtoken",
            TrustKind::CiBIdentityToken => "ciB_idtoken",
            TrustKind::CiCIdentityToken => "ciC_idtoken",
            TrustKind::OrchestratorServiceAccount => "orchestrator_idtoken",
            TrustKind::OidcIdToken => "oidc_idtoken",
        }
    }

    pub fn from_client_id_type(s: &str) -> Option<TrustKind> {
        Self::ALL.into_iter().find(|k| k.client_id_type() == s)
    }

    /// Match-rule attributes allowed for this kind (§3.1).
    pub fn match_attributes(self) -> &'static [&'static str] {
        match self {
            TrustKind::CloudAMetadataService => &[
                "CloudAAccountId",
                "CloudAArchitecture",
                "CloudAAvailabilityZone",
                "CloudABillingProducts",
                "CloudAImageId",
                "CloudAInstanceId",
                "CloudAInstanceType",
                "CloudAKernelId",
                "CloudAMarketplaceProductCodes",
                "CloudAPendingTime",
                "CloudAPrivateIp",
                "CloudARamdiskId",
                "CloudARegion",
                "CloudAVersion",
            ],
            TrustKind::CloudARole => &[
                "CloudAAccountId",
                "CloudAAssumedRole",
                "CloudARoleARN",
                "CloudAUsername",
            ],
            TrustKind::CloudBMetadataService => &["CloudBSku", "CloudBVmId", "CloudBSubscriptionId"],
            TrustKind::CloudCIdentityToken => &["Email"],
            TrustKind::CiAIdentityToken => &[
                "CiAActor",
                "CiARepository",
                "CiAWorkflow",
                "CiASubject",
                "CiARef",
                "CiARepositoryId",
                "CiARepositoryOwnerId",
            ],
            TrustKind::CiBIdentityToken => &[
                "CiBSubject",
                "CiBProjectPath",
                "CiBNamespacePath",
                "CiBRefPath",
                "CiBProjectId",
                "CiBNamespaceId",
            ],
            TrustKind::CiCIdentityToken => &["CiCOrganizationId", "CiCProjectId", "CiCWorkspaceId"],
            TrustKind::OrchestratorServiceAccount => &[
                "OrchestratorIss",
                "OrchestratorIoNamespace",
                "OrchestratorIoPodName",
                "OrchestratorIoServiceAccountName",
                "OrchestratorSub",
            ],
            TrustKind::OidcIdToken => &["OidcIssuer", "OidcSubject", "OidcAudience", "OidcCustom"],
        }
    }

    /// Kinds whose evidence is a JWT verified with configurable key material.
    pub fn accepts_key_material(self) -> bool {
        matches!(self, TrustKind::OrchestratorServiceAccount | TrustKind::OidcIdToken)
    }

    /// Kinds that accept certificate secrets (§3.2).
    pub fn accepts_secrets(self) -> bool {
        matches!(
            self,
            TrustKind::CloudAMetadataService | TrustKind::OrchestratorServiceAccount | TrustKind::OidcIdToken
        )
    }

    /// Whether the kind's evidence is a JWT (its verified payload is carried in the edge token).
    pub fn is_jwt(self) -> bool {
        matches!(
            self,
            TrustKind::CloudCIdentityToken
                | TrustKind::CiAIdentityToken
                | TrustKind::CiBIdentityToken
                | TrustKind::CiCIdentityToken
                | TrustKind::OrchestratorServiceAccount
                | TrustKind::OidcIdToken
        )
    }
}

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
