//! The shared list machinery of contract §1.6: `page`, `per-page`, `filter` (`key:value` equality
//! or text search), `order` (any scalar field, ties on `externalId`), `group-by`, and the wrapper.
//! Every configuration list builds its items' JSON and hands them here with a [`ListSpec`].

use std::cmp::Ordering;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::http::extract::QueryPairs;

#[derive(Clone, Debug)]
pub struct ListParams {
    pub page: i32,
    pub per_page: i32,
    pub filter: Option<String>,
    pub order: Option<String>,
    pub group_by: Option<String>,
}

/// Whether `s` is an integer's text (an optional sign, then digits), whatever its size: a value
/// out of a type's range is told apart from one that is no integer.
pub fn integer_text(s: &str) -> bool {
    let d = s.trim().trim_start_matches(['-', '+']);
    !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())
}

pub fn parse_int(q: &QueryPairs, key: &str, default: i32, min: i32, max: i32) -> Result<i32> {
    match q.get(key) {
        None => Ok(default),
        Some(s) => match s.trim().parse::<i64>() {
            Ok(v) if v >= min as i64 && v <= max as i64 => Ok(v as i32),
            // Only a value below the minimum reads "≥ min"; one beyond int32 (even beyond int64)
            // names the range (§1.6: page is an int32).
            Ok(v) if max == i32::MAX && v < min as i64 => Err(Error::field(key, format!("must be an integer ≥ {min}"))),
            _ if max == i32::MAX && !integer_text(s) => Err(Error::field(key, format!("must be an integer ≥ {min}"))),
            _ => Err(Error::field(key, format!("must be an integer in {min}..{max}"))),
        },
    }
}

impl ListParams {
    pub fn parse(q: &QueryPairs) -> Result<ListParams> {
        Ok(ListParams {
            page: parse_int(q, "page", 1, 1, i32::MAX)?,
            per_page: parse_int(q, "per-page", 100, 1, 1000)?,
            filter: q.get("filter").map(str::to_string),
            order: q.get("order").map(str::to_string),
            group_by: q.get("group-by").map(str::to_string),
        })
    }
}

/// How a filter key compares.
#[derive(Clone, Copy)]
pub enum Filter {
    /// Equality on a (dotted) field; arrays match when any element is equal.
    Field(&'static str),
    /// A custom predicate on the item and the filter value.
    Func(fn(&Value, &str) -> bool),
}

pub struct ListSpec {
    /// Name of the items array in the wrapper.
    pub items_key: &'static str,
    /// The base block the items carry (its fields are orderable by name).
    pub base: Base,
    /// The resource's own scalar fields accepted by `order` and `group-by` (canonical spelling;
    /// dotted for nested), besides `base`.
    pub fields: &'static [&'static str],
    /// Default ordering: field and descending flag.
    pub default_order: (&'static str, bool),
    /// Resource-specific filter keys (the common ones are always available).
    pub filters: &'static [(&'static str, Filter)],
}

/// The orderable fields of every entity's base block (§1.3); `createdBy` and `modifiedBy` last
/// ([`Base::Unattributed`] goes without them).
pub const BASE_FIELDS: &[&str] = &[
    "externalId",
    "name",
    "description",
    "isActive",
    "createdAt",
    "modifiedAt",
    "createdBy",
    "modifiedBy",
];

/// Which base block a list's items carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// None (secrets, users: their own fields only).
    None,
    /// [`BASE_FIELDS`]: a global entity.
    Global,
    /// [`BASE_FIELDS`] and `resourceSet`: a resource-set-scoped entity.
    Scoped,
    /// [`BASE_FIELDS`] without `createdBy` / `modifiedBy` (agent controllers' DTO, §3.21).
    Unattributed,
}

impl ListSpec {
    /// A list whose wrapper names its items `items_key` and whose items carry `base`, ordered
    /// by `name` ascending, with neither fields nor filter keys of its own: a resource adds what
    /// it has with [`fields`](Self::fields), [`filters`](Self::filters) and [`order`](Self::order).
    pub const fn new(items_key: &'static str, base: Base) -> ListSpec {
        ListSpec {
            items_key,
            base,
            fields: &[],
            default_order: ("name", false),
            filters: &[],
        }
    }

    /// The resource's own orderable fields.
    pub const fn fields(self, fields: &'static [&'static str]) -> ListSpec {
        ListSpec { fields, ..self }
    }

    /// The resource's own filter keys ([`field_filter`] for a key that names its field).
    pub const fn filters(self, filters: &'static [(&'static str, Filter)]) -> ListSpec {
        ListSpec { filters, ..self }
    }

    /// The default order, when it is not `name asc`.
    pub const fn order(self, field: &'static str, desc: bool) -> ListSpec {
        ListSpec {
            default_order: (field, desc),
            ..self
        }
    }

    /// Every field `order` and `group-by` accept by name: the base block's, then the resource's.
    pub fn all_fields(&self) -> impl Iterator<Item = &'static str> + '_ {
        let (base, rs): (&[&'static str], &[&'static str]) = match self.base {
            Base::None => (&[], &[]),
            Base::Global => (BASE_FIELDS, &[]),
            Base::Scoped => (BASE_FIELDS, &["resourceSet"]),
            Base::Unattributed => (&BASE_FIELDS[..6], &[]),
        };
        base.iter().chain(rs).chain(self.fields).copied()
    }
}

/// A filter key comparing the item's field of the same name (`type:…`, `isSystem:…`).
pub const fn field_filter(key: &'static str) -> (&'static str, Filter) {
    (key, Filter::Field(key))
}

/// Filter keys every list understands (§1.6), apart from `resourceSet` ([`RESOURCE_SET_FILTER`]).
const COMMON_FILTERS: &[(&str, Filter)] = &[
    ("name", Filter::Field("name")),
    ("description", Filter::Field("description")),
    ("isActive", Filter::Field("isActive")),
    ("externalId", Filter::Field("externalId")),
    ("tag", Filter::Func(tag_filter)),
];

/// `resourceSet` is a filter key only of the lists without an `X-Svc-ResourceSet` header (§1.6);
/// elsewhere `resourceSet:…` is text like any other unknown key.
pub const RESOURCE_SET_FILTER: (&str, Filter) = ("resourceSet", Filter::Field("resourceSet"));

fn tag_filter(item: &Value, v: &str) -> bool {
    let Some(tags) = item.get("tags").and_then(Value::as_array) else {
        return false;
    };
    let (k, val) = match v.split_once('=') {
        Some((k, val)) => (k, Some(val)),
        None => (v, None),
    };
    tags.iter().any(|t| {
        t.get("key")
            .and_then(Value::as_str)
            .is_some_and(|tk| tk.eq_ignore_ascii_case(k))
            && val.is_none_or(|val| {
                t.get("value")
                    .and_then(Value::as_str)
                    .is_some_and(|tv| tv.eq_ignore_ascii_case(val))
            })
    })
}

/// Looks up a dotted path.
pub fn get_path<'v>(item: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(item, |v, seg| v.get(seg))
}

/// Case-insensitive equality of a JSON scalar (or any element of an array) with filter text.
pub fn value_matches(v: &Value, want: &str) -> bool {
    match v {
        Value::String(s) => s.to_lowercase() == want.to_lowercase(),
        Value::Bool(b) => want.eq_ignore_ascii_case(if *b { "true" } else { "false" }),
        Value::Number(n) => n.to_string() == want.trim(),
        Value::Array(a) => a.iter().any(|e| value_matches(e, want)),
        Value::Null | Value::Object(_) => false,
    }
}

fn text_match(item: &Value, text: &str) -> bool {
    let t = text.to_lowercase();
    ["name", "description"].iter().any(|f| {
        item.get(*f)
            .and_then(Value::as_str)
            .is_some_and(|s| s.to_lowercase().contains(&t))
    })
}

/// Applies `filter` per §1.6 (one expression; unknown keys degrade to text search).
pub fn filter_items(items: Vec<Value>, filter: Option<&str>, spec: &ListSpec) -> Vec<Value> {
    let Some(f) = filter.map(str::trim).filter(|f| !f.is_empty()) else {
        return items;
    };
    if let Some((k, v)) = f.split_once(':') {
        let known = spec
            .filters
            .iter()
            .chain(COMMON_FILTERS.iter())
            .find(|(name, _)| name.eq_ignore_ascii_case(k.trim()));
        if let Some((_, how)) = known {
            let v = v.trim();
            return items
                .into_iter()
                .filter(|item| match how {
                    Filter::Field(path) => get_path(item, path).is_some_and(|x| value_matches(x, v)),
                    Filter::Func(pred) => pred(item, v),
                })
                .collect();
        }
    }
    items.into_iter().filter(|item| text_match(item, f)).collect()
}

fn rank(v: Option<&Value>) -> u8 {
    match v {
        None | Some(Value::Null) => 0,
        Some(Value::Bool(_)) => 1,
        Some(Value::Number(_)) => 2,
        Some(Value::String(_)) => 3,
        Some(_) => 4,
    }
}

/// Total order on JSON scalars: null < bool < number < string (case-insensitive, then exact).
pub fn compare(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    match (a, b) {
        (Some(Value::Bool(x)), Some(Value::Bool(y))) => x.cmp(y),
        (Some(Value::Number(x)), Some(Value::Number(y))) => x
            .as_f64()
            .unwrap_or(0.0)
            .partial_cmp(&y.as_f64().unwrap_or(0.0))
            .unwrap_or(Ordering::Equal),
        (Some(Value::String(x)), Some(Value::String(y))) => {
            x.to_lowercase().cmp(&y.to_lowercase()).then_with(|| x.cmp(y))
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// Resolves an `order` / `group-by` field name: a field the resource lists (case-insensitively;
/// dotted for nested ones), else a top-level key holding a scalar or `null` in at least one item,
/// spelt as the item spells it (§1.6: any scalar JSON field of the item, e.g. a provider type's
/// own fields). A name no item has, or has only as an array or object, is
/// `400 <param>: unknown field`.
pub fn resolve_field(spec: &ListSpec, items: &[Value], name: &str, param: &str) -> Result<String> {
    if let Some(f) = spec.all_fields().find(|f| f.eq_ignore_ascii_case(name)) {
        return Ok(f.to_string());
    }
    let scalar = |v: &Value| !matches!(v, Value::Array(_) | Value::Object(_));
    items
        .iter()
        .filter_map(Value::as_object)
        .flat_map(|o| o.iter())
        .find(|(k, v)| k.eq_ignore_ascii_case(name) && scalar(v))
        .map(|(k, _)| k.clone())
        .ok_or_else(|| Error::field(param, format!("unknown field '{name}'")))
}

/// Parses `<field>`, `<field> asc`, `<field> desc`.
pub fn parse_order(spec: &ListSpec, items: &[Value], s: &str) -> Result<(String, bool)> {
    let mut parts = s.split_whitespace();
    let field = parts
        .next()
        .ok_or_else(|| Error::field("order", "must be '<field> [asc|desc]'"))?;
    let desc = order_direction(parts)?;
    Ok((resolve_field(spec, items, field, "order")?, desc))
}

/// What follows the field of an `order` value: nothing or `asc` (`false`), `desc` (`true`),
/// and nothing after it.
pub fn order_direction<'a>(mut rest: impl Iterator<Item = &'a str>) -> Result<bool> {
    let desc = match rest.next().map(|d| d.to_ascii_lowercase()) {
        None => false,
        Some(d) if d == "asc" => false,
        Some(d) if d == "desc" => true,
        Some(d) => {
            return Err(Error::field("order", format!("unknown direction '{d}' (asc or desc)")));
        }
    };
    if rest.next().is_some() {
        return Err(Error::field("order", "must be '<field> [asc|desc]'"));
    }
    Ok(desc)
}

/// Filters, orders, groups and pages `items`, returning the list wrapper.
pub fn respond(items: Vec<Value>, p: &ListParams, spec: &ListSpec) -> Result<Value> {
    let (order_field, desc) = match p.order.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        Some(o) => parse_order(spec, &items, o)?,
        None => (spec.default_order.0.to_string(), spec.default_order.1),
    };
    let group = match p.group_by.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        Some(g) => Some(resolve_field(spec, &items, g, "group-by")?),
        None => None,
    };
    let order_field = order_field.as_str();
    let mut items = filter_items(items, p.filter.as_deref(), spec);
    items.sort_by(|a, b| {
        let g = group
            .as_deref()
            .map(|g| compare(get_path(a, g), get_path(b, g)))
            .unwrap_or(Ordering::Equal);
        let o = compare(get_path(a, order_field), get_path(b, order_field));
        let o = if desc { o.reverse() } else { o };
        g.then(o)
            .then_with(|| compare(a.get("externalId"), b.get("externalId")))
    });
    let total = items.len();
    let start = (p.page as usize - 1).saturating_mul(p.per_page as usize);
    let page: Vec<Value> = items.into_iter().skip(start).take(p.per_page as usize).collect();
    let order = format!("{order_field} {}", if desc { "desc" } else { "asc" });
    Ok(svc_api::common::list_wrapper(
        spec.items_key,
        page,
        p.page,
        p.per_page,
        Some(order),
        total,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SPEC: ListSpec = ListSpec {
        items_key: "entities",
        base: Base::None,
        fields: &["externalId", "name", "isActive", "port"],
        default_order: ("name", false),
        filters: &[("port", Filter::Field("port"))],
    };

    fn items() -> Vec<Value> {
        vec![
            json!({"externalId": "3", "name": "beta", "description": "x", "isActive": true, "port": 80, "tags": [{"key": "env", "value": "prod"}]}),
            json!({"externalId": "1", "name": "Alpha", "description": "key:thing", "isActive": false, "port": 443, "tags": []}),
            json!({"externalId": "2", "name": "alpha", "description": null, "isActive": true, "port": 443, "tags": []}),
        ]
    }

    fn params(filter: Option<&str>, order: Option<&str>) -> ListParams {
        ListParams {
            page: 1,
            per_page: 100,
            filter: filter.map(Into::into),
            order: order.map(Into::into),
            group_by: None,
        }
    }

    fn names(v: &Value) -> Vec<String> {
        v["entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn order_default_desc_and_ties() {
        let r = respond(items(), &params(None, None), &SPEC).unwrap();
        assert_eq!(names(&r), ["Alpha", "alpha", "beta"]);
        assert_eq!(r["order"], "name asc");
        let r = respond(items(), &params(None, Some("PORT desc")), &SPEC).unwrap();
        assert_eq!(names(&r), ["Alpha", "alpha", "beta"]);
        assert_eq!(r["order"], "port desc");
        assert!(respond(items(), &params(None, Some("nope")), &SPEC).is_err());
        assert!(respond(items(), &params(None, Some("name sideways")), &SPEC).is_err());
    }

    /// §1.6: `order` takes any scalar JSON field of the item, listed or not (a provider type's
    /// own fields); arrays, objects and names no item has are `400 order: unknown field`.
    #[test]
    fn order_on_any_scalar_field_of_the_items() {
        let r = respond(items(), &params(None, Some("DESCRIPTION desc")), &SPEC).unwrap();
        assert_eq!(names(&r), ["beta", "Alpha", "alpha"]);
        assert_eq!(r["order"], "description desc");
        let mut with_null = items();
        with_null[0]["algorithmType"] = Value::Null;
        assert!(
            respond(with_null, &params(None, Some("algorithmType")), &SPEC).is_ok(),
            "a field null in every item is still a field"
        );
        for bad in ["tags", "nothing"] {
            let e = respond(items(), &params(None, Some(bad)), &SPEC).unwrap_err();
            assert_eq!(e.to_string(), format!("order: unknown field '{bad}'"));
        }
        let mut p = params(None, Some("name"));
        p.group_by = Some("description".into());
        let r = respond(items(), &p, &SPEC).unwrap();
        assert_eq!(names(&r), ["alpha", "Alpha", "beta"]);
    }

    #[test]
    fn filters() {
        let count = |f: &str| {
            respond(items(), &params(Some(f), None), &SPEC).unwrap()["recordsTotal"]
                .as_i64()
                .unwrap()
        };
        assert_eq!(count("isActive:TRUE"), 2);
        assert_eq!(count("port:443"), 2);
        assert_eq!(count("tag:env=prod"), 1);
        assert_eq!(count("tag:env"), 1);
        assert_eq!(count("ALPHA"), 2);
        assert_eq!(count("key:thing"), 1, "unknown key degrades to text search");
    }

    #[test]
    fn resource_set_is_a_filter_key_only_where_a_list_declares_it() {
        let mut with_rs = items();
        for i in &mut with_rs {
            i["resourceSet"] = json!("ffffffff-ffff-ffff-ffff-ffffffffffff");
        }
        let f = "resourceSet:ffffffff-ffff-ffff-ffff-ffffffffffff";
        // A list with an X-Svc-ResourceSet header: text search on name/description, no match.
        let r = respond(with_rs.clone(), &params(Some(f), None), &SPEC).unwrap();
        assert_eq!(r["recordsTotal"], 0);
        const NO_RS: ListSpec = ListSpec {
            filters: &[RESOURCE_SET_FILTER],
            ..SPEC
        };
        let r = respond(with_rs, &params(Some(f), None), &NO_RS).unwrap();
        assert_eq!(r["recordsTotal"], 3);
    }

    /// A spec states only what differs: `ListSpec::new` orders by `name` ascending and has no
    /// fields or filter keys of its own; `field_filter` compares the field of the same name.
    #[test]
    fn list_specs_default_to_name_order_and_nothing_of_their_own() {
        const PLAIN: ListSpec = ListSpec::new("entities", Base::Scoped);
        assert_eq!(PLAIN.default_order, ("name", false));
        assert!(PLAIN.fields.is_empty() && PLAIN.filters.is_empty());
        assert_eq!(PLAIN.all_fields().last(), Some("resourceSet"));
        const BUILT: ListSpec = ListSpec::new("entities", Base::None)
            .fields(&["externalId", "name", "isActive", "port"])
            .order("name", false)
            .filters(&[field_filter("port")]);
        let r = respond(items(), &params(Some("port:443"), None), &BUILT).unwrap();
        assert_eq!(r, respond(items(), &params(Some("port:443"), None), &SPEC).unwrap());
        let desc = ListSpec::new("entities", Base::None)
            .fields(&["name"])
            .order("name", true);
        assert_eq!(
            respond(items(), &params(None, None), &desc).unwrap()["order"],
            "name desc"
        );
    }

    /// Agent controllers show the base fields without `createdBy` / `modifiedBy` (§3.21).
    #[test]
    fn unattributed_lists_order_by_the_base_fields_but_the_authors() {
        let spec = ListSpec::new("entities", Base::Unattributed);
        assert!(spec.all_fields().any(|f| f == "modifiedAt"));
        assert!(!spec.all_fields().any(|f| f == "createdBy" || f == "modifiedBy"));
        let e = respond(items(), &params(None, Some("createdBy")), &spec).unwrap_err();
        assert_eq!(e.to_string(), "order: unknown field 'createdBy'");
    }

    #[test]
    fn paging() {
        let p = ListParams {
            page: 2,
            per_page: 2,
            filter: None,
            order: None,
            group_by: None,
        };
        let r = respond(items(), &p, &SPEC).unwrap();
        assert_eq!(names(&r), ["beta"]);
        assert_eq!(r["recordsTotal"], 3);
        let p = ListParams { page: 9, ..p };
        assert_eq!(respond(items(), &p, &SPEC).unwrap()["entities"], json!([]));
    }
}
