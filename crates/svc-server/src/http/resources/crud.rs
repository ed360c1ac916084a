//! The shared CRUD layer: a management resource says how it reads, checks and renders one
//! entity through its DTO ([`Resource`]); [`register`] supplies list / create / replace / read /
//! patch / delete, with their document entries, on top of the RBAC guard, the resource-set
//! scoping (§1.4) and the write unit (invariant 1), so "read the body → begin the unit → update →
//! audit → commit → render" is written once, here.

use axum::extract::{MatchedPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use uuid::Uuid;

use super::common::{BaseInput, Mode, check_rs_unchanged, resolve_rs};
use crate::app::App;
use crate::domain::{DEFAULT_RESOURCE_SET, Meta, Perm, Timestamp};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::api::{Api, Op, Query};
use crate::http::extract::{Ids, JsonBody, QueryPairs};
use crate::http::guard::{Ctx, Scope};
use crate::http::list::{ListParams, ListSpec, respond};
use crate::http::{created, no_content, ok, with_warnings};
use crate::service::write::{Author, Write, new_external_id};
use crate::state::{MetaRecord, Record, State as Snapshot};

/// Where an entity's resource set comes from (§1.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RsFrom {
    /// The request's `X-Svc-ResourceSet`: the entity lives there.
    Header,
    /// Nowhere: a global entity, audited in the default resource set.
    Global,
    /// The body field named here ([`Resource::own_rs`]: `resourceSet`, §1.4 rule 5, or routings'
    /// `resourceSetId`), the default set when absent. The permission is checked in that set
    /// (`403` otherwise); lists show the sets where the caller may read.
    Body(&'static str),
}

impl RsFrom {
    const fn body(self) -> bool {
        matches!(self, RsFrom::Body(_))
    }
}

/// The answer to a successful POST.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnCreate {
    /// `201` with the entity and its `Location`.
    Created,
    /// `200` with the entity and its `Location` (trust providers, §3.1).
    Ok,
    /// `204` with the `Location` only (client and server workloads, §1.5).
    Location,
}

/// The answer to a GET or DELETE of an id the caller's resource set does not hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnMissing {
    NotFound,
    /// GET: `204` (§1.7). DELETE: the contract lists only the success status, so deleting a
    /// missing entity is a no-op answering it.
    NoContent,
}

/// One management resource on the shared CRUD layer: its list and whatever differs from the
/// defaults (scoping, answers; the permission and audit category are its record family's), and
/// the four things only it knows: how a body is read (`parse`), what a new or changed record
/// becomes (`create`, `replace`, `patch`), which rules the whole record must satisfy (`check`,
/// `editable`, `before_delete`) and how it is shown (`render`). Its path is given where its
/// routes are registered ([`routes`]), as every resource's.
pub trait Resource: Send + Sync + 'static {
    /// The stored entity.
    type Record: MetaRecord;
    /// The DTO: what POST and PUT bodies are read as (checked against its schema first,
    /// `svc_api::schema::read`) and what every answer renders.
    type Dto: Serialize + DeserializeOwned + JsonSchema + Send + 'static;
    /// What a PATCH body is read as.
    type Patch: DeserializeOwned + JsonSchema + Send + 'static;
    /// A parsed request body: the resource's own fields (the layer applies the base block).
    type Input: Send + 'static;

    /// The family's name in the plural, as the document and the console say it
    /// (`client workloads`).
    const NAME: &'static str;

    /// The permission guarding its routes: its record's family's ([`crate::domain::Kind::family`]).
    const PERM: Perm = Self::Record::KIND.expect_family().perm;
    /// The audit category of its entries (§3.23): its record's family's.
    const CATEGORY: &'static str = Self::Record::KIND.expect_family().category;
    /// Where an entity's resource set comes from.
    const RS: RsFrom = RsFrom::Header;
    const LIST: ListSpec;
    const ON_CREATE: OnCreate = OnCreate::Created;
    const ON_MISSING_DELETE: OnMissing = OnMissing::NotFound;
    /// A GET of an id the caller's resource set does not hold: `204` (§1.7) or `404`.
    const ON_MISSING_READ: OnMissing = OnMissing::NoContent;
    /// The status of a successful DELETE (`204`; agent controllers answer `201`); `None`: the
    /// resource has no DELETE (routings).
    const DELETE: Option<StatusCode> = Some(StatusCode::NO_CONTENT);
    /// [`RsFrom::Body`] only: an entity in a set where the caller may not read is invisible, as
    /// an unknown id (§1.4 rules 4, 5); `false`: it is seen and the permission check answers
    /// `403` (routings, §3.17: "403 also covers a caller whose rights do not include
    /// `resourceSetId`").
    const HIDDEN_ELSEWHERE: bool = true;
    /// A PATCH body is read against the stored entity (its variant, its resource set): a PATCH
    /// of an id the caller cannot see is a `404` before its body is read.
    const PATCH_NEEDS_STORED: bool = false;

    /// Adjusts a POST or PUT body before it is checked against the DTO's schema (`stored`: the
    /// entity a PUT names, as for [`Resource::parse`]): the place for an alias a schema cannot
    /// state (a v2 integration's `type` standing for its `integrationType`, §3.11), and for
    /// refusing a changed discriminator (§1.5) before the other variant's fields are read
    /// ([`discriminator_kept`]).
    fn prepare(_body: &mut Value, _stored: Option<&Self::Record>) -> Result<()> {
        Ok(())
    }

    /// Reads a POST (`Mode::Create`) or PUT (`Mode::Replace`) body: its base block and the
    /// resource's own fields. `stored` is the entity the request names (PUT: the body's
    /// `externalId`), read before the write unit starts, when the caller's resource set holds
    /// it: a resource whose rules depend on the stored variant reads it here.
    fn parse(app: &App, body: Self::Dto, mode: Mode, stored: Option<&Self::Record>)
    -> Result<(BaseInput, Self::Input)>;

    /// Reads a PATCH body (`stored`: the entity the path names, when the caller can see it).
    fn parse_patch(app: &App, body: Self::Patch, stored: Option<&Self::Record>) -> Result<(BaseInput, Self::Input)>;

    /// The resource set a body names (with [`RsFrom::Body`]): its `resourceSet`; `None`: the
    /// default one on create, the stored one on PUT.
    fn own_rs(base: &BaseInput, _input: &Self::Input) -> Option<Uuid> {
        base.resource_set
    }

    /// The new record of a POST, given its fresh base block (the body's base fields applied).
    fn create(w: &mut Write<'_>, input: Self::Input, meta: Meta) -> Result<Self::Record>;

    /// A PUT: the record's own fields from the body (the base block is already applied).
    fn replace(w: &mut Write<'_>, input: Self::Input, rec: &mut Self::Record) -> Result<()>;

    /// A PATCH: the present fields beyond the base block (applied already).
    fn patch(_w: &mut Write<'_>, _input: Self::Input, _rec: &mut Self::Record) -> Result<()> {
        Ok(())
    }

    /// Rules on the complete record against the unit's state and the configuration
    /// (uniqueness, references, required secrets).
    fn check(_w: &Write<'_>, _rec: &Self::Record) -> Result<()> {
        Ok(())
    }

    /// The compliance settings (§3.22) a `Recommended` check failed for: the names go into
    /// `X-Svc-Compliance-Warning`. A `Required` one fails with its 400 instead.
    fn warnings(_st: &Snapshot, _rec: &Self::Record) -> Result<Vec<&'static str>> {
        Ok(Vec::new())
    }

    /// After a PUT or PATCH passed its checks: bookkeeping that compares the record with the
    /// stored one (a trust provider's deactivation time).
    fn updated(_before: &Self::Record, _rec: &mut Self::Record, _now: Timestamp) {}

    /// Narrows the rendered list by the resource's own query parameters (beyond §1.6's).
    fn refine_list(_q: &QueryPairs, _items: &mut Vec<Value>) -> Result<()> {
        Ok(())
    }

    /// Whether the stored entity may be changed or deleted at all.
    fn editable(_rec: &Self::Record) -> Result<()> {
        Ok(())
    }

    /// Before the entity is removed: refuse (still referenced, §1.10) or release its references.
    fn before_delete(_w: &mut Write<'_>, _author: &Author, _rs: Uuid, _id: Uuid) -> Result<()> {
        Ok(())
    }

    /// The entity's DTO.
    fn render(app: &App, st: &Snapshot, rec: &Self::Record) -> Self::Dto;
}

/// `path` (list, create, replace) and `{path}/{id}` (read, patch, delete) of `R`, guarded by its
/// permission in the request's resource set (or the default one for global resources), with
/// their document entries.
pub fn register<R: Resource>(api: &mut Api<'_>, path: &str) {
    let (name, scope) = (R::NAME, scope::<R>());
    let created = match R::ON_CREATE {
        OnCreate::Created => Op::new(format!("Create one of the {name}")).ok::<R::Dto>(201),
        OnCreate::Ok => Op::new(format!("Create one of the {name}")).ok::<R::Dto>(200),
        OnCreate::Location => Op::new(format!("Create one of the {name} (204 and its Location)")).empty(204),
    };
    api.guarded(path, R::PERM, scope)
        .get(
            list::<R>,
            Op::new(format!("List the {name}"))
                .query(Query::List)
                .list::<R::Dto>(R::LIST.items_key),
        )
        .post(create::<R>, created.body::<R::Dto>())
        .put(
            replace::<R>,
            Op::new(format!("Replace one of the {name}"))
                .body::<R::Dto>()
                .ok::<R::Dto>(200),
        );
    let read_op = Op::new(format!("Read one of the {name}")).ok::<R::Dto>(200);
    let read_op = match R::ON_MISSING_READ {
        OnMissing::NoContent => read_op.empty(204),
        OnMissing::NotFound => read_op,
    };
    let one = format!("{path}/{{id}}");
    let route = api.guarded(&one, R::PERM, scope).get(read::<R>, read_op).patch(
        patch::<R>,
        Op::new(format!("Patch one of the {name}"))
            .body::<R::Patch>()
            .ok::<R::Dto>(200),
    );
    if let Some(status) = R::DELETE {
        route.delete(
            remove::<R>,
            Op::new(format!("Delete one of the {name}")).empty(status.as_u16()),
        );
    }
}

/// The guard's scope of `R`'s routes (actions beside them are guarded alike).
pub fn scope<R: Resource>() -> Scope {
    match R::RS {
        RsFrom::Header => Scope::Rs,
        RsFrom::Body(_) => Scope::AnySet,
        RsFrom::Global => Scope::Global,
    }
}

/// The resource set an audit entry of `R` is filed under (`own`: the entity's).
fn audit_rs<R: Resource>(ctx: &Ctx, own: Option<Uuid>) -> Uuid {
    match R::RS {
        RsFrom::Header => ctx.rs,
        RsFrom::Body(_) => own.unwrap_or(DEFAULT_RESOURCE_SET),
        RsFrom::Global => DEFAULT_RESOURCE_SET,
    }
}

/// The entity `id` as the caller sees it: in the request's resource set; for a resource without
/// the header, in a set where the caller may read it (an entity elsewhere is invisible, as an
/// unknown id: §1.4 rules 4, 5, as v2 access policies); or global.
fn lookup<'s, R: Resource>(st: &'s Snapshot, id: &Uuid, ctx: &Ctx) -> Option<&'s std::sync::Arc<R::Record>> {
    st.get::<R::Record>(id).filter(|v| match R::RS {
        RsFrom::Header => v.rs() == Some(ctx.rs),
        RsFrom::Body(_) => {
            !R::HIDDEN_ELSEWHERE
                || ctx
                    .caller
                    .can(st, ctx.perm, false, v.rs().unwrap_or(DEFAULT_RESOURCE_SET))
        }
        RsFrom::Global => true,
    })
}

/// The entity for a change: 404 when the caller cannot see it, else as [`Resource::editable`].
fn for_update<R: Resource>(st: &Snapshot, id: &Uuid, ctx: &Ctx) -> Result<R::Record> {
    let rec = lookup::<R>(st, id, ctx).ok_or(Error::NotFound)?;
    if R::RS.body() {
        ctx.check(st, rec.rs().unwrap_or(DEFAULT_RESOURCE_SET))?;
    }
    R::editable(rec)?;
    Ok((**rec).clone())
}

async fn list<R: Resource>(State(app): State<App>, ctx: Ctx, q: QueryPairs) -> Result<Response> {
    let p = ListParams::parse(&q)?;
    let st = app.state();
    let item = |v: &R::Record| to_json(&R::render(&app, &st, v));
    let mut items = match R::RS {
        RsFrom::Header => st.in_rs::<R::Record>(Some(ctx.rs)).map(|v| item(v)).collect(),
        RsFrom::Body(_) => {
            let sets = ctx.readable_sets(&st);
            R::Record::table(&st)
                .values()
                .filter(|v| sets.contains(&v.rs().unwrap_or(DEFAULT_RESOURCE_SET)))
                .map(|v| item(v))
                .collect()
        }
        RsFrom::Global => R::Record::table(&st).values().map(|v| item(v)).collect(),
    };
    R::refine_list(&q, &mut items)?;
    Ok(ok(respond(items, &p, &R::LIST)?))
}

/// One entity; `204` (or `404`, [`Resource::ON_MISSING_READ`]) when the caller's resource set
/// has none, or (without the header) the entity is in a set the caller may not read (§1.5).
async fn read<R: Resource>(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let st = app.state();
    match lookup::<R>(&st, &ids.one(), &ctx) {
        Some(v) => {
            if R::RS.body() {
                ctx.check(&st, v.rs().unwrap_or(DEFAULT_RESOURCE_SET))?;
            }
            Ok(ok(to_json(&R::render(&app, &st, v))))
        }
        None => match R::ON_MISSING_READ {
            OnMissing::NoContent => Ok(no_content()),
            OnMissing::NotFound => Err(Error::NotFound),
        },
    }
}

/// A POST; the new entity's `Location` is under the collection's path (`path`).
async fn create<R: Resource>(
    State(app): State<App>,
    ctx: Ctx,
    path: MatchedPath,
    JsonBody(mut body): JsonBody,
) -> Result<Response> {
    R::prepare(&mut body, None)?;
    let body: R::Dto = svc_api::schema::read(body)?;
    let (base, input) = R::parse(&app, body, Mode::Create, None)?;
    let rs = match R::RS {
        RsFrom::Header => Some(resolve_rs(base.resource_set, ctx.rs)?),
        RsFrom::Body(_) => Some(R::own_rs(&base, &input).unwrap_or(DEFAULT_RESOURCE_SET)),
        RsFrom::Global => None,
    };
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    if R::RS.body() {
        ctx.check(&w.st, rs.unwrap_or(DEFAULT_RESOURCE_SET))?;
    }
    let id = new_external_id(base.external_id, |id| w.st.get::<R::Record>(id).is_some())?;
    let mut meta = w.new_meta(R::Record::KIND, id, rs, &author).await?;
    base.apply_full(&mut meta);
    let rec = R::create(&mut w, input, meta)?;
    R::check(&w, &rec)?;
    let warnings = R::warnings(&w.st, &rec)?;
    w.put(rec);
    w.audit(&author, audit_rs::<R>(&ctx, rs), R::CATEGORY, Activity::Created, id);
    let st = w.commit().await?;
    let location = format!("{}/{id}", path.as_str());
    let response = match R::ON_CREATE {
        OnCreate::Created => created(StatusCode::CREATED, location, render_stored::<R>(&app, &st, &id)?),
        OnCreate::Ok => created(StatusCode::OK, location, render_stored::<R>(&app, &st, &id)?),
        OnCreate::Location => super::located(location),
    };
    Ok(with_warnings(response, &warnings))
}

async fn replace<R: Resource>(State(app): State<App>, ctx: Ctx, JsonBody(mut body): JsonBody) -> Result<Response> {
    let stored = body
        .get("externalId")
        .and_then(Value::as_str)
        .and_then(svc_api::reader::parse_uuid)
        .and_then(|id| lookup::<R>(&app.state(), &id, &ctx).cloned());
    R::prepare(&mut body, stored.as_deref())?;
    let body: R::Dto = svc_api::schema::read(body)?;
    let (base, input) = R::parse(&app, body, Mode::Replace, stored.as_deref())?;
    let id = base
        .external_id
        .ok_or_else(|| Error::field("externalId", "is required"))?;
    let own_rs = R::own_rs(&base, &input);
    update::<R>(&app, &ctx, id, Activity::Updated, |w, rec| {
        match R::RS {
            // §1.4 rule 3: a PUT body naming another resource set than the header.
            RsFrom::Header => {
                resolve_rs(base.resource_set, ctx.rs)?;
            }
            RsFrom::Body(field) if own_rs.is_some_and(|rs| Some(rs) != rec.rs()) => {
                return Err(Error::field(field, "cannot be changed"));
            }
            RsFrom::Body(_) | RsFrom::Global => {}
        }
        base.apply_full(rec.meta_mut());
        R::replace(w, input, rec)
    })
    .await
}

async fn patch<R: Resource>(State(app): State<App>, ctx: Ctx, ids: Ids, JsonBody(body): JsonBody) -> Result<Response> {
    let id = ids.one();
    let stored = lookup::<R>(&app.state(), &id, &ctx).cloned();
    if R::PATCH_NEEDS_STORED && stored.is_none() {
        return Err(Error::NotFound);
    }
    let body: R::Patch = svc_api::schema::read(body)?;
    let (base, input) = R::parse_patch(&app, body, stored.as_deref())?;
    update::<R>(&app, &ctx, id, Activity::Patched, |w, rec| {
        if R::RS == RsFrom::Header {
            check_rs_unchanged(base.resource_set, ctx.rs)?;
        }
        base.apply_patch(rec.meta_mut())?;
        R::patch(w, input, rec)
    })
    .await
}

/// A PUT or PATCH of entity `id` in one unit: `change` applies the request to the stored record
/// (404 when the caller cannot see it), then the record's rules, the stamp, the audit entry, the
/// commit, `200`.
async fn update<R: Resource>(
    app: &App,
    ctx: &Ctx,
    id: Uuid,
    activity: Activity,
    change: impl FnOnce(&mut Write<'_>, &mut R::Record) -> Result<()>,
) -> Result<Response> {
    let author = ctx.author();
    let mut w = Write::begin(app).await?;
    let before = for_update::<R>(&w.st, &id, ctx)?;
    let mut rec = before.clone();
    change(&mut w, &mut rec)?;
    R::check(&w, &rec)?;
    let warnings = R::warnings(&w.st, &rec)?;
    R::updated(&before, &mut rec, w.now);
    w.touch_meta(rec.meta_mut(), &author);
    let rs = audit_rs::<R>(ctx, rec.rs());
    w.put(rec);
    w.audit(&author, rs, R::CATEGORY, activity, id);
    let st = w.commit().await?;
    Ok(with_warnings(ok(render_stored::<R>(app, &st, &id)?), &warnings))
}

async fn remove<R: Resource>(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let id = ids.one();
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let done = R::DELETE.unwrap_or(StatusCode::NO_CONTENT);
    let Some(rec) = lookup::<R>(&w.st, &id, &ctx) else {
        return match R::ON_MISSING_DELETE {
            OnMissing::NotFound => Err(Error::NotFound),
            OnMissing::NoContent => Ok(done.into_response()),
        };
    };
    if R::RS.body() {
        ctx.check(&w.st, rec.rs().unwrap_or(DEFAULT_RESOURCE_SET))?;
    }
    R::editable(rec)?;
    let rs = audit_rs::<R>(&ctx, rec.rs());
    R::before_delete(&mut w, &author, rs, id)?;
    w.remove::<R::Record>(&id);
    w.audit(&author, rs, R::CATEGORY, Activity::Deleted, id);
    w.commit().await?;
    Ok(done.into_response())
}

/// The committed entity's DTO.
fn render_stored<R: Resource>(app: &App, st: &Snapshot, id: &Uuid) -> Result<Value> {
    st.get::<R::Record>(id)
        .map(|v| to_json(&R::render(app, st, v)))
        .ok_or_else(|| Error::internal("a committed entity is missing from the state"))
}

/// §1.5: a PUT cannot change the discriminator `field` of the entity (`stored`: its value), read
/// before the body's variant is: a known variant other than the stored one is `<field>: cannot
/// be changed` (an unknown one is left to the schema's `must be one of`).
pub fn discriminator_kept(body: &Value, field: &str, stored: Option<&str>, known: &[&str]) -> Result<()> {
    let given = body.get(field).and_then(Value::as_str);
    match (given, stored) {
        (Some(g), Some(s)) if g != s && known.contains(&g) => Err(Error::field(field, "cannot be changed")),
        _ => Ok(()),
    }
}

/// A PATCH may repeat the entity's discriminator `field` (a GET body sent back), not change it.
pub fn discriminator_repeated(field: &str, given: Option<&str>, stored: Option<&str>) -> Result<()> {
    match (given, stored) {
        (Some(g), Some(s)) if g != s => Err(Error::field(field, "cannot be changed")),
        _ => Ok(()),
    }
}

/// A count as the DTOs' int32.
pub fn count(n: usize) -> i32 {
    n.min(i32::MAX as usize) as i32
}

/// A DTO as JSON (lists filter and order the JSON of their items).
pub fn to_json<T: Serialize>(dto: &T) -> Value {
    serde_json::to_value(dto).expect("a DTO serialises")
}
