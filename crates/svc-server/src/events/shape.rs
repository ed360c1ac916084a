//! The read side of stored event bodies: their key trees ([`Shape`]) and [`expand`], which puts
//! back every documented key a body was stored without (null values, values held in the row's
//! columns, fixed values), for the audit log (§3.23), the authorization events (§3.24) and the
//! workload events (§3.25).

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
    /// A value the writer never stores because the row has it in this column (text or null).
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
            ("contextId", Leaf),
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
                    ("sourcePort", Leaf),
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
            ("clientWorkloadPort", Leaf),
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
                (Col(c), v) => v.unwrap_or_else(|| cols.get(*c).cloned().unwrap_or(Value::Null)),
                (TimeCol(c), v) => v.unwrap_or_else(|| match cols.get(*c).and_then(Value::as_i64) {
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

/// Writes, as JSON, what [`expand`] makes of `body` with the top-level keys of `shared` merged
/// under its own (a request's shared parts: `body`'s keys win), without building it: the log
/// streams write thousands of records a second, and building each expanded tree (a hundred
/// keys, each an allocation) was most of their cost. The same bytes as serialising
/// [`expand`]'s result (a unit test checks it).
pub fn write_expanded(
    out: &mut Vec<u8>,
    body: &serde_json::Value,
    shared: Option<&serde_json::Map<String, serde_json::Value>>,
    shape: Shape,
    columns: &Columns,
) {
    use serde_json::Value;
    type Map = serde_json::Map<String, Value>;
    /// A key of a small object: a scan beats hashing the key.
    fn get<'a>(m: &'a Map, key: &str) -> Option<&'a Value> {
        m.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    }
    fn value(out: &mut Vec<u8>, v: &Value) {
        serde_json::to_writer(&mut *out, v).expect("a JSON value serialises");
    }
    fn key(out: &mut Vec<u8>, first: &mut bool, k: &str) {
        if !*first {
            out.push(b',');
        }
        *first = false;
        serde_json::to_writer(&mut *out, k).expect("a key serialises");
        out.push(b':');
    }
    fn object(out: &mut Vec<u8>, maps: [Option<&Map>; 2], fields: &[(&str, Shape)], cols: &Columns) {
        let lookup = |k: &str| maps.iter().flatten().find_map(|m| get(m, k));
        out.push(b'{');
        let mut first = true;
        for (k, shape) in fields {
            key(out, &mut first, k);
            match (shape, lookup(k)) {
                (Fixed(_) | Col(_) | TimeCol(_) | Sibling(_) | Leaf | Opaque, Some(v)) => value(out, v),
                (Leaf | Opaque, None) => out.extend_from_slice(b"null"),
                (Fixed(literal), None) => out.extend_from_slice(literal.as_bytes()),
                (Col(c), None) => value(out, cols.get(*c).unwrap_or(&Value::Null)),
                (TimeCol(c), None) => match cols.get(*c).and_then(Value::as_i64) {
                    Some(ms) => value(out, &Value::String(svc_api::Timestamp::from_millis(ms).to_rfc3339())),
                    None => out.extend_from_slice(b"null"),
                },
                (Sibling(s), None) => value(out, lookup(s).unwrap_or(&Value::Null)),
                (Obj(f) | Nullable(f), Some(Value::Object(m))) => object(out, [Some(m), None], f, cols),
                (Obj(f), _) => object(out, [None, None], f, cols),
                (Nullable(_), Some(v)) => value(out, v),
                (Nullable(_), None) => out.extend_from_slice(b"null"),
                (List(f), Some(Value::Array(items))) => {
                    out.push(b'[');
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        match item {
                            Value::Object(m) if !f.is_empty() => object(out, [Some(m), None], f, cols),
                            other => value(out, other),
                        }
                    }
                    out.push(b']');
                }
                (List(_), Some(v)) => value(out, v),
                (List(_), None) => out.extend_from_slice(b"[]"),
            }
        }
        // Keys the shape does not name follow, in their order (the first map's win).
        for (i, m) in maps.iter().enumerate() {
            let Some(m) = m else { continue };
            for (k, v) in m.iter() {
                let earlier = maps[..i].iter().flatten().any(|e| get(e, k).is_some());
                if !earlier && !fields.iter().any(|(f, _)| f == k) {
                    key(out, &mut first, k);
                    value(out, v);
                }
            }
        }
        out.push(b'}');
    }
    match (shape, body) {
        (Obj(f) | Nullable(f), Value::Object(m)) => object(out, [Some(m), shared], f, columns),
        (_, v) => value(out, v),
    }
}
