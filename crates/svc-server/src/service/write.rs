//! The unit of work of every management write: take the node's write queue, the cluster's write
//! lock and the node's state lock, catch up with changes from other nodes, work on a private copy
//! of the state, then persist the touched entities and their audit entries in one database
//! transaction and swap the new state in. A request that fails validation drops the unit: nothing
//! is stored, nothing is audited, the live state is untouched.

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::MutexGuard;
use uuid::Uuid;

use crate::app::App;
use crate::domain::{Actor, Kind, Meta, Timestamp};
use crate::error::{Error, Result};
use crate::events::audit::{Activity, AuditEntry, ClientInfo};
use crate::for_kind;
use crate::service::load::to_row;
use crate::state::{Record, State};
use crate::store::{AuditRow, CursorOp, StoreTx};

pub struct Write<'a> {
    app: &'a App,
    // Dropped in this order: the state lock, then the node's queue.
    _lock: MutexGuard<'a, ()>,
    _queue: MutexGuard<'a, ()>,
    pub st: State,
    tx: StoreTx,
    touched: BTreeSet<(Kind, Uuid)>,
    audits: Vec<AuditRow>,
    /// Log streams' delivery rows created or removed with their stream (§3.14).
    cursors: Vec<CursorOp>,
    pub now: Timestamp,
}

/// Who writes, from where: attached to every audit entry of the unit.
#[derive(Clone, Debug)]
pub struct Author {
    pub actor: Actor,
    pub client: ClientInfo,
}

impl Author {
    pub fn system() -> Author {
        Author {
            actor: Actor::System,
            client: ClientInfo::default(),
        }
    }
}

/// `externalId` of a POST: client-chosen ones must be unused across resource sets (§1.2).
pub fn new_external_id(requested: Option<Uuid>, taken: impl Fn(&Uuid) -> bool) -> Result<Uuid> {
    match requested {
        Some(id) if taken(&id) => Err(Error::field("externalId", "already exists")),
        Some(id) => Ok(id),
        None => Ok(Uuid::new_v4()),
    }
}

/// The resource set of a stored record (`None` when absent or global).
fn rs_of<T: Record>(st: &State, id: &Uuid) -> Option<Uuid> {
    st.get::<T>(id).and_then(|v| v.rs())
}

/// A write that changes where a record's secrets go ([`crate::domain::SecretHome`]) keeps none
/// of them that it was not given again (issue 31, §1.9: a stored secret goes only to the URL it
/// was stored with; a PUT that moves `tokenUrl` and leaves `clientSecret` out would otherwise
/// send the stored one to the new host). A secret a caller gives is refused (`400 <secret>: is
/// required when <field> changes`); one the service obtained itself (stored OAuth tokens) is
/// forgotten (the consent must be given again).
fn keep_secrets_home<T: Record>(before: &State, st: &mut State, id: &Uuid) -> Result<()> {
    let (Some(old), Some(new)) = (before.get::<T>(id), st.get::<T>(id)) else {
        return Ok(());
    };
    let (was, is) = (old.secret_home(), new.secret_home());
    if was.fields.is_empty() || was.fields == is.fields {
        return Ok(());
    }
    let moved = was
        .fields
        .iter()
        .find(|(name, value)| !is.fields.iter().any(|(n, v)| n == name && v == value))
        .map_or("the destination", |(name, _)| *name);
    let (Some(serde_json::Value::Object(old_s)), Some(serde_json::Value::Object(mut new_s))) =
        (old.secrets_json(), new.secrets_json())
    else {
        return Ok(());
    };
    // Kept: the same secret carried over (its stamp), not one given again with the same value.
    let kept: Vec<String> = is
        .held
        .iter()
        .filter(|held| was.held.contains(held))
        .map(|(k, _)| k.clone())
        .filter(|k| new_s.get(k).is_some_and(|v| !v.is_null() && old_s.get(k) == Some(v)))
        .collect();
    if kept.is_empty() {
        return Ok(());
    }
    if let Some(given) = kept.iter().find(|k| is.given.contains(&k.as_str())) {
        return Err(Error::field(
            given.as_str(),
            format!("is required when {moved} changes"),
        ));
    }
    for k in &kept {
        new_s.remove(k);
    }
    let mut rec = (**new).clone();
    rec.restore_secrets(serde_json::Value::Object(new_s))
        .map_err(Error::internal)?;
    st.put(rec);
    Ok(())
}

fn persist<T: Record>(st: &State, id: &Uuid, app: &App, now: i64) -> Option<crate::store::EntityRow> {
    st.get::<T>(id).map(|v| to_row(v.as_ref(), &app.cipher, now))
}

impl<'a> Write<'a> {
    /// The unit of a management request. Its caller, admitted against the state before the
    /// unit caught up with other writes, is admitted again against the state the unit works on
    /// (a user deactivated or a role withdrawn in between, on any node, stops the write).
    pub async fn begin(app: &'a App) -> Result<Write<'a>> {
        let w = Self::begin_system(app).await?;
        crate::service::admission::admit_again(app, &w.st)?;
        Ok(w)
    }

    /// The unit of the service's own writes (sign-in bookkeeping, bootstrap, a renewed upstream
    /// credential): not on behalf of a caller's permission, even inside a management request.
    pub async fn begin_system(app: &'a App) -> Result<Write<'a>> {
        // Issue 32: a node that does not hold the database's encryption key must not seal.
        if app.cipher.stale() {
            return Err(Error::Unavailable(
                "this node does not hold the database's encryption key (an at-rest key rotation): restart it with the new key".into(),
            ));
        }
        let queue = app.write_queue.lock().await;
        // The cluster-wide write lock (in the transaction), then the node's state lock, then the
        // changes other nodes committed before it: the unit is validated against everything
        // written anywhere (`Store::lock_writes`). The state lock is not held while the cluster
        // lock is awaited, so the node's refresh never waits for another node's write.
        let tx = app.store.begin().await?;
        let lock = app.write_lock.lock().await;
        crate::service::load::sync_changes(app).await?;
        let st = (*app.state_full()).clone();
        Ok(Write {
            app,
            _lock: lock,
            _queue: queue,
            st,
            tx,
            touched: BTreeSet::new(),
            audits: Vec::new(),
            cursors: Vec::new(),
            now: crate::clock::now(),
        })
    }

    pub fn app(&self) -> &App {
        self.app
    }

    /// The next internal `id` number of a kind.
    pub async fn next_seq(&mut self, kind: Kind) -> Result<i32> {
        let n = self.tx.next_seq(kind.as_str()).await?;
        i32::try_from(n).map_err(|_| Error::internal("sequence overflow"))
    }

    /// A new base block: fresh or client-chosen id, sequence number, timestamps, author.
    pub async fn new_meta(&mut self, kind: Kind, id: Uuid, rs: Option<Uuid>, author: &Author) -> Result<Meta> {
        let seq = self.next_seq(kind).await?;
        Ok(Meta {
            id,
            seq,
            rs,
            name: String::new(),
            description: None,
            active: false,
            tags: vec![],
            created_at: self.now,
            modified_at: self.now,
            created_by: author.actor.label(),
            modified_by: author.actor.label(),
        })
    }

    /// Stamps a changed base block.
    pub fn touch_meta(&self, meta: &mut Meta, author: &Author) {
        meta.modified_at = self.now;
        meta.modified_by = author.actor.label();
    }

    pub fn put<T: Record>(&mut self, v: T) -> Arc<T> {
        self.touched.insert((T::KIND, v.id()));
        self.st.put(v)
    }

    pub fn remove<T: Record>(&mut self, id: &Uuid) -> Option<Arc<T>> {
        let old = self.st.remove::<T>(id);
        if old.is_some() {
            self.touched.insert((T::KIND, *id));
        }
        old
    }

    /// A log stream's delivery row changes with the stream: stored in the unit's transaction,
    /// after its entities and before its audit entries.
    pub fn stream_cursor(&mut self, op: CursorOp) {
        self.cursors.push(op);
    }

    /// Adds one audit entry (success) to the unit.
    pub fn audit(
        &mut self,
        author: &Author,
        rs: Uuid,
        category: &'static str,
        activity: Activity,
        target: impl ToString,
    ) {
        let e = AuditEntry {
            rs,
            category,
            activity,
            target: Some(target.to_string()),
            actor: &author.actor,
            client: &author.client,
            failure: None,
        };
        self.audits.push(e.to_row(self.now));
    }

    /// Adds an audit entry with a failed outcome.
    pub fn audit_failure(
        &mut self,
        author: &Author,
        rs: Uuid,
        category: &'static str,
        activity: Activity,
        target: impl ToString,
        reason: &str,
    ) {
        let e = AuditEntry {
            rs,
            category,
            activity,
            target: Some(target.to_string()),
            actor: &author.actor,
            client: &author.client,
            failure: Some(reason.to_string()),
        };
        self.audits.push(e.to_row(self.now));
    }

    /// Persists everything, then makes the new state live. Returns it.
    pub async fn commit(mut self) -> Result<Arc<State>> {
        let now = self.now.millis();
        // A secret stays with the destination it was stored for, whichever resource, view or
        // job wrote the record (issue 31).
        let before = self.app.state_full();
        for (kind, id) in &self.touched {
            for_kind!(*kind, keep_secrets_home(&before, &mut self.st, id))?;
        }
        // An entity is never stored in a resource set that no longer exists (deleted, on any
        // node, after the request was admitted against it).
        for (kind, id) in &self.touched {
            if let Some(rs) = for_kind!(*kind, rs_of(&self.st, id))
                && !self.st.resource_set_exists(&rs)
            {
                return Err(Error::bad("X-Svc-ResourceSet: unknown resource set"));
            }
        }
        for (kind, id) in std::mem::take(&mut self.touched) {
            match for_kind!(kind, persist(&self.st, &id, self.app, now)) {
                Some(row) => self.tx.upsert_entity(&row).await?,
                None => self.tx.delete_entity(kind.as_str(), &id.to_string(), now).await?,
            }
        }
        for op in &self.cursors {
            self.tx.cursor_op(op).await?;
        }
        for a in &self.audits {
            self.tx.insert_audit(a).await?;
        }
        // The cursor stays where the catch-up left it: the next refresh reads this unit's own
        // changes back (a few rows), which is never wrong, whereas moving it past them would skip
        // a change written meanwhile by a node that does not take the cluster lock (an older
        // version during a rolling upgrade).
        self.tx.commit().await?;
        Ok(self.app.swap_state(self.st))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::credential::{CredentialProvider, SecretFields};
    use crate::domain::{Secret, Timestamp};

    fn provider(token_url: &str, secrets: &[(&str, Secret<String>)]) -> CredentialProvider {
        let mut config = serde_json::Map::new();
        config.insert("tokenUrl".into(), token_url.into());
        let mut s = SecretFields::default();
        for (k, v) in secrets {
            s.0.insert(k.to_string(), v.clone());
        }
        CredentialProvider {
            meta: Meta {
                id: Uuid::nil(),
                seq: 1,
                rs: None,
                name: "ac".into(),
                description: None,
                active: true,
                tags: vec![],
                created_at: Timestamp(0),
                modified_at: Timestamp(0),
                created_by: None,
                modified_by: None,
            },
            cp_type: "oauth-authorization-code".into(),
            lifetime_time_span_seconds: 0,
            lifetime_expiration: None,
            config,
            secrets: s,
        }
    }

    /// Issue 31: a moved destination keeps no secret it was not given again. A caller's secret
    /// carried over is refused; one given again (even with the same value) is taken; one the
    /// service obtained (a stored refresh token) is forgotten.
    #[test]
    fn a_moved_destination_keeps_no_secret_it_was_not_given_again() {
        let (secret, refresh) = (Secret::stored("s".to_string()), Secret::stored("rt".to_string()));
        let mut before = State::default();
        before.put(provider(
            "https://idp.example/token",
            &[("clientSecret", secret.clone()), ("refreshToken", refresh.clone())],
        ));
        let id = Uuid::nil();
        // Same URL: everything stays.
        let mut st = before.clone();
        keep_secrets_home::<CredentialProvider>(&before, &mut st, &id).unwrap();
        assert_eq!(st.get::<CredentialProvider>(&id).unwrap().secrets.0.len(), 2);
        // Moved, the caller's secret carried over: refused.
        let mut st = before.clone();
        st.put(provider(
            "https://evil.example/token",
            &[("clientSecret", secret.clone()), ("refreshToken", refresh.clone())],
        ));
        let e = keep_secrets_home::<CredentialProvider>(&before, &mut st, &id).unwrap_err();
        assert!(matches!(e, Error::BadRequest(m) if m == "clientSecret: is required when tokenUrl changes"));
        // Moved with the secret given again (the same value): taken; the refresh token is gone.
        let mut st = before.clone();
        st.put(provider(
            "https://evil.example/token",
            &[
                ("clientSecret", Secret::new("s".to_string())),
                ("refreshToken", refresh),
            ],
        ));
        keep_secrets_home::<CredentialProvider>(&before, &mut st, &id).unwrap();
        let kept: Vec<String> = st
            .get::<CredentialProvider>(&id)
            .unwrap()
            .secrets
            .0
            .keys()
            .cloned()
            .collect();
        assert_eq!(kept, vec!["clientSecret".to_string()]);
    }
}
