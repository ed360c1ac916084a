//! The OpenAPI document describes what travels (issue 33): no operation's request body or 2xx
//! JSON answer (a list's items included) is a schema without properties or variants — the bare
//! `Object` of an untyped body, which tells a generated client nothing.

use serde_json::Value;

/// The component a `$ref` names (with its name), else the schema itself.
fn resolve<'a>(doc: &'a Value, s: &'a Value) -> (&'a Value, Option<&'a str>) {
    match s.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.trim_start_matches("#/components/schemas/");
            (&doc["components"]["schemas"][name], Some(name))
        }
        None => (s, None),
    }
}

/// Why `s` says nothing of its content (`None`: it says enough). Variants (`oneOf`, `anyOf`,
/// `allOf`) count when each branch says enough (a nullable `anyOf`'s `null` branch aside); an
/// array by its items; a map by its values; a list wrapper by its items.
fn bare(doc: &Value, s: &Value) -> Option<String> {
    let (s, name) = resolve(doc, s);
    for k in ["oneOf", "anyOf", "allOf"] {
        if let Some(branches) = s.get(k).and_then(Value::as_array) {
            return branches
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
                .find_map(|b| bare(doc, b));
        }
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object)
        && !props.is_empty()
    {
        // An inline object is a list wrapper (`openapi::list_schema`): its items must say enough.
        return match name {
            Some(_) => None,
            None => props
                .values()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("array"))
                .find_map(|p| bare(doc, p)),
        };
    }
    let types: Vec<&str> = match s.get("type") {
        Some(Value::String(t)) => vec![t],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    if types.contains(&"array") {
        return bare(doc, s.get("items").unwrap_or(&Value::Bool(true)));
    }
    if let Some(values @ Value::Object(_)) = s.get("additionalProperties") {
        return bare(doc, values);
    }
    if !types.is_empty() && types.iter().all(|t| !matches!(*t, "object" | "array")) {
        return None;
    }
    Some(match name {
        Some(n) => format!("`{n}` has no properties or variants"),
        None => "an inline schema without properties or variants".to_string(),
    })
}

/// Every `METHOD path (where): what` whose body schema is bare.
fn offenders() -> Vec<String> {
    let doc = svc_server::http::openapi::document();
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("operations") {
            let at = |what: &str| format!("{} {path} ({what})", method.to_uppercase());
            if let Some(s) = op.pointer("/requestBody/content/application~1json/schema")
                && let Some(why) = bare(&doc, s)
            {
                out.push(format!("{}: {why}", at("request body")));
            }
            for (status, r) in op["responses"].as_object().expect("responses") {
                if !status.starts_with('2') {
                    continue;
                }
                if let Some(s) = r.pointer("/content/application~1json/schema")
                    && let Some(why) = bare(&doc, s)
                {
                    out.push(format!("{}: {why}", at(status)));
                }
            }
        }
    }
    out
}

/// Every request body and 2xx JSON answer of the document says what it holds (issue 33: every
/// resource and the Edge API have their DTOs); a new route with a bare-object body fails here.
#[test]
fn every_body_of_the_document_has_a_schema_with_properties_or_variants() {
    let left = offenders();
    assert!(
        left.is_empty(),
        "{} request bodies or 2xx answers refer to a schema without properties or variants \
         (give them a typed DTO, svc_api::mgmt):\n{}",
        left.len(),
        left.join("\n")
    );
}
