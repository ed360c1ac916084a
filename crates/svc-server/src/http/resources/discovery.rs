//! Discovery integrations and server-workload drafts (contract §3.12). Integrations are on the
//! CRUD layer without the resource-set header (§1.4 rule 5: `resourceSet` in the body);
//! `discoveryIntegrationJSON` is JSON *text* whose `clientSecret` is write-only and sealed.
//! `POST …/{id}/sync` runs the sync now (`service::discovery`). Drafts are read-only, shown in
//! the ServerWorkloadExternalDTO shape, guarded by `Server Workloads` read in their set.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use svc_api::mgmt::{
    DiscoveryIntegrationDto, DiscoveryIntegrationJson, DiscoveryIntegrationPatchDto, DiscoveryType,
    ServerWorkloadDraftDto, ServerWorkloadDraftEndpointDto,
};
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_dto, base_input, patch_input};
use super::crud::{self, OnMissing, Resource, RsFrom, to_json};
use crate::app::App;
use crate::credential::types::check_url;
use crate::domain::condition::{CLOUD_SECURITY_A, DiscoveryIntegration, ServerWorkloadDraft};
use crate::domain::credential::SecretFields;
use crate::domain::{DEFAULT_RESOURCE_SET, Meta, Perm};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::api::{Api, Op, Query};
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
            .list::<ServerWorkloadDraftDto>("serverWorkloadDrafts"),
    );
    api.guarded("/api/alpha/server-workload-drafts/{id}", p, s).get(
        read_draft,
        Op::new("Read a server-workload draft (§3.12)")
            .ok::<ServerWorkloadDraftDto>(200)
            .empty(204),
    );
}

pub struct Input {
    sync: i32,
    endpoint: String,
    config: Map<String, Value>,
    secret: Option<String>,
}

/// `discoveryIntegrationJSON`: JSON text of a `DiscoveryIntegrationJSON` object.
fn integration_json(text: &str) -> Result<DiscoveryIntegrationJson> {
    const AT: &str = "discoveryIntegrationJSON";
    let v: Value =
        serde_json::from_str(text).map_err(|e| Error::field(AT, format!("must be JSON text of an object ({e})")))?;
    if v.is_null() {
        return Err(Error::field(AT, "must be an object, not null"));
    }
    Ok(svc_api::schema::read_at(v, AT)?)
}

/// A body's `resourceSet`: an existing set, the stored entity's when there is one.
fn check_resource_set(app: &App, rs: Option<Uuid>, stored: Option<&DiscoveryIntegration>) -> Result<()> {
    if let (Some(b), Some(s)) = (rs, stored)
        && Some(b) != s.meta.rs
    {
        return Err(Error::field("resourceSet", "cannot be changed"));
    }
    if let Some(rs) = rs
        && !app.state().resource_set_exists(&rs)
    {
        return Err(Error::field("resourceSet", "unknown resource set"));
    }
    Ok(())
}

fn parse(app: &App, dto: DiscoveryIntegrationDto, stored: Option<&DiscoveryIntegration>) -> Result<(BaseInput, Input)> {
    let base = base_input(dto.base, dto.resource_set)?;
    check_resource_set(app, base.resource_set, stored)?;
    crate::upstream::check_base_url_field("endpoint", &dto.endpoint, &app.cfg)?;
    let j = integration_json(&dto.discovery_integration_json)?;
    check_url("discoveryIntegrationJSON.tokenUrl", &j.token_url, &app.cfg)?;
    let mut config = Map::new();
    config.insert("tokenUrl".into(), Value::String(j.token_url));
    config.insert("clientId".into(), Value::String(j.client_id));
    config.insert("audience".into(), Value::String(j.audience));
    let input = Input {
        sync: dto.sync_frequency_seconds,
        endpoint: dto.endpoint,
        config,
        secret: j.client_secret.filter(|s| !s.is_empty()),
    };
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
pub fn discovery_dto(d: &DiscoveryIntegration) -> DiscoveryIntegrationDto {
    let text = |k: &str| d.config.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let json = DiscoveryIntegrationJson {
        token_url: text("tokenUrl"),
        client_id: text("clientId"),
        client_secret: None,
        audience: text("audience"),
    };
    DiscoveryIntegrationDto {
        base: base_dto(&d.meta),
        resource_set: Some(d.meta.scope()),
        kind: DiscoveryType::CloudSecurityAIntegrationApi,
        sync_frequency_seconds: d.sync_frequency_seconds,
        last_sync: d.last_sync,
        last_sync_status: d.last_sync_status.clone(),
        endpoint: d.endpoint.clone(),
        discovery_integration_json: serde_json::to_string(&json).expect("a DTO serialises"),
    }
}

impl Resource for DiscoveryIntegrations {
    type Record = DiscoveryIntegration;
    type Input = Input;
    type Dto = DiscoveryIntegrationDto;
    type Patch = DiscoveryIntegrationPatchDto;
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
        dto: DiscoveryIntegrationDto,
        _: Mode,
        stored: Option<&DiscoveryIntegration>,
    ) -> Result<(BaseInput, Input)> {
        parse(app, dto, stored)
    }

    /// DiscoveryIntegrationPatchDTO: the base fields; `resourceSet` and `type` may repeat the
    /// stored values.
    fn parse_patch(
        app: &App,
        p: DiscoveryIntegrationPatchDto,
        stored: Option<&DiscoveryIntegration>,
    ) -> Result<(BaseInput, Input)> {
        check_resource_set(app, p.resource_set, stored)?;
        let input = Input {
            sync: 0,
            endpoint: String::new(),
            config: Map::new(),
            secret: None,
        };
        Ok((patch_input(p.patch)?, input))
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

    fn render(_: &App, _: &Snapshot, d: &DiscoveryIntegration) -> DiscoveryIntegrationDto {
        discovery_dto(d)
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
fn draft_dto(d: &ServerWorkloadDraft) -> ServerWorkloadDraftDto {
    let mut base = base_dto(&d.meta);
    base.is_active = false;
    ServerWorkloadDraftDto {
        base,
        resource_set: d.meta.scope(),
        service_endpoint: ServerWorkloadDraftEndpointDto {
            host: d.host.clone(),
            port: d.port,
            app_protocol: None,
            transport_protocol: "TCP".into(),
            requested_port: d.port,
            requested_tls: false,
            tls: false,
            tls_verification: None,
            workload_service_authentication: None,
            url_path: None,
            http_headers: Vec::new(),
        },
        kind: None,
        access_policy_count: 0,
        discovery_integration_id: d.integration,
        provider_unique_id: d.provider_unique_id.clone(),
        last_seen_at: d.last_seen_at,
    }
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
        .map(|d| to_json(&draft_dto(d)))
        .collect();
    Ok(ok(respond(items, &p, &DRAFTS)?))
}

async fn read_draft(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let st = app.state();
    match st.server_workload_drafts.get(&ids.one()) {
        Some(d) if ctx.readable_sets(&st).contains(&d.meta.scope()) => Ok(ok(to_json(&draft_dto(d)))),
        _ => Ok(no_content()),
    }
}
