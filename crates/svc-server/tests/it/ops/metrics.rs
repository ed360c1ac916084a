//! `/metrics` on its own listener: the Prometheus text format, parsed strictly line by line after
//! real management and Edge requests (the worked example against oauth2-mock-server), with the
//! documented names and labels; no label value carries a raw path, a client id, a token or a
//! secret. The recorder is process-wide, so other tests' requests may show up too: the checks
//! only ask for what these requests must have added.

use std::collections::BTreeMap;

use serde_json::json;

use crate::support::edge::{auth, auth_oidc, credentials, example_body, mock_id_token, peer, worked_example};
use crate::support::harness::TestApp;

/// One sample: metric name, labels, value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

fn is_name(s: &str, colon: bool) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || (colon && c == ':'))
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':'))
}

fn parse_value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => s.parse().map_err(|_| format!("bad value {s:?}")),
    }
}

/// The Prometheus text exposition format (0.0.4), strictly: `# HELP` / `# TYPE` lines, samples
/// `name{l="v",...} value [timestamp]` with escaped label values, every sample's family typed
/// before it, histogram series only as `_bucket` (with `le`), `_sum`, `_count`.
fn parse(text: &str) -> Result<Vec<Sample>, String> {
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let err = |m: String| format!("line {}: {m}: {line:?}", n + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("HELP"), Some(name), _) if is_name(name, true) => {}
                (Some("TYPE"), Some(name), Some(t)) if is_name(name, true) => {
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&t) {
                        return Err(err(format!("unknown type {t}")));
                    }
                    if types.insert(name.to_string(), t.to_string()).is_some() {
                        return Err(err("TYPE given twice".into()));
                    }
                }
                _ => return Err(err("malformed comment".into())),
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let name_end = line.find(['{', ' ']).ok_or_else(|| err("no value".into()))?;
        let name = &line[..name_end];
        if !is_name(name, true) {
            return Err(err("bad metric name".into()));
        }
        let mut labels = BTreeMap::new();
        let mut rest = &line[name_end..];
        if let Some(r) = rest.strip_prefix('{') {
            let mut r = r;
            loop {
                if let Some(after) = r.strip_prefix('}') {
                    r = after;
                    break;
                }
                let eq = r.find('=').ok_or_else(|| err("label without =".into()))?;
                let lname = &r[..eq];
                if !is_name(lname, false) {
                    return Err(err(format!("bad label name {lname:?}")));
                }
                let mut chars = r[eq + 1..].char_indices();
                if chars.next().map(|c| c.1) != Some('"') {
                    return Err(err("label value not quoted".into()));
                }
                let mut value = String::new();
                let mut end = None;
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => match chars.next().map(|c| c.1) {
                            Some('\\') => value.push('\\'),
                            Some('"') => value.push('"'),
                            Some('n') => value.push('\n'),
                            _ => return Err(err("bad escape".into())),
                        },
                        '"' => {
                            end = Some(eq + 1 + i + 1);
                            break;
                        }
                        '\n' => return Err(err("raw newline in a label value".into())),
                        c => value.push(c),
                    }
                }
                let end = end.ok_or_else(|| err("unterminated label value".into()))?;
                if labels.insert(lname.to_string(), value).is_some() {
                    return Err(err(format!("label {lname} twice")));
                }
                r = &r[end..];
                if let Some(after) = r.strip_prefix(',') {
                    r = after;
                } else if !r.starts_with('}') {
                    return Err(err("expected , or }".into()));
                }
            }
            rest = r;
        }
        let rest = rest
            .strip_prefix(' ')
            .ok_or_else(|| err("no space before the value".into()))?;
        let mut fields = rest.split(' ');
        let value = parse_value(fields.next().unwrap_or_default()).map_err(err)?;
        if let Some(ts) = fields.next() {
            ts.parse::<i64>().map_err(|_| err("bad timestamp".into()))?;
        }
        if fields.next().is_some() {
            return Err(err("trailing text".into()));
        }
        // The family this sample belongs to must have been typed.
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                let base = name.strip_suffix(s)?;
                matches!(types.get(base).map(String::as_str), Some("histogram" | "summary")).then_some(base)
            })
            .unwrap_or(name);
        let t = types
            .get(family)
            .ok_or_else(|| err(format!("sample of {family} before its TYPE")))?;
        if t == "histogram" && name.ends_with("_bucket") && !labels.contains_key("le") {
            return Err(err("histogram bucket without le".into()));
        }
        if t == "histogram" && family == name {
            return Err(err("histogram sample without _bucket/_sum/_count".into()));
        }
        out.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    Ok(out)
}

#[test]
fn the_parser_refuses_what_prometheus_refuses() {
    assert!(parse("# TYPE a counter\na 1\n").is_ok());
    assert!(parse("a 1\n").is_err(), "untyped sample");
    assert!(parse("# TYPE a counter\na{b=\"c} 1\n").is_err());
    assert!(parse("# TYPE a counter\na{b=c} 1\n").is_err());
    assert!(parse("# TYPE a counter\na{1b=\"c\"} 1\n").is_err());
    assert!(parse("# TYPE a counter\na one\n").is_err());
    assert!(parse("# TYPE h histogram\nh_bucket 1\n").is_err(), "bucket without le");
    let s = parse("# TYPE a counter\na{b=\"x\\\"y\\\\z\",c=\"\"} 2.5 1700000000000\n").unwrap();
    assert_eq!(s[0].labels["b"], "x\"y\\z");
    assert_eq!(s[0].value, 2.5);
}

/// A started app with the recorder installed and `/metrics` served on its own port.
async fn with_metrics() -> (TestApp, String) {
    svc_server::metrics::install();
    let t = TestApp::start().await;
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(svc_server::http::scrape::serve(t.app.clone(), l));
    (t, url)
}

async fn scrape(url: &str) -> (String, Vec<Sample>) {
    let r = reqwest::get(format!("{url}/metrics")).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/plain; version=0.0.4; charset=utf-8");
    let text = r.text().await.unwrap();
    let samples = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    (text, samples)
}

fn find<'a>(samples: &'a [Sample], name: &str, labels: &[(&str, &str)]) -> Option<&'a Sample> {
    samples.iter().find(|s| {
        s.name == name
            && labels
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
    })
}

#[tokio::test]
async fn metrics_parse_and_carry_route_templates_edge_outcomes_and_the_event_pipeline() {
    let (t, url) = with_metrics().await;
    let oidc = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let ex = worked_example(&t, &oidc, "metrics-api-key").await;
    let missing = "0191f2a4-7b5c-7d1e-9f00-00000000beef";
    t.get(&format!("/api/v1/trust-providers/{missing}")).await;
    auth(&t, "not-a-client-id", json!({})).await;
    let token = mock_id_token(&[("sub", "system:job:build"), ("aud", &t.base)]).await;
    let access = auth_oidc(&t, &ex.client_id, &token).await;
    credentials(&t, &access, example_body(&token)).await.expect(200);
    t.flush_events().await;

    let (text, samples) = scrape(&url).await;
    let tp_read = [
        ("route", "/api/v1/trust-providers/{id}"),
        ("method", "GET"),
        ("status", "204"),
    ];
    assert!(find(&samples, "svc_http_requests_total", &tp_read).is_some(), "{text}");
    let bucket = [
        ("route", "/edge/v1/credentials"),
        ("method", "POST"),
        ("status", "200"),
        ("le", "+Inf"),
    ];
    assert!(find(&samples, "svc_http_request_duration_seconds_bucket", &bucket).is_some_and(|s| s.value >= 1.0));
    let bad_client = [
        ("endpoint", "auth"),
        ("result", "Unauthorized"),
        ("reason", "InvalidClientId"),
    ];
    assert!(
        find(&samples, "svc_edge_decisions_total", &bad_client).is_some(),
        "{text}"
    );
    let authorized = [
        ("endpoint", "credentials"),
        ("event", "access.authorization"),
        ("result", "Authorized"),
    ];
    assert!(
        find(&samples, "svc_edge_decisions_total", &authorized).is_some(),
        "{text}"
    );
    let oidc_kind = [("kind", "OidcIdToken"), ("result", "ok")];
    assert!(
        find(&samples, "svc_trust_verification_duration_seconds_count", &oidc_kind).is_some(),
        "{text}"
    );
    let apikey = [("type", "apikey"), ("result", "ok")];
    assert!(
        find(&samples, "svc_credential_issue_duration_seconds_count", &apikey).is_some(),
        "{text}"
    );
    // The OIDC issuer is an entity's URL: its host is never a label.
    assert!(
        find(
            &samples,
            "svc_upstream_requests_total",
            &[("host", "entity"), ("result", "2xx")]
        )
        .is_some(),
        "{text}"
    );
    assert!(
        find(&samples, "svc_events_stored_total", &[]).is_some_and(|s| s.value >= 1.0),
        "{text}"
    );
    assert!(
        find(&samples, "svc_event_commit_batch_size_count", &[]).is_some(),
        "{text}"
    );
    assert!(find(&samples, "svc_event_queue_depth", &[]).is_some(), "{text}");
    assert!(find(&samples, "svc_state_entities", &[("kind", "access_policies")]).is_some_and(|s| s.value >= 1.0));
    assert!(
        find(
            &samples,
            "svc_state_rebuild_duration_seconds_count",
            &[("cause", "start")]
        )
        .is_some(),
        "{text}"
    );
    if crate::support::harness::use_postgres() {
        let lag = find(&samples, "svc_changelog_lag_changes", &[]);
        assert!(lag.is_some_and(|s| s.value >= 0.0), "{text}");
    }
    // Raw paths never: the unknown id appears in no label.
    assert!(!text.contains(missing), "a raw path reached a label");

    // Only /metrics is served there.
    let r = reqwest::get(format!("{url}/other")).await.unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn no_label_value_carries_a_secret_token_or_client_id() {
    let (t, url) = with_metrics().await;
    let oidc = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let key = "canary-api-key-7c1d";
    let ex = worked_example(&t, &oidc, key).await;
    let token = mock_id_token(&[("sub", "system:job:build"), ("aud", &t.base)]).await;
    let access = auth_oidc(&t, &ex.client_id, &token).await;
    credentials(&t, &access, example_body(&token)).await.expect(200);
    // Refusals with secrets where labels might pick them up: a bad client id, a bad token.
    auth(
        &t,
        "canary-client-id-4e2f",
        json!({"oidc": {"identityToken": "canary.token.x"}}),
    )
    .await;
    credentials(&t, "canary-bearer-9a8b", example_body(&token)).await;
    t.post_anon(
        "/api/v1/login",
        json!({"email": "canary@x.test", "password": "canary-password-3f"}),
    )
    .await;
    t.flush_events().await;

    let (text, samples) = scrape(&url).await;
    for canary in [
        key,
        ex.client_id.as_str(),
        token.as_str(),
        access.as_str(),
        t.token.as_str(),
        "canary",
        ex.policy.as_str(),
        ex.trust_provider.as_str(),
        ex.credential_provider.as_str(),
    ] {
        assert!(!text.contains(canary), "{canary:?} is in /metrics");
    }
    // Every label value is from a bounded vocabulary: route templates of the router, or short
    // identifiers, never anything with an id's or a token's shape.
    let routes: std::collections::BTreeSet<String> = svc_server::http::openapi::operation_keys()
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    for s in &samples {
        for (k, v) in &s.labels {
            match k.as_str() {
                "route" => assert!(v == "unmatched" || routes.contains(v), "route label {v:?}"),
                "le" => {}
                _ => {
                    assert!(v.len() <= 40, "{}: label {k}={v:?} is long", s.name);
                    assert!(
                        uuid::Uuid::parse_str(v).is_err(),
                        "{}: label {k}={v:?} is an id",
                        s.name
                    );
                    assert!(!v.contains('.') || k == "event" || k == "host", "{}: {k}={v:?}", s.name);
                }
            }
        }
    }
}
