//! The domain model: ids, the base entity block, secrets, actors, permissions, and one record type
//! per stored entity. Records are what the store persists (serde, internal shape) and what the
//! in-memory [`crate::state::State`] holds; wire DTOs are built from them in `crate::api`.

pub mod credential;
pub mod identity;
pub mod perm;
pub mod policy;
pub mod records;
pub mod secret;
pub mod trust;
pub mod workload;

pub use perm::Perm;
pub use secret::Secret;
pub use svc_api::{Tag, Timestamp};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use svc_api::DEFAULT_RESOURCE_SET;

/// Stored entity kinds. Adding one makes the compiler list every `match` that must learn it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Settings,
    ResourceSet,
    Role,
    User,
    TrustProvider,
    ClientWorkload,
    ServerWorkload,
    CredentialProvider,
    CredentialIntegration,
    AccessPolicy,
}

impl Kind {
    pub const ALL: [Kind; 10] = [
        Kind::Settings,
        Kind::ResourceSet,
        Kind::Role,
        Kind::User,
        Kind::TrustProvider,
        Kind::ClientWorkload,
        Kind::ServerWorkload,
        Kind::CredentialProvider,
        Kind::CredentialIntegration,
        Kind::AccessPolicy,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Settings => "settings",
            Kind::ResourceSet => "resource_set",
            Kind::Role => "role",
            Kind::User => "user",
            Kind::TrustProvider => "trust_provider",
            Kind::ClientWorkload => "client_workload",
            Kind::ServerWorkload => "server_workload",
            Kind::CredentialProvider => "credential_provider",
            Kind::CredentialIntegration => "credential_integration",
            Kind::AccessPolicy => "access_policy",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// The base entity block (contract §1.3) shared by configuration entities.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Meta {
    pub id: Uuid,
    pub seq: i32,
    /// `None` for global entities (resource sets, roles).
    pub rs: Option<Uuid>,
    pub name: String,
    pub description: Option<String>,
    pub active: bool,
    pub tags: Vec<Tag>,
    pub created_at: Timestamp,
    pub modified_at: Timestamp,
    pub created_by: Option<String>,
    pub modified_by: Option<String>,
}

impl Meta {
    /// The resource set that counts for RBAC and audit (§1.4 rule 8).
    pub fn scope(&self) -> Uuid {
        self.rs.unwrap_or(DEFAULT_RESOURCE_SET)
    }
}

/// Who performed a change or a call (audit `actor`, `createdBy`).
#[derive(Clone, Debug, PartialEq)]
pub enum Actor {
    User {
        id: Uuid,
        email: String,
        display_name: String,
    },
    /// A workload holding a `svc-access-token` credential (acts with that provider's role).
    Role {
        credential_provider_id: Uuid,
        access_policy_id: Option<Uuid>,
        role_name: String,
    },
    System,
    /// An unauthenticated caller (failed logins).
    Anonymous {
        email: Option<String>,
    },
}

impl Actor {
    /// The `createdBy` / `modifiedBy` text (§1.3).
    pub fn label(&self) -> Option<String> {
        match self {
            Actor::User { email, .. } => Some(email.clone()),
            Actor::Role {
                credential_provider_id, ..
            } => Some(format!("credential-provider:{credential_provider_id}")),
            Actor::System => Some("system".into()),
            Actor::Anonymous { .. } => None,
        }
    }
}
