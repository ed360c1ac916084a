//! The JSON Schemas of the wire types and the strict reader that checks a request body against
//! one (contract §1.1, §1.8). A DTO's names, types and simple constraints live in its Rust type
//! (`serde` names, `schemars` lengths, ranges and formats); from it come both the OpenAPI
//! document (JSON Schema 2020-12, which OpenAPI 3.1 embeds as it is) and the checks of every
//! management body, so the two cannot disagree.
//!
//! [`read`] checks a body against `T`'s schema, then lets serde read it:
//! - `null` and absent are the same thing; a required property that is either is `<path>: is
//!   required`;
//! - a property the schema does not name is `<path>: unknown property` (after every named one was
//!   checked, so a wrong value is reported before a stray property), unless the schema says
//!   `additionalProperties` (a map's entries, or `true`);
//! - read-only properties (`#[serde(default)] #[schemars(extend("readOnly" = true))]`) are
//!   accepted and dropped, so a response body can be sent back in a PUT;
//! - types, string lengths, integer ranges, enums, constants and the `uuid`, `int32` and
//!   `date-time` formats give the messages of [`crate::reader::Obj`] (`must be a string, not a
//!   number`, `must be 1..128 characters`, `must be 1..65535`, `must be one of A, B`);
//! - a `oneOf` with a `discriminator` (a tagged enum: [`generator`] adds it) is read as the
//!   variant its property names (`<path>.type: must be one of …` otherwise).
//!
//! Properties are checked in the order the type declares them. Rules across fields, and those a
//! schema cannot state, stay with the resource that reads the DTO.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::transform::Transform;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::reader::{FieldError, check_len, join, parse_uuid};

/// Where component schemas live in the OpenAPI document (and how `$ref`s name them).
pub const COMPONENTS: &str = "#/components/schemas/";

/// The generator of every schema of the API: JSON Schema 2020-12, definitions under
/// `#/components/schemas/`, each tagged enum given its OpenAPI `discriminator`.
pub fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .with_transform(AddDiscriminator)
        .with_transform(NullInAnswers)
        .into_generator()
}

/// A write-only secret (`Option<String>` with `writeOnly`) is `null` in every answer (contract
/// §1.9: the key is there, its value never is). OpenAPI's `writeOnly` says the property is not
/// sent in responses at all, so a checker of answers (schemathesis) refuses even the `null`: the
/// mark goes on the value branch instead, `{"anyOf": [{"type": "string", "writeOnly": true, …},
/// {"type": "null", …}]}` — a request may carry the string, an answer carries `null`. The body
/// check reads it as before (a nullable `anyOf`: the same messages).
#[derive(Clone)]
struct NullInAnswers;

impl Transform for NullInAnswers {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        schemars::transform::transform_subschemas(self, schema);
        let Some(obj) = schema.as_object_mut() else { return };
        if obj.get("writeOnly").and_then(Value::as_bool) != Some(true) {
            return;
        }
        let Some(Value::Array(types)) = obj.get("type") else {
            return;
        };
        let non_null: Vec<Value> = types.iter().filter(|t| t.as_str() != Some("null")).cloned().collect();
        if non_null.len() != 1 || non_null.len() == types.len() {
            return;
        }
        let mut value = std::mem::take(obj);
        let description = value.remove("description");
        value.remove("default");
        value.insert("type".into(), non_null[0].clone());
        obj.insert(
            "anyOf".into(),
            serde_json::json!([
                Value::Object(value),
                {"type": "null", "description": "Always null in answers: the value is write-only."}
            ]),
        );
        if let Some(d) = description {
            obj.insert("description".into(), d);
        }
    }
}

/// Adds an OpenAPI `discriminator` to a `oneOf` whose branches each fix one property to a
/// constant (what `#[serde(tag = "…")]` generates), with the mapping from each value to its
/// branch's schema when the branch is a `$ref`.
#[derive(Clone)]
struct AddDiscriminator;

impl Transform for AddDiscriminator {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        schemars::transform::transform_subschemas(self, schema);
        let Some(obj) = schema.as_object_mut() else { return };
        let Some(Value::Array(branches)) = obj.get("oneOf") else {
            return;
        };
        let tag = |b: &Value| -> Option<(String, String)> {
            let props = b.get("properties")?.as_object()?;
            props
                .iter()
                .find_map(|(k, v)| Some((k.clone(), v.get("const")?.as_str()?.to_string())))
        };
        let tags: Vec<Option<(String, String)>> = branches.iter().map(tag).collect();
        let Some(Some((name, _))) = tags.first().cloned() else {
            return;
        };
        if tags.iter().any(|t| t.as_ref().map(|t| &t.0) != Some(&name)) {
            return;
        }
        let mut mapping = Map::new();
        for (b, t) in branches.iter().zip(&tags) {
            if let (Some(r), Some((_, value))) = (b.get("$ref").and_then(Value::as_str), t) {
                mapping.insert(value.clone(), Value::String(r.to_string()));
            }
        }
        let mut d = Map::new();
        d.insert("propertyName".into(), Value::String(name));
        if mapping.len() == branches.len() {
            d.insert("mapping".into(), Value::Object(mapping));
        }
        obj.insert("discriminator".into(), Value::Object(d));
    }
}

/// Puts each tagged union's tag into the component schemas its `discriminator` maps to: the
/// property, required, with the values that map there. The union's branches already fix the tag
/// beside their `$ref`, but a generator that reads a variant on its own (openapi-python-client
/// tries each variant's model in turn and ignores the `discriminator`) would otherwise take an
/// `OidcIdToken` provider for whichever variant it tries first.
pub fn tag_variants(schemas: &mut Map<String, Value>) {
    let mut tags: std::collections::BTreeMap<(String, String), Vec<String>> = Default::default();
    for union in schemas.values() {
        let Some(d) = union.get("discriminator") else { continue };
        let (Some(tag), Some(mapping)) = (
            d.get("propertyName").and_then(Value::as_str),
            d.get("mapping").and_then(Value::as_object),
        ) else {
            continue;
        };
        for (value, target) in mapping {
            if let Some(name) = target.as_str().and_then(|t| t.strip_prefix("#/components/schemas/")) {
                tags.entry((name.to_string(), tag.to_string()))
                    .or_default()
                    .push(value.clone());
            }
        }
    }
    for ((name, tag), values) in tags {
        let Some(Value::Object(variant)) = schemas.get_mut(&name) else {
            continue;
        };
        if variant.get("properties").and_then(|p| p.get(&tag)).is_some() {
            continue;
        }
        let property = json!({"type": "string", "enum": values});
        match variant.get_mut("properties") {
            Some(Value::Object(props)) => {
                props.insert(tag.clone(), property);
            }
            _ => {
                variant.insert("properties".into(), json!({ tag.clone(): property }));
            }
        }
        match variant.get_mut("required") {
            Some(Value::Array(req)) => req.push(Value::String(tag)),
            _ => {
                variant.insert("required".into(), json!([tag]));
            }
        }
    }
}

/// A type's schema and the component schemas it refers to.
struct Compiled {
    schema: Value,
    defs: Map<String, Value>,
}

fn compiled<T: JsonSchema + 'static>() -> Arc<Compiled> {
    static CACHE: OnceLock<Mutex<HashMap<TypeId, Arc<Compiled>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut m = cache.lock().unwrap_or_else(|p| p.into_inner());
    m.entry(TypeId::of::<T>())
        .or_insert_with(|| {
            let mut g = generator();
            let schema = g.subschema_for::<T>().to_value();
            let defs = g.take_definitions(true);
            Arc::new(Compiled { schema, defs })
        })
        .clone()
}

/// Reads a request body as `T` after checking it against `T`'s schema (see the module doc).
pub fn read<T: JsonSchema + DeserializeOwned + 'static>(body: Value) -> Result<T, FieldError> {
    read_at(body, "")
}

/// [`read`] of a value found at `path` (a JSON text field read as an object, an array item): its
/// messages name `path` (`conditions: must be an object, not an array`), the body's `body`.
pub fn read_at<T: JsonSchema + DeserializeOwned + 'static>(body: Value, path: &str) -> Result<T, FieldError> {
    let c = compiled::<T>();
    let checked = Checker { defs: &c.defs }.value(body, &c.schema, path, path.is_empty())?;
    // The checks above leave nothing serde can refuse but a rule of a hand-written type.
    serde_json::from_value(checked.unwrap_or(Value::Null)).map_err(|e| {
        let at = if path.is_empty() { "body" } else { path };
        FieldError::new(at, e.to_string())
    })
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What a schema's `type` admits, and how a message names it.
fn admits(ty: &str, v: &Value) -> bool {
    matches!(
        (ty, v),
        ("string", Value::String(_))
            | ("boolean", Value::Bool(_))
            | ("object", Value::Object(_))
            | ("array", Value::Array(_))
            | ("null", Value::Null)
            | ("number" | "integer", Value::Number(_))
    )
}

fn article(ty: &str) -> &'static str {
    match ty {
        "string" => "a string",
        "boolean" => "a boolean",
        "object" => "an object",
        "array" => "an array",
        "integer" => "an integer",
        "number" => "a number",
        _ => "null",
    }
}

struct Checker<'d> {
    defs: &'d Map<String, Value>,
}

impl Checker<'_> {
    /// The schema a `$ref` names, merged with the keywords beside it (a tagged enum's branch:
    /// `{"$ref": …, "properties": {"type": {"const": …}}}`).
    fn resolve<'s>(&self, s: &'s Value) -> std::borrow::Cow<'s, Value> {
        let Some(r) = s.get("$ref").and_then(Value::as_str) else {
            return std::borrow::Cow::Borrowed(s);
        };
        let name = r.strip_prefix(COMPONENTS).unwrap_or(r);
        let Some(target) = self.defs.get(name) else {
            return std::borrow::Cow::Borrowed(s);
        };
        let mut merged = self.resolve(target).into_owned();
        let (Some(m), Some(extra)) = (merged.as_object_mut(), s.as_object()) else {
            return std::borrow::Cow::Owned(merged);
        };
        for (k, v) in extra {
            match (k.as_str(), m.get_mut(k)) {
                ("$ref", _) => {}
                ("properties", Some(Value::Object(p))) => {
                    if let Value::Object(more) = v {
                        for (pk, pv) in more {
                            p.insert(pk.clone(), pv.clone());
                        }
                    }
                }
                ("required", Some(Value::Array(r))) => {
                    if let Value::Array(more) = v {
                        for x in more {
                            if !r.contains(x) {
                                r.push(x.clone());
                            }
                        }
                    }
                }
                _ => {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
        std::borrow::Cow::Owned(merged)
    }

    /// Checks `v` at `path` against `schema`; `Ok(None)`: a read-only value, dropped.
    /// `top`: the request body itself (its messages name `body`).
    fn value(&self, v: Value, schema: &Value, path: &str, top: bool) -> Result<Option<Value>, FieldError> {
        let s = self.resolve(schema);
        let s = s.as_ref();
        if s.get("readOnly").and_then(Value::as_bool) == Some(true) && !top {
            return Ok(None);
        }
        // A nullable `anyOf` (an optional referenced type): `null`, or the other branch.
        if let Some(Value::Array(any)) = s.get("anyOf") {
            if v.is_null()
                && any
                    .iter()
                    .any(|b| b.get("type").and_then(Value::as_str) == Some("null"))
            {
                return Ok(Some(Value::Null));
            }
            let mut first_err = None;
            for b in any
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
            {
                match self.value(v.clone(), b, path, top) {
                    Ok(x) => return Ok(x),
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = first_err {
                return Err(e);
            }
        }
        if let Some(Value::Array(branches)) = s.get("oneOf") {
            return self.one_of(v, s, branches, path, top).map(Some);
        }
        if let Some(Value::Array(all)) = s.get("allOf") {
            let mut merged = s.clone();
            if let Some(m) = merged.as_object_mut() {
                m.remove("allOf");
                for part in all {
                    let part = self.resolve(part);
                    for (k, pv) in part.as_object().into_iter().flatten() {
                        match (k.as_str(), m.get_mut(k)) {
                            ("properties", Some(Value::Object(p))) => {
                                p.extend(pv.as_object().cloned().unwrap_or_default());
                            }
                            ("required", Some(Value::Array(r))) => {
                                r.extend(pv.as_array().cloned().unwrap_or_default());
                            }
                            _ => {
                                m.insert(k.clone(), pv.clone());
                            }
                        }
                    }
                }
            }
            return self.value(v, &merged, path, top);
        }
        let types: Vec<&str> = match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if v.is_null() {
            return Ok(Some(Value::Null));
        }
        if !types.is_empty() && !types.iter().any(|t| admits(t, &v)) {
            let want = types.iter().find(|t| **t != "null").copied().unwrap_or("null");
            let (at, what) = match (top, want, s.get("format").and_then(Value::as_str)) {
                (true, "object", _) => ("body", "a JSON object"),
                (_, "string", Some("uuid")) => (path, "a UUID string"),
                _ => (if top { "body" } else { path }, article(want)),
            };
            return Err(FieldError::new(at, format!("must be {what}, not {}", type_name(&v))));
        }
        if let Some(c) = s.get("const")
            && *c != v
        {
            let shown = c.as_str().map_or_else(|| c.to_string(), str::to_string);
            return Err(FieldError::new(path, format!("must be one of {shown}")));
        }
        if let Some(Value::Array(allowed)) = s.get("enum")
            && !allowed.contains(&v)
        {
            let names: Vec<String> = allowed
                .iter()
                .filter(|a| !a.is_null())
                .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_string))
                .collect();
            return Err(FieldError::new(path, format!("must be one of {}", names.join(", "))));
        }
        match v {
            Value::String(ref text) => {
                match s.get("format").and_then(Value::as_str) {
                    Some("uuid") if parse_uuid(text).is_none() => {
                        return Err(FieldError::new(path, "must be a UUID"));
                    }
                    Some("date-time") if crate::Timestamp::parse(text).is_none() => {
                        return Err(FieldError::new(path, "must be an RFC 3339 date-time"));
                    }
                    _ => {}
                }
                let min = s.get("minLength").and_then(Value::as_u64);
                let max = s.get("maxLength").and_then(Value::as_u64);
                if min.is_some() || max.is_some() {
                    check_len(path, text, min.unwrap_or(0) as usize, max.unwrap_or(u64::MAX) as usize)?;
                }
                Ok(Some(v))
            }
            Value::Number(ref n) => {
                if types.contains(&"integer") && !types.contains(&"number") {
                    let Some(i) = n.as_i64() else {
                        return Err(FieldError::new(path, "must be an integer"));
                    };
                    let min = s.get("minimum").and_then(Value::as_i64);
                    let max = s.get("maximum").and_then(Value::as_i64);
                    match (min, max) {
                        (Some(lo), Some(hi)) if i < lo || i > hi => {
                            return Err(FieldError::new(path, format!("must be {lo}..{hi}")));
                        }
                        (Some(lo), None) if i < lo => {
                            return Err(FieldError::new(path, format!("must be at least {lo}")));
                        }
                        (None, Some(hi)) if i > hi => {
                            return Err(FieldError::new(path, format!("must be at most {hi}")));
                        }
                        _ => {}
                    }
                    if s.get("format").and_then(Value::as_str) == Some("int32") && i32::try_from(i).is_err() {
                        return Err(FieldError::new(path, "must be a 32-bit integer"));
                    }
                }
                Ok(Some(v))
            }
            Value::Array(items) => {
                if let Some(max) = s.get("maxItems").and_then(Value::as_u64)
                    && items.len() as u64 > max
                {
                    return Err(FieldError::new(path, format!("at most {max} items")));
                }
                let item_schema = s.get("items").cloned().unwrap_or(Value::Bool(true));
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let p = format!("{path}[{i}]");
                    if let Some(x) = self.value(item, &item_schema, &p, false)? {
                        out.push(x);
                    }
                }
                Ok(Some(Value::Array(out)))
            }
            Value::Object(map) => self.object(map, s, path).map(|m| Some(Value::Object(m))),
            other => Ok(Some(other)),
        }
    }

    /// An object: its named properties in the schema's order, then anything else.
    fn object(&self, mut map: Map<String, Value>, s: &Value, path: &str) -> Result<Map<String, Value>, FieldError> {
        let props = s.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = s
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut out = Map::new();
        for (name, ps) in props.into_iter().flatten() {
            let p = join(path, name);
            match map.remove(name) {
                None | Some(Value::Null) if required.contains(&name.as_str()) => {
                    let ro = self.resolve(ps).get("readOnly").and_then(Value::as_bool) == Some(true);
                    if !ro {
                        return Err(FieldError::new(p, "is required"));
                    }
                }
                None | Some(Value::Null) => {}
                Some(v) => {
                    if let Some(x) = self.value(v, ps, &p, false)? {
                        out.insert(name.clone(), x);
                    }
                }
            }
        }
        match s.get("additionalProperties") {
            // A map (`BTreeMap<String, T>`): every other property is an entry.
            Some(extra @ Value::Object(_)) => {
                for (k, v) in map {
                    let p = join(path, &k);
                    if let Some(x) = self.value(v, extra, &p, false)? {
                        out.insert(k, x);
                    }
                }
            }
            Some(Value::Bool(true)) => out.extend(map),
            _ => {
                if let Some(k) = map.keys().next() {
                    return Err(FieldError::new(join(path, k), "unknown property"));
                }
            }
        }
        Ok(out)
    }

    /// A tagged enum: the variant its discriminator names.
    fn one_of(&self, v: Value, s: &Value, branches: &[Value], path: &str, top: bool) -> Result<Value, FieldError> {
        let Some(tag) = s.pointer("/discriminator/propertyName").and_then(Value::as_str) else {
            // Untagged: the first branch that takes it.
            let mut first_err = None;
            for b in branches {
                match self.value(v.clone(), b, path, top) {
                    Ok(x) => return Ok(x.unwrap_or(Value::Null)),
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
            return Err(first_err.unwrap_or_else(|| FieldError::new(path, "matches no variant")));
        };
        let Value::Object(map) = &v else {
            let at = if top { "body" } else { path };
            let what = if top { "a JSON object" } else { "an object" };
            return Err(FieldError::new(at, format!("must be {what}, not {}", type_name(&v))));
        };
        let constant = |b: &Value| -> Option<Value> {
            let r = self.resolve(b);
            r.get("properties")?.get(tag)?.get("const").cloned()
        };
        let values: Vec<Value> = branches.iter().filter_map(constant).collect();
        let p = join(path, tag);
        let given = match map.get(tag) {
            None | Some(Value::Null) => return Err(FieldError::new(p, "is required")),
            Some(t) => t.clone(),
        };
        match branches.iter().find(|b| constant(b).as_ref() == Some(&given)) {
            Some(b) => Ok(self.value(v, b, path, top)?.unwrap_or(Value::Null)),
            None => {
                let names: Vec<String> = values
                    .iter()
                    .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_string))
                    .collect();
                Err(FieldError::new(p, format!("must be one of {}", names.join(", "))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    use super::*;

    #[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Endpoint {
        host: String,
        #[schemars(range(min = 1, max = 65535))]
        port: i32,
    }

    #[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Thing {
        external_id: Option<uuid::Uuid>,
        #[schemars(length(min = 1, max = 8))]
        name: String,
        is_active: bool,
        service_endpoint: Option<Endpoint>,
        tags: Option<Vec<crate::Tag>>,
        #[serde(default)]
        #[schemars(extend("readOnly" = true))]
        created_at: crate::Timestamp,
    }

    #[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
    #[serde(tag = "type")]
    enum Variant {
        #[serde(rename = "A1")]
        A(Thing),
        #[serde(rename = "B2")]
        B(Endpoint),
    }

    fn err<T: JsonSchema + DeserializeOwned + 'static + std::fmt::Debug>(v: Value) -> String {
        read::<T>(v).unwrap_err().0
    }

    #[test]
    fn reports_the_first_offending_field_with_its_path() {
        assert_eq!(err::<Thing>(json!([1])), "body: must be a JSON object, not an array");
        assert_eq!(err::<Thing>(json!({"isActive": true})), "name: is required");
        assert_eq!(
            err::<Thing>(json!({"name": null, "isActive": true})),
            "name: is required"
        );
        assert_eq!(
            err::<Thing>(json!({"name": "", "isActive": true})),
            "name: must be 1..8 characters"
        );
        assert_eq!(
            err::<Thing>(json!({"name": 5, "isActive": true})),
            "name: must be a string, not a number"
        );
        assert_eq!(
            err::<Thing>(json!({"externalId": "nope", "name": "x", "isActive": true})),
            "externalId: must be a UUID"
        );
        assert_eq!(
            err::<Thing>(json!({"name": "x", "isActive": true, "serviceEndpoint": {"host": "h", "port": 70000}})),
            "serviceEndpoint.port: must be 1..65535"
        );
        assert_eq!(
            err::<Thing>(json!({"name": "x", "isActive": true, "tags": [{"key": "k"}]})),
            "tags[0].value: is required"
        );
        assert_eq!(
            err::<Thing>(json!({"extra": 1, "name": "x", "isActive": "yes"})),
            "isActive: must be a boolean, not a string"
        );
        assert_eq!(
            err::<Thing>(json!({"extra": 1, "name": "x", "isActive": true})),
            "extra: unknown property"
        );
    }

    #[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct WithSecret {
        /// The secret.
        #[schemars(length(min = 12, max = 128), extend("writeOnly" = true))]
        password: Option<String>,
    }

    /// A write-only secret's schema admits `null` in answers (the value branch is write-only),
    /// and the body check reads it as a nullable string, with the same messages.
    #[test]
    fn a_write_only_secret_is_a_write_only_value_or_null() {
        let mut g = generator();
        let _ = g.subschema_for::<WithSecret>();
        let defs = g.take_definitions(true);
        let p = &defs["WithSecret"]["properties"]["password"];
        assert_eq!(p["description"], "The secret.");
        assert_eq!(p["anyOf"][0]["type"], "string");
        assert_eq!(p["anyOf"][0]["writeOnly"], true);
        assert_eq!(p["anyOf"][0]["minLength"], 12);
        assert_eq!(p["anyOf"][1]["type"], "null");
        assert!(p.get("writeOnly").is_none());
        assert_eq!(
            read::<WithSecret>(json!({"password": null})).unwrap(),
            WithSecret { password: None }
        );
        let long = "x".repeat(12);
        assert_eq!(
            read::<WithSecret>(json!({ "password": long }))
                .unwrap()
                .password
                .as_deref(),
            Some(long.as_str())
        );
        assert_eq!(
            err::<WithSecret>(json!({"password": "short"})),
            "password: must be 12..128 characters"
        );
        assert_eq!(
            err::<WithSecret>(json!({"password": 5})),
            "password: must be a string, not a number"
        );
    }

    #[test]
    fn read_only_properties_are_dropped_and_null_is_absent() {
        let t: Thing = read(json!({"name": "x", "isActive": true, "createdAt": "garbage", "tags": null})).unwrap();
        assert_eq!(t.created_at, crate::Timestamp(0));
        assert_eq!(t.tags, None);
    }

    #[test]
    fn a_tagged_enum_is_read_as_the_variant_its_tag_names() {
        let v: Variant = read(json!({"type": "B2", "host": "h", "port": 1})).unwrap();
        assert_eq!(
            v,
            Variant::B(Endpoint {
                host: "h".into(),
                port: 1
            })
        );
        assert_eq!(err::<Variant>(json!({"host": "h"})), "type: is required");
        assert_eq!(err::<Variant>(json!({"type": "C"})), "type: must be one of A1, B2");
        assert_eq!(
            err::<Variant>(json!({"type": "B2", "host": "h", "port": 1, "name": "x"})),
            "name: unknown property"
        );
        let mut g = generator();
        let _ = g.subschema_for::<Variant>();
        let defs = g.take_definitions(true);
        assert_eq!(defs["Variant"]["discriminator"]["propertyName"], "type");
        assert_eq!(
            defs["Variant"]["discriminator"]["mapping"]["A1"],
            "#/components/schemas/Thing"
        );
    }
}
