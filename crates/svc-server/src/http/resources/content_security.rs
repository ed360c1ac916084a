//! Content security (contract §3.13): `SensorAAIDR` entries, without the `X-Svc-ResourceSet`
//! header (§1.4 rule 5: a write names its set in `resourceSet`, the default one when absent; reads
//! cover every set the caller may read). Guarded by `Access Policies` (§2.7). `encryptedToken` is
//! write-only and sealed. Stored, referenced by policies and reported in authorization events,
//! with no effect on a decision.

use serde_json::{Value, json};
use svc_api::Obj;
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_json, parse_base};
use super::crud::{self, OnMissing, Resource, RsFrom};
use crate::app::App;
use crate::domain::Meta;
use crate::domain::condition::ContentSecurity;
use crate::domain::credential::SecretFields;
use crate::error::{Error, Result};
use crate::http::api::{Api, Untyped};
use crate::http::list::{Base, ListSpec, RESOURCE_SET_FILTER, field_filter};
use crate::service::refs::{RefField, release};
use crate::service::write::{Author, Write};
use crate::state::State as Snapshot;

/// `/api/v1/content-security`.
pub struct ContentSecurities;

pub fn register(api: &mut Api<'_>) {
    crud::register::<ContentSecurities>(api, "/api/v1/content-security");
}

const TYPE: &str = "SensorAAIDR";

pub struct Input {
    base_url: String,
    fail_open: bool,
    timeout_ms: i32,
    max_retries: i32,
    token: Option<String>,
}

fn parse(app: &App, body: Value, mode: Mode, stored: Option<&ContentSecurity>) -> Result<(BaseInput, Input)> {
    let mut o = Obj::root(body)?;
    let base = parse_base(&mut o, mode, true)?;
    if mode == Mode::Patch
        && let (Some(b), Some(s)) = (base.resource_set, stored)
        && Some(b) != s.meta.rs
    {
        return Err(Error::field("resourceSet", "cannot be changed"));
    }
    if let (Some(rs), false) = (base.resource_set, mode == Mode::Patch)
        && !app.state().resource_set_exists(&rs)
    {
        return Err(Error::field("resourceSet", "unknown resource set"));
    }
    let t = o.opt_str("type")?;
    match (mode, t.as_deref()) {
        (_, Some(TYPE)) | (Mode::Patch, None) => {}
        (_, None) => return Err(Error::field("type", "is required")),
        (_, Some(_)) => return Err(Error::field("type", format!("must be {TYPE}"))),
    }
    o.ignore(&["accessPolicyCount"]);
    let mut input = Input {
        base_url: String::new(),
        fail_open: false,
        timeout_ms: 30_000,
        max_retries: 3,
        token: None,
    };
    if mode != Mode::Patch {
        input.base_url = o.req_str_len("baseUrl", 1, 2048)?;
        crate::upstream::check_base_url_field("baseUrl", &input.base_url, &app.cfg)?;
        input.token = o.opt_str_len("encryptedToken", 0, 8192)?.filter(|t| !t.is_empty());
        input.fail_open = o.opt_bool("failOpen")?.unwrap_or(false);
        input.timeout_ms = o.opt_i32_range("timeoutMs", 5000, 600_000)?.unwrap_or(30_000);
        input.max_retries = o.opt_i32_range("maxRetries", 0, 10)?.unwrap_or(3);
    }
    o.finish()?;
    Ok((base, input))
}

fn apply(input: Input, c: &mut ContentSecurity) {
    c.base_url = input.base_url;
    c.fail_open = input.fail_open;
    c.timeout_ms = input.timeout_ms;
    c.max_retries = input.max_retries;
    if let Some(t) = input.token {
        c.secrets.set("encryptedToken", t);
    }
}

/// `SensorAAIDRContentSecurityDTO`.
pub fn cs_json(st: &Snapshot, c: &ContentSecurity) -> Value {
    let mut o = serde_json::Map::new();
    o.insert("type".into(), json!(c.cs_type));
    o.extend(base_json(&c.meta, true));
    o.insert("baseUrl".into(), json!(c.base_url));
    o.insert("encryptedToken".into(), Value::Null);
    o.insert("failOpen".into(), json!(c.fail_open));
    o.insert("timeoutMs".into(), json!(c.timeout_ms));
    o.insert("maxRetries".into(), json!(c.max_retries));
    o.insert(
        "accessPolicyCount".into(),
        json!(st.idx.policy_count(RefField::ContentSecurity, c.meta.id)),
    );
    Value::Object(o)
}

impl Resource for ContentSecurities {
    type Record = ContentSecurity;
    type Input = Input;
    type Dto = Untyped;
    type Patch = Untyped;
    const NAME: &'static str = "content security entries";
    const RS: RsFrom = RsFrom::Body("resourceSet");
    const PATCH_NEEDS_STORED: bool = true;
    const LIST: ListSpec = ListSpec::new("entities", Base::Scoped)
        .fields(&[
            "type",
            "baseUrl",
            "failOpen",
            "timeoutMs",
            "maxRetries",
            "accessPolicyCount",
        ])
        .filters(&[field_filter("type"), RESOURCE_SET_FILTER]);
    // §3.13 lists only 204: deleting a missing entry answers it too.
    const ON_MISSING_DELETE: OnMissing = OnMissing::NoContent;

    fn parse(app: &App, body: Untyped, mode: Mode, stored: Option<&ContentSecurity>) -> Result<(BaseInput, Input)> {
        parse(app, body.0, mode, stored)
    }

    fn parse_patch(app: &App, body: Untyped, stored: Option<&ContentSecurity>) -> Result<(BaseInput, Input)> {
        Self::parse(app, body, Mode::Patch, stored)
    }

    fn create(_: &mut Write<'_>, input: Input, meta: Meta) -> Result<ContentSecurity> {
        let mut c = ContentSecurity {
            meta,
            cs_type: TYPE.into(),
            base_url: String::new(),
            fail_open: false,
            timeout_ms: 30_000,
            max_retries: 3,
            secrets: SecretFields::default(),
        };
        apply(input, &mut c);
        Ok(c)
    }

    fn replace(_: &mut Write<'_>, input: Input, c: &mut ContentSecurity) -> Result<()> {
        apply(input, c);
        Ok(())
    }

    fn before_delete(w: &mut Write<'_>, author: &Author, _: Uuid, id: Uuid) -> Result<()> {
        release(w, author, id, RefField::ContentSecurity)
    }

    fn render(_: &App, st: &Snapshot, c: &ContentSecurity) -> Untyped {
        Untyped(cs_json(st, c))
    }
}
