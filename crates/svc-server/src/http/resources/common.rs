//! Base-block parsing and presentation (contract §1.3, §1.5), shared by every resource.

use serde_json::{Map, Value, json};
use svc_api::reader::check_len;
use svc_api::{Obj, Tag};
use uuid::Uuid;

use crate::domain::Meta;
use crate::error::{Error, Result};
use crate::state::{Record, State};

/// Read-only base fields accepted and ignored on input.
pub const BASE_RO: &[&str] = &["createdAt", "modifiedAt", "createdBy", "modifiedBy", "id"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Create,
    Replace,
    Patch,
}

/// The writable base fields of a request.
#[derive(Clone, Debug, Default)]
pub struct BaseInput {
    pub external_id: Option<Uuid>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub is_active: Option<bool>,
    pub tags: Option<Vec<Tag>>,
    pub resource_set: Option<Uuid>,
}

pub fn parse_tags(o: &mut Obj) -> Result<Option<Vec<Tag>>> {
    let tags = o.opt_obj_list("tags", |t| {
        let key = t.req_str_len("key", 1, 128)?;
        let value = t.req_str_len("value", 1, 256)?;
        Ok(Tag { key, value })
    })?;
    check_tags(tags.as_deref())?;
    Ok(tags)
}

/// Reads the base block. `with_rs`: the entity carries `resourceSet`.
pub fn parse_base(o: &mut Obj, mode: Mode, with_rs: bool) -> Result<BaseInput> {
    let external_id = o.opt_uuid("externalId")?;
    if mode == Mode::Replace && external_id.is_none() {
        return Err(Error::field("externalId", "is required"));
    }
    let name = o.opt_str_len("name", 1, 128)?;
    let description = o.opt_str("description")?;
    if let Some(d) = &description {
        check_len("description", d, 0, 1024)?;
    }
    let is_active = o.opt_bool("isActive")?;
    if mode != Mode::Patch {
        if name.is_none() {
            return Err(Error::field("name", "is required"));
        }
        if is_active.is_none() {
            return Err(Error::field("isActive", "is required"));
        }
    }
    let tags = parse_tags(o)?;
    let resource_set = if with_rs { o.opt_uuid("resourceSet")? } else { None };
    o.ignore(BASE_RO);
    Ok(BaseInput {
        external_id,
        name,
        description,
        is_active,
        tags,
        resource_set,
    })
}

/// The base block of a DTO as the CRUD layer applies it (`resource_set`: the DTO's own
/// `resourceSet`, where the entity has one). Tags: at most 50, keys unique (their lengths are the
/// schema's).
pub fn base_input(b: svc_api::mgmt::Base, resource_set: Option<Uuid>) -> Result<BaseInput> {
    check_tags(b.tags.as_deref())?;
    Ok(BaseInput {
        external_id: b.external_id,
        name: Some(b.name),
        description: b.description,
        is_active: Some(b.is_active),
        tags: b.tags,
        resource_set,
    })
}

/// The base block of an `EntityPatchDTO`.
pub fn patch_input(p: svc_api::mgmt::EntityPatch) -> Result<BaseInput> {
    check_tags(p.tags.as_deref())?;
    Ok(BaseInput {
        external_id: p.external_id,
        name: p.name,
        description: p.description,
        is_active: p.is_active,
        tags: p.tags,
        resource_set: None,
    })
}

pub fn check_tags(tags: Option<&[Tag]>) -> Result<()> {
    let Some(tags) = tags else { return Ok(()) };
    if tags.len() > 50 {
        return Err(Error::field("tags", "at most 50 tags"));
    }
    for (i, t) in tags.iter().enumerate() {
        if tags[..i].iter().any(|u| u.key == t.key) {
            return Err(Error::field(format!("tags[{i}].key"), "duplicate tag key"));
        }
    }
    Ok(())
}

/// The base block of an entity's DTO.
pub fn base_dto(m: &Meta) -> svc_api::mgmt::Base {
    svc_api::mgmt::Base {
        external_id: Some(m.id),
        name: m.name.clone(),
        description: m.description.clone(),
        is_active: m.active,
        tags: Some(m.tags.clone()),
        created_at: m.created_at,
        modified_at: Some(m.modified_at),
        created_by: m.created_by.as_ref().map(|l| l.to_string()),
        modified_by: m.modified_by.as_ref().map(|l| l.to_string()),
    }
}

/// Rule 7 of §1.4: a body `resourceSet` on update must be the entity's own.
pub fn check_rs_unchanged(body_rs: Option<Uuid>, current: Uuid) -> Result<()> {
    match body_rs {
        Some(b) if b != current => Err(Error::field("resourceSet", "cannot be changed")),
        _ => Ok(()),
    }
}

impl BaseInput {
    /// Applies to a meta for create/replace (absent optional fields return to defaults).
    pub fn apply_full(&self, m: &mut Meta) {
        m.name = self.name.clone().unwrap_or_default();
        m.description = self.description.clone();
        m.active = self.is_active.unwrap_or(false);
        m.tags = self.tags.clone().unwrap_or_default();
    }

    /// Applies only present fields (PATCH). A PATCH names its entity in the path: an
    /// `externalId` in the body may repeat that id (a GET body sent back) but not change it.
    pub fn apply_patch(&self, m: &mut Meta) -> Result<()> {
        check_patch_id(self.external_id, m.id)?;
        if let Some(n) = &self.name {
            m.name = n.clone();
        }
        if let Some(d) = &self.description {
            m.description = Some(d.clone());
        }
        if let Some(a) = self.is_active {
            m.active = a;
        }
        if let Some(t) = &self.tags {
            m.tags = t.clone();
        }
        Ok(())
    }
}

/// A PATCH names its entity in the path: a body's `externalId` may repeat that id (a GET body
/// sent back), not change it.
pub fn check_patch_id(given: Option<Uuid>, id: Uuid) -> Result<()> {
    match given {
        Some(g) if g != id => Err(Error::field("externalId", "cannot be changed")),
        _ => Ok(()),
    }
}

/// The base block as JSON (`resourceSet` when the entity has one and `with_rs`).
pub fn base_json(m: &Meta, with_rs: bool) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("externalId".into(), json!(m.id));
    o.insert("name".into(), json!(m.name));
    o.insert("description".into(), json!(m.description));
    o.insert("isActive".into(), json!(m.active));
    o.insert("tags".into(), json!(m.tags));
    o.insert("createdAt".into(), json!(m.created_at));
    o.insert("modifiedAt".into(), json!(m.modified_at));
    o.insert("createdBy".into(), json!(m.created_by));
    o.insert("modifiedBy".into(), json!(m.modified_by));
    if with_rs {
        o.insert("resourceSet".into(), json!(m.scope()));
    }
    o
}

/// The entities `ids` names, each rendered; an id that names none (a deleted entity) is left out.
pub fn rendered<T: Record>(st: &State, ids: &[Uuid], render: impl Fn(&T) -> Value) -> Value {
    Value::Array(ids.iter().filter_map(|id| st.get::<T>(id)).map(|v| render(v)).collect())
}

/// What the caller of this request may read by itself, for a response that embeds other
/// resources (issue 31: a view must not show what the reader's role does not grant): `(perm,
/// resource set) → bool`. The service's own renderings see everything; a caller whose token no
/// longer authenticates sees nothing embedded.
pub fn reader<'s>(app: &crate::app::App, st: &'s State) -> impl Fn(crate::domain::Perm, Uuid) -> bool + 's {
    let caller = crate::service::escalation::current_caller(app, st);
    move |perm, rs| match &caller {
        Ok(None) => true,
        Ok(Some(c)) => c.can(st, perm, false, rs),
        Err(_) => false,
    }
}

/// The resource set of a new or replaced scoped entity (§1.4 rule 3).
pub fn resolve_rs(body_rs: Option<Uuid>, request_rs: Uuid) -> Result<Uuid> {
    match body_rs {
        Some(b) if b != request_rs => Err(Error::field("resourceSet", "does not match X-Svc-ResourceSet")),
        _ => Ok(request_rs),
    }
}
