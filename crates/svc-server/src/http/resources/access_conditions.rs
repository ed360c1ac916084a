//! Access conditions (contract §3.10): one stored condition, shown as `/api/v2/access-conditions`
//! (variant fields at the top level, discriminator `integrationType`) and
//! `/api/v1/access-conditions` (variant fields in `conditions`, the variant chosen by the
//! referenced integration's type). A condition an active policy references cannot be deleted;
//! inactive policies lose the reference (§1.10 rules 2 and 3).

use serde_json::Value;
use svc_api::mgmt::{
    AccessConditionCommon, AccessConditionDto, AccessConditionPatchDto, AccessConditionV2Dto,
    CloudSecurityAAccessConditionDto, CloudSecurityAConditionFields, GeoIpAccessConditionDto, GeoIpConditionFields,
    GeoIpLocationDto, GeoIpSubdivisionDto, ScheduleDto, SensorAAccessConditionDto, SensorAConditionFields,
    TimeAccessConditionDto, TimeConditionFields, TimezoneDto, WeekDay, WeekDayDto,
};
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_dto, base_input, patch_input};
use super::crud::{self, Resource};
use super::integrations::{self as ints, vendor_type};
use crate::app::App;
use crate::domain::Meta;
use crate::domain::condition::{
    AccessCondition, CLOUD_SECURITY_A, ConditionSpec, GEOIP, INTEGRATION_TYPES, Integration, Location, SENSOR_A,
    Subdivision, TIME, Timezone, Window, builtin_type,
};
use crate::error::{Error, Result};
use crate::http::api::Api;
use crate::http::list::{Base, ListSpec, field_filter};
use crate::service::refs::{RefField, release};
use crate::service::write::{Author, Write};
use crate::state::State as Snapshot;

pub fn register(api: &mut Api<'_>) {
    crud::register::<ConditionsV2>(api, "/api/v2/access-conditions");
    crud::register::<ConditionsV1>(api, "/api/v1/access-conditions");
}

const FIELDS: &[&str] = &[
    "integrationType",
    "integrationID",
    "maxLastSeenSeconds",
    "accessPolicyCount",
];

pub struct Input {
    kind: &'static str,
    integration: Option<Uuid>,
    max_last_seen: Option<i32>,
    spec: Option<ConditionSpec>,
}

fn kind_name(k: &str) -> Option<&'static str> {
    INTEGRATION_TYPES.iter().copied().find(|t| *t == k)
}

/// `HH:mm` (24 h) as minutes after midnight; `24:00` is accepted as an end (the end of the day).
fn clock(s: &str, end: bool) -> Option<u16> {
    let (h, m) = s.split_once(':')?;
    if h.len() != 2 || m.len() != 2 || !h.bytes().chain(m.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m): (u16, u16) = (h.parse().ok()?, m.parse().ok()?);
    match (h, m) {
        (24, 0) if end => Some(24 * 60),
        (0..=23, 0..=59) => Some(h * 60 + m),
        _ => None,
    }
}

fn hhmm(min: u16) -> String {
    format!("{:02}:{:02}", min / 60, min % 60)
}

/// The rules of a subdivision its schema cannot state (`at`: its path).
fn subdivision(d: GeoIpSubdivisionDto, country: Option<&str>, at: &str) -> Result<Subdivision> {
    let field = |k: &str| format!("{at}.{k}");
    let alpha2_code = match d.alpha2_code {
        Some(c) if (1..=3).contains(&c.len()) && c.bytes().all(|b| b.is_ascii_alphanumeric()) => {
            Some(c.to_ascii_uppercase())
        }
        Some(_) => return Err(Error::field(field("alpha2Code"), "must be 1 to 3 letters or digits")),
        None => None,
    };
    let subdivision_code = match d.subdivision_code {
        Some(c) => {
            let ok = c.split_once('-').is_some_and(|(cc, s)| {
                cc.len() == 2
                    && cc.bytes().all(|b| b.is_ascii_alphabetic())
                    && (1..=3).contains(&s.len())
                    && s.bytes().all(|b| b.is_ascii_alphanumeric())
            });
            if !ok {
                return Err(Error::field(
                    field("subdivisionCode"),
                    "must be an ISO 3166-2 code such as US-TX",
                ));
            }
            let c = c.to_ascii_uppercase();
            if country.is_some_and(|cc| !c.starts_with(&format!("{cc}-"))) {
                return Err(Error::field(
                    field("subdivisionCode"),
                    "must be in the location's country (alpha2Code)",
                ));
            }
            Some(c)
        }
        None => None,
    };
    let s = Subdivision {
        name: d.name,
        alpha2_code,
        subdivision_code,
    };
    if s.code(country).is_none() {
        return Err(Error::field(
            field("subdivisionCode"),
            "is required (or alpha2Code with the location's alpha2Code)",
        ));
    }
    Ok(s)
}

fn location(l: GeoIpLocationDto, at: &str) -> Result<Location> {
    let alpha2_code = match l.alpha2_code {
        Some(c) if c.len() == 2 && c.bytes().all(|b| b.is_ascii_alphabetic()) => Some(c.to_ascii_uppercase()),
        Some(_) => {
            return Err(Error::field(
                format!("{at}.alpha2Code"),
                "must be an ISO 3166-1 alpha-2 code",
            ));
        }
        None => None,
    };
    let subdivisions = l
        .subdivisions
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, d)| subdivision(d, alpha2_code.as_deref(), &format!("{at}.subdivisions[{i}]")))
        .collect::<Result<_>>()?;
    Ok(Location {
        short_name: l.short_name,
        alpha2_code,
        subdivisions,
    })
}

fn window(w: ScheduleDto, at: &str) -> Result<Window> {
    let field = |k: &str| format!("{at}.{k}");
    let start = clock(&w.start_time, false).ok_or_else(|| Error::field(field("startTime"), "must be HH:mm (24 h)"))?;
    let end = clock(&w.end_time, true).ok_or_else(|| Error::field(field("endTime"), "must be HH:mm (24 h)"))?;
    if end <= start {
        return Err(Error::field(field("endTime"), "must be after startTime"));
    }
    let weekday = match (w.week_day.name, w.week_day.ordinal) {
        (Some(n), Some(i)) if i32::from(n.ordinal()) != i => {
            return Err(Error::field(field("weekDay.ordinal"), "does not match name"));
        }
        (_, Some(i)) => i as u8,
        (Some(n), None) => n.ordinal(),
        (None, None) => return Err(Error::field(field("weekDay.name"), "is required")),
    };
    Ok(Window { weekday, start, end })
}

/// `maxLastSeenSeconds` is required for the vendor types (`at`: where the variant's fields are).
fn last_seen(max: Option<i32>, kind: &str, at: &str) -> Result<Option<i32>> {
    if vendor_type(kind) && max.is_none() {
        return Err(Error::field(
            svc_api::reader::join(at, "maxLastSeenSeconds"),
            "is required",
        ));
    }
    Ok(max)
}

/// A variant's fields, read: the rules their schema cannot state.
enum Fields {
    SensorA(SensorAConditionFields),
    CloudSecurityA(CloudSecurityAConditionFields),
    GeoIp(GeoIpConditionFields),
    Time(TimeConditionFields),
}

impl Fields {
    fn kind(&self) -> &'static str {
        match self {
            Fields::SensorA(_) => SENSOR_A,
            Fields::CloudSecurityA(_) => CLOUD_SECURITY_A,
            Fields::GeoIp(_) => GEOIP,
            Fields::Time(_) => TIME,
        }
    }

    /// Reads `conditions` (v1) as the variant of `kind`.
    fn read(kind: &str, conditions: serde_json::Map<String, Value>) -> Result<Fields> {
        const AT: &str = "conditions";
        let v = Value::Object(conditions);
        Ok(match kind {
            SENSOR_A => Fields::SensorA(svc_api::schema::read_at(v, AT)?),
            CLOUD_SECURITY_A => Fields::CloudSecurityA(svc_api::schema::read_at(v, AT)?),
            GEOIP => Fields::GeoIp(svc_api::schema::read_at(v, AT)?),
            _ => Fields::Time(svc_api::schema::read_at(v, AT)?),
        })
    }

    /// The stored spec and `maxLastSeenSeconds` (`at`: where the fields are, for messages).
    fn spec(self, at: &str) -> Result<(ConditionSpec, Option<i32>)> {
        let kind = self.kind();
        let path = |k: &str| svc_api::reader::join(at, k);
        Ok(match self {
            Fields::SensorA(f) => (
                ConditionSpec::SensorA {
                    match_local_ip: f.match_local_ip,
                    match_hostname: f.match_hostname,
                    match_mac_address: f.match_mac_address,
                    match_serial_number: f.match_serial_number,
                    prevent_restricted_functionality_mode: f.prevent_restricted_functionality_mode,
                },
                last_seen(f.max_last_seen_seconds, kind, at)?,
            ),
            Fields::CloudSecurityA(f) => (
                ConditionSpec::CloudSecurityA {
                    serverless: f.serverless,
                    container_cluster_connected: f.container_cluster_connected,
                },
                last_seen(f.max_last_seen_seconds, kind, at)?,
            ),
            Fields::GeoIp(f) => {
                let locations = f
                    .locations
                    .unwrap_or_default()
                    .into_iter()
                    .enumerate()
                    .map(|(i, l)| location(l, &format!("{}[{i}]", path("locations"))))
                    .collect::<Result<Vec<_>>>()?;
                if locations.is_empty() {
                    return Err(Error::field(path("locations"), "must have at least one entry"));
                }
                (ConditionSpec::GeoIp { locations }, f.max_last_seen_seconds)
            }
            Fields::Time(f) => {
                let schedule = f
                    .schedule
                    .unwrap_or_default()
                    .into_iter()
                    .enumerate()
                    .map(|(i, w)| window(w, &format!("{}[{i}]", path("schedule"))))
                    .collect::<Result<Vec<_>>>()?;
                if schedule.is_empty() {
                    return Err(Error::field(path("schedule"), "must have at least one entry"));
                }
                let t = f.timezone;
                if jiff::tz::db().get(&t.timezone).is_err() {
                    return Err(Error::field(path("timezone.timezone"), "unknown IANA time zone"));
                }
                let timezone = Timezone {
                    timezone: t.timezone,
                    group: t.group,
                    label: t.label,
                };
                (ConditionSpec::Time { schedule, timezone }, f.max_last_seen_seconds)
            }
        })
    }
}

/// A v2 body: the variant's fields at the top level.
fn parse_v2(dto: AccessConditionV2Dto, stored: Option<&AccessCondition>) -> Result<(BaseInput, Input)> {
    let (common, fields) = match dto {
        AccessConditionV2Dto::SensorA(v) => (v.common, Fields::SensorA(v.fields)),
        AccessConditionV2Dto::CloudSecurityAIntegrationApi(v) => (v.common, Fields::CloudSecurityA(v.fields)),
        AccessConditionV2Dto::SvcGeoIPCondition(v) => (v.common, Fields::GeoIp(v.fields)),
        AccessConditionV2Dto::SvcTimeCondition(v) => (v.common, Fields::Time(v.fields)),
    };
    let kind = fields.kind();
    if stored.is_some_and(|s| s.int_type() != kind) {
        return Err(Error::field("integrationType", "cannot be changed"));
    }
    let base = base_input(common.base, common.resource_set)?;
    if common.integration_id.is_none() && !builtin_type(kind) {
        return Err(Error::field("integrationID", "is required"));
    }
    let (spec, max) = fields.spec("")?;
    let input = Input {
        kind,
        integration: common.integration_id,
        max_last_seen: max,
        spec: Some(spec),
    };
    Ok((base, input))
}

/// A v1 body: the variant chosen by the integration's type, its fields in `conditions`.
fn parse_v1(app: &App, dto: AccessConditionDto, stored: Option<&AccessCondition>) -> Result<(BaseInput, Input)> {
    let base = base_input(dto.base, dto.resource_set)?;
    // Ids are unique per type across resource sets (§1.2): the type is read here, the resource
    // set is checked by `check` against the unit's state.
    let kind = match (dto.integration_id, dto.integration_type.as_deref().and_then(kind_name)) {
        (Some(id), _) => {
            let st = app.state();
            let i = st
                .integrations
                .get(&id)
                .ok_or_else(|| Error::field("integrationID", "unknown integration"))?;
            kind_name(&i.int_type).expect("stored types are known")
        }
        (None, Some(k)) if builtin_type(k) => k,
        (None, _) => return Err(Error::field("integrationID", "is required")),
    };
    if let Some(s) = stored
        && s.int_type() != kind
    {
        return Err(Error::field(
            "integrationID",
            format!(
                "must be a {} integration: a condition's type cannot be changed",
                s.int_type()
            ),
        ));
    }
    let (spec, max) = Fields::read(kind, dto.conditions)?.spec("conditions")?;
    let input = Input {
        kind,
        integration: dto.integration_id,
        max_last_seen: max,
        spec: Some(spec),
    };
    Ok((base, input))
}

/// The condition's integration: the given one, or the resource set's built-in one.
fn resolve_integration(w: &Write<'_>, input: &Input, rs: Option<Uuid>) -> Result<Uuid> {
    match (input.integration, rs) {
        (Some(id), _) => Ok(id),
        (None, Some(rs)) => crate::service::integrations::builtin(&w.st, rs, input.kind)
            .ok_or_else(|| Error::internal("a resource set without its built-in integrations")),
        (None, None) => Err(Error::field("integrationID", "is required")),
    }
}

/// The variant's fields as the wire shows them. `id`s (our choice): locations numbered from 1
/// within the condition, subdivisions numbered from 1 across the condition.
fn fields_dto(c: &AccessCondition) -> Fields {
    let max_last_seen_seconds = c.max_last_seen_seconds;
    match &c.spec {
        ConditionSpec::SensorA {
            match_local_ip,
            match_hostname,
            match_mac_address,
            match_serial_number,
            prevent_restricted_functionality_mode,
        } => Fields::SensorA(SensorAConditionFields {
            max_last_seen_seconds,
            match_local_ip: *match_local_ip,
            match_hostname: *match_hostname,
            match_mac_address: *match_mac_address,
            match_serial_number: *match_serial_number,
            prevent_restricted_functionality_mode: *prevent_restricted_functionality_mode,
        }),
        ConditionSpec::CloudSecurityA {
            serverless,
            container_cluster_connected,
        } => Fields::CloudSecurityA(CloudSecurityAConditionFields {
            max_last_seen_seconds,
            serverless: *serverless,
            container_cluster_connected: *container_cluster_connected,
        }),
        ConditionSpec::GeoIp { locations } => {
            let mut sub_id = 0;
            let locations = locations
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let loc_id = i as i32 + 1;
                    let subdivisions = l
                        .subdivisions
                        .iter()
                        .map(|s| {
                            sub_id += 1;
                            GeoIpSubdivisionDto {
                                id: sub_id,
                                name: s.name.clone(),
                                alpha2_code: s.alpha2_code.clone(),
                                subdivision_code: s.subdivision_code.clone(),
                                geoip_access_condition_location_id: loc_id,
                            }
                        })
                        .collect();
                    GeoIpLocationDto {
                        id: loc_id,
                        short_name: l.short_name.clone(),
                        alpha2_code: l.alpha2_code.clone(),
                        subdivisions: Some(subdivisions),
                        geoip_access_condition_id: c.meta.seq,
                    }
                })
                .collect();
            Fields::GeoIp(GeoIpConditionFields {
                max_last_seen_seconds,
                locations: Some(locations),
            })
        }
        ConditionSpec::Time { schedule, timezone } => Fields::Time(TimeConditionFields {
            max_last_seen_seconds,
            schedule: Some(
                schedule
                    .iter()
                    .map(|w| {
                        let day = WeekDay::ALL[w.weekday as usize];
                        ScheduleDto {
                            start_time: hhmm(w.start),
                            end_time: hhmm(w.end),
                            week_day: WeekDayDto {
                                name: Some(day),
                                ordinal: Some(i32::from(w.weekday)),
                            },
                        }
                    })
                    .collect(),
            ),
            timezone: TimezoneDto {
                timezone: timezone.timezone.clone(),
                group: timezone.group.clone(),
                label: timezone.label.clone(),
            },
        }),
    }
}

pub fn policy_count(st: &Snapshot, id: Uuid) -> usize {
    st.idx.policy_count(RefField::AccessCondition, id)
}

/// The condition's integration, for a reader who `may` read it by itself (issue 31: embedded
/// resources follow the reader's permissions); `None` for others, who see `integrationID`.
fn integration_for<'s>(
    st: &'s Snapshot,
    c: &AccessCondition,
    may: &impl Fn(crate::domain::Perm, Uuid) -> bool,
) -> Option<&'s crate::domain::condition::Integration> {
    st.integrations
        .get(&c.integration)
        .map(|i| i.as_ref())
        .filter(|i| may(crate::domain::Perm::Integrations, i.meta.scope()))
}

/// `AccessConditionV2DTO` (its variant).
pub fn v2_dto(
    st: &Snapshot,
    c: &AccessCondition,
    may: &impl Fn(crate::domain::Perm, Uuid) -> bool,
) -> AccessConditionV2Dto {
    let common = AccessConditionCommon {
        base: base_dto(&c.meta),
        resource_set: Some(c.meta.scope()),
        id: c.meta.seq,
        integration_id: Some(c.integration),
        integration: integration_for(st, c, may).map(|i| ints::v2_dto(st, i)),
        access_policy_count: crud::count(policy_count(st, c.meta.id)),
    };
    match fields_dto(c) {
        Fields::SensorA(fields) => AccessConditionV2Dto::SensorA(SensorAAccessConditionDto { common, fields }),
        Fields::CloudSecurityA(fields) => {
            AccessConditionV2Dto::CloudSecurityAIntegrationApi(CloudSecurityAAccessConditionDto { common, fields })
        }
        Fields::GeoIp(fields) => AccessConditionV2Dto::SvcGeoIPCondition(GeoIpAccessConditionDto { common, fields }),
        Fields::Time(fields) => AccessConditionV2Dto::SvcTimeCondition(TimeAccessConditionDto { common, fields }),
    }
}

/// `AccessConditionDTO` (v1): `conditions` holds the variant's fields (without
/// `maxLastSeenSeconds` for a built-in type that has none).
pub fn v1_dto(
    st: &Snapshot,
    c: &AccessCondition,
    may: &impl Fn(crate::domain::Perm, Uuid) -> bool,
) -> AccessConditionDto {
    let fields = match fields_dto(c) {
        Fields::SensorA(f) => crud::to_json(&f),
        Fields::CloudSecurityA(f) => crud::to_json(&f),
        Fields::GeoIp(f) => crud::to_json(&f),
        Fields::Time(f) => crud::to_json(&f),
    };
    let mut conditions = match fields {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    if !vendor_type(c.int_type()) && c.max_last_seen_seconds.is_none() {
        conditions.remove("maxLastSeenSeconds");
    }
    AccessConditionDto {
        base: base_dto(&c.meta),
        resource_set: Some(c.meta.scope()),
        id: c.meta.seq,
        integration_id: Some(c.integration),
        integration: integration_for(st, c, may).map(|i| ints::v1_dto(st, i)),
        conditions,
        access_policy_count: crud::count(policy_count(st, c.meta.id)),
        integration_type: Some(c.int_type().to_string()),
    }
}

/// [`v1_dto`] as JSON, for the DTOs not typed yet (`AccessPolicyDTO.accessConditions`, v1).
pub fn v1_condition_json(
    st: &Snapshot,
    c: &AccessCondition,
    may: &impl Fn(crate::domain::Perm, Uuid) -> bool,
) -> Value {
    crud::to_json(&v1_dto(st, c, may))
}

/// `/api/v2/access-conditions`: the variants of `AccessConditionV2DTO`.
pub struct ConditionsV2;

/// `/api/v1/access-conditions`: the same conditions as `AccessConditionDTO`.
pub struct ConditionsV1;

const LIST: ListSpec = ListSpec::new("accessConditions", Base::Scoped)
    .fields(FIELDS)
    .filters(&[field_filter("integrationType"), field_filter("integrationID")]);

/// AccessConditionPatchDTO: the base fields; `resourceSet` and (v2: `v2`) `integrationType` may
/// repeat the stored values. v1 shows `integrationType` read-only: a PATCH ignores it.
fn parse_patch(p: AccessConditionPatchDto, stored: Option<&AccessCondition>, v2: bool) -> Result<(BaseInput, Input)> {
    if v2 {
        crud::discriminator_repeated(
            "integrationType",
            p.integration_type.as_deref(),
            stored.map(|s| s.int_type()),
        )?;
    }
    let base = BaseInput {
        resource_set: p.resource_set,
        ..patch_input(p.patch)?
    };
    let input = Input {
        kind: stored.map_or(GEOIP, |s| s.int_type()),
        integration: None,
        max_last_seen: None,
        spec: None,
    };
    Ok((base, input))
}

fn create(w: &mut Write<'_>, input: Input, meta: Meta) -> Result<AccessCondition> {
    let integration = resolve_integration(w, &input, meta.rs)?;
    Ok(AccessCondition {
        meta,
        integration,
        max_last_seen_seconds: input.max_last_seen,
        spec: input.spec.expect("parsed on create"),
    })
}

fn replace(w: &mut Write<'_>, input: Input, c: &mut AccessCondition) -> Result<()> {
    c.integration = resolve_integration(w, &input, c.meta.rs)?;
    c.max_last_seen_seconds = input.max_last_seen;
    c.spec = input.spec.expect("parsed on replace");
    Ok(())
}

/// §1.4 rule 6: the integration is one of the condition's type in its resource set.
fn check(w: &Write<'_>, c: &AccessCondition) -> Result<()> {
    let ok =
        w.st.integrations
            .get(&c.integration)
            .is_some_and(|i: &std::sync::Arc<Integration>| i.meta.rs == c.meta.rs && i.int_type == c.int_type());
    if !ok {
        return Err(Error::field(
            "integrationID",
            format!("unknown {} integration in the condition's resource set", c.int_type()),
        ));
    }
    Ok(())
}

impl Resource for ConditionsV2 {
    type Record = AccessCondition;
    type Input = Input;
    type Dto = AccessConditionV2Dto;
    type Patch = AccessConditionPatchDto;
    const NAME: &'static str = "access conditions";
    const LIST: ListSpec = LIST;
    const PATCH_NEEDS_STORED: bool = true;

    fn prepare(body: &mut Value, stored: Option<&AccessCondition>) -> Result<()> {
        crud::discriminator_kept(
            body,
            "integrationType",
            stored.map(|s| s.int_type()),
            &INTEGRATION_TYPES,
        )
    }

    fn parse(
        _: &App,
        dto: AccessConditionV2Dto,
        _: Mode,
        stored: Option<&AccessCondition>,
    ) -> Result<(BaseInput, Input)> {
        parse_v2(dto, stored)
    }

    fn parse_patch(
        _: &App,
        p: AccessConditionPatchDto,
        stored: Option<&AccessCondition>,
    ) -> Result<(BaseInput, Input)> {
        parse_patch(p, stored, true)
    }

    fn create(w: &mut Write<'_>, input: Input, meta: Meta) -> Result<AccessCondition> {
        create(w, input, meta)
    }

    fn replace(w: &mut Write<'_>, input: Input, c: &mut AccessCondition) -> Result<()> {
        replace(w, input, c)
    }

    fn check(w: &Write<'_>, c: &AccessCondition) -> Result<()> {
        check(w, c)
    }

    fn before_delete(w: &mut Write<'_>, author: &Author, _: Uuid, id: Uuid) -> Result<()> {
        release(w, author, id, RefField::AccessCondition)
    }

    fn render(app: &App, st: &Snapshot, c: &AccessCondition) -> AccessConditionV2Dto {
        v2_dto(st, c, &super::common::reader(app, st))
    }
}

impl Resource for ConditionsV1 {
    type Record = AccessCondition;
    type Input = Input;
    type Dto = AccessConditionDto;
    type Patch = AccessConditionPatchDto;
    const NAME: &'static str = "access conditions";
    const LIST: ListSpec = LIST;
    const PATCH_NEEDS_STORED: bool = true;

    fn parse(
        app: &App,
        dto: AccessConditionDto,
        _: Mode,
        stored: Option<&AccessCondition>,
    ) -> Result<(BaseInput, Input)> {
        parse_v1(app, dto, stored)
    }

    fn parse_patch(
        _: &App,
        p: AccessConditionPatchDto,
        stored: Option<&AccessCondition>,
    ) -> Result<(BaseInput, Input)> {
        parse_patch(p, stored, false)
    }

    fn create(w: &mut Write<'_>, input: Input, meta: Meta) -> Result<AccessCondition> {
        create(w, input, meta)
    }

    fn replace(w: &mut Write<'_>, input: Input, c: &mut AccessCondition) -> Result<()> {
        replace(w, input, c)
    }

    fn check(w: &Write<'_>, c: &AccessCondition) -> Result<()> {
        check(w, c)
    }

    fn before_delete(w: &mut Write<'_>, author: &Author, _: Uuid, id: Uuid) -> Result<()> {
        release(w, author, id, RefField::AccessCondition)
    }

    fn render(app: &App, st: &Snapshot, c: &AccessCondition) -> AccessConditionDto {
        v1_dto(st, c, &super::common::reader(app, st))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_times() {
        assert_eq!(clock("00:00", false), Some(0));
        assert_eq!(clock("09:30", false), Some(570));
        assert_eq!(clock("24:00", true), Some(1440));
        for bad in ["24:00", "9:30", "09:60", "0930", "ab:cd", "25:00"] {
            assert_eq!(clock(bad, false), None, "{bad}");
        }
        assert_eq!(hhmm(570), "09:30");
    }
}
