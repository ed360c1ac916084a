//! The domain model: ids, the base entity block, secrets, actors, permissions, and one record type
//! per stored entity. Records are what the store persists (serde, internal shape) and what the
//! in-memory [`crate::state::State`] holds; wire DTOs are built from them in `crate::api`.

pub mod condition;
pub mod credential;
pub mod identity;
pub mod perm;
pub mod policy;
pub mod records;
pub mod secret;
pub mod sso;
pub mod stream;
pub mod trust;
pub mod workload;

pub use perm::Perm;
pub use secret::{Secret, SecretHome};
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
    Routing,
    AgentController,
    SsoIdp,
    Integration,
    AccessCondition,
    ContentSecurity,
    DiscoveryIntegration,
    ServerWorkloadDraft,
    LogStream,
}

impl Kind {
    pub const ALL: [Kind; 19] = [
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
        Kind::Routing,
        Kind::AgentController,
        Kind::SsoIdp,
        Kind::Integration,
        Kind::AccessCondition,
        Kind::ContentSecurity,
        Kind::DiscoveryIntegration,
        Kind::ServerWorkloadDraft,
        Kind::LogStream,
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
            Kind::Routing => "routing",
            Kind::AgentController => "agent_controller",
            Kind::SsoIdp => "sso_idp",
            Kind::Integration => "integration",
            Kind::AccessCondition => "access_condition",
            Kind::ContentSecurity => "content_security",
            Kind::DiscoveryIntegration => "discovery_integration",
            Kind::ServerWorkloadDraft => "server_workload_draft",
            Kind::LogStream => "log_stream",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The permission and audit category of the kind's family; `None` for the settings record,
    /// which two families share (the compliance settings and the sign-on policy).
    pub const fn family(self) -> Option<Family> {
        let (perm, category) = match self {
            Kind::Settings => return None,
            Kind::ResourceSet => (Perm::ResourceSets, "ResourceSets"),
            Kind::Role => (Perm::Roles, "Roles"),
            Kind::User => (Perm::Users, "Users"),
            Kind::TrustProvider => (Perm::TrustProviders, "TrustProviders"),
            Kind::ClientWorkload => (Perm::ClientWorkloads, "ClientWorkloads"),
            Kind::ServerWorkload => (Perm::ServerWorkloads, "ServerWorkloads"),
            Kind::CredentialProvider => (Perm::CredentialProviders, "CredentialProviders"),
            Kind::CredentialIntegration => (Perm::CredentialProviderIntegrations, "CredentialProviderIntegrations"),
            Kind::AccessPolicy => (Perm::AccessPolicies, "AccessPolicies"),
            Kind::Routing => (Perm::RoutingConfiguration, "Routings"),
            Kind::AgentController => (Perm::AgentControllers, "AgentControllers"),
            Kind::SsoIdp => (Perm::IdentityProviders, "IdentityProviders"),
            Kind::Integration => (Perm::Integrations, "Integrations"),
            Kind::AccessCondition => (Perm::AccessConditions, "AccessConditions"),
            // §2.7: content security is guarded by Access Policies.
            Kind::ContentSecurity => (Perm::AccessPolicies, "ContentSecurity"),
            Kind::DiscoveryIntegration => (Perm::DiscoveryIntegrations, "DiscoveryIntegrations"),
            // Drafts are server workloads to be: read with that permission, audited as them.
            Kind::ServerWorkloadDraft => (Perm::ServerWorkloads, "ServerWorkloads"),
            Kind::LogStream => (Perm::LogStreams, "LogStreams"),
        };
        Some(Family { perm, category })
    }

    /// [`Kind::family`] of a kind that has one (all but `Settings`); in a constant, a kind
    /// without one fails the build.
    pub const fn expect_family(self) -> Family {
        match self.family() {
            Some(f) => f,
            None => panic!("the settings record belongs to no one family"),
        }
    }
}

/// What RBAC and the audit log know an entity family by: the permission of §2.7 that guards it
/// and the category (§3.23) of its audit entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Family {
    pub perm: Perm,
    pub category: &'static str,
}

/// A short text repeated in many records, interned: who created or last changed a record
/// (`createdBy`, `modifiedBy`: an e-mail, `system` or a credential provider), an identity type,
/// a server workload's protocol names. A separate heap string in each record cost tens of MB at
/// 100,000 policies (docs/PERFORMANCE.md). Only values from bounded sets are interned: the table
/// is never pruned.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Label(std::sync::Arc<str>);

impl Label {
    pub fn new(s: &str) -> Label {
        static LABELS: std::sync::LazyLock<std::sync::Mutex<std::collections::HashSet<std::sync::Arc<str>>>> =
            std::sync::LazyLock::new(Default::default);
        let mut set = LABELS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = set.get(s) {
            return Label(l.clone());
        }
        let l: std::sync::Arc<str> = s.into();
        set.insert(l.clone());
        Label(l)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The interned text itself, shared.
    pub fn shared(&self) -> std::sync::Arc<str> {
        self.0.clone()
    }
}

impl std::ops::Deref for Label {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for Label {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for Label {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl From<&str> for Label {
    fn from(s: &str) -> Label {
        Label::new(s)
    }
}

impl std::fmt::Debug for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Serialize for Label {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Label {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Label, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(Label::new(&s))
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
    pub created_by: Option<Label>,
    pub modified_by: Option<Label>,
}

impl Meta {
    /// How a message names the entity: `'name' (id)`.
    pub fn named(&self) -> String {
        format!("'{}' ({})", self.name, self.id)
    }

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
    pub fn label(&self) -> Option<Label> {
        match self {
            Actor::User { email, .. } => Some(Label::new(email)),
            Actor::Role {
                credential_provider_id, ..
            } => Some(Label::new(&format!("credential-provider:{credential_provider_id}"))),
            Actor::System => Some("system".into()),
            Actor::Anonymous { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_interned_and_serialise_as_plain_strings() {
        let a = Label::new("admin@acme.test");
        let b: Label = serde_json::from_str("\"admin@acme.test\"").unwrap();
        assert!(std::sync::Arc::ptr_eq(&a.0, &b.0), "one heap string per distinct label");
        assert_eq!(serde_json::to_string(&b).unwrap(), "\"admin@acme.test\"");
        assert_eq!(format!("{a:?}"), "\"admin@acme.test\"");
        assert_ne!(Label::new("system"), a);
    }

    /// One row per kind: the settings record alone, shared by two families, has none; every
    /// audit category is a §3.23 name (no spaces), and no two families share a category but the
    /// server workloads and their drafts.
    #[test]
    fn every_kind_but_settings_belongs_to_one_family() {
        let families: Vec<(Kind, Family)> = Kind::ALL.iter().filter_map(|k| Some((*k, k.family()?))).collect();
        assert_eq!(families.len(), Kind::ALL.len() - 1);
        assert!(Kind::Settings.family().is_none());
        for (k, f) in &families {
            assert!(!f.category.is_empty() && !f.category.contains(' '), "{k:?}");
            let same: Vec<Kind> = families
                .iter()
                .filter(|(_, g)| g.category == f.category)
                .map(|(k, _)| *k)
                .collect();
            assert!(
                same.len() == 1 || same == [Kind::ServerWorkload, Kind::ServerWorkloadDraft],
                "{k:?} shares its category with {same:?}"
            );
        }
        assert_eq!(Kind::ContentSecurity.expect_family().perm, Perm::AccessPolicies);
        assert_eq!(Kind::Routing.expect_family().category, "Routings");
    }

    #[test]
    fn an_entity_is_named_by_name_and_id_in_messages() {
        let m = Meta {
            id: Uuid::nil(),
            seq: 1,
            rs: None,
            name: "web".into(),
            description: None,
            active: true,
            tags: vec![],
            created_at: Timestamp::from_millis(0),
            modified_at: Timestamp::from_millis(0),
            created_by: None,
            modified_by: None,
        };
        assert_eq!(m.named(), "'web' (00000000-0000-0000-0000-000000000000)");
    }
}
