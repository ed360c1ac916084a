//! The in-memory configuration: every entity, held in persistent (structurally shared) maps so a
//! write clones the whole [`State`] in O(1) and patches it in O(log n), plus the secondary
//! indexes the Edge API and the referential-integrity rules need. The current `State` sits in an
//! `ArcSwap` (see [`crate::app::App`]); readers never lock, writers swap a new version in after
//! the database commit (architecture invariant 2).

pub mod index;

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use crate::domain::credential::{CredentialIntegration, CredentialProvider};
use crate::domain::policy::Policy;
use crate::domain::records::{ResourceSet, Role, Settings, User};
use crate::domain::sso::{AgentController, Routing, SsoIdp};
use crate::domain::trust::TrustProvider;
use crate::domain::workload::{ClientWorkload, ServerWorkload};
use crate::domain::{Kind, Meta, SecretHome};
pub use index::Indexes;

/// One entity type by id. A B-tree (`OrdMap`) rather than a hash trie: its leaves are dense, so
/// at 100,000 entities per table it costs tens of bytes per entry instead of hundreds.
pub type Table<T> = imbl::OrdMap<Uuid, Arc<T>>;

/// A stored entity type.
pub trait Record: Clone + Send + Sync + Serialize + DeserializeOwned + 'static {
    const KIND: Kind;
    fn id(&self) -> Uuid;
    fn seq(&self) -> i32;
    /// Resource set of scoped entities; `None` for global ones.
    fn rs(&self) -> Option<Uuid>;
    fn table(st: &State) -> &Table<Self>;
    fn table_mut(st: &mut State) -> &mut Table<Self>;
    /// The sealed part, as JSON, when the record has one.
    fn secrets_json(&self) -> Option<serde_json::Value> {
        None
    }
    fn restore_secrets(&mut self, _v: serde_json::Value) -> Result<(), String> {
        Ok(())
    }
    /// Where the record's write-only secrets are sent ([`SecretHome`]). Every record states it:
    /// a resource with secrets cannot forget that they stay with their destination.
    fn secret_home(&self) -> SecretHome;
    /// Keeps secondary indexes in step with a change (`old` → `new`).
    fn reindex(_idx: &mut Indexes, _old: Option<&Self>, _new: Option<&Self>) {}
    /// Drops spare list capacity before the record is shared (a stored record is never grown in
    /// place: a change clones it). serde and `push` leave room for at least four elements, so the
    /// one-element lists of most workloads and policies carried three empty slots each: ~85 MB
    /// at 100,000 policies (docs/PERFORMANCE.md, heap profile).
    fn compact(&mut self) {}
}

/// A stored entity with the base block of §1.3 (every management resource but users and the
/// settings).
pub trait MetaRecord: Record {
    fn meta(&self) -> &Meta;
    fn meta_mut(&mut self) -> &mut Meta;
}

/// Implements [`MetaRecord`] for types whose base block is `self.meta`.
macro_rules! meta_of {
    ($($t:ty),*) => {
        $(impl MetaRecord for $t {
            fn meta(&self) -> &Meta {
                &self.meta
            }
            fn meta_mut(&mut self) -> &mut Meta {
                &mut self.meta
            }
        })*
    };
}

meta_of!(
    ResourceSet,
    Role,
    TrustProvider,
    CredentialProvider,
    CredentialIntegration,
    ClientWorkload,
    ServerWorkload,
    Policy,
    Routing,
    AgentController,
    SsoIdp,
    crate::domain::condition::Integration,
    crate::domain::condition::AccessCondition,
    crate::domain::condition::ContentSecurity,
    crate::domain::condition::DiscoveryIntegration,
    crate::domain::condition::ServerWorkloadDraft,
    crate::domain::stream::LogStream
);

/// Implements [`Record`] for a type whose base block is `self.meta`.
macro_rules! meta_record {
    ($t:ty, $kind:expr, $field:ident) => {
        impl $crate::state::Record for $t {
            const KIND: $crate::domain::Kind = $kind;
            fn id(&self) -> uuid::Uuid {
                self.meta.id
            }
            fn seq(&self) -> i32 {
                self.meta.seq
            }
            fn rs(&self) -> Option<uuid::Uuid> {
                self.meta.rs
            }
            fn table(st: &$crate::state::State) -> &$crate::state::Table<Self> {
                &st.$field
            }
            fn table_mut(st: &mut $crate::state::State) -> &mut $crate::state::Table<Self> {
                &mut st.$field
            }
            fn secret_home(&self) -> $crate::domain::SecretHome {
                $crate::domain::SecretHome::nowhere()
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use meta_record;

#[derive(Clone, Default)]
pub struct State {
    pub settings: Table<Settings>,
    pub resource_sets: Table<ResourceSet>,
    pub roles: Table<Role>,
    pub users: Table<User>,
    pub trust_providers: Table<TrustProvider>,
    pub client_workloads: Table<ClientWorkload>,
    pub server_workloads: Table<ServerWorkload>,
    pub credential_providers: Table<CredentialProvider>,
    pub credential_integrations: Table<CredentialIntegration>,
    pub policies: Table<Policy>,
    pub routings: Table<crate::domain::sso::Routing>,
    pub agent_controllers: Table<crate::domain::sso::AgentController>,
    pub sso_idps: Table<crate::domain::sso::SsoIdp>,
    pub integrations: Table<crate::domain::condition::Integration>,
    pub access_conditions: Table<crate::domain::condition::AccessCondition>,
    pub content_security: Table<crate::domain::condition::ContentSecurity>,
    pub discovery_integrations: Table<crate::domain::condition::DiscoveryIntegration>,
    pub server_workload_drafts: Table<crate::domain::condition::ServerWorkloadDraft>,
    pub log_streams: Table<crate::domain::stream::LogStream>,
    pub idx: Indexes,
}

meta_record!(ResourceSet, Kind::ResourceSet, resource_sets);
meta_record!(Role, Kind::Role, roles);
meta_record!(crate::domain::sso::Routing, Kind::Routing, routings);
meta_record!(
    crate::domain::sso::AgentController,
    Kind::AgentController,
    agent_controllers
);

/// Implements [`Record`] for a [`Meta`] type with a sealed `secrets` bundle, the function that
/// says where its secrets go ([`SecretHome`]) and, when named, an index hook.
macro_rules! sealed_record {
    ($t:ty, $kind:expr, $field:ident, $home:path $(, $reindex:ident)?) => {
        impl Record for $t {
            const KIND: Kind = $kind;
            fn id(&self) -> Uuid {
                self.meta.id
            }
            fn seq(&self) -> i32 {
                self.meta.seq
            }
            fn rs(&self) -> Option<Uuid> {
                self.meta.rs
            }
            fn table(st: &State) -> &Table<Self> {
                &st.$field
            }
            fn table_mut(st: &mut State) -> &mut Table<Self> {
                &mut st.$field
            }
            fn secrets_json(&self) -> Option<serde_json::Value> {
                serde_json::to_value(&self.secrets).ok()
            }
            fn restore_secrets(&mut self, v: serde_json::Value) -> Result<(), String> {
                self.secrets = serde_json::from_value(v).map_err(|e| e.to_string())?;
                Ok(())
            }
            fn secret_home(&self) -> SecretHome {
                $home(self)
            }
            $(fn reindex(idx: &mut Indexes, old: Option<&Self>, new: Option<&Self>) {
                idx.$reindex(old, new);
            })?
        }
    };
}

/// Implements [`Record`] for a [`Meta`] type without secrets whose lists are compacted, with an
/// index hook when one is named.
macro_rules! indexed_record {
    ($t:ty, $kind:expr, $field:ident $(, $reindex:ident)?) => {
        impl Record for $t {
            fn secret_home(&self) -> SecretHome {
                SecretHome::nowhere()
            }
            const KIND: Kind = $kind;
            fn id(&self) -> Uuid {
                self.meta.id
            }
            fn seq(&self) -> i32 {
                self.meta.seq
            }
            fn rs(&self) -> Option<Uuid> {
                self.meta.rs
            }
            fn table(st: &State) -> &Table<Self> {
                &st.$field
            }
            fn table_mut(st: &mut State) -> &mut Table<Self> {
                &mut st.$field
            }
            $(fn reindex(idx: &mut Indexes, old: Option<&Self>, new: Option<&Self>) {
                idx.$reindex(old, new);
            })?
            fn compact(&mut self) {
                self.shrink_lists();
            }
        }
    };
}

sealed_record!(
    TrustProvider,
    Kind::TrustProvider,
    trust_providers,
    TrustProvider::secret_home,
    trust_provider_changed
);
sealed_record!(
    CredentialProvider,
    Kind::CredentialProvider,
    credential_providers,
    crate::credential::types::secret_home,
    credential_provider_changed
);
sealed_record!(
    CredentialIntegration,
    Kind::CredentialIntegration,
    credential_integrations,
    CredentialIntegration::secret_home,
    credential_integration_changed
);
indexed_record!(
    ClientWorkload,
    Kind::ClientWorkload,
    client_workloads,
    client_workload_changed
);
indexed_record!(
    ServerWorkload,
    Kind::ServerWorkload,
    server_workloads,
    server_workload_changed
);
indexed_record!(Policy, Kind::AccessPolicy, policies, policy_changed);
sealed_record!(
    crate::domain::condition::Integration,
    Kind::Integration,
    integrations,
    crate::domain::condition::Integration::secret_home
);
sealed_record!(
    crate::domain::condition::ContentSecurity,
    Kind::ContentSecurity,
    content_security,
    crate::domain::condition::ContentSecurity::secret_home
);
sealed_record!(
    crate::domain::condition::DiscoveryIntegration,
    Kind::DiscoveryIntegration,
    discovery_integrations,
    crate::domain::condition::DiscoveryIntegration::secret_home
);
sealed_record!(
    crate::domain::stream::LogStream,
    Kind::LogStream,
    log_streams,
    crate::domain::stream::LogStream::secret_home
);
indexed_record!(
    crate::domain::condition::AccessCondition,
    Kind::AccessCondition,
    access_conditions
);
meta_record!(
    crate::domain::condition::ServerWorkloadDraft,
    Kind::ServerWorkloadDraft,
    server_workload_drafts
);

impl Record for crate::domain::sso::SsoIdp {
    const KIND: Kind = Kind::SsoIdp;
    fn id(&self) -> Uuid {
        self.meta.id
    }
    fn seq(&self) -> i32 {
        self.meta.seq
    }
    fn rs(&self) -> Option<Uuid> {
        None
    }
    fn table(st: &State) -> &Table<Self> {
        &st.sso_idps
    }
    fn table_mut(st: &mut State) -> &mut Table<Self> {
        &mut st.sso_idps
    }
    fn secret_home(&self) -> SecretHome {
        self.secret_home()
    }
    fn secrets_json(&self) -> Option<serde_json::Value> {
        serde_json::to_value(&self.secrets).ok()
    }
    fn restore_secrets(&mut self, v: serde_json::Value) -> Result<(), String> {
        self.secrets = serde_json::from_value(v).map_err(|e| e.to_string())?;
        Ok(())
    }
}

impl Record for Settings {
    const KIND: Kind = Kind::Settings;
    fn id(&self) -> Uuid {
        Uuid::nil()
    }
    fn seq(&self) -> i32 {
        0
    }
    fn rs(&self) -> Option<Uuid> {
        None
    }
    fn table(st: &State) -> &Table<Self> {
        &st.settings
    }
    fn table_mut(st: &mut State) -> &mut Table<Self> {
        &mut st.settings
    }
    fn secret_home(&self) -> SecretHome {
        SecretHome::nowhere()
    }
}

impl Record for User {
    const KIND: Kind = Kind::User;
    fn id(&self) -> Uuid {
        self.id
    }
    fn seq(&self) -> i32 {
        self.seq
    }
    fn rs(&self) -> Option<Uuid> {
        None
    }
    fn table(st: &State) -> &Table<Self> {
        &st.users
    }
    fn table_mut(st: &mut State) -> &mut Table<Self> {
        &mut st.users
    }
    /// A password hash and TOTP seeds are checked here, never sent anywhere.
    fn secret_home(&self) -> SecretHome {
        SecretHome::nowhere()
    }
    fn secrets_json(&self) -> Option<serde_json::Value> {
        serde_json::to_value(&self.secrets).ok()
    }
    fn restore_secrets(&mut self, v: serde_json::Value) -> Result<(), String> {
        self.secrets = serde_json::from_value(v).map_err(|e| e.to_string())?;
        Ok(())
    }
    fn reindex(idx: &mut Indexes, old: Option<&Self>, new: Option<&Self>) {
        idx.user_changed(old, new);
    }
}

impl crate::credential::Lookup for State {
    fn credential_provider(&self, id: &Uuid) -> Option<&Arc<CredentialProvider>> {
        self.credential_providers.get(id)
    }
    fn credential_integration(&self, id: &Uuid) -> Option<&Arc<CredentialIntegration>> {
        self.credential_integrations.get(id)
    }
    fn has_role(&self, id: &Uuid) -> bool {
        self.roles.contains_key(id)
    }
    fn has_client_workload(&self, id: &Uuid) -> bool {
        self.client_workloads.contains_key(id)
    }
}

impl State {
    pub fn get<T: Record>(&self, id: &Uuid) -> Option<&Arc<T>> {
        T::table(self).get(id)
    }

    /// Inserts or replaces a record, keeping the indexes in step.
    pub fn put<T: Record>(&mut self, mut v: T) -> Arc<T> {
        v.compact();
        let id = v.id();
        let new = Arc::new(v);
        let old = T::table_mut(self).insert(id, new.clone());
        T::reindex(&mut self.idx, old.as_deref(), Some(&new));
        new
    }

    pub fn remove<T: Record>(&mut self, id: &Uuid) -> Option<Arc<T>> {
        let old = T::table_mut(self).remove(id);
        if let Some(o) = &old {
            T::reindex(&mut self.idx, Some(o), None);
        }
        old
    }

    pub fn settings(&self) -> Arc<Settings> {
        self.settings
            .get(&Uuid::nil())
            .cloned()
            .unwrap_or_else(|| Arc::new(Settings::initial(crate::clock::now())))
    }

    pub fn resource_set_exists(&self, id: &Uuid) -> bool {
        self.resource_sets.contains_key(id)
    }

    pub fn user_by_email(&self, email: &str) -> Option<&Arc<User>> {
        self.idx
            .users_by_email
            .get(&email.to_lowercase())
            .and_then(|id| self.users.get(id))
    }

    /// Entities of type `T` in resource set `rs` (or global ones when `rs` is `None`).
    pub fn in_rs<T: Record>(&self, rs: Option<Uuid>) -> impl Iterator<Item = &Arc<T>> {
        T::table(self).values().filter(move |v| v.rs() == rs)
    }
}

/// Base-block helpers shared by records that carry a [`Meta`].
pub trait HasMeta {
    fn meta(&self) -> &Meta;
    fn meta_mut(&mut self) -> &mut Meta;
}

macro_rules! has_meta {
    ($($t:ty),*) => {$(
        impl HasMeta for $t {
            fn meta(&self) -> &Meta {
                &self.meta
            }
            fn meta_mut(&mut self) -> &mut Meta {
                &mut self.meta
            }
        }
    )*};
}

has_meta!(
    ResourceSet,
    Role,
    TrustProvider,
    ClientWorkload,
    ServerWorkload,
    CredentialProvider,
    CredentialIntegration,
    Policy,
    crate::domain::condition::Integration,
    crate::domain::condition::AccessCondition,
    crate::domain::condition::ContentSecurity,
    crate::domain::condition::DiscoveryIntegration,
    crate::domain::condition::ServerWorkloadDraft
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::policy::{Mapping, MappingType, Policy};

    #[test]
    fn stored_records_keep_no_spare_list_capacity() {
        let meta: Meta = serde_json::from_value(serde_json::json!({
            "id": Uuid::from_u128(1), "seq": 1, "rs": Uuid::nil(), "name": "p", "description": null,
            "active": true, "tags": [], "created_at": "2026-11-22T00:00:00.000Z", "modified_at": "2026-11-22T00:00:00.000Z",
            "created_by": "system", "modified_by": "system"
        }))
        .unwrap();
        let mut mappings = Vec::with_capacity(4);
        mappings.extend([Mapping::new(Uuid::from_u128(2), MappingType::None, Default::default())]);
        let mut trust_providers = Vec::with_capacity(4);
        trust_providers.extend([Uuid::from_u128(3)]);
        assert!(mappings.capacity() > 1 && trust_providers.capacity() > 1);
        let p = Policy {
            meta,
            client_workload: Uuid::from_u128(4),
            server_workload: Uuid::from_u128(5),
            mappings,
            trust_providers,
            access_conditions: vec![],
            content_security: vec![],
            notes: vec![],
        };
        let mut st = State::default();
        let stored = st.put(p);
        assert_eq!(stored.mappings.capacity(), 1);
        assert_eq!(stored.trust_providers.capacity(), 1);
    }
}
