//! Integrations (contract §3.11): one stored entity, shown as `/api/v2/integrations` (variants by
//! `integrationType`, vendor fields at the top level) and `/api/v1/integrations` (vendor fields in
//! `integrationJSON`). `clientSecret` is write-only and sealed (§1.9). The built-in `GeoIP` and
//! `Time` integrations of each resource set cannot be created, changed or deleted (400); an
//! integration an access condition uses cannot be deleted (§1.10 rule 4).

use axum::http::StatusCode;
use serde_json::{Map, Value, json};
use svc_api::Obj;
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_json, parse_base};
use super::crud::{self, OnMissing, Resource};
use crate::app::App;
use crate::config::Config;
use crate::credential::types::check_url;
use crate::domain::Meta;
use crate::domain::condition::{CLOUD_SECURITY_A, INTEGRATION_TYPES, Integration, SENSOR_A, builtin_type};
use crate::domain::credential::SecretFields;
use crate::error::{Error, Result};
use crate::http::api::{Api, Untyped};
use crate::http::list::{Base, Filter, ListSpec, field_filter};
use crate::service::write::{Author, Write};
use crate::state::State as Snapshot;

pub fn register(api: &mut Api<'_>) {
    crud::register::<Integrations<false>>(api, "/api/v2/integrations");
    crud::register::<Integrations<true>>(api, "/api/v1/integrations");
}

const RO: &[&str] = &["lastSync", "lastSyncStatus", "accessConditionsCount"];
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

/// The discriminator of a request against the stored one (§1.5: it cannot change; a PATCH may
/// repeat it). `field` names it in messages.
fn kind_of(given: Option<String>, mode: Mode, stored: Option<&Integration>, field: &str) -> Result<String> {
    let stored_kind = stored.map(|s| s.int_type.as_str());
    match (mode, given.as_deref(), stored_kind) {
        (Mode::Patch, Some(k), Some(s)) if k != s => Err(Error::field(field, "cannot be changed")),
        (Mode::Patch, _, Some(s)) => Ok(s.to_string()),
        (_, None, _) => Err(Error::field(field, "is required")),
        (_, Some(k), _) if !INTEGRATION_TYPES.contains(&k) => Err(Error::field(
            field,
            format!("must be one of {}", INTEGRATION_TYPES.join(", ")),
        )),
        (_, Some(k), Some(s)) if k != s => Err(Error::field(field, "cannot be changed")),
        (Mode::Create, Some(k), _) if builtin_type(k) => Err(Error::field(field, BUILTIN_CREATE)),
        (_, Some(k), _) => Ok(k.to_string()),
    }
}

/// The vendor fields (`clientId`, `clientSecret`, `tokenUrl`, `audience`) of `kind` from `o`.
fn vendor_fields(o: &mut Obj, kind: &str, cfg: &Config) -> Result<(Map<String, Value>, Option<String>)> {
    let mut m = Map::new();
    let client_id = o.req_str_len("clientId", 1, 256)?;
    m.insert("clientId".into(), json!(client_id));
    let secret = o.opt_str_len("clientSecret", 0, 4096)?.filter(|s| !s.is_empty());
    let token_url = o.req_str_len("tokenUrl", 1, 2048)?;
    check_url(&o.path("tokenUrl"), &token_url, cfg)?;
    m.insert("tokenUrl".into(), json!(token_url));
    let audience = if kind == CLOUD_SECURITY_A {
        Some(o.req_str_len("audience", 1, 2048)?)
    } else {
        o.opt_str_len("audience", 0, 2048)?.filter(|a| !a.is_empty())
    };
    m.insert("audience".into(), json!(audience));
    Ok((m, secret))
}

/// The fields shared by both views, and by discovery integrations (§3.12):
/// `syncFrequencySeconds`, `endpoint`.
pub fn common_fields(o: &mut Obj, cfg: &Config) -> Result<(i32, String)> {
    let sync = o.req_i32_range("syncFrequencySeconds", 300, 3600)?;
    let endpoint = o.req_str_len("endpoint", 1, 2048)?;
    crate::upstream::check_base_url_field("endpoint", &endpoint, cfg)?;
    Ok((sync, endpoint))
}

/// A body of either view: v1 (`v1`: the discriminator is `type`, the vendor fields are in
/// `integrationJSON`) or v2 (`integrationType`, vendor fields at the top level).
fn parse(app: &App, body: Value, mode: Mode, stored: Option<&Integration>, v1: bool) -> Result<(BaseInput, Input)> {
    if stored.is_some_and(|s| s.builtin) {
        return Err(Error::bad(BUILTIN_CHANGE));
    }
    let mut o = Obj::root(body)?;
    let base = parse_base(&mut o, mode, true)?;
    let kind = if v1 {
        kind_of(o.opt_str("type")?, mode, stored, "type")?
    } else {
        let it = o.opt_str("integrationType")?;
        let t = o.opt_str("type")?;
        let given = match (it, t) {
            (Some(a), Some(b)) if a != b => return Err(Error::field("type", "must equal integrationType")),
            (Some(a), _) | (None, Some(a)) => Some(a),
            (None, None) => None,
        };
        kind_of(given, mode, stored, "integrationType")?
    };
    o.ignore(RO);
    let mut input = Input {
        kind,
        sync: 0,
        endpoint: String::new(),
        config: Map::new(),
        secret: None,
        secret_path: if v1 {
            "integrationJSON.clientSecret"
        } else {
            "clientSecret"
        },
    };
    if mode != Mode::Patch {
        (input.sync, input.endpoint) = common_fields(&mut o, &app.cfg)?;
        (input.config, input.secret) = if v1 {
            let mut j = o.req_obj("integrationJSON")?;
            let fields = vendor_fields(&mut j, &input.kind, &app.cfg)?;
            j.finish()?;
            fields
        } else {
            vendor_fields(&mut o, &input.kind, &app.cfg)?
        };
    }
    o.finish()?;
    Ok((base, input))
}

pub fn conditions_count(st: &Snapshot, id: Uuid) -> usize {
    st.access_conditions.values().filter(|c| c.integration == id).count()
}

/// The fields both views share after the base block.
fn common_json(st: &Snapshot, i: &Integration, o: &mut Map<String, Value>) {
    o.insert("syncFrequencySeconds".into(), json!(i.sync_frequency_seconds));
    o.insert("lastSync".into(), json!(i.last_sync));
    o.insert("lastSyncStatus".into(), json!(i.last_sync_status));
    o.insert("endpoint".into(), json!(i.endpoint));
    o.insert("accessConditionsCount".into(), json!(conditions_count(st, i.meta.id)));
}

/// The vendor fields with `clientSecret` as `null` (v2) or removed (v1 `integrationJSON`).
fn vendor_json(i: &Integration, with_secret: bool) -> Map<String, Value> {
    let mut o = Map::new();
    if i.builtin {
        return o;
    }
    o.insert(
        "clientId".into(),
        i.config.get("clientId").cloned().unwrap_or(Value::Null),
    );
    if with_secret {
        o.insert("clientSecret".into(), Value::Null);
    }
    o.insert(
        "tokenUrl".into(),
        i.config.get("tokenUrl").cloned().unwrap_or(Value::Null),
    );
    o.insert(
        "audience".into(),
        i.config.get("audience").cloned().unwrap_or(Value::Null),
    );
    o
}

/// `IntegrationV2DTO` (its variant).
pub fn v2_json(st: &Snapshot, i: &Integration) -> Value {
    let mut o = Map::new();
    o.insert("integrationType".into(), json!(i.int_type));
    o.insert("type".into(), json!(i.int_type));
    o.extend(base_json(&i.meta, true));
    common_json(st, i, &mut o);
    o.extend(vendor_json(i, true));
    Value::Object(o)
}

/// `IntegrationDTO` (v1).
pub fn v1_json(st: &Snapshot, i: &Integration) -> Value {
    let mut o = base_json(&i.meta, true);
    o.insert("type".into(), json!(i.int_type));
    common_json(st, i, &mut o);
    o.insert("integrationJSON".into(), Value::Object(vendor_json(i, false)));
    Value::Object(o)
}

/// `/api/v2/integrations` (`Integrations<false>`) and `/api/v1/integrations`
/// (`Integrations<true>`): two views of the same entities.
pub struct Integrations<const V1: bool>;

impl<const V1: bool> Resource for Integrations<V1> {
    type Record = Integration;
    type Input = Input;
    type Dto = Untyped;
    type Patch = Untyped;
    const NAME: &'static str = "integrations";
    const LIST: ListSpec = ListSpec::new("integrations", Base::Scoped)
        .fields(FIELDS)
        .filters(if V1 { V1_FILTERS } else { V2_FILTERS });
    // §3.11: DELETE answers 200 (also for an id the set does not hold, §1.5).
    const DELETE: Option<StatusCode> = Some(StatusCode::OK);
    const ON_MISSING_DELETE: OnMissing = OnMissing::NoContent;
    const PATCH_NEEDS_STORED: bool = true;

    fn parse(app: &App, body: Untyped, mode: Mode, stored: Option<&Integration>) -> Result<(BaseInput, Input)> {
        parse(app, body.0, mode, stored, V1)
    }

    fn parse_patch(app: &App, body: Untyped, stored: Option<&Integration>) -> Result<(BaseInput, Input)> {
        Self::parse(app, body, Mode::Patch, stored)
    }

    fn create(_: &mut Write<'_>, input: Input, meta: Meta) -> Result<Integration> {
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

    fn replace(_: &mut Write<'_>, input: Input, i: &mut Integration) -> Result<()> {
        i.sync_frequency_seconds = input.sync;
        i.endpoint = input.endpoint;
        i.config = input.config;
        if let Some(s) = input.secret {
            i.secrets.set("clientSecret", s);
        }
        Ok(())
    }

    fn editable(i: &Integration) -> Result<()> {
        if i.builtin {
            return Err(Error::bad(BUILTIN_CHANGE));
        }
        Ok(())
    }

    /// §1.10 rule 4: an integration an access condition uses stays.
    fn before_delete(w: &mut Write<'_>, _: &Author, _: Uuid, id: Uuid) -> Result<()> {
        match w.st.access_conditions.values().find(|c| c.integration == id) {
            Some(c) => Err(Error::field(
                "accessConditions",
                format!("referenced by access condition {}", c.meta.named()),
            )),
            None => Ok(()),
        }
    }

    fn render(_: &App, st: &Snapshot, i: &Integration) -> Untyped {
        Untyped(if V1 { v1_json(st, i) } else { v2_json(st, i) })
    }
}

/// v2 filters `integrationType` on its own field; v1's DTO calls it `type`.
const V2_FILTERS: &[(&str, Filter)] = &[field_filter("type"), field_filter("integrationType")];
const V1_FILTERS: &[(&str, Filter)] = &[field_filter("type"), ("integrationType", Filter::Field("type"))];

/// Whether an integration of `kind` is a vendor one (`SensorA`, `CloudSecurityAIntegrationApi`).
pub fn vendor_type(kind: &str) -> bool {
    kind == SENSOR_A || kind == CLOUD_SECURITY_A
}
