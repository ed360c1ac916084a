//! Query parameters shared by the three event lists (contract §3.26): paging, ordering, `search`
//! and the time window (absolute dates win over spans; `span-last-minutes` over the unit span).

use std::collections::BTreeMap;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::events::shape::Shape;
use crate::http::extract::QueryPairs;
use crate::http::list::{order_direction, parse_int};
use crate::store::{Columns, EventQuery, QueryPage};

/// The time window of a list without dates: `span-last-minutes`, else the unit span.
pub struct Span {
    pub minutes_key: &'static str,
    /// The largest `span-last-minutes` (its type: int64 on audit logs and authorization events,
    /// int32 on workload events).
    pub minutes_max: i64,
    pub unit_key: &'static str,
    pub unit_ms: i64,
    pub default_units: i64,
}

impl Span {
    /// `span-last-minutes` up to `minutes_max`, else `span-last-hours` (default 24): the event
    /// lists.
    pub const fn hours(minutes_max: i64) -> Span {
        Span {
            minutes_key: "span-last-minutes",
            minutes_max,
            unit_key: "span-last-hours",
            unit_ms: 3_600_000,
            default_units: 24,
        }
    }

    /// `span-last-minutes`, else `span-last-days` (default 30): the audit log.
    pub const DAYS: Span = Span {
        minutes_key: "span-last-minutes",
        minutes_max: i64::MAX,
        unit_key: "span-last-days",
        unit_ms: 86_400_000,
        default_units: 30,
    };
}

/// The equality filters a list's query names: `(parameter, column)` for each parameter given.
pub fn equal_to(q: &QueryPairs, params: &[(&str, &'static str)]) -> Vec<(&'static str, String)> {
    params
        .iter()
        .filter_map(|(param, column)| q.get(param).map(|v| (*column, v.to_string())))
        .collect()
}

pub struct EventParams {
    pub page: i32,
    pub per_page: i32,
    /// The sort field as the response's `order` names it.
    pub order_field: String,
    pub order_col: &'static str,
    /// Sorting on a body field that has no column of its own (§3.26: any scalar field).
    pub order_json: Option<Vec<&'static str>>,
    pub desc: bool,
    pub search: Option<String>,
    pub from: Option<i64>,
    pub to: Option<i64>,
}

fn parse_date(q: &QueryPairs, key: &str) -> Result<Option<i64>> {
    match q.get(key) {
        None => Ok(None),
        Some(s) => svc_api::Timestamp::parse(s)
            .map(|t| Some(t.millis()))
            .ok_or_else(|| Error::field(key, "must be an RFC 3339 date-time")),
    }
}

/// `span-last-hours` / `span-last-days`: int32, not negative.
fn parse_units(q: &QueryPairs, key: &str, default: i64) -> Result<i64> {
    match q.get(key) {
        None => Ok(default),
        Some(s) => s
            .trim()
            .parse::<i32>()
            .ok()
            .filter(|v| *v >= 0)
            .map(i64::from)
            .ok_or_else(|| Error::field(key, "must be a non-negative 32-bit integer")),
    }
}

/// `span-last-minutes`: any integer; zero or less means "not given" (§3.26: only a value > 0
/// selects the minutes span).
fn parse_minutes(q: &QueryPairs, key: &str, max: i64) -> Result<i64> {
    match q.get(key) {
        None => Ok(0),
        Some(s) => {
            let bits = if max == i32::MAX as i64 { 32 } else { 64 };
            let out_of_range = || Error::field(key, format!("must be a {bits}-bit integer"));
            let t = s.trim();
            match t.parse::<i64>() {
                Ok(v) if v > max || v < -max - 1 => Err(out_of_range()),
                Ok(v) => Ok(v),
                // Digits beyond int64 are out of range too; anything else is no integer.
                Err(_) if crate::http::list::integer_text(t) => Err(out_of_range()),
                Err(_) => Err(Error::field(key, "must be an integer")),
            }
        }
    }
}

impl EventParams {
    /// `order_map` names the fields with a column of their own; any other scalar field of
    /// `shape` sorts on the stored body.
    pub fn parse(
        q: &QueryPairs,
        order_map: &[(&'static str, &'static str)],
        shape: Shape,
        default_order: &'static str,
        span: Span,
    ) -> Result<EventParams> {
        let page = parse_int(q, "page", 1, 1, i32::MAX)?;
        let per_page = parse_int(q, "per-page", 100, 1, 1000)?;
        let column = |name: &str| order_map.iter().find(|(n, _)| *n == name).map(|(_, c)| *c);
        let (mut order_field, mut order_col, mut order_json, mut desc) = (
            default_order.to_string(),
            column(default_order).unwrap_or("ts"),
            None,
            true,
        );
        if let Some(o) = q.get("order").map(str::trim).filter(|o| !o.is_empty()) {
            let mut parts = o.split_whitespace();
            let f = parts.next().unwrap_or("");
            // Nested fields may be written with or without their `meta.` prefix.
            let bare = f.strip_prefix("meta.").unwrap_or(f);
            if let Some((name, col)) = order_map
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(f) || name.eq_ignore_ascii_case(bare))
            {
                (order_field, order_col) = (name.to_string(), *col);
            } else if let Some((mut path, leaf)) = shape.leaf_path(f) {
                order_field = path.join(".");
                match leaf {
                    // Not stored in the body: sort on where the value is.
                    Shape::Col(c) | Shape::TimeCol(c) => order_col = c,
                    Shape::Sibling(k) => {
                        if let Some(last) = path.last_mut() {
                            *last = k;
                        }
                        // The sibling's own place: a column (`contextId`, migration 0007) or the body.
                        match shape.leaf_path(&path.join(".")) {
                            Some((_, Shape::Col(c) | Shape::TimeCol(c))) => order_col = c,
                            _ => order_json = Some(path),
                        }
                    }
                    _ => order_json = Some(path),
                }
            } else {
                return Err(Error::field("order", format!("unknown field '{f}'")));
            }
            desc = order_direction(parts)?;
        }
        let start = parse_date(q, "start-date")?;
        let end = parse_date(q, "end-date")?;
        let now = crate::clock::now_millis();
        let (from, to) = if start.is_some() || end.is_some() {
            if let (Some(s), Some(e)) = (start, end)
                && s > e
            {
                return Err(Error::field("start-date", "must not be after end-date"));
            }
            (start, end)
        } else {
            let minutes = parse_minutes(q, span.minutes_key, span.minutes_max)?;
            if minutes > 0 {
                (Some(now - minutes.saturating_mul(60_000)), None)
            } else {
                let units = parse_units(q, span.unit_key, span.default_units)?;
                (Some(now - units.saturating_mul(span.unit_ms)), None)
            }
        };
        Ok(EventParams {
            page,
            per_page,
            order_field,
            order_col,
            order_json,
            desc,
            search: q.get("search").map(str::to_string),
            from,
            to,
        })
    }

    pub fn query(&self) -> EventQuery {
        EventQuery {
            from: self.from,
            to: self.to,
            search: self.search.clone(),
            order_col: self.order_col,
            order_json: self.order_json.clone(),
            desc: self.desc,
            limit: self.per_page as i64,
            offset: (self.page as i64 - 1) * self.per_page as i64,
            ..Default::default()
        }
    }
}

/// A list wrapper (§1.6) of event DTOs, serialised as it is (no JSON tree of the page).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Page<T> {
    page: i32,
    per_page: i32,
    order: Option<String>,
    status_code: i32,
    records_total: i32,
    /// `true` when `records_total` is an estimate (more than `store::EXACT_TOTAL` matches).
    #[serde(skip_serializing_if = "Option::is_none")]
    records_total_estimated: Option<bool>,
    /// The items under the list's key (one entry).
    #[serde(flatten)]
    items: BTreeMap<&'static str, Vec<T>>,
}

/// One page of event bodies, each read as its DTO `T` (`event`); `shape` restores the keys an
/// edge event is stored without (`events::shape::expand`).
pub fn page_response<T: DeserializeOwned + Serialize>(
    items_key: &'static str,
    page: QueryPage,
    p: &EventParams,
    shape: Option<Shape>,
) -> Result<Response> {
    let items: Vec<T> = page
        .bodies
        .iter()
        .zip(&page.columns)
        .map(|(b, c)| event(b, shape, c))
        .collect::<Result<_>>()?;
    let page = Page {
        page: p.page,
        per_page: p.per_page,
        order: Some(format!("{} {}", p.order_field, if p.desc { "desc" } else { "asc" })),
        status_code: 200,
        records_total: page.total.clamp(0, i64::from(i32::MAX)) as i32,
        // Above `store::EXACT_TOTAL` matches the total is an estimate, and says so (issue 34;
        // docs/API-CONVENTIONS.md, Lists).
        records_total_estimated: page.estimated.then_some(true),
        items: BTreeMap::from([(items_key, items)]),
    };
    Ok((StatusCode::OK, axum::Json(page)).into_response())
}

/// A stored event body as the API shows it: every documented member (`shape` restores those an
/// edge event is stored without), read as its DTO. A body that is not one is an internal error.
pub fn event<T: DeserializeOwned>(body: &str, shape: Option<Shape>, columns: &Columns) -> Result<T> {
    let v: Value = serde_json::from_str(body).map_err(Error::internal)?;
    let v = match shape {
        Some(shape) => crate::events::shape::expand(v, shape, columns),
        None => v,
    };
    serde_json::from_value(v).map_err(Error::internal)
}
