//! `svc admin apply -f FILE`: entries from a JSON or YAML file, created or updated so the server
//! holds what the file says, and nothing written when it already does (docs/cli.md).
//!
//! An item is `{resource: <resource>, ...body}`, the body as POST/PUT take it (§3). It is
//! matched with an existing entry by its `externalId` when it has one, else by `name` (users:
//! `email`) in its resource set; none → POST, one → compared, and PUT only when a field the item
//! gives differs; several → an error. The whole file is read and checked before the first
//! request; the items are then applied in order, and the first failure stops the run (exit 1).

use std::io::Read as _;
use std::path::Path;

use reqwest::Method;
use serde::Deserialize as _;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::client::Api;
use super::resources::{self, Resource, Scope, Writes};
use super::{ApplyArgs, Failure};

/// Write-only fields (§1.9): a read answers `null` (or, inside a JSON-text field, leaves the key
/// out), so a value the item gives is never compared.
const SECRETS: &[&str] = &[
    "apiKey",
    "password",
    "clientSecret",
    "privateKey",
    "personalAccessToken",
    "encryptedToken",
    "authenticationToken",
    "secret",
];

struct Item {
    /// 1-based, in file order.
    n: usize,
    resource: &'static Resource,
    body: Map<String, Value>,
}

impl Item {
    /// `3 (client-workloads "deploy-job")`, for messages.
    fn describe(&self) -> String {
        let key = self.body.get(self.resource.key).or_else(|| self.body.get("externalId"));
        match key.and_then(Value::as_str) {
            Some(k) => format!("item {} ({} {k:?})", self.n, self.resource.label()),
            None => format!("item {} ({})", self.n, self.resource.label()),
        }
    }
}

pub async fn run(a: ApplyArgs) -> Result<(), Failure> {
    let text = read(&a.file)?;
    let items = parse(&a.file, &text)?;
    let api = Api::connect(&a.conn).await?;
    for item in &items {
        let (action, id) = apply(&api, item)
            .await
            .map_err(|e| Failure::failed(format!("{}: {}", item.describe(), e.message)))?;
        let name = item.body.get(item.resource.key).and_then(Value::as_str).unwrap_or("-");
        println!("{action} {} {id} {name}", item.resource.label());
    }
    Ok(())
}

fn read(file: &Path) -> Result<String, Failure> {
    let mut text = String::new();
    let r = if file == Path::new("-") {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read_to_string(file).map(|t| text = t)
    };
    r.map_err(|e| Failure::usage(format!("cannot read {}: {e}", file.display())))?;
    Ok(text)
}

/// The file's documents: JSON for a `.json` file, else YAML (one or more documents; JSON is
/// tried first when the text starts like it, for its clearer errors).
fn documents(file: &Path, text: &str) -> Result<Vec<Value>, Failure> {
    let name = file.display();
    let json_like = text.trim_start().starts_with(['[', '{']);
    if file.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) || json_like {
        match serde_json::from_str(text) {
            Ok(v) => return Ok(vec![v]),
            Err(e) if file.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) => {
                return Err(Failure::usage(format!("{name}: not JSON: {e}")));
            }
            Err(_) => {}
        }
    }
    let mut docs = Vec::new();
    for doc in yaml_serde::Deserializer::from_str(text) {
        let v = Value::deserialize(doc).map_err(|e| Failure::usage(format!("{name}: not YAML: {e}")))?;
        docs.push(v);
    }
    Ok(docs)
}

/// Every item of the file, checked: a known, writable resource and something to match on.
fn parse(file: &Path, text: &str) -> Result<Vec<Item>, Failure> {
    let mut raw = Vec::new();
    for doc in documents(file, text)? {
        match doc {
            Value::Null => {}
            Value::Array(items) => raw.extend(items),
            other => raw.push(other),
        }
    }
    let mut items = Vec::new();
    for (i, v) in raw.into_iter().enumerate() {
        let n = i + 1;
        let Value::Object(mut body) = v else {
            return Err(Failure::usage(format!("item {n}: not an object")));
        };
        let resource = match body.remove("resource") {
            Some(Value::String(s)) => {
                resources::find(&s).map_err(|e| Failure::usage(format!("item {n}: {}", e.message)))?
            }
            _ => {
                return Err(Failure::usage(format!(
                    "item {n}: needs \"resource\": the resource's name (client-workloads, ...)"
                )));
            }
        };
        if resource.writes == Writes::No {
            return Err(Failure::usage(format!(
                "item {n}: {} cannot be written",
                resource.label()
            )));
        }
        let has = |k: &str| {
            body.get(k)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.trim().is_empty())
        };
        if !has("externalId") && !has(resource.key) {
            return Err(Failure::usage(format!(
                "item {n} ({}): needs a {} (or an externalId) to be matched by",
                resource.label(),
                resource.key
            )));
        }
        items.push(Item { n, resource, body });
    }
    Ok(items)
}

/// Applies one item: `("created" | "updated" | "unchanged", its externalId)`.
async fn apply(api: &Api, item: &Item) -> Result<(&'static str, String), Failure> {
    let r = item.resource;
    let mut body = item.body.clone();
    // The item's own resource set, else --resource-set: the header of a resource that takes
    // one, the body's `resourceSet` of one that does not (§1.4).
    let own = body
        .get("resourceSet")
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok());
    let rs = own.or(api.rs);
    let header = if r.scope == Scope::Header { rs } else { None };
    if r.scope == Scope::Body
        && own.is_none()
        && let Some(rs) = api.rs
    {
        body.insert("resourceSet".into(), Value::String(rs.to_string()));
    }
    let body = Value::Object(body);
    let Some(current) = existing(api, r, &body, header, rs).await? else {
        let a = api.call(Method::POST, &r.path(), &[], header, Some(&body)).await?;
        return Ok(("created", a.created_id().unwrap_or_else(|| "-".into())));
    };
    let id = current["externalId"].as_str().unwrap_or_default().to_string();
    if same("", &body, Some(&current)) {
        return Ok(("unchanged", id));
    }
    let mut body = body;
    body["externalId"] = Value::String(id.clone());
    let path = match r.writes {
        Writes::ById => format!("{}/{id}", r.path()),
        _ => r.path(),
    };
    api.call(Method::PUT, &path, &[], header, Some(&body)).await?;
    Ok(("updated", id))
}

/// The entry an item describes, as its reads show it: by `externalId`, else the one entry of its
/// name in its resource set.
async fn existing(
    api: &Api,
    r: &Resource,
    body: &Value,
    header: Option<Uuid>,
    rs: Option<Uuid>,
) -> Result<Option<Value>, Failure> {
    let id = match body["externalId"].as_str() {
        Some(id) => id.trim().to_string(),
        None => {
            let key = body[r.key].as_str().unwrap_or_default();
            let query = [("filter".to_string(), format!("{}:{key}", r.key))];
            let set = rs.unwrap_or(svc_server::domain::DEFAULT_RESOURCE_SET).to_string();
            let found: Vec<Value> = api
                .every(&r.path(), r.items, &query, header)
                .await?
                .into_iter()
                .filter(|e| match (r.key, e[r.key].as_str()) {
                    // E-mail addresses are unique case-insensitively (§3.18), names are not.
                    ("email", Some(v)) => v.eq_ignore_ascii_case(key),
                    (_, Some(v)) => v == key,
                    _ => false,
                })
                // Lists without the header cover every readable set (§1.4 rule 5).
                .filter(|e| r.scope != Scope::Body || e["resourceSet"].as_str() == Some(set.as_str()))
                .collect();
            match found.as_slice() {
                [] => return Ok(None),
                [one] => one["externalId"].as_str().unwrap_or_default().to_string(),
                many => {
                    return Err(Failure::failed(format!(
                        "{} entries are named {key:?}; give the item the externalId of the one to update",
                        many.len()
                    )));
                }
            }
        }
    };
    let path = format!("{}/{id}", r.path());
    let Some(mut current) = api.find(&path, header).await? else {
        return Ok(None);
    };
    if r.reads_mappings_apart() {
        let mappings = api
            .every(&format!("{path}/credential-mappings"), "entities", &[], None)
            .await?;
        current["credentialProviders"] = Value::Array(mappings);
    }
    Ok(Some(current))
}

/// Whether the entry as read (`have`) already holds what the item gives (`want`): every field the
/// item gives, recursively; arrays element by element, in order. Read shapes differ from write
/// shapes in known ways, each tolerated here: `null` and absent (and `""`, `[]` on output, §1.1,
/// §3.8) are the same; a reference given as an id is read as `{externalId, name, …}`; arrays of
/// named objects compare by name ([`same_by_name`]); ids compare
/// case-insensitively (§1.2); JSON-text fields (`integrationJSON`, …) compare as JSON; a secret
/// is never read back (§1.9).
fn same(key: &str, want: &Value, have: Option<&Value>) -> bool {
    let absent = matches!(have, None | Some(Value::Null));
    match want {
        Value::Null => {
            absent
                || matches!(have, Some(Value::String(s)) if s.is_empty())
                || matches!(have, Some(Value::Array(a)) if a.is_empty())
        }
        _ if absent && SECRETS.contains(&key) => true,
        Value::Object(w) => match have {
            Some(Value::Object(h)) => w.iter().all(|(k, v)| same(k, v, h.get(k))),
            _ => false,
        },
        Value::Array(w) => match have {
            Some(Value::Array(h)) if named(w) && named(h) => same_by_name(key, w, h),
            Some(Value::Array(h)) => w.len() == h.len() && w.iter().zip(h).all(|(a, b)| same(key, a, Some(b))),
            _ => absent && w.is_empty(),
        },
        Value::String(w) => match have {
            Some(Value::String(h)) => w == h || same_id(w, h) || same_json_text(w, h),
            Some(Value::Object(h)) => h
                .get("externalId")
                .and_then(Value::as_str)
                .is_some_and(|h| same_id(w, h)),
            _ => false,
        },
        Value::Number(w) => matches!(have, Some(Value::Number(h)) if w.as_f64() == h.as_f64()),
        Value::Bool(w) => matches!(have, Some(Value::Bool(h)) if w == h) || (!w && absent),
    }
}

/// An array of objects that each have a `name` (a role's `permissions`).
fn named(a: &[Value]) -> bool {
    !a.is_empty() && a.iter().all(|e| e["name"].is_string())
}

/// Named elements compare by name, in any order: each element the item gives must match the read
/// element of its name, and the read elements it does not name must hold nothing (`false`,
/// `null`, empty) in the fields the item's elements give. A role reads back every permission,
/// those it does not grant with `read: false, write: false`.
fn same_by_name(key: &str, want: &[Value], have: &[Value]) -> bool {
    let given = want.iter().all(|w| {
        have.iter()
            .find(|h| h["name"] == w["name"])
            .is_some_and(|h| same(key, w, Some(h)))
    });
    let fields: Vec<&String> = want
        .iter()
        .filter_map(Value::as_object)
        .flat_map(|o| o.keys())
        .filter(|k| *k != "name")
        .collect();
    let others_empty = have
        .iter()
        .filter(|h| !want.iter().any(|w| w["name"] == h["name"]))
        .all(|h| fields.iter().all(|f| holds_nothing(h.get(f.as_str()))));
    given && others_empty
}

fn holds_nothing(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
        Some(_) => false,
    }
}

fn same_id(a: &str, b: &str) -> bool {
    matches!((Uuid::parse_str(a.trim()), Uuid::parse_str(b.trim())), (Ok(a), Ok(b)) if a == b)
}

fn same_json_text(a: &str, b: &str) -> bool {
    match (serde_json::from_str::<Value>(a), serde_json::from_str::<Value>(b)) {
        (Ok(a @ Value::Object(_)), Ok(b @ Value::Object(_))) => same("", &a, Some(&b)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_entry_holds_an_item_by_the_fields_the_item_gives() {
        let have = json!({
            "externalId": "0b7e7a59-6c4a-4d7e-9a43-7a3e0f0a8c11", "name": "p", "description": null,
            "isActive": true, "createdAt": "2026-11-21T10:15:30.123Z", "apiKey": null, "tags": [],
            "clientWorkload": {"externalId": "5f3c1b8e-8f6e-4a51-b3f8-3d0d5e7c9a20", "name": "cw"},
            "integrationJSON": "{\"clientId\":\"c\",\"tokenUrl\":\"https://t\"}",
            "credentialProviders": [{"credentialProviderId": "a", "mappingType": "None", "accessKeyId": ""}]
        });
        let want = json!({
            "name": "p", "isActive": true, "apiKey": "s3cr3t", "description": null, "tags": [],
            "clientWorkload": "5F3C1B8E-8F6E-4A51-B3F8-3D0D5E7C9A20", "enabled": false,
            "integrationJSON": "{\"tokenUrl\": \"https://t\", \"clientId\": \"c\", \"clientSecret\": \"x\"}",
            "credentialProviders": [{"credentialProviderId": "a", "mappingType": "None", "accessKeyId": null}]
        });
        assert!(same("", &want, Some(&have)));
        let role = json!({"permissions": [
            {"name": "Roles", "read": false, "write": false, "isReadable": true},
            {"name": "Audit Logs", "read": true, "write": false, "isReadable": true},
            {"name": "Users", "read": true, "write": true, "isReadable": true}]});
        let grants = |p: Value| json!({"permissions": p});
        let exact =
            grants(json!([{"name": "Users", "read": true, "write": true}, {"name": "Audit Logs", "read": true}]));
        assert!(same("", &exact, Some(&role)));
        for changed in [
            grants(json!([{"name": "Users", "read": true, "write": true}])),
            grants(json!([{"name": "Users", "read": false, "write": true}, {"name": "Audit Logs", "read": true}])),
            grants(
                json!([{"name": "Users", "read": true, "write": true}, {"name": "Audit Logs", "read": true}, {"name": "Roles", "read": true}]),
            ),
        ] {
            assert!(!same("", &changed, Some(&role)), "{changed} reads as unchanged");
        }
        for changed in [
            json!({"name": "q"}),
            json!({"isActive": false}),
            json!({"description": "d"}),
            json!({"tags": [{"key": "k", "value": "v"}]}),
            json!({"clientWorkload": "0b7e7a59-6c4a-4d7e-9a43-7a3e0f0a8c11"}),
            json!({"credentialProviders": []}),
            json!({"integrationJSON": "{\"clientId\":\"other\"}"}),
            json!({"newField": 1}),
        ] {
            assert!(!same("", &changed, Some(&have)), "{changed} reads as unchanged");
        }
    }

    #[test]
    fn a_file_is_a_list_or_documents_of_items() {
        let yaml = "resource: roles\nname: a\nisActive: true\n---\n- resource: client-workloads\n  name: b\n";
        let items = parse(Path::new("x.yaml"), yaml).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[1].resource.name, "client-workloads");
        assert!(!items[1].body.contains_key("resource"));
        let json = r#"[{"resource": "users", "email": "a@b.test"}]"#;
        assert_eq!(parse(Path::new("-"), json).unwrap()[0].resource.key, "email");
        for (text, error) in [
            ("- resource: nope\n  name: x\n", "item 1: unknown resource \"nope\""),
            ("- name: x\n", "item 1: needs \"resource\""),
            (
                "- resource: audit-logs\n  name: x\n",
                "item 1: audit-logs cannot be written",
            ),
            ("- resource: roles\n  isActive: true\n", "item 1 (roles): needs a name"),
            ("- 3\n", "item 1: not an object"),
            ("a: [\n", "x.yaml: not YAML"),
        ] {
            let e = parse(Path::new("x.yaml"), text).err().unwrap();
            assert_eq!(e.code, 2);
            assert!(
                e.message.starts_with(error),
                "{} does not start with {error}",
                e.message
            );
        }
    }
}
