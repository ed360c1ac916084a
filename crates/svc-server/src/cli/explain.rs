//! `svc admin explain`: what `/edge/v1/credentials` would answer a workload, step by step
//! (`POST /api/v1/access-policies/evaluate`, docs/API-CONVENTIONS.md "Explain"). The body is
//! built from flags (`--client-id`, `--evidence`, `--host`, `--port`, `--type`, `--meta`) over an
//! optional `--body FILE`; the answer is printed as a table of the steps, or as JSON.

use std::path::{Path, PathBuf};

use clap::Args;
use reqwest::Method;
use serde_json::{Map, Value, json};

use super::client::Api;
use super::table;
use super::{Conn, Failure, Output};

const PATH: &str = "/api/v1/access-policies/evaluate";

#[derive(Args)]
pub struct ExplainArgs {
    /// The trust provider's edgeSdkClientId (the body's clientId)
    #[arg(long = "client-id", value_name = "ID")]
    client_id: Option<String>,
    /// A JSON or YAML file of the workload's evidence: the /edge/v1/credentials body's `client`
    #[arg(long, value_name = "FILE")]
    evidence: Option<PathBuf>,
    /// The server workload's host (server.host)
    #[arg(long, value_name = "H")]
    host: Option<String>,
    /// The server workload's port (server.port)
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u16).range(1..))]
    port: Option<u16>,
    /// server.transportProtocol [default: TCP, with --host or --port]
    #[arg(long = "transport-protocol", value_name = "T")]
    transport_protocol: Option<String>,
    /// The credential type (credentialType): ApiKey, OAuthToken, X509Svid, ...
    #[arg(long = "type", value_name = "T")]
    credential_type: Option<String>,
    /// A connectionMetadata selector (accessKeyId, accountName, headerName, ...)
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    meta: Vec<String>,
    /// A JSON or YAML file of the whole body; the flags above override its fields
    #[arg(long, value_name = "FILE")]
    body: Option<PathBuf>,
    #[command(flatten)]
    conn: Conn,
    #[arg(long, short, value_enum, default_value = "table")]
    output: Output,
}

/// A JSON or YAML file holding one object.
fn object_file(flag: &str, file: &Path) -> Result<Map<String, Value>, Failure> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::usage(format!("{flag}: cannot read {}: {e}", file.display())))?;
    // YAML reads JSON too; JSON's own parser first, for its messages.
    let v: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(_) => yaml_serde::from_str(&text)
            .map_err(|e| Failure::usage(format!("{flag}: {}: neither JSON nor YAML: {e}", file.display())))?,
    };
    match v {
        Value::Object(o) => Ok(o),
        _ => Err(Failure::usage(format!("{flag}: {}: not an object", file.display()))),
    }
}

/// The explain body: `--body`, then each flag given.
fn body(a: &ExplainArgs) -> Result<Value, Failure> {
    let mut b = match &a.body {
        Some(f) => object_file("--body", f)?,
        None => Map::new(),
    };
    if let Some(id) = &a.client_id {
        b.insert("clientId".into(), json!(id));
    }
    if let Some(f) = &a.evidence {
        b.insert("client".into(), Value::Object(object_file("--evidence", f)?));
    }
    if a.host.is_some() || a.port.is_some() || a.transport_protocol.is_some() {
        let server = b.entry("server").or_insert_with(|| json!({}));
        if !server.is_object() {
            *server = json!({});
        }
        if let Some(h) = &a.host {
            server["host"] = json!(h);
        }
        if let Some(p) = a.port {
            server["port"] = json!(p);
        }
        let t = a.transport_protocol.as_deref();
        if t.is_some() || server.get("transportProtocol").is_none() {
            server["transportProtocol"] = json!(t.unwrap_or("TCP"));
        }
    }
    if let Some(t) = &a.credential_type {
        b.insert("credentialType".into(), json!(t));
    }
    for m in &a.meta {
        let Some((k, v)) = m.split_once('=') else {
            return Err(Failure::usage(format!("--meta {m:?}: expected KEY=VALUE")));
        };
        let meta = b.entry("connectionMetadata").or_insert_with(|| json!({}));
        if !meta.is_object() {
            *meta = json!({});
        }
        meta[k.trim()] = json!(v);
    }
    Ok(Value::Object(b))
}

pub async fn run(a: ExplainArgs) -> Result<(), Failure> {
    let body = body(&a)?;
    let api = Api::connect(&a.conn).await?;
    let answer = api.call(Method::POST, PATH, &[], api.rs, Some(&body)).await?.body;
    match a.output {
        Output::Json => println!(
            "{}",
            serde_json::to_string_pretty(&answer).expect("a JSON value serialises")
        ),
        Output::Table => print!("{}", render(&answer)),
    }
    Ok(())
}

/// The answer as text: its outcome, then one row per step.
fn render(answer: &Value) -> String {
    let mut out = format!(
        "status: {}\nreason: {}\n",
        table::text(&answer["status"]),
        table::text(&answer["reason"])
    );
    if !answer["message"].is_null() {
        out.push_str(&format!("message: {}\n", table::text(&answer["message"])));
    }
    out.push('\n');
    let rows: Vec<Vec<String>> = answer["steps"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|s| {
            vec![
                table::text(&s["step"]),
                table::text(&s["name"]),
                table::text(&s["result"]),
                table::text(&s["reason"]),
                detail(&s["detail"]),
            ]
        })
        .collect();
    out.push_str(&table::render(&["step", "name", "result", "reason", "detail"], &rows));
    out
}

/// A step's detail in a few words: what it chose (or the entry it checked) and how many
/// candidates there were, the check that refused (its attribute, the values it expected and the
/// one it found, and what failed), the conditions that failed, explain's own note, else the
/// detail's JSON, shortened.
fn detail(d: &Value) -> String {
    let named = |v: &Value| v["name"].as_str().map(|n| format!("{n} ({})", table::text(&v["id"])));
    let mut parts = Vec::new();
    if let Some(c) = d.get("chosen").filter(|c| !c.is_null()) {
        parts.push(format!("chosen: {}", named(c).unwrap_or_else(|| table::text(c))));
    }
    if let Some(c) = d["candidates"].as_array() {
        parts.push(format!("{} candidate{}", c.len(), if c.len() == 1 { "" } else { "s" }));
    }
    if parts.is_empty()
        && let Some(n) = named(d)
    {
        parts.push(n);
    }
    if let Some(tp) = d.get("trustProvider").and_then(named) {
        parts.push(format!("trust provider: {tp}"));
    }
    let content: Vec<&str> = d["contentSecurity"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    if !content.is_empty() {
        parts.push(format!("content security: {}", content.join(", ")));
    }
    if let Some(check) = failed_check(d) {
        parts.push(check);
    }
    let failed: Vec<String> = d["conditions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|c| c["result"] == "Failed")
        .map(|c| {
            let name = c["name"].as_str().unwrap_or("-");
            failed_check(c).map_or_else(|| format!("{name} failed"), |check| format!("{name} failed: {check}"))
        })
        .collect();
    parts.extend(failed);
    // A refusal's description, or a note, beside what was named (step 2, a trust provider's
    // check).
    if !parts.is_empty()
        && let Some(m) = d["message"].as_str()
    {
        parts.push(m.to_string());
    }
    if parts.is_empty() {
        let d = strip_nulls(d);
        // A note of explain's own: its text.
        if let Some(Value::String(m)) = d.get("message").filter(|_| d.as_object().is_some_and(|o| o.len() == 1)) {
            return table::text(&Value::String(m.clone()));
        }
        let s = table::text(&d);
        let s = if s == "{}" { "-".to_string() } else { s };
        return if s.chars().count() > 100 {
            format!("{}…", s.chars().take(99).collect::<String>())
        } else {
            s
        };
    }
    table::text(&Value::String(parts.join("; ")))
}

/// A failed check that compares a value: `aud: expected [svc-edge], got "other"`.
fn failed_check(d: &Value) -> Option<String> {
    let attribute = d["attribute"].as_str()?;
    let expected: Vec<&str> = d["expectedValues"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let actual = match d["actualValue"].as_str() {
        Some(a) => format!("{a:?}"),
        None => "nothing".to_string(),
    };
    Some(format!("{attribute}: expected [{}], got {actual}", expected.join(", ")))
}

fn strip_nulls(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_detail_reads_as_a_few_words() {
        let d = json!({"candidates": [{"id": "a", "name": "x"}], "chosen": {"id": "a", "name": "x"}});
        assert_eq!(detail(&d), "chosen: x (a); 1 candidate");
        let d = json!({"candidates": [{"id": "a", "name": "x"}], "chosen": {"id": "a", "name": "x"},
                       "contentSecurity": [{"id": "c", "name": "aidr"}]});
        assert_eq!(detail(&d), "chosen: x (a); 1 candidate; content security: aidr");
        assert_eq!(detail(&json!({"id": "t", "name": "ci"})), "ci (t)");
        assert_eq!(
            detail(&json!({"requested": "ApiKey", "unresolvable": null})),
            r#"{"requested":"ApiKey"}"#
        );
        assert_eq!(detail(&Value::Null), "-");
        assert_eq!(detail(&json!({})), "-");
        assert_eq!(detail(&json!({"message": "not reached", "x": null})), "not reached");
    }

    #[test]
    fn a_refused_check_reads_as_what_was_expected_and_found() {
        let step2 = json!({"clientId": "svc:x", "authStatus": 401, "message": "aud does not contain an accepted audience",
                           "trustProvider": {"id": "t", "name": "ci", "provider": "OidcIdToken"},
                           "attribute": "aud", "expectedValues": ["https://svc"], "actualValue": "other"});
        assert_eq!(
            detail(&step2),
            "trust provider: ci (t); aud: expected [https://svc], got \"other\"; aud does not contain an accepted audience"
        );
        let malformed = json!({"clientId": "svc:x", "authStatus": 401, "message": "malformed token: not three parts",
                               "trustProvider": {"id": "t", "name": "ci", "provider": "OidcIdToken"}});
        assert_eq!(
            detail(&malformed),
            "trust provider: ci (t); malformed token: not three parts"
        );
        let check = json!({"id": "s", "name": "strict", "provider": "OidcIdToken", "result": "Unauthorized",
                           "attribute": "OidcSubject", "expectedValues": ["a", "b"], "message": "match rule on OidcSubject failed"});
        assert_eq!(
            detail(&check),
            "strict (s); OidcSubject: expected [a, b], got nothing; match rule on OidcSubject failed"
        );
        let conditions = json!({"conditions": [
            {"id": "1", "name": "office-hours", "result": "Passed"},
            {"id": "2", "name": "geo", "result": "Failed", "reason": "ConditionFailed",
             "attribute": "GeoIPCountry", "expectedValues": ["US"], "actualValue": "DE"}]});
        assert_eq!(
            detail(&conditions),
            "geo failed: GeoIPCountry: expected [US], got \"DE\""
        );
    }
}
