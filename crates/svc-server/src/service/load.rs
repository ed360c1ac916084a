//! Turning stored rows into the in-memory [`State`] and back, and refreshing the state from the
//! `changes` log written by other nodes (and by CLI commands on this host).

use std::sync::atomic::Ordering;

use uuid::Uuid;

use crate::app::App;
use crate::crypto::aead::Cipher;
use crate::domain::Kind;
use crate::domain::records::{ResourceSet, Role, Settings, User};
use crate::state::{Record, State};
use crate::store::{EntityRow, Store, StoreError};

/// Calls `$f::<T>(args…)` with the record type of a [`Kind`].
#[macro_export]
macro_rules! for_kind {
    ($kind:expr, $f:ident ( $($arg:expr),* )) => {{
        use $crate::domain::Kind;
        match $kind {
            Kind::Settings => $f::<$crate::domain::records::Settings>($($arg),*),
            Kind::ResourceSet => $f::<$crate::domain::records::ResourceSet>($($arg),*),
            Kind::Role => $f::<$crate::domain::records::Role>($($arg),*),
            Kind::User => $f::<$crate::domain::records::User>($($arg),*),
            Kind::TrustProvider => $f::<$crate::domain::trust::TrustProvider>($($arg),*),
            Kind::ClientWorkload => $f::<$crate::domain::workload::ClientWorkload>($($arg),*),
            Kind::ServerWorkload => $f::<$crate::domain::workload::ServerWorkload>($($arg),*),
            Kind::CredentialProvider => $f::<$crate::domain::credential::CredentialProvider>($($arg),*),
            Kind::CredentialIntegration => $f::<$crate::domain::credential::CredentialIntegration>($($arg),*),
            Kind::AccessPolicy => $f::<$crate::domain::policy::Policy>($($arg),*),
            Kind::Routing => $f::<$crate::domain::sso::Routing>($($arg),*),
            Kind::AgentController => $f::<$crate::domain::sso::AgentController>($($arg),*),
            Kind::SsoIdp => $f::<$crate::domain::sso::SsoIdp>($($arg),*),
            Kind::Integration => $f::<$crate::domain::condition::Integration>($($arg),*),
            Kind::AccessCondition => $f::<$crate::domain::condition::AccessCondition>($($arg),*),
            Kind::ContentSecurity => $f::<$crate::domain::condition::ContentSecurity>($($arg),*),
            Kind::DiscoveryIntegration => $f::<$crate::domain::condition::DiscoveryIntegration>($($arg),*),
            Kind::ServerWorkloadDraft => $f::<$crate::domain::condition::ServerWorkloadDraft>($($arg),*),
            Kind::LogStream => $f::<$crate::domain::stream::LogStream>($($arg),*),
        }
    }};
}

fn label(kind: Kind, id: &str) -> String {
    crate::store::sealed::entity_label(kind.as_str(), id)
}

/// A record as a row: body JSON plus the sealed secret bundle.
pub fn to_row<T: Record>(v: &T, cipher: &Cipher, now: i64) -> EntityRow {
    let id = v.id().to_string();
    let secrets = v
        .secrets_json()
        .filter(|j| !j.is_null())
        .map(|j| cipher.seal(j.to_string().as_bytes(), &label(T::KIND, &id)));
    EntityRow {
        kind: T::KIND.as_str().to_string(),
        id,
        seq: v.seq() as i64,
        rs: v.rs().map(|r| r.to_string()),
        body: serde_json::to_string(v).expect("records serialise"),
        secrets,
        updated_at: now,
    }
}

pub fn from_row<T: Record>(row: &EntityRow, cipher: &Cipher) -> Result<T, String> {
    let mut v: T = serde_json::from_str(&row.body).map_err(|e| format!("{} {}: {e}", row.kind, row.id))?;
    if let Some(sealed) = &row.secrets {
        let plain = cipher
            .open(sealed, &label(T::KIND, &row.id))
            .map_err(|e| format!("{} {}: {e}", row.kind, row.id))?;
        let json: serde_json::Value =
            serde_json::from_slice(&plain).map_err(|e| format!("{} {}: {e}", row.kind, row.id))?;
        v.restore_secrets(json)?;
    }
    Ok(v)
}

fn load_into<T: Record>(st: &mut State, row: &EntityRow, cipher: &Cipher) -> Result<(), String> {
    let v: T = from_row(row, cipher)?;
    st.put(v);
    Ok(())
}

fn remove_from<T: Record>(st: &mut State, id: &Uuid) {
    st.remove::<T>(id);
}

/// Loads every entity. A row that cannot be read stops the start (never silently dropped).
pub async fn load_state(store: &Store, cipher: &Cipher) -> Result<State, StoreError> {
    let started = std::time::Instant::now();
    let mut st = State::default();
    // One pass in the table's order: no index reads another kind's table (`Indexes`), so the
    // order of kinds does not matter; each row is parsed as it arrives (never all rows in memory
    // at once).
    store
        .each_entity(|row| match Kind::parse(&row.kind) {
            Some(kind) => for_kind!(kind, load_into(&mut st, &row, cipher)),
            None => Err(format!("unknown entity kind {}", row.kind)),
        })
        .await?;
    crate::metrics::state_rebuilt("start", started.elapsed());
    Ok(st)
}

/// Before a management request on PostgreSQL: applies the changes other nodes committed since
/// the last refresh, so a change made through any node holds for the next management request on
/// every node (a role edit, a deactivated user, an entity just created). One indexed read when
/// nothing changed; the Edge API never waits for it (its state follows within the second of the
/// background refresh). A failed read is logged and the request served from the state as it is.
pub async fn catch_up(app: &App) {
    // Issue 32: without a database the request is served from memory at once.
    if app.store.dialect() != crate::store::Dialect::Postgres || app.store.health().unreachable() {
        return;
    }
    // Bounded: with the database unreachable the request is served from memory after 2 s
    // rather than after the pool's acquire timeout. (Only the read is: a sync, once begun, is
    // not cut short between moving the cursor and loading keys.)
    let last = match tokio::time::timeout(std::time::Duration::from_secs(2), app.store.last_change()).await {
        Ok(Ok(last)) => last,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "reading the change log failed");
            return;
        }
        Err(_) => {
            tracing::warn!("reading the change log timed out");
            return;
        }
    };
    if last <= app.last_change.load(Ordering::Acquire) {
        return;
    }
    let _g = app.write_lock.lock().await;
    if let Err(e) = sync_changes(app).await {
        tracing::warn!(error = %e, "refresh from the database failed");
    }
}

/// Applies changes committed elsewhere since the last refresh, every one (the log is read in
/// pages). Call with the write lock held.
pub async fn sync_changes(app: &App) -> Result<(), StoreError> {
    while sync_page(app).await? == crate::store::CHANGES_PAGE {}
    Ok(())
}

/// One page of [`sync_changes`]; returns the number of changes read.
async fn sync_page(app: &App) -> Result<usize, StoreError> {
    let since = app.last_change.load(Ordering::Acquire);
    let changes = app.store.changes_since(since).await?;
    let Some(last) = changes.last().map(|c| c.0) else {
        return Ok(0);
    };
    let started = std::time::Instant::now();
    // An at-rest key rotation's step first: what follows may be sealed under the new key.
    if changes.iter().any(|(_, kind, _)| kind == "encryption") {
        crate::service::rekey::adopt(app).await.map_err(StoreError::other)?;
    }
    let mut st = (*app.state_full()).clone();
    let mut reload_keys = false;
    let mut seen = std::collections::HashSet::new();
    for (_, kind, id) in changes.iter().rev() {
        if !seen.insert((kind.clone(), id.clone())) {
            continue;
        }
        if kind == "signing_keys" {
            reload_keys = true;
            continue;
        }
        let Some(k) = Kind::parse(kind) else { continue };
        let Ok(uuid) = Uuid::parse_str(id) else {
            continue;
        };
        match app.store.load_entity(kind, id).await? {
            Some(row) => for_kind!(k, load_into(&mut st, &row, &app.cipher)).map_err(StoreError::other)?,
            None => for_kind!(k, remove_from(&mut st, &uuid)),
        }
    }
    app.swap_state(st);
    crate::metrics::state_rebuilt("refresh", started.elapsed());
    app.last_change.store(last, Ordering::Release);
    if reload_keys {
        app.reload_keys().await.map_err(StoreError::other)?;
    }
    Ok(changes.len())
}

// Silence "unused" for types only named through the macro in some builds.
#[allow(dead_code)]
fn _types(_: (Settings, ResourceSet, Role, User)) {}
