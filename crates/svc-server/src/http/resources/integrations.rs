//! Integrations (contract §3.11): one stored entity, shown as `/api/v2/integrations` (variants by
//! `integrationType`, vendor fields at the top level) and `/api/v1/integrations` (vendor fields in
//! `integrationJSON`). `clientSecret` is write-only and sealed (§1.9). The built-in `GeoIP` and
//! `Time` integrations of each resource set cannot be created, changed or deleted (400); an
//! integration an access condition uses cannot be deleted (§1.10 rule 4).

use axum::http::StatusCode;
use serde_json::{Map, Value};
use svc_api::mgmt::{
    CloudSecurityAIntegrationDto, GeoIpIntegrationDto, IntegrationCommon, IntegrationDto, IntegrationJson,
    IntegrationPatchDto, IntegrationType, IntegrationV2Dto, SensorAIntegrationDto, TimeIntegrationDto,
};
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_dto, base_input, patch_input};
use super::crud::{self, OnMissing, Resource};
use crate::app::App;
use crate::config::Config;
use crate::credential::types::check_url;
use crate::domain::Meta;
use crate::domain::condition::{CLOUD_SECURITY_A, INTEGRATION_TYPES, Integration, SENSOR_A, builtin_type};
use crate::domain::credential::SecretFields;
use crate::error::{Error, Result};
use crate::http::api::Api;
use crate::http::list::{Base, Filter, ListSpec, field_filter};
use crate::service::write::{Author, Write};
use crate::state::State as Snapshot;

pub fn register(api: &mut Api<'_>) {
    crud::register::<IntegrationsV2>(api, "/api/v2/integrations");
    crud::register::<IntegrationsV1>(api, "/api/v1/integrations");
}

const FIELDS: &[&str] = &[
    "type",
    "integrationType",
    "syncFrequencySeconds",
    "lastSync",
    "lastSyncStatus",
    "endpoint",
    "accessConditionsCount",
];
pub const BUILTIN_CREATE: &str = "built-in integrations cannot be created";
pub const BUILTIN_CHANGE: &str = "integrationType: built-in integrations cannot be modified or deleted";

pub struct Input {
    kind: String,
    sync: i32,
    endpoint: String,
    config: Map<String, Value>,
    secret: Option<String>,
    /// Where a missing `clientSecret` is reported (`clientSecret` or `integrationJSON.clientSecret`).
    secret_path: &'static str,
}

/// The discriminator of a POST or PUT against the stored one (§1.5: it cannot change). `field`
/// names it in messages.
fn kind_of(given: IntegrationType, mode: Mode, stored: Option<&Integration>, field: &str) -> Result<String> {
    let k = given.as_str();
    match stored.map(|s| s.int_type.as_str()) {
        Some(s) if k != s => Err(Error::field(field, "cannot be changed")),
        _ if mode == Mode::Create && builtin_type(k) => Err(Error::field(field, BUILTIN_CREATE)),
        _ => Ok(k.to_string()),
    }
}

/// The vendor fields as stored: `clientId`, `tokenUrl`, `audience` (`null` when none), and the
/// new `clientSecret` (an empty one is none). `at`: where the fields are (`` or
/// `integrationJSON`); `tokenUrl` must be a URL the service may call.
fn vendor_config(
    client_id: String,
    token_url: String,
    audience: Option<String>,
    secret: Option<String>,
    at: &str,
    cfg: &Config,
) -> Result<(Map<String, Value>, Option<String>)> {
    check_url(&svc_api::reader::join(at, "tokenUrl"), &token_url, cfg)?;
    let mut m = Map::new();
    m.insert("clientId".into(), Value::String(client_id));
    m.insert("tokenUrl".into(), Value::String(token_url));
    m.insert(
        "audience".into(),
        audience.filter(|a| !a.is_empty()).map_or(Value::Null, Value::String),
    );
    Ok((m, secret.filter(|s| !s.is_empty())))
}

/// `syncFrequencySeconds` and `endpoint`, shared by both views.
fn common_input(kind: String, sync: i32, endpoint: String, cfg: &Config, v1: bool) -> Result<Input> {
    crate::upstream::check_base_url_field("endpoint", &endpoint, cfg)?;
    Ok(Input {
        kind,
        sync,
        endpoint,
        config: Map::new(),
        secret: None,
        secret_path: if v1 {
            "integrationJSON.clientSecret"
        } else {
            "clientSecret"
        },
    })
}

/// A v2 body: the variant's fields at the top level.
fn parse_v2(app: &App, dto: IntegrationV2Dto, mode: Mode, stored: Option<&Integration>) -> Result<(BaseInput, Input)> {
    let given = dto.kind();
    let (base, mut input) = {
        let c = dto.common().clone();
        let base = base_input(c.base, c.resource_set)?;
        let kind = kind_of(given, mode, stored, "integrationType")?;
        (
            base,
            common_input(kind, c.sync_frequency_seconds, c.endpoint, &app.cfg, false)?,
        )
    };
    (input.config, input.secret) = match dto {
        IntegrationV2Dto::SensorA(v) => {
            vendor_config(v.client_id, v.token_url, v.audience, v.client_secret, "", &app.cfg)?
        }
        IntegrationV2Dto::CloudSecurityAIntegrationApi(v) => vendor_config(
            v.client_id,
            v.token_url,
            Some(v.audience),
            v.client_secret,
            "",
            &app.cfg,
        )?,
        IntegrationV2Dto::SvcGeoIPCondition(_) | IntegrationV2Dto::SvcTimeCondition(_) => (Map::new(), None),
    };
    Ok((base, input))
}

/// A v1 body: the vendor fields in `integrationJSON`, required as the type needs them.
fn parse_v1(app: &App, dto: IntegrationDto, mode: Mode, stored: Option<&Integration>) -> Result<(BaseInput, Input)> {
    let base = base_input(dto.base, dto.resource_set)?;
    let kind = kind_of(dto.kind, mode, stored, "type")?;
    let mut input = common_input(kind, dto.sync_frequency_seconds, dto.endpoint, &app.cfg, true)?;
    if vendor_type(&input.kind) {
        const AT: &str = "integrationJSON";
        let j = dto.integration_json;
        let required = |v: Option<String>, k: &str| v.ok_or_else(|| Error::field(format!("{AT}.{k}"), "is required"));
        let client_id = required(j.client_id, "clientId")?;
        let token_url = required(j.token_url, "tokenUrl")?;
        let audience = j.audience.flatten();
        if input.kind == CLOUD_SECURITY_A && audience.as_deref().is_none_or(str::is_empty) {
            return Err(Error::field(format!("{AT}.audience"), "is required"));
        }
        (input.config, input.secret) = vendor_config(client_id, token_url, audience, j.client_secret, AT, &app.cfg)?;
    }
    Ok((base, input))
}

pub fn conditions_count(st: &Snapshot, id: Uuid) -> usize {
    st.access_conditions.values().filter(|c| c.integration == id).count()
}

fn kind(i: &Integration) -> IntegrationType {
    IntegrationType::parse(&i.int_type).expect("stored types are known")
}

fn text(i: &Integration, key: &str) -> String {
    i.config_str(key).unwrap_or_default().to_string()
}

/// The fields every v2 variant shows.
fn common_dto(st: &Snapshot, i: &Integration) -> IntegrationCommon {
    IntegrationCommon {
        base: base_dto(&i.meta),
        resource_set: Some(i.meta.scope()),
        kind: Some(kind(i)),
        sync_frequency_seconds: i.sync_frequency_seconds,
        last_sync: i.last_sync,
        last_sync_status: i.last_sync_status.clone(),
        endpoint: i.endpoint.clone(),
        access_conditions_count: crud::count(conditions_count(st, i.meta.id)),
    }
}

/// `IntegrationV2DTO` (its variant), `clientSecret` `null`.
pub fn v2_dto(st: &Snapshot, i: &Integration) -> IntegrationV2Dto {
    let common = common_dto(st, i);
    match kind(i) {
        IntegrationType::SensorA => IntegrationV2Dto::SensorA(SensorAIntegrationDto {
            common,
            client_id: text(i, "clientId"),
            client_secret: None,
            token_url: text(i, "tokenUrl"),
            audience: i.config_str("audience").map(str::to_string),
        }),
        IntegrationType::CloudSecurityAIntegrationApi => {
            IntegrationV2Dto::CloudSecurityAIntegrationApi(CloudSecurityAIntegrationDto {
                common,
                client_id: text(i, "clientId"),
                client_secret: None,
                token_url: text(i, "tokenUrl"),
                audience: text(i, "audience"),
            })
        }
        IntegrationType::SvcGeoIPCondition => IntegrationV2Dto::SvcGeoIPCondition(GeoIpIntegrationDto { common }),
        IntegrationType::SvcTimeCondition => IntegrationV2Dto::SvcTimeCondition(TimeIntegrationDto { common }),
    }
}

/// `IntegrationDTO` (v1): the vendor fields in `integrationJSON`, without `clientSecret`.
pub fn v1_dto(st: &Snapshot, i: &Integration) -> IntegrationDto {
    let c = common_dto(st, i);
    let integration_json = if i.builtin {
        IntegrationJson::default()
    } else {
        IntegrationJson {
            client_id: Some(text(i, "clientId")),
            client_secret: None,
            token_url: Some(text(i, "tokenUrl")),
            audience: Some(i.config_str("audience").map(str::to_string)),
        }
    };
    IntegrationDto {
        base: c.base,
        resource_set: c.resource_set,
        kind: kind(i),
        sync_frequency_seconds: c.sync_frequency_seconds,
        last_sync: c.last_sync,
        last_sync_status: c.last_sync_status,
        endpoint: c.endpoint,
        access_conditions_count: c.access_conditions_count,
        integration_json,
    }
}

/// The one discriminator of a v2 body (§3.11): `type` fills a missing `integrationType` and the
/// other way round; two different values are refused.
fn align_type(body: &mut Value) -> Result<()> {
    let Some(o) = body.as_object_mut() else { return Ok(()) };
    let present = |v: Option<&Value>| v.filter(|v| !v.is_null()).cloned();
    match (present(o.get("integrationType")), present(o.get("type"))) {
        (Some(a), Some(b)) if a != b => Err(Error::field("type", "must equal integrationType")),
        (Some(a), None) => {
            o.insert("type".into(), a);
            Ok(())
        }
        (None, Some(b)) => {
            o.insert("integrationType".into(), b);
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `/api/v2/integrations`: the variants of `IntegrationV2DTO`.
pub struct IntegrationsV2;

/// `/api/v1/integrations`: the same integrations as `IntegrationDTO`.
pub struct IntegrationsV1;

fn create(input: Input, meta: Meta) -> Result<Integration> {
    let mut secrets = SecretFields::default();
    match input.secret {
        Some(s) => secrets.set("clientSecret", s),
        None => return Err(Error::field(input.secret_path, "is required")),
    }
    Ok(Integration {
        meta,
        int_type: input.kind,
        sync_frequency_seconds: input.sync,
        endpoint: input.endpoint,
        config: input.config,
        builtin: false,
        last_sync: None,
        last_sync_status: None,
        secrets,
    })
}

fn replace(input: Input, i: &mut Integration) {
    i.sync_frequency_seconds = input.sync;
    i.endpoint = input.endpoint;
    i.config = input.config;
    if let Some(s) = input.secret {
        i.secrets.set("clientSecret", s);
    }
}

/// The built-in integrations cannot be changed (checked before a body is read further).
fn editable(stored: Option<&Integration>) -> Result<()> {
    match stored {
        Some(i) if i.builtin => Err(Error::bad(BUILTIN_CHANGE)),
        _ => Ok(()),
    }
}

/// IntegrationPatchDTO: the base fields; `resourceSet` and the discriminator (`integrationType`
/// or `type`, `field` in messages) may repeat the stored values.
fn parse_patch(p: IntegrationPatchDto, stored: Option<&Integration>, field: &str) -> Result<(BaseInput, Input)> {
    editable(stored)?;
    let given = match (p.integration_type.as_deref(), p.kind.as_deref()) {
        (Some(a), Some(b)) if a != b => return Err(Error::field("type", "must equal integrationType")),
        (a, b) => a.or(b),
    };
    crud::discriminator_repeated(field, given, stored.map(|s| s.int_type.as_str()))?;
    let base = BaseInput {
        resource_set: p.resource_set,
        ..patch_input(p.patch)?
    };
    let input = Input {
        kind: stored.map(|s| s.int_type.clone()).unwrap_or_default(),
        sync: 0,
        endpoint: String::new(),
        config: Map::new(),
        secret: None,
        secret_path: "clientSecret",
    };
    Ok((base, input))
}

/// §1.10 rule 4: an integration an access condition uses stays.
fn before_delete(w: &Write<'_>, id: Uuid) -> Result<()> {
    match w.st.access_conditions.values().find(|c| c.integration == id) {
        Some(c) => Err(Error::field(
            "accessConditions",
            format!("referenced by access condition {}", c.meta.named()),
        )),
        None => Ok(()),
    }
}

impl Resource for IntegrationsV2 {
    type Record = Integration;
    type Input = Input;
    type Dto = IntegrationV2Dto;
    type Patch = IntegrationPatchDto;
    const NAME: &'static str = "integrations";
    const LIST: ListSpec = ListSpec::new("integrations", Base::Scoped)
        .fields(FIELDS)
        .filters(V2_FILTERS);
    // §3.11: DELETE answers 200 (also for an id the set does not hold, §1.5).
    const DELETE: Option<StatusCode> = Some(StatusCode::OK);
    const ON_MISSING_DELETE: OnMissing = OnMissing::NoContent;
    const PATCH_NEEDS_STORED: bool = true;

    fn prepare(body: &mut Value, stored: Option<&Integration>) -> Result<()> {
        align_type(body)?;
        crud::discriminator_kept(
            body,
            "integrationType",
            stored.map(|s| s.int_type.as_str()),
            &INTEGRATION_TYPES,
        )
    }

    fn parse(app: &App, dto: IntegrationV2Dto, mode: Mode, stored: Option<&Integration>) -> Result<(BaseInput, Input)> {
        editable(stored)?;
        parse_v2(app, dto, mode, stored)
    }

    fn parse_patch(_: &App, p: IntegrationPatchDto, stored: Option<&Integration>) -> Result<(BaseInput, Input)> {
        parse_patch(p, stored, "integrationType")
    }

    fn create(_: &mut Write<'_>, input: Input, meta: Meta) -> Result<Integration> {
        create(input, meta)
    }

    fn replace(_: &mut Write<'_>, input: Input, i: &mut Integration) -> Result<()> {
        replace(input, i);
        Ok(())
    }

    fn editable(i: &Integration) -> Result<()> {
        editable(Some(i))
    }

    fn before_delete(w: &mut Write<'_>, _: &Author, _: Uuid, id: Uuid) -> Result<()> {
        before_delete(w, id)
    }

    fn render(_: &App, st: &Snapshot, i: &Integration) -> IntegrationV2Dto {
        v2_dto(st, i)
    }
}

impl Resource for IntegrationsV1 {
    type Record = Integration;
    type Input = Input;
    type Dto = IntegrationDto;
    type Patch = IntegrationPatchDto;
    const NAME: &'static str = "integrations";
    const LIST: ListSpec = ListSpec::new("integrations", Base::Scoped)
        .fields(FIELDS)
        .filters(V1_FILTERS);
    const DELETE: Option<StatusCode> = Some(StatusCode::OK);
    const ON_MISSING_DELETE: OnMissing = OnMissing::NoContent;
    const PATCH_NEEDS_STORED: bool = true;

    fn prepare(body: &mut Value, stored: Option<&Integration>) -> Result<()> {
        crud::discriminator_kept(body, "type", stored.map(|s| s.int_type.as_str()), &INTEGRATION_TYPES)
    }

    fn parse(app: &App, dto: IntegrationDto, mode: Mode, stored: Option<&Integration>) -> Result<(BaseInput, Input)> {
        editable(stored)?;
        parse_v1(app, dto, mode, stored)
    }

    fn parse_patch(_: &App, p: IntegrationPatchDto, stored: Option<&Integration>) -> Result<(BaseInput, Input)> {
        parse_patch(p, stored, "type")
    }

    fn create(_: &mut Write<'_>, input: Input, meta: Meta) -> Result<Integration> {
        create(input, meta)
    }

    fn replace(_: &mut Write<'_>, input: Input, i: &mut Integration) -> Result<()> {
        replace(input, i);
        Ok(())
    }

    fn editable(i: &Integration) -> Result<()> {
        editable(Some(i))
    }

    fn before_delete(w: &mut Write<'_>, _: &Author, _: Uuid, id: Uuid) -> Result<()> {
        before_delete(w, id)
    }

    fn render(_: &App, st: &Snapshot, i: &Integration) -> IntegrationDto {
        v1_dto(st, i)
    }
}

/// v2 filters `integrationType` on its own field; v1's DTO calls it `type`.
const V2_FILTERS: &[(&str, Filter)] = &[field_filter("type"), field_filter("integrationType")];
const V1_FILTERS: &[(&str, Filter)] = &[field_filter("type"), ("integrationType", Filter::Field("type"))];

/// Whether an integration of `kind` is a vendor one (`SensorA`, `CloudSecurityAIntegrationApi`).
pub fn vendor_type(kind: &str) -> bool {
    kind == SENSOR_A || kind == CLOUD_SECURITY_A
}
