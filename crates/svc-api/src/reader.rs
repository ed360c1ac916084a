//! The strict JSON reader behind every management request body (contract §1.1, §1.8).
//!
//! A body is parsed into a `serde_json::Value` once; an [`Obj`] then hands out its fields one at a
//! time with the checks the contract asks for. `null` and absent are the same thing. Every error
//! message starts with the JSON path of the offending field (`serviceEndpoint.port: must be 1..65535`).
//! [`Obj::finish`] rejects properties nobody asked for, after read-only ones were set aside with
//! [`Obj::ignore`], so a GET response can be sent back in a PUT.

use serde_json::{Map, Value};
use uuid::Uuid;

/// A validation failure; the message starts with the field path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError(pub String);

impl FieldError {
    pub fn new(path: impl AsRef<str>, reason: impl AsRef<str>) -> Self {
        FieldError(format!("{}: {}", path.as_ref(), reason.as_ref()))
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub type Result<T> = std::result::Result<T, FieldError>;

/// A JSON object being read field by field.
#[derive(Debug)]
pub struct Obj {
    map: Map<String, Value>,
    prefix: String,
}

/// Joins a path prefix and a field name: `""` + `name` → `name`, `a` + `b` → `a.b`.
pub fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
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

impl Obj {
    /// The request body itself: must be a JSON object.
    pub fn root(v: Value) -> Result<Obj> {
        match v {
            Value::Object(map) => Ok(Obj {
                map,
                prefix: String::new(),
            }),
            other => Err(FieldError(format!(
                "body: must be a JSON object, not {}",
                type_name(&other)
            ))),
        }
    }

    /// A nested object found at `path`.
    pub fn nested(v: Value, path: String) -> Result<Obj> {
        match v {
            Value::Object(map) => Ok(Obj { map, prefix: path }),
            other => Err(FieldError::new(
                &path,
                format!("must be an object, not {}", type_name(&other)),
            )),
        }
    }

    /// An object from text (fields such as `providerDetailJSON` carry JSON as a string).
    pub fn from_json_text(text: &str, path: String) -> Result<Obj> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| FieldError::new(&path, format!("must be JSON text of an object ({e})")))?;
        Obj::nested(v, path)
    }

    pub fn path(&self, name: &str) -> String {
        join(&self.prefix, name)
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Whether the field is present and not null (does not consume it).
    pub fn has(&self, name: &str) -> bool {
        matches!(self.map.get(name), Some(v) if !v.is_null())
    }

    /// Peeks at a string field without consuming it.
    pub fn peek_str(&self, name: &str) -> Option<&str> {
        self.map.get(name).and_then(Value::as_str)
    }

    /// Removes the field; `null` reads as absent.
    pub fn take(&mut self, name: &str) -> Option<Value> {
        match self.map.remove(name) {
            Some(Value::Null) | None => None,
            Some(v) => Some(v),
        }
    }

    /// Removes read-only fields so they are accepted and ignored.
    pub fn ignore(&mut self, names: &[&str]) {
        for n in names {
            self.map.remove(*n);
        }
    }

    /// Fails on the first property nobody read.
    pub fn finish(self) -> Result<()> {
        match self.map.keys().next() {
            Some(k) => Err(FieldError::new(join(&self.prefix, k), "unknown property")),
            None => Ok(()),
        }
    }

    pub fn required<T>(&self, name: &str, v: Option<T>) -> Result<T> {
        v.ok_or_else(|| FieldError::new(self.path(name), "is required"))
    }

    pub fn opt_str(&mut self, name: &str) -> Result<Option<String>> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(FieldError::new(
                self.path(name),
                format!("must be a string, not {}", type_name(&other)),
            )),
        }
    }

    pub fn req_str(&mut self, name: &str) -> Result<String> {
        let v = self.opt_str(name)?;
        self.required(name, v)
    }

    /// A string with a length range in Unicode scalar values.
    pub fn opt_str_len(&mut self, name: &str, min: usize, max: usize) -> Result<Option<String>> {
        let v = self.opt_str(name)?;
        if let Some(s) = &v {
            check_len(&self.path(name), s, min, max)?;
        }
        Ok(v)
    }

    pub fn req_str_len(&mut self, name: &str, min: usize, max: usize) -> Result<String> {
        let v = self.opt_str_len(name, min, max)?;
        self.required(name, v)
    }

    /// A string that must be one of `allowed` (exact, case-sensitive).
    pub fn opt_enum(&mut self, name: &str, allowed: &[&str]) -> Result<Option<String>> {
        let v = self.opt_str(name)?;
        if let Some(s) = &v {
            check_enum(&self.path(name), s, allowed)?;
        }
        Ok(v)
    }

    pub fn req_enum(&mut self, name: &str, allowed: &[&str]) -> Result<String> {
        let v = self.opt_enum(name, allowed)?;
        self.required(name, v)
    }

    pub fn opt_bool(&mut self, name: &str) -> Result<Option<bool>> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(other) => Err(FieldError::new(
                self.path(name),
                format!("must be a boolean, not {}", type_name(&other)),
            )),
        }
    }

    pub fn req_bool(&mut self, name: &str) -> Result<bool> {
        let v = self.opt_bool(name)?;
        self.required(name, v)
    }

    pub fn opt_i64(&mut self, name: &str) -> Result<Option<i64>> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) => Ok(Some(i)),
                None => Err(FieldError::new(self.path(name), "must be an integer")),
            },
            Some(other) => Err(FieldError::new(
                self.path(name),
                format!("must be an integer, not {}", type_name(&other)),
            )),
        }
    }

    pub fn opt_i32(&mut self, name: &str) -> Result<Option<i32>> {
        match self.opt_i64(name)? {
            None => Ok(None),
            Some(i) => i32::try_from(i)
                .map(Some)
                .map_err(|_| FieldError::new(self.path(name), "must be a 32-bit integer")),
        }
    }

    /// An int32 within `min..=max`.
    pub fn opt_i32_range(&mut self, name: &str, min: i32, max: i32) -> Result<Option<i32>> {
        let path = self.path(name);
        match self.opt_i64(name)? {
            None => Ok(None),
            Some(i) if i >= min as i64 && i <= max as i64 => Ok(Some(i as i32)),
            Some(_) => Err(FieldError::new(path, format!("must be {min}..{max}"))),
        }
    }

    pub fn req_i32_range(&mut self, name: &str, min: i32, max: i32) -> Result<i32> {
        let v = self.opt_i32_range(name, min, max)?;
        self.required(name, v)
    }

    pub fn opt_uuid(&mut self, name: &str) -> Result<Option<Uuid>> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::String(s)) => parse_uuid(&s)
                .map(Some)
                .ok_or_else(|| FieldError::new(self.path(name), "must be a UUID")),
            Some(other) => Err(FieldError::new(
                self.path(name),
                format!("must be a UUID string, not {}", type_name(&other)),
            )),
        }
    }

    pub fn req_uuid(&mut self, name: &str) -> Result<Uuid> {
        let v = self.opt_uuid(name)?;
        self.required(name, v)
    }

    pub fn opt_obj(&mut self, name: &str) -> Result<Option<Obj>> {
        let path = self.path(name);
        match self.take(name) {
            None => Ok(None),
            Some(v) => Obj::nested(v, path).map(Some),
        }
    }

    pub fn req_obj(&mut self, name: &str) -> Result<Obj> {
        let v = self.opt_obj(name)?;
        self.required(name, v)
    }

    /// An array whose elements are read by `f(element, "name[i]")`.
    pub fn opt_list<T>(&mut self, name: &str, mut f: impl FnMut(Value, String) -> Result<T>) -> Result<Option<Vec<T>>> {
        let path = self.path(name);
        match self.take(name) {
            None => Ok(None),
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    out.push(f(item, format!("{path}[{i}]"))?);
                }
                Ok(Some(out))
            }
            Some(other) => Err(FieldError::new(
                path,
                format!("must be an array, not {}", type_name(&other)),
            )),
        }
    }

    /// An array of objects, each read with `f`.
    pub fn opt_obj_list<T>(&mut self, name: &str, mut f: impl FnMut(&mut Obj) -> Result<T>) -> Result<Option<Vec<T>>> {
        self.opt_list(name, |v, path| {
            let mut o = Obj::nested(v, path)?;
            let t = f(&mut o)?;
            o.finish()?;
            Ok(t)
        })
    }

    pub fn opt_uuid_list(&mut self, name: &str) -> Result<Option<Vec<Uuid>>> {
        self.opt_list(name, |v, path| match v {
            Value::String(s) => parse_uuid(&s).ok_or_else(|| FieldError::new(path, "must be a UUID")),
            other => Err(FieldError::new(
                path,
                format!("must be a UUID string, not {}", type_name(&other)),
            )),
        })
    }

    pub fn opt_str_list(&mut self, name: &str) -> Result<Option<Vec<String>>> {
        self.opt_list(name, |v, path| match v {
            Value::String(s) => Ok(s),
            other => Err(FieldError::new(
                path,
                format!("must be a string, not {}", type_name(&other)),
            )),
        })
    }

    /// Any JSON value, unchecked.
    pub fn opt_value(&mut self, name: &str) -> Option<Value> {
        self.take(name)
    }
}

/// Parses a UUID in any case and any version, in its hyphenated form.
pub fn parse_uuid(s: &str) -> Option<Uuid> {
    if s.len() != 36 {
        return None;
    }
    Uuid::parse_str(s).ok()
}

pub fn check_len(path: &str, s: &str, min: usize, max: usize) -> Result<()> {
    let n = s.chars().count();
    if n < min || n > max {
        if min == 0 {
            return Err(FieldError::new(path, format!("must be at most {max} characters")));
        }
        return Err(FieldError::new(path, format!("must be {min}..{max} characters")));
    }
    Ok(())
}

pub fn check_enum(path: &str, s: &str, allowed: &[&str]) -> Result<()> {
    if allowed.contains(&s) {
        Ok(())
    } else {
        Err(FieldError::new(path, format!("must be one of {}", allowed.join(", "))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_paths_and_unknown_properties() {
        let mut o = Obj::root(json!({"name": "x", "ep": {"port": 70000}, "extra": 1, "ro": 5})).unwrap();
        assert_eq!(o.req_str("name").unwrap(), "x");
        let mut ep = o.req_obj("ep").unwrap();
        assert_eq!(
            ep.req_i32_range("port", 1, 65535).unwrap_err().0,
            "ep.port: must be 1..65535"
        );
        o.ignore(&["ro"]);
        assert_eq!(o.finish().unwrap_err().0, "extra: unknown property");
    }

    #[test]
    fn null_is_absent_and_types_are_checked() {
        let mut o = Obj::root(json!({"a": null, "b": 1, "c": "nope", "l": [{"k": 1}]})).unwrap();
        assert_eq!(o.req_str("a").unwrap_err().0, "a: is required");
        assert_eq!(o.opt_str("b").unwrap_err().0, "b: must be a string, not a number");
        assert_eq!(o.opt_uuid("c").unwrap_err().0, "c: must be a UUID");
        let e = o.opt_obj_list("l", |e| e.req_str("k")).unwrap_err();
        assert_eq!(e.0, "l[0].k: must be a string, not a number");
        assert!(Obj::root(json!([1])).is_err());
    }

    #[test]
    fn uuids_are_case_insensitive() {
        assert_eq!(
            parse_uuid("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"),
            Some(crate::DEFAULT_RESOURCE_SET)
        );
        assert_eq!(parse_uuid("ffffffffffffffffffffffffffffffff"), None);
    }
}
