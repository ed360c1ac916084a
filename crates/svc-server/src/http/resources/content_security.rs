//! Content security (contract §3.13): `SensorAAIDR` entries, without the `X-Svc-ResourceSet`
//! header (§1.4 rule 5: a write names its set in `resourceSet`, the default one when absent; reads
//! cover every set the caller may read). Guarded by `Access Policies` (§2.7). `encryptedToken` is
//! write-only and sealed. Stored, referenced by policies and reported in authorization events,
//! with no effect on a decision.

use serde_json::Value;
use svc_api::mgmt::{ContentSecurityDto, ContentSecurityPatchDto, SensorAAidrContentSecurityDto};
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_dto, base_input, patch_input};
use super::crud::{self, OnMissing, Resource, RsFrom};
use crate::app::App;
use crate::domain::Meta;
use crate::domain::condition::ContentSecurity;
use crate::domain::credential::SecretFields;
use crate::error::{Error, Result};
use crate::http::api::Api;
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

fn parse(app: &App, dto: ContentSecurityDto) -> Result<(BaseInput, Input)> {
    let ContentSecurityDto::SensorAAidr(d) = dto;
    let base = base_input(d.base, d.resource_set)?;
    if let Some(rs) = base.resource_set
        && !app.state().resource_set_exists(&rs)
    {
        return Err(Error::field("resourceSet", "unknown resource set"));
    }
    crate::upstream::check_base_url_field("baseUrl", &d.base_url, &app.cfg)?;
    let input = Input {
        base_url: d.base_url,
        fail_open: d.fail_open,
        timeout_ms: d.timeout_ms,
        max_retries: d.max_retries,
        token: d.encrypted_token.filter(|t| !t.is_empty()),
    };
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
pub fn cs_dto(st: &Snapshot, c: &ContentSecurity) -> ContentSecurityDto {
    ContentSecurityDto::SensorAAidr(SensorAAidrContentSecurityDto {
        base: base_dto(&c.meta),
        resource_set: Some(c.meta.scope()),
        base_url: c.base_url.clone(),
        encrypted_token: None,
        fail_open: c.fail_open,
        timeout_ms: c.timeout_ms,
        max_retries: c.max_retries,
        access_policy_count: crud::count(st.idx.policy_count(RefField::ContentSecurity, c.meta.id)),
    })
}

/// [`cs_dto`] as JSON, for the DTOs not typed yet (`AccessPolicyDTO.contentSecurity`, v1).
pub fn cs_json(st: &Snapshot, c: &ContentSecurity) -> Value {
    crud::to_json(&cs_dto(st, c))
}

impl Resource for ContentSecurities {
    type Record = ContentSecurity;
    type Input = Input;
    type Dto = ContentSecurityDto;
    type Patch = ContentSecurityPatchDto;
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

    fn parse(app: &App, dto: ContentSecurityDto, _: Mode, _: Option<&ContentSecurity>) -> Result<(BaseInput, Input)> {
        parse(app, dto)
    }

    /// ContentSecurityPatchDTO: the base fields; `resourceSet` and `type` may repeat the stored
    /// values.
    fn parse_patch(
        _: &App,
        p: ContentSecurityPatchDto,
        stored: Option<&ContentSecurity>,
    ) -> Result<(BaseInput, Input)> {
        if let (Some(b), Some(s)) = (p.resource_set, stored)
            && Some(b) != s.meta.rs
        {
            return Err(Error::field("resourceSet", "cannot be changed"));
        }
        let input = Input {
            base_url: String::new(),
            fail_open: false,
            timeout_ms: 30_000,
            max_retries: 3,
            token: None,
        };
        Ok((patch_input(p.patch)?, input))
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

    fn render(_: &App, st: &Snapshot, c: &ContentSecurity) -> ContentSecurityDto {
        cs_dto(st, c)
    }
}
