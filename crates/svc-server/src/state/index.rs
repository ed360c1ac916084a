//! Secondary indexes over the [`super::State`], kept in step by `Record::reindex` on every put and
//! remove (O(log n) each, persistent maps, so a write never rebuilds them). They serve the edge
//! lookups of contract §4.8 without scanning, and the reference counts and delete checks of §1.10.

use std::sync::Arc;

use imbl::{HashMap, OrdMap, OrdSet};
use uuid::Uuid;

use crate::credential::CompiledCredential;
use crate::domain::credential::{CredentialIntegration, CredentialProvider};
use crate::domain::policy::Policy;
use crate::domain::records::User;
use crate::domain::trust::TrustProvider;
use crate::domain::workload::{ClientWorkload, ServerWorkload};
use crate::domain::{Label, identity};
use crate::trust::CompiledTrust;

/// (resource set, identity type, claim key, normalised value).
pub type IdentKey = (Uuid, &'static str, Option<String>, String);
/// (resource set, lower-cased host or wildcard suffix, requested port, transport).
pub type EndpointKey = (Uuid, String, i32, Label);

/// The big maps (one entry per workload or policy) are B-trees (`OrdMap`), whose dense leaves cost
/// far less memory per entry than a hash trie's nodes; lookups stay O(log n).
#[derive(Clone, Default)]
pub struct Indexes {
    /// Lower-cased e-mail → user id.
    pub users_by_email: HashMap<String, Uuid>,
    /// Trust providers compiled for the edge.
    pub trust: HashMap<Uuid, Arc<CompiledTrust>>,
    /// Credential providers compiled for the edge.
    pub credentials: HashMap<Uuid, Arc<CompiledCredential>>,
    /// Client workloads by the values of their index identity group.
    pub clients_by_identity: OrdMap<IdentKey, IdSet>,
    /// Per resource set: the (type, key) groups used as index keys, with their workload counts.
    pub identity_groups: HashMap<Uuid, HashMap<(&'static str, Option<String>), u32>>,
    /// Per resource set: client workloads with no indexable identity (evaluated one by one).
    pub clients_scan: OrdMap<Uuid, IdSet>,
    /// Server workloads by exact host.
    pub servers_exact: OrdMap<EndpointKey, IdSet>,
    /// Server workloads by wildcard suffix (`*.example.com` → `example.com`).
    pub servers_wildcard: OrdMap<EndpointKey, IdSet>,
    /// Policies by (client workload, server workload).
    pub policies_by_pair: OrdMap<(Uuid, Uuid), IdSet>,
    /// (what as, entity) → policies that reference it. Keyed by the field too: an `externalId` is
    /// unique per resource type only (§1.2), so a trust provider and a workload may share one.
    pub policy_refs: OrdMap<(RefField, Uuid), IdSet>,
}

/// What a policy references an entity as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RefField {
    ClientWorkload,
    ServerWorkload,
    TrustProvider,
    CredentialProvider,
    AccessCondition,
    ContentSecurity,
}

/// The ids under one index key. Nearly every key of the big indexes (an identity value, a host, a
/// workload pair, a workload's policies) holds exactly one id, so that case is stored inline: a
/// one-element `OrdSet` allocates a whole B-tree leaf (about 300 bytes), which at 100,000
/// policies was hundreds of megabytes (docs/PERFORMANCE.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdSet {
    One(Uuid),
    Many(OrdSet<Uuid>),
}

impl IdSet {
    pub fn len(&self) -> usize {
        match self {
            IdSet::One(_) => 1,
            IdSet::Many(s) => s.len(),
        }
    }

    /// Always false for a set stored in an index (emptied sets are removed); kept for clippy.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn contains(&self, id: &Uuid) -> bool {
        match self {
            IdSet::One(x) => x == id,
            IdSet::Many(s) => s.contains(id),
        }
    }

    /// In ascending order, like the `OrdSet` it replaces.
    pub fn iter(&self) -> IdIter<'_> {
        match self {
            IdSet::One(x) => IdIter::One(Some(x)),
            IdSet::Many(s) => IdIter::Many(s.iter()),
        }
    }

    fn insert(&mut self, id: Uuid) {
        match self {
            IdSet::One(x) if *x == id => {}
            IdSet::One(x) => {
                let first = *x;
                *self = IdSet::Many(OrdSet::from(vec![first, id]));
            }
            IdSet::Many(s) => {
                s.insert(id);
            }
        }
    }

    /// Removes `id`; `true` when the set is now empty (the caller drops the key).
    fn remove(&mut self, id: &Uuid) -> bool {
        match self {
            IdSet::One(x) => x == id,
            IdSet::Many(s) => {
                s.remove(id);
                match s.len() {
                    0 => true,
                    1 => {
                        let last = *s.get_min().expect("one element");
                        *self = IdSet::One(last);
                        false
                    }
                    _ => false,
                }
            }
        }
    }
}

pub enum IdIter<'a> {
    One(Option<&'a Uuid>),
    Many(imbl::ordset::Iter<'a, Uuid, imbl::shared_ptr::DefaultSharedPtr>),
}

impl<'a> Iterator for IdIter<'a> {
    type Item = &'a Uuid;
    fn next(&mut self) -> Option<&'a Uuid> {
        match self {
            IdIter::One(x) => x.take(),
            IdIter::Many(i) => i.next(),
        }
    }
}

impl<'a> IntoIterator for &'a IdSet {
    type Item = &'a Uuid;
    type IntoIter = IdIter<'a>;
    fn into_iter(self) -> IdIter<'a> {
        self.iter()
    }
}

fn set_add<K: Ord + Clone>(m: &mut OrdMap<K, IdSet>, k: K, id: Uuid) {
    match m.get_mut(&k) {
        Some(s) => s.insert(id),
        None => {
            m.insert(k, IdSet::One(id));
        }
    }
}

fn set_remove<K: Ord + Clone>(m: &mut OrdMap<K, IdSet>, k: &K, id: &Uuid) {
    let empty = match m.get_mut(k) {
        Some(s) => s.remove(id),
        None => false,
    };
    if empty {
        m.remove(k);
    }
}

/// How a client workload is indexed: by one identity group, or on the scan list.
enum ClientIndex {
    Group(&'static str, Option<String>, Vec<String>),
    Scan,
}

/// Normalises an identity value for indexing and comparison.
pub fn normalise(ty: &identity::IdentityType, v: &str) -> String {
    if ty.case_insensitive {
        v.to_lowercase()
    } else {
        v.to_string()
    }
}

fn client_index(w: &ClientWorkload) -> ClientIndex {
    let best = w
        .identities
        .iter()
        .filter_map(|i| {
            identity::lookup(&i.kind)
                .filter(|t| t.indexable)
                .map(|t| (identity::priority(t.name), t, i.key.clone()))
        })
        .min_by_key(|(p, _, _)| *p);
    match best {
        Some((_, ty, key)) => {
            let values = w
                .identities
                .iter()
                .filter(|i| i.kind == ty.name && i.key == key)
                .map(|i| normalise(ty, &i.value))
                .collect();
            ClientIndex::Group(ty.name, key, values)
        }
        None => ClientIndex::Scan,
    }
}

/// Server endpoint index keys: exact host, or wildcard suffix.
pub fn endpoint_key(w: &ServerWorkload) -> (bool, EndpointKey) {
    let host = w.endpoint.host.to_lowercase();
    let rs = w.meta.scope();
    let port = w.endpoint.requested_port;
    let tp = w.endpoint.transport_protocol.clone();
    match host.strip_prefix("*.") {
        Some(suffix) => (true, (rs, suffix.to_string(), port, tp)),
        None => (false, (rs, host, port, tp)),
    }
}

fn policy_referenced(p: &Policy) -> impl Iterator<Item = (RefField, Uuid)> + '_ {
    [
        (RefField::ClientWorkload, p.client_workload),
        (RefField::ServerWorkload, p.server_workload),
    ]
    .into_iter()
    .chain(
        p.mappings
            .iter()
            .map(|m| (RefField::CredentialProvider, m.credential_provider)),
    )
    .chain(p.trust_providers.iter().map(|t| (RefField::TrustProvider, *t)))
    .chain(p.access_conditions.iter().map(|c| (RefField::AccessCondition, *c)))
    .chain(p.content_security.iter().map(|c| (RefField::ContentSecurity, *c)))
}

impl Indexes {
    pub fn user_changed(&mut self, old: Option<&User>, new: Option<&User>) {
        if let Some(o) = old {
            self.users_by_email.remove(&o.email.to_lowercase());
        }
        if let Some(n) = new {
            self.users_by_email.insert(n.email.to_lowercase(), n.id);
        }
    }

    pub fn trust_provider_changed(&mut self, old: Option<&TrustProvider>, new: Option<&TrustProvider>) {
        match new {
            Some(n) => {
                self.trust
                    .insert(n.meta.id, Arc::new(crate::trust::compile::compile(n)));
            }
            None => {
                if let Some(o) = old {
                    self.trust.remove(&o.meta.id);
                }
            }
        }
    }

    pub fn credential_provider_changed(&mut self, old: Option<&CredentialProvider>, new: Option<&CredentialProvider>) {
        match new {
            Some(n) => {
                self.credentials
                    .insert(n.meta.id, Arc::new(crate::credential::compile(n)));
            }
            None => {
                if let Some(o) = old {
                    self.credentials.remove(&o.meta.id);
                }
            }
        }
    }

    pub fn credential_integration_changed(
        &mut self,
        _old: Option<&CredentialIntegration>,
        _new: Option<&CredentialIntegration>,
    ) {
    }

    pub fn client_workload_changed(&mut self, old: Option<&ClientWorkload>, new: Option<&ClientWorkload>) {
        if let Some(o) = old {
            let rs = o.meta.scope();
            match client_index(o) {
                ClientIndex::Group(ty, key, values) => {
                    for v in values {
                        set_remove(&mut self.clients_by_identity, &(rs, ty, key.clone(), v), &o.meta.id);
                    }
                    let groups = self.identity_groups.entry(rs).or_default();
                    let gk = (ty, key);
                    let n = groups.get(&gk).copied().unwrap_or(1).saturating_sub(1);
                    if n == 0 {
                        groups.remove(&gk);
                    } else {
                        groups.insert(gk, n);
                    }
                }
                ClientIndex::Scan => set_remove(&mut self.clients_scan, &rs, &o.meta.id),
            }
        }
        if let Some(n) = new {
            let rs = n.meta.scope();
            match client_index(n) {
                ClientIndex::Group(ty, key, values) => {
                    for v in values {
                        set_add(&mut self.clients_by_identity, (rs, ty, key.clone(), v), n.meta.id);
                    }
                    *self
                        .identity_groups
                        .entry(rs)
                        .or_default()
                        .entry((ty, key))
                        .or_insert(0) += 1;
                }
                ClientIndex::Scan => set_add(&mut self.clients_scan, rs, n.meta.id),
            }
        }
    }

    pub fn server_workload_changed(&mut self, old: Option<&ServerWorkload>, new: Option<&ServerWorkload>) {
        if let Some(o) = old {
            let (wild, k) = endpoint_key(o);
            let m = if wild {
                &mut self.servers_wildcard
            } else {
                &mut self.servers_exact
            };
            set_remove(m, &k, &o.meta.id);
        }
        if let Some(n) = new {
            let (wild, k) = endpoint_key(n);
            let m = if wild {
                &mut self.servers_wildcard
            } else {
                &mut self.servers_exact
            };
            set_add(m, k, n.meta.id);
        }
    }

    pub fn policy_changed(&mut self, old: Option<&Policy>, new: Option<&Policy>) {
        if let Some(o) = old {
            set_remove(
                &mut self.policies_by_pair,
                &(o.client_workload, o.server_workload),
                &o.meta.id,
            );
            for r in policy_referenced(o) {
                set_remove(&mut self.policy_refs, &r, &o.meta.id);
            }
        }
        if let Some(n) = new {
            set_add(
                &mut self.policies_by_pair,
                (n.client_workload, n.server_workload),
                n.meta.id,
            );
            for r in policy_referenced(n) {
                set_add(&mut self.policy_refs, r, n.meta.id);
            }
        }
    }

    /// Policies (any state) referencing an entity as `field`.
    pub fn policies_referencing(&self, field: RefField, id: Uuid) -> impl Iterator<Item = &Uuid> {
        self.policy_refs.get(&(field, id)).into_iter().flat_map(|s| s.iter())
    }

    /// How many policies (any state) reference an entity as `field` (its `accessPolicyCount`).
    pub fn policy_count(&self, field: RefField, id: Uuid) -> usize {
        self.policy_refs.get(&(field, id)).map(|s| s.len()).unwrap_or(0)
    }
}
