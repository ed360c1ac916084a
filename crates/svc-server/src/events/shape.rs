//! The read side of stored event bodies: their key trees ([`Shape`]) and [`expand`], which puts
//! back every documented key a body was stored without (null values, values held in the row's
//! columns, fixed values), for the audit log (§3.23), the authorization events (§3.24) and the
//! workload events (§3.25).

use std::borrow::Cow;

use crate::store::Columns;

// ------------------------------------------------------------------------------------------------
// Stored form. The event bodies are stored without their null values (a typical `/credentials`
// event is mostly nulls: about 60% of its bytes, written to the WAL and again at each checkpoint,
// see docs/PERFORMANCE.md). `expand` puts every documented key back, in the documented order, when
// the events are read, so the API shows the same objects as before; bodies stored in full (older
// rows) pass through unchanged.

/// The key tree of a stored event body.
#[derive(Clone, Copy)]
pub enum Shape {
    /// A value: `null` when absent.
    Leaf,
    /// A value that is not a scalar (a list of ids or strings, an object), kept as stored:
    /// `null` when absent, and not a field the lists sort on (§3.26: scalar fields).
    Opaque,
    /// An object that is always present (`{}` with null values when absent).
    Obj(&'static [(&'static str, Shape)]),
    /// An object or `null`.
    Nullable(&'static [(&'static str, Shape)]),
    /// An array of objects (`[]` when absent).
    List(&'static [(&'static str, Shape)]),
    /// A value the writer never stores because it is always the same: this JSON literal.
    Fixed(&'static str),
    /// A value the writer never stores because the row has it in this column (text or null;
    /// `source_port` a number).
    Col(&'static str),
    /// A time the writer never stores because the row has it in this column (milliseconds),
    /// shown as RFC 3339.
    TimeCol(&'static str),
    /// A value the writer never stores because it equals this earlier key of the same object.
    Sibling(&'static str),
}

use Shape::{Col, Fixed, Leaf, List, Nullable, Obj, Opaque, Sibling, TimeCol};

impl Shape {
    fn is_scalar(self) -> bool {
        matches!(self, Leaf | Fixed(_) | Col(_) | TimeCol(_) | Sibling(_))
    }

    /// The canonical key path of a scalar field named by `field` (case-insensitive): a dotted
    /// path through objects (`meta.contextId`), or a bare name found first in shape order
    /// (`contextId` → `meta.contextId`); with the field's own shape (which says where a value
    /// that is not stored in the body comes from). Fields inside arrays are not scalar fields of
    /// the item.
    pub fn leaf_path(self, field: &str) -> Option<(Vec<&'static str>, Shape)> {
        fn fields(shape: Shape) -> &'static [(&'static str, Shape)] {
            match shape {
                Obj(f) | Nullable(f) => f,
                _ => &[],
            }
        }
        fn find(shape: Shape, name: &str, path: &mut Vec<&'static str>) -> Option<Shape> {
            for (key, s) in fields(shape) {
                if s.is_scalar() && key.eq_ignore_ascii_case(name) {
                    path.push(key);
                    return Some(*s);
                }
            }
            for (key, s) in fields(shape) {
                path.push(key);
                if let Some(found) = find(*s, name, path) {
                    return Some(found);
                }
                path.pop();
            }
            None
        }
        let mut path = Vec::new();
        if field.contains('.') {
            let mut shape = self;
            for part in field.split('.') {
                let (key, s) = fields(shape).iter().find(|(k, _)| k.eq_ignore_ascii_case(part))?;
                path.push(*key);
                shape = *s;
            }
            return shape.is_scalar().then_some((path, shape));
        }
        find(self, field, &mut path).map(|s| (path, s))
    }
}

const ENTITY: &[(&str, Shape)] = &[("id", Leaf), ("name", Leaf), ("result", Leaf), ("matches", Opaque)];
const ATTESTATION: &[(&str, Shape)] = &[
    ("id", Leaf),
    ("name", Leaf),
    ("result", Leaf),
    ("matches", Opaque),
    ("reason", Leaf),
    ("attribute", Leaf),
    ("expectedValue", Leaf),
    ("expectedValues", Opaque),
    ("actualValue", Leaf),
];
const CREDENTIAL_PROVIDER: &[(&str, Shape)] = &[
    ("id", Leaf),
    ("name", Leaf),
    ("result", Leaf),
    ("matches", Opaque),
    ("type", Leaf),
    ("reason", Leaf),
];
const ENVIRONMENT: &[(&str, Shape)] = &[
    ("network", Obj(&[("sourceIP", Col("client_ip"))])),
    ("host", Obj(&[("hostname", Leaf)])),
    (
        "process",
        Obj(&[
            ("name", Leaf),
            ("userName", Leaf),
            ("exePath", Leaf),
            ("commandLine", Leaf),
        ]),
    ),
    ("svc", Obj(&[("clientId", Leaf)])),
    (
        "cloudA",
        Obj(&[
            ("accountId", Leaf),
            ("instanceId", Leaf),
            ("region", Leaf),
            ("ecs", Obj(&[("taskFamily", Leaf), ("serviceName", Leaf)])),
            ("lambda", Obj(&[("arn", Leaf)])),
        ]),
    ),
    ("cloudC", Obj(&[("serviceAccount", Leaf)])),
    ("cloudB", Obj(&[("vmId", Leaf), ("subscriptionId", Leaf)])),
    (
        "orchestrator",
        Obj(&[
            ("namespace", Leaf),
            ("podName", Leaf),
            ("serviceAccountName", Leaf),
            ("serviceAccountUID", Leaf),
        ]),
    ),
    (
        "ciB",
        Obj(&[
            ("namespacePath", Leaf),
            ("projectPath", Leaf),
            ("refPath", Leaf),
            ("subject", Leaf),
        ]),
    ),
    ("ciA", Obj(&[("repository", Leaf), ("subject", Leaf)])),
    ("oidc", Obj(&[("sub", Leaf), ("aud", Leaf), ("iss", Leaf)])),
    (
        "ciC",
        Obj(&[("workspaceId", Leaf), ("organizationId", Leaf), ("projectId", Leaf)]),
    ),
];

/// AuthorizationEventDTO (§3.24) as `authorization` writes it.
pub const AUTHORIZATION_EVENT: Shape = Obj(&[
    ("authorizationChain", List(&[])),
    (
        "meta",
        Obj(&[
            ("clientIP", Col("client_ip")),
            ("timestamp", TimeCol("ts")),
            ("eventType", Col("event_type")),
            ("eventId", Col("id")),
            ("resourceSetId", Col("rs")),
            ("contextId", Col("context_id")),
            ("directiveId", Sibling("contextId")),
            ("severity", Col("severity")),
        ]),
    ),
    ("outcome", Obj(&[("result", Col("result")), ("reason", Leaf)])),
    (
        "clientRequest",
        Obj(&[
            ("version", Fixed("\"edge/v1\"")),
            (
                "network",
                Obj(&[
                    ("sourceIP", Col("client_ip")),
                    ("sourcePort", Col("source_port")),
                    ("transportProtocol", Fixed("\"TCP\"")),
                    ("proxyPort", Fixed("0")),
                    ("targetHost", Leaf),
                    ("targetPort", Leaf),
                ]),
            ),
        ]),
    ),
    ("environment", Obj(ENVIRONMENT)),
    ("clientWorkload", Nullable(ENTITY)),
    ("serverWorkload", Nullable(ENTITY)),
    ("accessPolicy", Nullable(ENTITY)),
    ("clientWorkloads", List(ENTITY)),
    ("serverWorkloads", List(ENTITY)),
    ("accessPolicies", List(ENTITY)),
    ("trustProviders", List(ATTESTATION)),
    ("accessConditions", List(ATTESTATION)),
    ("contentSecurity", List(ATTESTATION)),
    ("credentialProvider", Nullable(CREDENTIAL_PROVIDER)),
    ("user", Leaf),
]);

/// EventDTO (§3.25) as `workload` writes it.
pub const WORKLOAD_EVENT: Shape = Obj(&[
    (
        "meta",
        Obj(&[
            ("timestamp", TimeCol("ts")),
            ("eventType", Col("event_type")),
            ("eventId", Col("id")),
            ("resourceSetId", Col("rs")),
            ("policyId", Leaf),
            ("action", Col("action")),
            ("connectionId", Col("context_id")),
            ("severity", Col("severity")),
            ("clientWorkloadId", Col("client_workload")),
            ("serverWorkloadId", Col("server_workload")),
            ("applicationProtocol", Col("app_protocol")),
            ("userId", Leaf),
        ]),
    ),
    (
        "network",
        Obj(&[
            ("clientWorkloadIP", Col("client_ip")),
            ("clientWorkloadPort", Col("source_port")),
            ("serverWorkloadIP", Leaf),
            ("serverWorkloadPort", Leaf),
            ("proxyPort", Leaf),
        ]),
    ),
    ("outcome", Obj(&[("result", Leaf)])),
]);

/// A stored event body with every key of `shape` back in place (absent keys become `null`, `{}`
/// or `[]`, or take their value from the row's `columns`, as the shape says), in the shape's
/// order; keys the shape does not name follow. A value the body does carry (rows stored before
/// a key moved to a column) is kept as it is.
pub fn expand(value: serde_json::Value, shape: Shape, columns: &Columns) -> serde_json::Value {
    use serde_json::Value;
    fn object(mut map: serde_json::Map<String, Value>, fields: &[(&str, Shape)], cols: &Columns) -> Value {
        let mut out = serde_json::Map::with_capacity(fields.len().max(map.len()));
        for (key, shape) in fields {
            let v = map.remove(*key);
            let v = match (shape, v) {
                (Leaf | Opaque, v) => v.unwrap_or(Value::Null),
                (Fixed(literal), v) => v.unwrap_or_else(|| serde_json::from_str(literal).expect("a JSON literal")),
                (Col(c), v) => v.unwrap_or_else(|| cols.get(c).cloned().unwrap_or(Value::Null)),
                (TimeCol(c), v) => v.unwrap_or_else(|| match cols.get(c).and_then(Value::as_i64) {
                    Some(ms) => Value::String(svc_api::Timestamp::from_millis(ms).to_rfc3339()),
                    None => Value::Null,
                }),
                (Sibling(k), v) => v.unwrap_or_else(|| out.get(*k).cloned().unwrap_or(Value::Null)),
                (Obj(f), Some(Value::Object(m))) => object(m, f, cols),
                (Obj(f), _) => object(Default::default(), f, cols),
                (Nullable(f), Some(Value::Object(m))) => object(m, f, cols),
                (Nullable(_), v) => v.unwrap_or(Value::Null),
                (List(f), Some(Value::Array(items))) => Value::Array(
                    items
                        .into_iter()
                        .map(|i| match i {
                            Value::Object(m) if !f.is_empty() => object(m, f, cols),
                            other => other,
                        })
                        .collect(),
                ),
                (List(_), v) => v.unwrap_or(Value::Array(vec![])),
            };
            out.insert((*key).to_string(), v);
        }
        out.extend(map);
        Value::Object(out)
    }
    match (shape, value) {
        (Obj(f) | Nullable(f), Value::Object(m)) => object(m, f, columns),
        (_, v) => v,
    }
}

/// The columns an event's whole request shares (its row's): a part of a request's shared parts
/// that names no other column renders the same for each of its events.
const ROW_COLUMNS: &[&str] = &["client_ip", "rs", "ts", "context_id", "source_port"];

/// Whether `shape` takes values from no column but the row's ([`ROW_COLUMNS`]).
pub(crate) fn row_level(shape: Shape) -> bool {
    match shape {
        Col(c) | TimeCol(c) => ROW_COLUMNS.contains(&c),
        Obj(f) | Nullable(f) | List(f) => f.iter().all(|(_, s)| row_level(*s)),
        Leaf | Opaque | Fixed(_) | Sibling(_) => true,
    }
}

/// A stored JSON value, parsed once and borrowed from the stored text: what [`write_expanded`]
/// reads instead of a `serde_json::Value` (no allocation per key or string, no hashing), and a
/// string written without escapes is copied back as it is, not scanned again.
#[derive(Debug)]
pub enum Stored<'a> {
    Object(Vec<(Cow<'a, str>, Stored<'a>)>),
    Array(Vec<Stored<'a>>),
    /// Borrowed: it had no escapes in the stored text, so it needs none when written.
    Str(Cow<'a, str>),
    Number(serde_json::Number),
    Bool(bool),
    Null,
}

impl<'de> serde::Deserialize<'de> for Stored<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Stored<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Stored<'de>, E> {
                Ok(Stored::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Stored<'de>, E> {
                Ok(Stored::Number(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Stored<'de>, E> {
                Ok(Stored::Number(v.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Stored<'de>, E> {
                serde_json::Number::from_f64(v)
                    .map(Stored::Number)
                    .ok_or_else(|| E::custom("a number JSON cannot hold"))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Stored<'de>, E> {
                Ok(Stored::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Stored<'de>, E> {
                Ok(Stored::Str(Cow::Owned(v.to_string())))
            }
            fn visit_unit<E>(self) -> Result<Stored<'de>, E> {
                Ok(Stored::Null)
            }
            fn visit_none<E>(self) -> Result<Stored<'de>, E> {
                Ok(Stored::Null)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Stored<'de>, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(4));
                while let Some(v) = seq.next_element()? {
                    out.push(v);
                }
                Ok(Stored::Array(out))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Stored<'de>, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(8));
                // A member's name as a string value: borrowed unless written with escapes.
                while let Some((k, v)) = map.next_entry::<Stored<'de>, Stored<'de>>()? {
                    let Stored::Str(k) = k else {
                        return Err(serde::de::Error::custom("a member name that is not a string"));
                    };
                    out.push((k, v));
                }
                Ok(Stored::Object(out))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'a> Stored<'a> {
    /// `text` parsed; `None` when it is not JSON.
    pub fn parse(text: &'a str) -> Option<Stored<'a>> {
        serde_json::from_str(text).ok()
    }

    /// A member of an object.
    fn get(&self, key: &str) -> Option<&Stored<'a>> {
        match self {
            Stored::Object(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Writes it as JSON.
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            Stored::Object(m) => {
                out.push(b'{');
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_str(out, k);
                    out.push(b':');
                    v.write(out);
                }
                out.push(b'}');
            }
            Stored::Array(a) => {
                out.push(b'[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    v.write(out);
                }
                out.push(b']');
            }
            Stored::Str(s) => write_str(out, s),
            Stored::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
            Stored::Bool(true) => out.extend_from_slice(b"true"),
            Stored::Bool(false) => out.extend_from_slice(b"false"),
            Stored::Null => out.extend_from_slice(b"null"),
        }
    }
}

/// A string as JSON: one that was stored without escapes is copied as it is.
#[allow(clippy::ptr_arg)] // Borrowed or owned is the point: it says whether to escape.
fn write_str(out: &mut Vec<u8>, s: &Cow<'_, str>) {
    match s {
        Cow::Borrowed(b) => {
            out.push(b'"');
            out.extend_from_slice(b.as_bytes());
            out.push(b'"');
        }
        Cow::Owned(o) => serde_json::to_writer(&mut *out, o).expect("a string serialises"),
    }
}

/// What [`write_expanded`] keeps from one record to the next: the top-level parts a record takes
/// whole from its request's shared parts (`clientRequest`, `environment`: a hundred-odd keys,
/// mostly null), written for the request's first event and copied for the others.
/// One per request: [`SharedParts::clear`] it before the next request's records.
#[derive(Default)]
pub struct SharedParts {
    /// Each part's key and bytes in `bytes`; `None`: a part that names an event's own column.
    parts: Vec<(&'static str, Option<std::ops::Range<usize>>)>,
    bytes: Vec<u8>,
}

impl SharedParts {
    /// Forgets the parts written: the next record is of another request.
    pub fn clear(&mut self) {
        self.parts.clear();
        self.bytes.clear();
    }
}

/// Writes, as JSON, what [`expand`] makes of `body` with the top-level members of `shared`
/// merged under its own (a request's shared parts: `body`'s members win), straight from the
/// stored texts: the log streams write thousands of records a second, and parsing each into a
/// tree to expand it (a hundred keys, each an allocation) was most of their cost. The same bytes
/// as serialising [`expand`]'s result for bodies written by `serde_json` (a unit test checks
/// it). `memo` carries the shared parts already written from one record of a request to the next.
pub fn write_expanded(
    out: &mut Vec<u8>,
    body: &Stored<'_>,
    shared: Option<&Stored<'_>>,
    shape: Shape,
    columns: &Columns,
    memo: &mut SharedParts,
) {
    use serde_json::Value;
    fn value(out: &mut Vec<u8>, v: &Value) {
        serde_json::to_writer(&mut *out, v).expect("a JSON value serialises");
    }
    fn comma(out: &mut Vec<u8>, first: &mut bool) {
        if !*first {
            out.push(b',');
        }
        *first = false;
    }
    /// A key of a shape: plain ASCII (checked by a unit test), written as it is.
    fn shape_key(out: &mut Vec<u8>, first: &mut bool, k: &str) {
        comma(out, first);
        out.push(b'"');
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b"\":");
    }
    /// A stored key the shape does not name: escaped.
    fn other_key(out: &mut Vec<u8>, first: &mut bool, k: &str) {
        comma(out, first);
        serde_json::to_writer(&mut *out, k).expect("a key serialises");
        out.push(b':');
    }
    /// A member as the shape's object `f` when it is a stored object.
    fn nested(out: &mut Vec<u8>, v: &Stored<'_>, f: &[(&'static str, Shape)], cols: &Columns) -> bool {
        match v {
            Stored::Object(_) => {
                object(out, [Some(v), None], f, cols, None);
                true
            }
            _ => false,
        }
    }
    fn object(
        out: &mut Vec<u8>,
        maps: [Option<&Stored<'_>>; 2],
        fields: &[(&'static str, Shape)],
        cols: &Columns,
        mut memo: Option<&mut SharedParts>,
    ) {
        let lookup = |k: &str| maps.iter().flatten().find_map(|m| m.get(k));
        out.push(b'{');
        let mut first = true;
        for (k, shape) in fields {
            shape_key(out, &mut first, k);
            // A part of the request's shared parts (not of the event's own body), once per request.
            if let (Some(memo), Obj(f), None, Some(v)) = (
                memo.as_deref_mut(),
                shape,
                maps[0].and_then(|b| b.get(k)),
                maps[1].and_then(|s| s.get(k)),
            ) {
                match memo.parts.iter().find(|(n, _)| n == k) {
                    Some((_, Some(r))) => {
                        out.extend_from_slice(&memo.bytes[r.clone()]);
                        continue;
                    }
                    // Written as any other member, below.
                    Some((_, None)) => {}
                    None => {
                        let start = out.len();
                        let written = nested(out, v, f, cols);
                        let kept = (written && row_level(*shape)).then(|| {
                            let at = memo.bytes.len();
                            memo.bytes.extend_from_slice(&out[start..]);
                            at..memo.bytes.len()
                        });
                        memo.parts.push((k, kept));
                        if written {
                            continue;
                        }
                    }
                }
            }
            match (shape, lookup(k)) {
                (Fixed(_) | Col(_) | TimeCol(_) | Sibling(_) | Leaf | Opaque, Some(v)) => v.write(out),
                (Leaf | Opaque, None) => out.extend_from_slice(b"null"),
                (Fixed(literal), None) => out.extend_from_slice(literal.as_bytes()),
                (Col(c), None) => value(out, cols.get(c).unwrap_or(&Value::Null)),
                (TimeCol(c), None) => match cols.get(c).and_then(Value::as_i64) {
                    Some(ms) => value(out, &Value::String(svc_api::Timestamp::from_millis(ms).to_rfc3339())),
                    None => out.extend_from_slice(b"null"),
                },
                (Sibling(s), None) => match (lookup(s), fields.iter().find(|(k, _)| k == s)) {
                    (Some(v), _) => v.write(out),
                    // A sibling the row holds in a column (`directiveId` = `contextId`).
                    (None, Some((_, Col(c)))) => value(out, cols.get(c).unwrap_or(&Value::Null)),
                    _ => out.extend_from_slice(b"null"),
                },
                (Obj(f), Some(v)) => {
                    if !nested(out, v, f, cols) {
                        object(out, [None, None], f, cols, None);
                    }
                }
                (Obj(f), None) => object(out, [None, None], f, cols, None),
                (Nullable(f), Some(v)) => {
                    if !nested(out, v, f, cols) {
                        v.write(out);
                    }
                }
                (Nullable(_), None) => out.extend_from_slice(b"null"),
                (List(f), Some(Stored::Array(items))) => {
                    out.push(b'[');
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        if f.is_empty() || !nested(out, item, f, cols) {
                            item.write(out);
                        }
                    }
                    out.push(b']');
                }
                (List(_), Some(v)) => v.write(out),
                (List(_), None) => out.extend_from_slice(b"[]"),
            }
        }
        // Members the shape does not name follow, in their order (the first map's win).
        for (i, m) in maps.iter().enumerate() {
            let Some(Stored::Object(members)) = m else { continue };
            for (k, v) in members {
                let earlier = maps[..i].iter().flatten().any(|e| e.get(k).is_some());
                if !earlier && !fields.iter().any(|(f, _)| *f == k) {
                    other_key(out, &mut first, k);
                    v.write(out);
                }
            }
        }
        out.push(b'}');
    }
    match (shape, body) {
        (Obj(f) | Nullable(f), Stored::Object(_)) => object(out, [Some(body), shared], f, columns, Some(memo)),
        _ => body.write(out),
    }
}

#[cfg(test)]
mod tests {
    /// A stored value is written back as `serde_json` writes it: strings stored with escapes are
    /// escaped again, the others copied.
    #[test]
    fn a_stored_value_is_written_back_as_serde_json_writes_it() {
        for text in [
            r#"{"a":"x\"y\\z\u0001é","b":[1,-2,3.5,true,false,null,{}],"c":{"d":[]},"e\n":"\u00e9"}"#,
            "[]",
            "\"s\"",
            "12",
            "null",
        ] {
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            let mut out = vec![];
            super::Stored::parse(text).unwrap().write(&mut out);
            assert_eq!(String::from_utf8(out).unwrap(), v.to_string(), "{text}");
        }
        assert!(super::Stored::parse("{").is_none());
        assert!(super::Stored::parse("{} x").is_none());
    }
}
