//! Helpers for resource-set-scoped entities (contract §1.4 rule 4): an entity of another resource
//! set is invisible.

use std::sync::Arc;

use axum::response::Response;
use serde_json::Value;
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::extract::QueryPairs;
use crate::http::list::{ListParams, ListSpec, respond};
use crate::http::{no_content, ok};
use crate::service::refs::{RefField, release};
use crate::service::write::{Author, Write};
use crate::state::{Record, State};

/// The entity if it exists in `rs`.
pub fn find<T: Record>(st: &State, id: &Uuid, rs: Uuid) -> Option<Arc<T>> {
    st.get::<T>(id).filter(|v| v.rs() == Some(rs)).cloned()
}

/// The entity for an update: 404 when missing or in another resource set.
pub fn for_update<T: Record + Clone>(st: &State, id: &Uuid, rs: Uuid) -> Result<T> {
    find::<T>(st, id, rs).map(|v| (*v).clone()).ok_or(Error::NotFound)
}

/// Whether any entity of type `T` (any resource set) already has this id (§1.2).
pub fn taken<T: Record>(st: &State, id: &Uuid) -> bool {
    st.get::<T>(id).is_some()
}

/// The list of a scoped resource: every entity of `rs`, rendered, then paged and filtered (§1.6).
pub fn list_in_rs<T: Record>(
    st: &State,
    rs: Uuid,
    q: &QueryPairs,
    spec: &ListSpec,
    render: impl Fn(&T) -> Value,
) -> Result<Response> {
    let p = ListParams::parse(q)?;
    let items = st.in_rs::<T>(Some(rs)).map(|v| render(v)).collect();
    Ok(ok(respond(items, &p, spec)?))
}

/// One entity of `rs`, rendered; `204` when there is none (§1.5).
pub fn read_in_rs<T: Record>(st: &State, id: Uuid, rs: Uuid, render: impl Fn(&T) -> Value) -> Response {
    match find::<T>(st, &id, rs) {
        Some(v) => ok(render(&v)),
        None => no_content(),
    }
}

/// Deletes an entity of `rs` inside the unit (§1.10): references released (or the deletion
/// refused), the entity removed, one `Deleted` audit entry. `Ok(None)` when `rs` has no such
/// entity; the caller decides whether that is a 404 or a no-op.
pub fn delete_released<T: Record>(
    w: &mut Write<'_>,
    author: &Author,
    rs: Uuid,
    category: &'static str,
    id: Uuid,
    field: RefField,
) -> Result<Option<Arc<T>>> {
    if find::<T>(&w.st, &id, rs).is_none() {
        return Ok(None);
    }
    release(w, author, id, field)?;
    let gone = w.remove::<T>(&id);
    w.audit(author, rs, category, Activity::Deleted, id);
    Ok(gone)
}
