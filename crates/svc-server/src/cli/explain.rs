//! `svc admin explain`: what `/edge/v1/credentials` would answer a workload, step by step
//! (`POST /api/v1/access-policies/evaluate`, docs/API-CONVENTIONS.md "Explain"). The body is
//! built from flags (`--client-id`, `--evidence`, `--host`, `--port`, `--type`, `--meta`) over an
//! optional `--body FILE`; the answer is printed as a table of the steps, or as JSON.

use std::path::{Path, PathBuf};

use clap::Args;
use reqwest::Method;
use serde_json::{Map, Value, json};
use svc_api::mgmt::evaluate::{Evaluation, StepDetail};

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
        Output::Table => {
            // The server's answer read as its DTO, the type the server wrote it from.
            let answer: Evaluation = serde_json::from_value(answer)
                .map_err(|e| Failure::failed(format!("the answer is not an AccessPolicyEvaluationDTO: {e}")))?;
            print!("{}", render(&answer));
        }
    }
    Ok(())
}

fn plain(s: &str) -> String {
    table::text(&Value::String(s.to_string()))
}

/// The answer as text: its outcome, then one row per step.
fn render(answer: &Evaluation) -> String {
    let opt = |s: &Option<String>| s.as_deref().map_or_else(|| "-".to_string(), plain);
    let mut out = format!("status: {}\nreason: {}\n", answer.status, opt(&answer.reason));
    if let Some(m) = &answer.message {
        out.push_str(&format!("message: {}\n", plain(m)));
    }
    out.push('\n');
    let rows: Vec<Vec<String>> = answer
        .steps
        .iter()
        .map(|s| {
            vec![
                s.step.to_string(),
                text_of(&s.name),
                text_of(&s.result),
                opt(&s.reason),
                detail(&s.detail),
            ]
        })
        .collect();
    out.push_str(&table::render(&["step", "name", "result", "reason", "detail"], &rows));
    out
}

/// A value as its JSON text, unquoted when a string (an enum's name).
fn text_of<T: serde::Serialize>(v: &T) -> String {
    table::text(&serde_json::to_value(v).unwrap_or(Value::Null))
}

fn named(id: &uuid::Uuid, name: &str) -> String {
    format!("{} ({id})", plain(name))
}

/// A step's detail in a few words: what it chose (or the entry it checked) and how many
/// candidates there were, the check that refused (its attribute, the values it expected and the
/// one it found, and what failed), the conditions that failed, explain's own note, else the
/// detail's JSON, shortened.
fn detail(d: &StepDetail) -> String {
    let mut parts = Vec::new();
    if let Some(Some(c)) = &d.chosen {
        parts.push(format!("chosen: {}", named(&c.id, &c.name)));
    }
    if let Some(c) = &d.candidates {
        parts.push(format!("{} candidate{}", c.len(), if c.len() == 1 { "" } else { "s" }));
    }
    if parts.is_empty()
        && let (Some(id), Some(name)) = (&d.id, &d.name)
    {
        parts.push(named(id, name));
    }
    if let Some(tp) = &d.trust_provider {
        parts.push(format!("trust provider: {}", named(&tp.id, &tp.name)));
    }
    let content: Vec<&str> = d.content_security.iter().flatten().map(|c| c.name.as_str()).collect();
    if !content.is_empty() {
        parts.push(format!("content security: {}", content.join(", ")));
    }
    if let Some(check) = failed_check(&d.attribute, &d.expected_values, &d.actual_value) {
        parts.push(check);
    }
    for c in d.conditions.iter().flatten().filter(|c| c.result == "Failed") {
        parts.push(
            failed_check(&c.attribute, &c.expected_values, &c.actual_value).map_or_else(
                || format!("{} failed", c.name),
                |check| format!("{} failed: {check}", c.name),
            ),
        );
    }
    // A refusal's description, or a note, beside what was named (step 2, a trust provider's
    // check).
    if !parts.is_empty()
        && let Some(m) = &d.message
    {
        parts.push(m.clone());
    }
    if parts.is_empty() {
        // A note of explain's own: its text.
        if let Some(m) = &d.message
            && *d
                == (StepDetail {
                    message: Some(m.clone()),
                    ..Default::default()
                })
        {
            return plain(m);
        }
        let s = table::text(&serde_json::to_value(d).unwrap_or(Value::Null));
        let s = if s == "{}" { "-".to_string() } else { s };
        return if s.chars().count() > 100 {
            format!("{}…", s.chars().take(99).collect::<String>())
        } else {
            s
        };
    }
    plain(&parts.join("; "))
}

/// A failed check that compares a value: `aud: expected [svc-edge], got "other"`.
fn failed_check(attribute: &Option<String>, expected: &Option<Vec<String>>, actual: &Option<String>) -> Option<String> {
    let attribute = attribute.as_deref()?;
    let expected = expected.as_deref().unwrap_or_default().join(", ");
    let actual = match actual {
        Some(a) => format!("{a:?}"),
        None => "nothing".to_string(),
    };
    Some(format!("{attribute}: expected [{expected}], got {actual}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step detail read from the JSON the server answers.
    fn d(v: Value) -> StepDetail {
        serde_json::from_value(v).expect("a StepDetail")
    }

    const A: &str = "00000000-0000-0000-0000-00000000000a";
    const T: &str = "00000000-0000-0000-0000-00000000000b";

    #[test]
    fn a_step_detail_reads_as_a_few_words() {
        let x = json!({"id": A, "name": "x"});
        assert_eq!(
            detail(&d(json!({"candidates": [x], "chosen": x}))),
            format!("chosen: x ({A}); 1 candidate")
        );
        assert_eq!(
            detail(&d(
                json!({"candidates": [x], "chosen": x, "contentSecurity": [{"id": T, "name": "aidr"}]})
            )),
            format!("chosen: x ({A}); 1 candidate; content security: aidr")
        );
        assert_eq!(detail(&d(json!({"candidates": [x], "chosen": null}))), "1 candidate");
        assert_eq!(detail(&d(json!({"id": T, "name": "ci"}))), format!("ci ({T})"));
        assert_eq!(
            detail(&d(json!({"requested": "ApiKey", "unresolvable": null}))),
            r#"{"requested":"ApiKey"}"#
        );
        assert_eq!(detail(&StepDetail::default()), "-");
        assert_eq!(detail(&d(json!({"message": "not reached"}))), "not reached");
    }

    #[test]
    fn a_refused_check_reads_as_what_was_expected_and_found() {
        let step2 = d(
            json!({"clientId": "svc:x", "authStatus": 401, "message": "aud does not contain an accepted audience",
                           "trustProvider": {"id": T, "name": "ci", "provider": "OidcIdToken"},
                           "attribute": "aud", "expectedValues": ["https://svc"], "actualValue": "other"}),
        );
        assert_eq!(
            detail(&step2),
            format!(
                "trust provider: ci ({T}); aud: expected [https://svc], got \"other\"; aud does not contain an accepted audience"
            )
        );
        let malformed = d(
            json!({"clientId": "svc:x", "authStatus": 401, "message": "malformed token: not three parts",
                               "trustProvider": {"id": T, "name": "ci", "provider": "OidcIdToken"}}),
        );
        assert_eq!(
            detail(&malformed),
            format!("trust provider: ci ({T}); malformed token: not three parts")
        );
        let check = d(
            json!({"id": T, "name": "strict", "provider": "OidcIdToken", "result": "Unauthorized",
                           "attribute": "OidcSubject", "expectedValues": ["a", "b"], "message": "match rule on OidcSubject failed"}),
        );
        assert_eq!(
            detail(&check),
            format!("strict ({T}); OidcSubject: expected [a, b], got nothing; match rule on OidcSubject failed")
        );
        let conditions = d(json!({"conditions": [
            {"id": A, "name": "office-hours", "result": "Passed", "reason": null, "attribute": null, "expectedValues": null, "actualValue": null},
            {"id": T, "name": "geo", "result": "Failed", "reason": "ConditionFailed",
             "attribute": "GeoIPCountry", "expectedValues": ["US"], "actualValue": "DE"}]}));
        assert_eq!(
            detail(&conditions),
            "geo failed: GeoIPCountry: expected [US], got \"DE\""
        );
    }

    #[test]
    fn the_answer_renders_from_its_dto() {
        let answer: Evaluation = serde_json::from_value(json!({"status": 403, "reason": "AttestationFailed", "message": null,
            "steps": [{"step": 8, "name": "attestation", "result": "Failed", "reason": "AttestationFailed", "detail": {"message": "no listed trust provider passed"}}]}))
        .unwrap();
        let text = render(&answer);
        assert!(text.starts_with("status: 403\nreason: AttestationFailed\n\n"), "{text}");
        let row = text.lines().find(|l| l.starts_with('8')).expect("step 8's row");
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            &cells[..4],
            ["8", "attestation", "Failed", "AttestationFailed"],
            "{text}"
        );
        assert!(row.ends_with("no listed trust provider passed"), "{text}");
    }
}
