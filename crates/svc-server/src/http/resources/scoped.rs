//! Helpers for resource-set-scoped entities (contract §1.4 rule 4): an entity of another resource
//! set is invisible.

use std::sync::Arc;

use uuid::Uuid;

use crate::error::{Error, Result};
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
