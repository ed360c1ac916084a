//! Discovery integrations and server-workload drafts (contract §3.12). Integrations are on the
//! CRUD layer without the resource-set header (§1.4 rule 5: `resourceSet` in the body);
//! `discoveryIntegrationJSON` is JSON *text* whose `clientSecret` is write-only and sealed.
//! `POST …/{id}/sync` runs the sync now (`service::discovery`). Drafts are read-only, shown in
//! the ServerWorkloadExternalDTO shape, guarded by `Server Workloads` read in their set.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use svc_api::Obj;
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_json, parse_base};
use super::crud::{self, OnMissing, Resource, RsFrom};
use crate::app::App;
use crate::credential::types::check_url;
use crate::domain::condition::{CLOUD_SECURITY_A, DiscoveryIntegration, ServerWorkloadDraft};
use crate::domain::credential::SecretFields;
use crate::domain::{DEFAULT_RESOURCE_SET, Meta, Perm};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::api::{Api, Op, Query, Untyped};
use crate::http::extract::{Ids, QueryPairs};
use crate::http::guard::{Ctx, Scope};
use crate::http::list::{Base, Filter, ListParams, ListSpec, RESOURCE_SET_FILTER, field_filter, respond};
use crate::http::{no_content, ok};
use crate::service::write::{Author, Write};
use crate::state::State as Snapshot;
use svc_api::GenericResponse;

/// `/api/v1/discovery-integrations`.
pub struct DiscoveryIntegrations;

pub fn register(api: &mut Api<'_>) {
    crud::register::<DiscoveryIntegrations>(api, "/api/v1/discovery-integrations");
    api.guarded(
        "/api/v1/discovery-integrations/{id}/sync",
        Perm::DiscoveryIntegrations,
        crud::scope::<DiscoveryIntegrations>(),
    )
    .post(
        sync_now,
        Op::new("Start a discovery sync now (§3.12)").ok::<GenericResponse>(202),
    );
    let (p, s) = (Perm::ServerWorkloads, Scope::AnySet);
    api.guarded("/api/alpha/server-workload-drafts", p, s).get(
        list_drafts,
        Op::new("List server-workload drafts (§3.12)")
            .query(Query::List)
            .list::<Untyped>("serverWorkloadDrafts"),
    );
    api.guarded("/api/alpha/server-workload-drafts/{id}", p, s).get(
        read_draft,
        Op::new("Read a server-workload draft (§3.12)")
            .ok::<Untyped>(200)
            .empty(204),
    );
}

pub struct Input {
    sync: i32,
    endpoint: String,
    config: Map<String, Value>,
    secret: Option<String>,
}

fn parse(app: &App, body: Value, mode: Mode, stored: Option<&DiscoveryIntegration>) -> Result<(BaseInput, Input)> {
    let mut o = Obj::root(body)?;
    let base = parse_base(&mut o, mode, true)?;
    if let (Some(b), Some(s)) = (base.resource_set, stored)
        && Some(b) != s.meta.rs
    {
        return Err(Error::field("resourceSet", "cannot be changed"));
    }
    if let Some(rs) = base.resource_set
        && !app.state().resource_set_exists(&rs)
    {
        return Err(Error::field("resourceSet", "unknown resource set"));
    }
    match (mode, o.opt_str("type")?.as_deref()) {
        (_, Some(CLOUD_SECURITY_A)) | (Mode::Patch, None) => {}
        (_, None) => return Err(Error::field("type", "is required")),
        (_, Some(_)) => return Err(Error::field("type", format!("must be {CLOUD_SECURITY_A}"))),
    }
    o.ignore(&["lastSync", "lastSyncStatus"]);
    let mut input = Input {
        sync: 0,
        endpoint: String::new(),
        config: Map::new(),
        secret: None,
    };
    if mode != Mode::Patch {
        (input.sync, input.endpoint) = super::integrations::common_fields(&mut o, &app.cfg)?;
        let text = o.req_str("discoveryIntegrationJSON")?;
        let mut j = Obj::from_json_text(&text, "discoveryIntegrationJSON".into())?;
        let token_url = j.req_str_len("tokenUrl", 1, 2048)?;
        check_url(&j.path("tokenUrl"), &token_url, &app.cfg)?;
        input.config.insert("tokenUrl".into(), json!(token_url));
        input
            .config
            .insert("clientId".into(), json!(j.req_str_len("clientId", 1, 256)?));
        input.secret = j.opt_str_len("clientSecret", 0, 4096)?.filter(|s| !s.is_empty());
        input
            .config
            .insert("audience".into(), json!(j.req_str_len("audience", 1, 2048)?));
        j.finish()?;
    }
    o.finish()?;
    Ok((base, input))
}

fn apply(input: Input, d: &mut DiscoveryIntegration) {
    d.sync_frequency_seconds = input.sync;
    d.endpoint = input.endpoint;
    d.config = input.config;
    if let Some(s) = input.secret {
        d.secrets.set("clientSecret", s);
    }
}

/// `DiscoveryIntegrationDTO`: `discoveryIntegrationJSON` as text, without `clientSecret`.
pub fn discovery_json(d: &DiscoveryIntegration) -> Value {
    let mut o = base_json(&d.meta, true);
    o.insert("type".into(), json!(d.dtype));
    o.insert("syncFrequencySeconds".into(), json!(d.sync_frequency_seconds));
    o.insert("lastSync".into(), json!(d.last_sync));
    o.insert("lastSyncStatus".into(), json!(d.last_sync_status));
    o.insert("endpoint".into(), json!(d.endpoint));
    o.insert(
        "discoveryIntegrationJSON".into(),
        json!(Value::Object(d.config.clone()).to_string()),
    );
    Value::Object(o)
}

impl Resource for DiscoveryIntegrations {
    type Record = DiscoveryIntegration;
    type Input = Input;
    type Dto = Untyped;
    type Patch = Untyped;
    const NAME: &'static str = "discovery integrations";
    const RS: RsFrom = RsFrom::Body("resourceSet");
    const PATCH_NEEDS_STORED: bool = true;
    const LIST: ListSpec = ListSpec::new("integrations", Base::Scoped)
        .fields(&["type", "syncFrequencySeconds", "lastSync", "lastSyncStatus", "endpoint"])
        .filters(&[field_filter("type"), RESOURCE_SET_FILTER]);
    // §3.12 lists only 200.
    const DELETE: Option<StatusCode> = Some(StatusCode::OK);
    const ON_MISSING_DELETE: OnMissing = OnMissing::NoContent;

    fn parse(
        app: &App,
        body: Untyped,
        mode: Mode,
        stored: Option<&DiscoveryIntegration>,
    ) -> Result<(BaseInput, Input)> {
        parse(app, body.0, mode, stored)
    }

    fn parse_patch(app: &App, body: Untyped, stored: Option<&DiscoveryIntegration>) -> Result<(BaseInput, Input)> {
        Self::parse(app, body, Mode::Patch, stored)
    }

    fn create(_: &mut Write<'_>, input: Input, meta: Meta) -> Result<DiscoveryIntegration> {
        if input.secret.is_none() {
            return Err(Error::field("discoveryIntegrationJSON.clientSecret", "is required"));
        }
        let mut d = DiscoveryIntegration {
            meta,
            dtype: CLOUD_SECURITY_A.into(),
            sync_frequency_seconds: 0,
            endpoint: String::new(),
            config: Map::new(),
            last_sync: None,
            last_sync_status: None,
            secrets: SecretFields::default(),
        };
        apply(input, &mut d);
        Ok(d)
    }

    fn replace(_: &mut Write<'_>, input: Input, d: &mut DiscoveryIntegration) -> Result<()> {
        apply(input, d);
        Ok(())
    }

    /// Its drafts go with it (one `ServerWorkloads` `Deleted` entry each).
    fn before_delete(w: &mut Write<'_>, author: &Author, rs: Uuid, id: Uuid) -> Result<()> {
        let drafts: Vec<Uuid> =
            w.st.server_workload_drafts
                .values()
                .filter(|x| x.integration == id)
                .map(|x| x.meta.id)
                .collect();
        for d in drafts {
            w.remove::<ServerWorkloadDraft>(&d);
            w.audit(author, rs, "ServerWorkloads", Activity::Deleted, d);
        }
        Ok(())
    }

    fn render(_: &App, _: &Snapshot, d: &DiscoveryIntegration) -> Untyped {
        Untyped(discovery_json(d))
    }
}

/// `POST …/{id}/sync`: 202, the sync runs now in the background.
async fn sync_now(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let id = ids.one();
    let st = app.state();
    let d = st.discovery_integrations.get(&id).ok_or(Error::NotFound)?;
    if !ctx.readable_sets(&st).contains(&d.meta.scope()) {
        return Err(Error::NotFound);
    }
    ctx.check(&st, d.meta.scope())?;
    let a = app.clone();
    tokio::spawn(async move { crate::service::discovery::sync(&a, id).await });
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(svc_api::GenericResponse::ok("Sync started.")),
    )
        .into_response())
}

/// `ServerWorkloadDraftDTO`.
fn draft_json(d: &ServerWorkloadDraft) -> Value {
    let mut o = base_json(&d.meta, true);
    o.insert("isActive".into(), json!(false));
    o.insert(
        "serviceEndpoint".into(),
        json!({"host": d.host, "port": d.port, "appProtocol": null, "transportProtocol": "TCP", "requestedPort": d.port,
               "requestedTls": false, "tls": false, "tlsVerification": null, "workloadServiceAuthentication": null,
               "urlPath": null, "httpHeaders": []}),
    );
    o.insert("type".into(), Value::Null);
    o.insert("accessPolicyCount".into(), json!(0));
    o.insert("discoveryIntegrationId".into(), json!(d.integration));
    o.insert("providerUniqueId".into(), json!(d.provider_unique_id));
    o.insert("lastSeenAt".into(), json!(d.last_seen_at));
    Value::Object(o)
}

const DRAFTS: ListSpec = ListSpec::new("serverWorkloadDrafts", Base::Scoped)
    .fields(&[
        "discoveryIntegrationId",
        "lastSeenAt",
        "serviceEndpoint.host",
        "serviceEndpoint.port",
    ])
    .filters(&[
        field_filter("discoveryIntegrationId"),
        ("host", Filter::Field("serviceEndpoint.host")),
        RESOURCE_SET_FILTER,
    ]);

async fn list_drafts(State(app): State<App>, ctx: Ctx, q: QueryPairs) -> Result<Response> {
    let p = ListParams::parse(&q)?;
    let st = app.state();
    let sets = ctx.readable_sets(&st);
    let items = st
        .server_workload_drafts
        .values()
        .filter(|d| sets.contains(&d.meta.rs.unwrap_or(DEFAULT_RESOURCE_SET)))
        .map(|d| draft_json(d))
        .collect();
    Ok(ok(respond(items, &p, &DRAFTS)?))
}

async fn read_draft(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let st = app.state();
    match st.server_workload_drafts.get(&ids.one()) {
        Some(d) if ctx.readable_sets(&st).contains(&d.meta.scope()) => Ok(ok(draft_json(d))),
        _ => Ok(no_content()),
    }
}
