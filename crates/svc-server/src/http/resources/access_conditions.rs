//! Access conditions (contract §3.10): one stored condition, shown as `/api/v2/access-conditions`
//! (variant fields at the top level, discriminator `integrationType`) and
//! `/api/v1/access-conditions` (variant fields in `conditions`, the variant chosen by the
//! referenced integration's type). A condition an active policy references cannot be deleted;
//! inactive policies lose the reference (§1.10 rules 2 and 3).

use serde_json::{Map, Value, json};
use svc_api::{FieldError, Obj};
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_json, parse_base, rendered_or_null};
use super::crud::{self, Resource};
use super::integrations::{self as ints, vendor_type};
use crate::app::App;
use crate::domain::Meta;
use crate::domain::condition::{
    AccessCondition, CLOUD_SECURITY_A, ConditionSpec, GEOIP, INTEGRATION_TYPES, Integration, Location, SENSOR_A,
    Subdivision, Timezone, WEEKDAYS, Window, builtin_type,
};
use crate::error::{Error, Result};
use crate::http::api::{Api, Untyped};
use crate::http::list::{Base, ListSpec, field_filter};
use crate::service::refs::{RefField, release};
use crate::service::write::{Author, Write};
use crate::state::State as Snapshot;

pub fn register(api: &mut Api<'_>) {
    crud::register::<Conditions<false>>(api, "/api/v2/access-conditions");
    crud::register::<Conditions<true>>(api, "/api/v1/access-conditions");
}

const RO: &[&str] = &["integration", "accessPolicyCount"];
const FIELDS: &[&str] = &[
    "integrationType",
    "integrationID",
    "maxLastSeenSeconds",
    "accessPolicyCount",
];
/// §3.10: `maxLastSeenSeconds` 1..31449600 (a year of 364 days).
const MAX_LAST_SEEN: i32 = 31_449_600;

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

fn alpha2(o: &Obj, k: &str, v: Option<String>) -> std::result::Result<Option<String>, FieldError> {
    match v {
        Some(c) if c.len() == 2 && c.bytes().all(|b| b.is_ascii_alphabetic()) => Ok(Some(c.to_ascii_uppercase())),
        Some(_) => Err(FieldError::new(o.path(k), "must be an ISO 3166-1 alpha-2 code")),
        None => Ok(None),
    }
}

fn subdivision(o: &mut Obj, country: Option<&str>) -> std::result::Result<Subdivision, FieldError> {
    o.ignore(&["id", "geoIPAccessConditionLocationId"]);
    let name = o.req_str_len("name", 1, 128)?;
    let a = o.opt_str("alpha2Code")?;
    let alpha2_code = match a {
        Some(c) if (1..=3).contains(&c.len()) && c.bytes().all(|b| b.is_ascii_alphanumeric()) => {
            Some(c.to_ascii_uppercase())
        }
        Some(_) => {
            return Err(FieldError::new(
                o.path("alpha2Code"),
                "must be 1 to 3 letters or digits",
            ));
        }
        None => None,
    };
    let code = o.opt_str("subdivisionCode")?;
    let subdivision_code = match code {
        Some(c) => {
            let ok = c.split_once('-').is_some_and(|(cc, s)| {
                cc.len() == 2
                    && cc.bytes().all(|b| b.is_ascii_alphabetic())
                    && (1..=3).contains(&s.len())
                    && s.bytes().all(|b| b.is_ascii_alphanumeric())
            });
            if !ok {
                return Err(FieldError::new(
                    o.path("subdivisionCode"),
                    "must be an ISO 3166-2 code such as US-TX",
                ));
            }
            let c = c.to_ascii_uppercase();
            if country.is_some_and(|cc| !c.starts_with(&format!("{cc}-"))) {
                return Err(FieldError::new(
                    o.path("subdivisionCode"),
                    "must be in the location's country (alpha2Code)",
                ));
            }
            Some(c)
        }
        None => None,
    };
    let s = Subdivision {
        name,
        alpha2_code,
        subdivision_code,
    };
    if s.code(country).is_none() {
        return Err(FieldError::new(
            o.path("subdivisionCode"),
            "is required (or alpha2Code with the location's alpha2Code)",
        ));
    }
    Ok(s)
}

fn location(o: &mut Obj) -> std::result::Result<Location, FieldError> {
    o.ignore(&["id", "geoIPAccessConditionId"]);
    let short_name = o.req_str_len("shortName", 1, 128)?;
    let a = o.opt_str("alpha2Code")?;
    let alpha2_code = alpha2(o, "alpha2Code", a)?;
    let subdivisions = o
        .opt_obj_list("subdivisions", |s| subdivision(s, alpha2_code.as_deref()))?
        .unwrap_or_default();
    Ok(Location {
        short_name,
        alpha2_code,
        subdivisions,
    })
}

fn window(o: &mut Obj) -> std::result::Result<Window, FieldError> {
    let start_text = o.req_str("startTime")?;
    let start =
        clock(&start_text, false).ok_or_else(|| FieldError::new(o.path("startTime"), "must be HH:mm (24 h)"))?;
    let end_text = o.req_str("endTime")?;
    let end = clock(&end_text, true).ok_or_else(|| FieldError::new(o.path("endTime"), "must be HH:mm (24 h)"))?;
    if end <= start {
        return Err(FieldError::new(o.path("endTime"), "must be after startTime"));
    }
    let mut d = o.req_obj("weekDay")?;
    let name = d.opt_enum("name", &WEEKDAYS)?;
    let ordinal = d.opt_i32_range("ordinal", 0, 6)?;
    let weekday = match (name, ordinal) {
        (Some(n), Some(i)) if WEEKDAYS[i as usize] != n => {
            return Err(FieldError::new(d.path("ordinal"), "does not match name"));
        }
        (_, Some(i)) => i as u8,
        (Some(n), None) => WEEKDAYS.iter().position(|w| *w == n).expect("checked enum") as u8,
        (None, None) => return Err(FieldError::new(d.path("name"), "is required")),
    };
    d.finish()?;
    Ok(Window { weekday, start, end })
}

/// The variant fields of `kind` (and `maxLastSeenSeconds`) from `o`.
fn variant(o: &mut Obj, kind: &str) -> Result<(ConditionSpec, Option<i32>)> {
    let max_last_seen = o.opt_i32_range("maxLastSeenSeconds", 1, MAX_LAST_SEEN)?;
    if vendor_type(kind) && max_last_seen.is_none() {
        return Err(Error::field(o.path("maxLastSeenSeconds"), "is required"));
    }
    let b = |o: &mut Obj, k: &str| o.opt_bool(k).map(|v| v.unwrap_or(false));
    let spec = match kind {
        SENSOR_A => ConditionSpec::SensorA {
            match_local_ip: b(o, "matchLocalIP")?,
            match_hostname: b(o, "matchHostname")?,
            match_mac_address: b(o, "matchMacAddress")?,
            match_serial_number: b(o, "matchSerialNumber")?,
            prevent_restricted_functionality_mode: b(o, "preventRestrictedFunctionalityMode")?,
        },
        CLOUD_SECURITY_A => ConditionSpec::CloudSecurityA {
            serverless: b(o, "serverless")?,
            container_cluster_connected: b(o, "containerClusterConnected")?,
        },
        GEOIP => {
            let locations = o.opt_obj_list("locations", location)?.unwrap_or_default();
            if locations.is_empty() {
                return Err(Error::field(o.path("locations"), "must have at least one entry"));
            }
            ConditionSpec::GeoIp { locations }
        }
        _ => {
            let schedule = o.opt_obj_list("schedule", window)?.unwrap_or_default();
            if schedule.is_empty() {
                return Err(Error::field(o.path("schedule"), "must have at least one entry"));
            }
            let mut t = o.req_obj("timezone")?;
            let name = t.req_str_len("timezone", 1, 128)?;
            if jiff::tz::db().get(&name).is_err() {
                return Err(Error::field(t.path("timezone"), "unknown IANA time zone"));
            }
            let timezone = Timezone {
                timezone: name,
                group: t.opt_str_len("group", 0, 128)?,
                label: t.opt_str_len("label", 0, 256)?,
            };
            t.finish()?;
            ConditionSpec::Time { schedule, timezone }
        }
    };
    Ok((spec, max_last_seen))
}

fn parse_v2(_: &App, body: Value, mode: Mode, stored: Option<&AccessCondition>) -> Result<(BaseInput, Input)> {
    let mut o = Obj::root(body)?;
    let base = parse_base(&mut o, mode, true)?;
    let given = o.opt_str("integrationType")?;
    let kind = match (mode, given.as_deref(), stored.map(|s| s.int_type())) {
        (_, Some(k), Some(s)) if k != s => return Err(Error::field("integrationType", "cannot be changed")),
        (Mode::Patch, _, Some(s)) => s,
        (_, None, _) => return Err(Error::field("integrationType", "is required")),
        (_, Some(k), _) => kind_name(k).ok_or_else(|| {
            Error::field(
                "integrationType",
                format!("must be one of {}", INTEGRATION_TYPES.join(", ")),
            )
        })?,
    };
    o.ignore(RO);
    let mut input = Input {
        kind,
        integration: None,
        max_last_seen: None,
        spec: None,
    };
    if mode != Mode::Patch {
        input.integration = o.opt_uuid("integrationID")?;
        if input.integration.is_none() && !builtin_type(kind) {
            return Err(Error::field("integrationID", "is required"));
        }
        let (spec, max) = variant(&mut o, kind)?;
        (input.spec, input.max_last_seen) = (Some(spec), max);
    }
    o.finish()?;
    Ok((base, input))
}

fn parse_v1(app: &App, body: Value, mode: Mode, stored: Option<&AccessCondition>) -> Result<(BaseInput, Input)> {
    let mut o = Obj::root(body)?;
    let base = parse_base(&mut o, mode, true)?;
    o.ignore(RO);
    // RO in v1; used only to pick a built-in integration when `integrationID` is absent.
    let hint = o.opt_str("integrationType")?;
    let mut input = Input {
        kind: stored.map(|s| s.int_type()).unwrap_or(GEOIP),
        integration: None,
        max_last_seen: None,
        spec: None,
    };
    if mode != Mode::Patch {
        input.integration = o.opt_uuid("integrationID")?;
        // Ids are unique per type across resource sets (§1.2): the type is read here, the
        // resource set is checked by `check` against the unit's state.
        input.kind = match (input.integration, hint.as_deref().and_then(kind_name)) {
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
            && s.int_type() != input.kind
        {
            return Err(Error::field(
                "integrationID",
                format!(
                    "must be a {} integration: a condition's type cannot be changed",
                    s.int_type()
                ),
            ));
        }
        let mut c = o.req_obj("conditions")?;
        let (spec, max) = variant(&mut c, input.kind)?;
        c.finish()?;
        (input.spec, input.max_last_seen) = (Some(spec), max);
    }
    o.finish()?;
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

/// The variant fields (and `maxLastSeenSeconds`) as the wire shows them.
fn variant_json(c: &AccessCondition) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("maxLastSeenSeconds".into(), json!(c.max_last_seen_seconds));
    match &c.spec {
        ConditionSpec::SensorA {
            match_local_ip,
            match_hostname,
            match_mac_address,
            match_serial_number,
            prevent_restricted_functionality_mode,
        } => {
            o.insert("matchLocalIP".into(), json!(match_local_ip));
            o.insert("matchHostname".into(), json!(match_hostname));
            o.insert("matchMacAddress".into(), json!(match_mac_address));
            o.insert("matchSerialNumber".into(), json!(match_serial_number));
            o.insert(
                "preventRestrictedFunctionalityMode".into(),
                json!(prevent_restricted_functionality_mode),
            );
        }
        ConditionSpec::CloudSecurityA {
            serverless,
            container_cluster_connected,
        } => {
            o.insert("serverless".into(), json!(serverless));
            o.insert("containerClusterConnected".into(), json!(container_cluster_connected));
        }
        ConditionSpec::GeoIp { locations } => {
            // `id`s (our choice): locations numbered from 1 within the condition, subdivisions
            // numbered from 1 across the condition.
            let mut sub_id = 0;
            let list: Vec<Value> = locations
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let loc_id = i as i32 + 1;
                    let subs: Vec<Value> = l
                        .subdivisions
                        .iter()
                        .map(|s| {
                            sub_id += 1;
                            json!({
                                "id": sub_id,
                                "name": s.name,
                                "alpha2Code": s.alpha2_code,
                                "subdivisionCode": s.subdivision_code,
                                "geoIPAccessConditionLocationId": loc_id,
                            })
                        })
                        .collect();
                    json!({
                        "id": loc_id,
                        "shortName": l.short_name,
                        "alpha2Code": l.alpha2_code,
                        "subdivisions": subs,
                        "geoIPAccessConditionId": c.meta.seq,
                    })
                })
                .collect();
            o.insert("locations".into(), Value::Array(list));
        }
        ConditionSpec::Time { schedule, timezone } => {
            let list: Vec<Value> = schedule
                .iter()
                .map(|w| {
                    json!({
                        "startTime": hhmm(w.start),
                        "endTime": hhmm(w.end),
                        "weekDay": {"name": WEEKDAYS[w.weekday as usize], "ordinal": w.weekday},
                    })
                })
                .collect();
            o.insert("schedule".into(), Value::Array(list));
            o.insert(
                "timezone".into(),
                json!({"timezone": timezone.timezone, "group": timezone.group, "label": timezone.label}),
            );
        }
    }
    o
}

pub fn policy_count(st: &Snapshot, id: Uuid) -> usize {
    st.idx.policy_count(RefField::AccessCondition, id)
}

/// `id`, `integrationID` and the integration in the view's shape (`render`), both views'.
fn with_integration(
    st: &Snapshot,
    c: &AccessCondition,
    o: &mut Map<String, Value>,
    render: fn(&Snapshot, &Integration) -> Value,
) {
    o.insert("id".into(), json!(c.meta.seq));
    o.insert("integrationID".into(), json!(c.integration));
    let integration = rendered_or_null::<Integration>(st, &c.integration, |i| render(st, i));
    o.insert("integration".into(), integration);
}

/// `AccessConditionV2DTO` (its variant).
pub fn v2_json(st: &Snapshot, c: &AccessCondition) -> Value {
    let mut o = Map::new();
    o.insert("integrationType".into(), json!(c.int_type()));
    o.extend(base_json(&c.meta, true));
    with_integration(st, c, &mut o, ints::v2_json);
    o.insert("accessPolicyCount".into(), json!(policy_count(st, c.meta.id)));
    o.extend(variant_json(c));
    Value::Object(o)
}

/// `AccessConditionDTO` (v1).
pub fn v1_condition_json(st: &Snapshot, c: &AccessCondition) -> Value {
    let mut o = base_json(&c.meta, true);
    with_integration(st, c, &mut o, ints::v1_json);
    let mut conditions = variant_json(c);
    if !vendor_type(c.int_type()) && c.max_last_seen_seconds.is_none() {
        conditions.remove("maxLastSeenSeconds");
    }
    o.insert("conditions".into(), Value::Object(conditions));
    o.insert("accessPolicyCount".into(), json!(policy_count(st, c.meta.id)));
    o.insert("integrationType".into(), json!(c.int_type()));
    Value::Object(o)
}

/// `/api/v2/access-conditions` (`Conditions<false>`) and `/api/v1/access-conditions`
/// (`Conditions<true>`): two views of the same conditions.
pub struct Conditions<const V1: bool>;

impl<const V1: bool> Resource for Conditions<V1> {
    type Record = AccessCondition;
    type Input = Input;
    type Dto = Untyped;
    type Patch = Untyped;
    const NAME: &'static str = "access conditions";
    const LIST: ListSpec = ListSpec::new("accessConditions", Base::Scoped)
        .fields(FIELDS)
        .filters(&[field_filter("integrationType"), field_filter("integrationID")]);
    const PATCH_NEEDS_STORED: bool = true;

    fn parse(app: &App, body: Untyped, mode: Mode, stored: Option<&AccessCondition>) -> Result<(BaseInput, Input)> {
        if V1 {
            parse_v1(app, body.0, mode, stored)
        } else {
            parse_v2(app, body.0, mode, stored)
        }
    }

    fn parse_patch(app: &App, body: Untyped, stored: Option<&AccessCondition>) -> Result<(BaseInput, Input)> {
        Self::parse(app, body, Mode::Patch, stored)
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

    fn before_delete(w: &mut Write<'_>, author: &Author, _: Uuid, id: Uuid) -> Result<()> {
        release(w, author, id, RefField::AccessCondition)
    }

    fn render(_: &App, st: &Snapshot, c: &AccessCondition) -> Untyped {
        Untyped(if V1 { v1_condition_json(st, c) } else { v2_json(st, c) })
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
