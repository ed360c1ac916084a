//! The events the Edge API writes (contract §4.11): `access.authentication`, `access.request`,
//! `access.authorization`, `access.credential` (AuthorizationEventDTO, §3.24) and the workload event
//! (EventDTO, §3.25). One `contextId` and one time per request; the environment (facts only, never
//! evidence or credentials, `edge::environment`) is rendered once per request, and what the
//! authorization events share (`meta.contextId`, `clientRequest`, `environment`) is stored once
//! with the request's row (`store::RequestRow`); the stored bodies are read back through
//! `events::shape`.

use serde::Serialize;
use serde_json::value::RawValue;

use uuid::Uuid;

use crate::events::Recorder;
use crate::policy::outcome::{AttestationResult, CpResult, EntityResult, Parts};
use crate::store::{EventRow, EventTable};

/// What every event of one request shares.
pub struct RequestInfo {
    /// The time (ms) of every event of the request: they are stored in one row.
    pub ts: i64,
    pub rs: Uuid,
    pub client_ip: Option<std::sync::Arc<str>>,
    pub source_port: u16,
    pub target_host: Option<String>,
    pub target_port: i32,
    pub environment: Box<RawValue>,
}

/// `result` is the row's `result` column.
#[derive(Serialize)]
struct Outcome<'a> {
    reason: &'a str,
}

/// The body of an `access.request` event refused before the decision ([`request_refused`]):
/// the outcome with `detail` (ext), the refusal's failed check in a few words (the token check
/// of an `InvalidToken`, the body's problem of an `InvalidRequest`). A type of its own, so the
/// bodies of every other event serialise as they did.
#[derive(Serialize)]
struct RefusedRequest<'a> {
    outcome: RefusedOutcome<'a>,
}

#[derive(Serialize)]
struct RefusedOutcome<'a> {
    reason: &'a str,
    detail: &'a str,
}

/// `sourceIP` is the row's `client_ip` and `sourcePort` its `source_port`; `transportProtocol`
/// (always `TCP`) and `proxyPort` (always 0) are not stored either: the shape restores them
/// (`Col`, `Fixed`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Network<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    target_host: Option<&'a str>,
    target_port: i32,
}

/// `version` (always `edge/v1`) is not stored: the shape restores it.
#[derive(Serialize)]
struct ClientRequest<'a> {
    network: Network<'a>,
}

/// What every authorization event of a request has in common, stored once with the request
/// (`Recorder::share`) and merged into each body when it is read. The meta block is all columns
/// (`clientIP`, `timestamp`, `eventType`, `eventId`, `resourceSetId`, `severity`, and the
/// request's `contextId`, which `directiveId` equals): the shape restores it (`Col`, `TimeCol`,
/// `Sibling`). Without the request's own values (its `contextId`, derived from its first event's
/// id, and its `sourcePort`, which its row holds: `Recorder::client_port`) this is the same for
/// a workload's requests, and stored once for them all (`store::RequestRow`, migration 0007).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Shared<'a> {
    client_request: ClientRequest<'a>,
    environment: &'a RawValue,
}

/// An authorization event's own parts, as stored (see [`Shared`]).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AuthorizationEvent<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<Outcome<'a>>,
    #[serde(skip_serializing_if = "none_ref")]
    client_workload: &'a Option<EntityResult>,
    #[serde(skip_serializing_if = "none_ref")]
    server_workload: &'a Option<EntityResult>,
    #[serde(skip_serializing_if = "none_ref")]
    access_policy: &'a Option<EntityResult>,
    // Empty lists (and the always-empty `authorizationChain`) are not stored: the shape
    // restores `[]`.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    client_workloads: &'a [EntityResult],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    server_workloads: &'a [EntityResult],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    access_policies: &'a [EntityResult],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    trust_providers: &'a [AttestationResult],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    access_conditions: &'a [AttestationResult],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    content_security: &'a [AttestationResult],
    #[serde(skip_serializing_if = "none_ref")]
    credential_provider: &'a Option<CpResult>,
    // `user` (always null for edge requests) is not stored: the shape restores it.
}

fn none_ref<T>(o: &&Option<T>) -> bool {
    o.is_none()
}

pub fn severity_for(status: u16) -> &'static str {
    match status {
        500.. => "Error",
        400..=499 => "Warning",
        _ => "Info",
    }
}

/// The names an authorization event can be searched by: its workloads and policy, also the
/// candidates listed when several matched (or when no server workload could be chosen), its
/// trust providers, access conditions, content security policies and credential provider: every
/// `name` of its body.
fn names(parts: &Parts) -> impl Iterator<Item = &str> {
    // When several matched, the chosen one is among the listed candidates: each name once.
    fn one_or_all<'p>(one: &'p Option<EntityResult>, all: &'p [EntityResult]) -> &'p [EntityResult] {
        if all.is_empty() { one.as_slice() } else { all }
    }
    [
        one_or_all(&parts.client_workload, &parts.client_workloads),
        one_or_all(&parts.server_workload, &parts.server_workloads),
        one_or_all(&parts.access_policy, &parts.access_policies),
    ]
    .into_iter()
    .flatten()
    .map(|e| e.name.as_str())
    .chain(parts.trust_providers.iter().map(|t| t.name.as_str()))
    .chain(parts.access_conditions.iter().map(|c| c.name.as_str()))
    .chain(parts.content_security.iter().map(|c| c.name.as_str()))
    .chain(parts.credential_provider.iter().map(|c| c.name.as_str()))
}

/// An authorization event's search text: its entity names, lowercased, one per line (the
/// list's search also looks at the event type and client IP columns); `None` without names.
/// Built in a per-thread buffer and copied out once. Stored only when the view cannot derive it
/// ([`stored_search`]).
fn search_text<'a>(parts: impl IntoIterator<Item = &'a str>) -> Option<std::sync::Arc<str>> {
    thread_local! {
        static BUF: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    BUF.with(|cell| {
        let mut buf = cell.borrow_mut();
        buf.clear();
        for (i, part) in parts.into_iter().enumerate() {
            if i > 0 {
                buf.push('\n');
            }
            if part.is_ascii() {
                // Copied whole, then lowered in place (not a `char` at a time).
                let from = buf.len();
                buf.push_str(part);
                buf[from..].make_ascii_lowercase();
            } else {
                buf.push_str(&part.to_lowercase());
            }
        }
        (!buf.is_empty()).then(|| buf.as_str().into())
    })
}

thread_local! {
    static JSON_BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(Vec::with_capacity(4096));
}

/// An event body as JSON in a string of exactly its length. Serialised into a per-thread buffer
/// first: a body lives on in the event queue until the writer stores it, and a buffer sized or
/// grown for the largest event held ~3 KB per ~1 KB event there (the queue's backlog at c=50 is
/// tens of thousands of events, docs/PERFORMANCE.md).
fn to_json<T: Serialize>(v: &T) -> std::sync::Arc<str> {
    JSON_BUF.with(|cell| {
        let mut buf = cell.borrow_mut();
        buf.clear();
        serde_json::to_writer(&mut *buf, v).expect("event serialises");
        std::str::from_utf8(&buf).expect("serde_json writes UTF-8").into()
    })
}

/// Sets the request's shared parts (once): merged into its authorization events when read, and
/// where its workload events' `meta.connectionId` is read from.
fn share(rec: &mut Recorder, info: &RequestInfo) {
    rec.client_port(info.source_port);
    rec.share_once(|| {
        to_json(&Shared {
            client_request: ClientRequest {
                network: Network {
                    target_host: info.target_host.as_deref(),
                    target_port: info.target_port,
                },
            },
            environment: &info.environment,
        })
    });
}

/// What an authorization event stores as its search text: nothing when every name is printable
/// ASCII without `"` or `\`, since the view then derives the same text from the body's names
/// with SQL's `LOWER` (which folds ASCII only), and the list's search can match the stored JSON,
/// where such names appear unescaped, before it reads them (migration 0005); [`search_text`]
/// otherwise.
fn stored_search(parts: &Parts) -> Option<std::sync::Arc<str>> {
    let plain = |n: &str| n.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\');
    if names(parts).all(plain) {
        None
    } else {
        search_text(names(parts))
    }
}

/// Queues one authorization event.
pub fn authorization(
    rec: &mut Recorder,
    info: &RequestInfo,
    event_type: &'static str,
    result: &'static str,
    reason: Option<&str>,
    severity: &'static str,
    parts: &Parts,
) {
    crate::metrics::edge_decision(event_type, result, reason);
    let event_id = rec.next_event_id(info.ts);
    share(rec, info);
    let ev = AuthorizationEvent {
        outcome: reason.map(|reason| Outcome { reason }),
        client_workload: &parts.client_workload,
        server_workload: &parts.server_workload,
        access_policy: &parts.access_policy,
        client_workloads: &parts.client_workloads,
        server_workloads: &parts.server_workloads,
        access_policies: &parts.access_policies,
        trust_providers: &parts.trust_providers,
        access_conditions: &parts.access_conditions,
        content_security: &parts.content_security,
        credential_provider: &parts.credential_provider,
    };
    let body = to_json(&ev);
    rec.push(EventRow {
        table: EventTable::Authorization,
        id: event_id,
        rs: info.rs,
        ts: info.ts,
        event_type,
        severity,
        result: Some(result),
        client_ip: info.client_ip.clone(),
        client_workload: None,
        server_workload: None,
        app_protocol: None,
        user_id: None,
        search: stored_search(parts),
        body,
    });
}

/// Queues the `access.request` event of a request refused before its decision (§4.11:
/// `InvalidToken`, `InvalidRequest`), with the check that refused it (`outcome.detail`): what the
/// operator needs and the terse answer does not say. It names no entity.
pub fn request_refused(rec: &mut Recorder, info: &RequestInfo, reason: &'static str, detail: &str) {
    let (event_type, result) = ("access.request", "Unauthorized");
    crate::metrics::edge_decision(event_type, result, Some(reason));
    let event_id = rec.next_event_id(info.ts);
    share(rec, info);
    let body = to_json(&RefusedRequest {
        outcome: RefusedOutcome { reason, detail },
    });
    rec.push(EventRow {
        table: EventTable::Authorization,
        id: event_id,
        rs: info.rs,
        ts: info.ts,
        event_type,
        severity: "Warning",
        result: Some(result),
        client_ip: info.client_ip.clone(),
        client_workload: None,
        server_workload: None,
        app_protocol: None,
        user_id: None,
        search: None,
        body,
    });
}

/// One workload event (a server workload was identified).
pub struct WorkloadEvent {
    pub action: &'static str,
    pub success: bool,
    pub severity: &'static str,
    pub policy: Option<Uuid>,
    pub client_workload: Option<Uuid>,
    pub server_workload: Uuid,
    pub app_protocol: std::sync::Arc<str>,
    pub server_port: i32,
}

pub fn workload(rec: &mut Recorder, info: &RequestInfo, w: WorkloadEvent) {
    let event_id = rec.next_event_id(info.ts);
    share(rec, info);
    let body = WorkloadEventBody {
        meta: WorkloadMeta { policy_id: w.policy },
        network: WorkloadNetwork {
            server_workload_port: w.server_port,
        },
        outcome: WorkloadOutcome {
            result: if w.success { "Success" } else { "Failure" },
        },
    };
    rec.push(EventRow {
        table: EventTable::Workload,
        id: event_id,
        rs: info.rs,
        ts: info.ts,
        event_type: "workload.credential",
        severity: w.severity,
        result: Some(w.action),
        client_ip: info.client_ip.clone(),
        client_workload: w.client_workload,
        server_workload: Some(w.server_workload),
        app_protocol: Some(w.app_protocol),
        user_id: None,
        // Searched besides the type and action columns; an IP's text has no case to fold.
        search: info.client_ip.clone(),
        body: to_json(&body),
    });
}

#[derive(Serialize)]
struct WorkloadEventBody {
    #[serde(skip_serializing_if = "WorkloadMeta::is_empty")]
    meta: WorkloadMeta,
    network: WorkloadNetwork,
    outcome: WorkloadOutcome,
}

/// `timestamp`, `eventType`, `eventId`, `resourceSetId`, `action`, `severity`,
/// `clientWorkloadId`, `serverWorkloadId` and `applicationProtocol` are columns of the row,
/// `connectionId` is the request's `contextId` (its shared parts) and `userId` is always null: the
/// shape restores them.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WorkloadMeta {
    #[serde(skip_serializing_if = "Option::is_none")]
    policy_id: Option<Uuid>,
}

impl WorkloadMeta {
    fn is_empty(&self) -> bool {
        self.policy_id.is_none()
    }
}

/// `clientWorkloadIP` and `clientWorkloadPort` are the row's `client_ip` and `source_port`: the
/// shape restores them (`Col`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WorkloadNetwork {
    // `serverWorkloadIP` and `proxyPort` (always null) are not stored: the shape restores them.
    server_workload_port: i32,
}

#[derive(Serialize)]
struct WorkloadOutcome {
    result: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::environment::*;
    use crate::events::shape::Shape::{Col, List, Nullable, Obj, Sibling};
    use crate::events::shape::*;
    use crate::store::Columns;
    use serde_json::Value;

    /// Every key path of a body, in order (arrays: their first element).
    fn paths(v: &Value, prefix: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    let p = format!("{prefix}/{k}");
                    out.push(p.clone());
                    paths(v, &p, out);
                }
            }
            Value::Array(a) => {
                if let Some(first) = a.first() {
                    paths(first, &format!("{prefix}[]"), out);
                }
            }
            _ => {}
        }
    }

    fn all_paths(v: &Value) -> Vec<String> {
        let mut out = vec![];
        paths(v, "", &mut out);
        out
    }

    fn full_env() -> Box<RawValue> {
        let s = Some("x");
        let o = Some("x".to_string());
        let env = Env {
            host: EnvHost { hostname: s },
            process: EnvProcess {
                name: s,
                user_name: s,
                exe_path: s,
                command_line: s,
            },
            svc: EnvSvc { client_id: s },
            cloud_a: EnvCloudA {
                account_id: o.clone(),
                instance_id: o.clone(),
                region: o.clone(),
                ecs: EnvEcs {
                    task_family: s,
                    service_name: s,
                },
                lambda: EnvLambda { arn: s },
            },
            cloud_c: EnvCloudC { service_account: s },
            cloud_b: EnvCloudB {
                vm_id: s,
                subscription_id: s,
            },
            orchestrator: EnvOrchestrator {
                namespace: s,
                pod_name: o.clone(),
                service_account_name: s,
                service_account_uid: o.clone(),
            },
            ci_b: EnvCiB {
                namespace_path: s,
                project_path: s,
                ref_path: s,
                subject: s,
            },
            ci_a: EnvCiA {
                repository: s,
                subject: s,
            },
            oidc: EnvOidc { sub: s, aud: o, iss: s },
            ci_c: EnvCiC {
                workspace_id: s,
                organization_id: s,
                project_id: s,
            },
        };
        serde_json::value::to_raw_value(&env).unwrap()
    }

    fn event(full: bool) -> Value {
        let id = Uuid::nil();
        let entity = || EntityResult {
            id,
            name: "n".into(),
            result: "Success",
            matches: full.then(|| vec![id]),
        };
        let parts = Parts {
            client_workload: full.then(entity),
            server_workload: full.then(entity),
            access_policy: full.then(entity),
            client_workloads: vec![entity()],
            server_workloads: vec![entity()],
            access_policies: vec![entity()],
            trust_providers: vec![AttestationResult {
                id,
                name: "t".into(),
                result: "Failure",
                matches: full.then(|| vec![id]),
                reason: full.then(|| "r".into()),
                attribute: full.then(|| "a".into()),
                expected_value: full.then(|| "e".into()),
                expected_values: full.then(|| vec!["e".into()]),
                actual_value: full.then(|| "v".into()),
                // Not a key of the shape: kept as stored, after the documented ones.
                detail: full.then(|| "d".into()),
            }],
            access_conditions: vec![],
            content_security: vec![],
            credential_provider: full.then(|| CpResult {
                id,
                name: "c".into(),
                result: "Success",
                matches: Some(vec![id]),
                cp_type: "apikey".into(),
                reason: Some("r".into()),
            }),
        };
        let env = if full {
            full_env()
        } else {
            serde_json::value::to_raw_value(&Env::default()).unwrap()
        };
        let shared = Shared {
            client_request: ClientRequest {
                network: Network {
                    target_host: full.then_some("h"),
                    target_port: 443,
                },
            },
            environment: &env,
        };
        let ev = AuthorizationEvent {
            outcome: full.then_some(Outcome { reason: "r" }),
            client_workload: &parts.client_workload,
            server_workload: &parts.server_workload,
            access_policy: &parts.access_policy,
            client_workloads: &parts.client_workloads,
            server_workloads: &parts.server_workloads,
            access_policies: &parts.access_policies,
            trust_providers: if full { &parts.trust_providers } else { &[] },
            access_conditions: &[],
            content_security: &[],
            credential_provider: &parts.credential_provider,
        };
        // As the views read it: the shared parts merged into the event's own (disjoint keys).
        let mut body = serde_json::to_value(&shared).unwrap();
        let Value::Object(own) = serde_json::to_value(&ev).unwrap() else {
            unreachable!()
        };
        body.as_object_mut().unwrap().extend(own);
        body
    }

    /// The columns of an authorization event's row.
    fn authorization_columns(client_ip: Option<&str>) -> Columns {
        let mut c = Columns::new();
        c.insert("ts", 1_795_000_000_123i64.into());
        c.insert("id", "01a201c6-9ff3-76f2-b1b1-b696c4a51d6b".into());
        c.insert("rs", crate::domain::DEFAULT_RESOURCE_SET.to_string().into());
        c.insert("event_type", "access.credential".into());
        c.insert("severity", "Info".into());
        c.insert("result", "Authorized".into());
        c.insert("client_ip", client_ip.map_or(Value::Null, |ip| ip.into()));
        c.insert("context_id", Uuid::nil().to_string().into());
        c.insert("source_port", 1.into());
        c
    }

    #[test]
    fn stored_authorization_events_carry_no_nulls_and_expand_to_every_documented_key() {
        let cols = authorization_columns(Some("127.0.0.1"));
        let full = expand(event(true), AUTHORIZATION_EVENT, &cols);
        let sparse = event(false);
        let text = sparse.to_string();
        assert!(!text.contains("null"), "{text}");
        assert!(!text.contains("[]"), "empty lists are not stored: {text}");
        assert!(
            !text.contains("edge/v1") && !text.contains("TCP"),
            "fixed values are not stored: {text}"
        );
        assert!(text.len() * 2 < full.to_string().len(), "{text}");
        // Every documented key (§3.24), in the documented order: what the full event carries plus
        // what is never stored (always-empty lists, fixed values, `user`).
        let expected = all_paths(&expand(full.clone(), AUTHORIZATION_EVENT, &cols));
        let top: Vec<&str> = expected
            .iter()
            .filter(|p| p.matches('/').count() == 1)
            .map(|p| p.as_str())
            .collect();
        assert_eq!(
            top,
            [
                "/authorizationChain",
                "/meta",
                "/outcome",
                "/clientRequest",
                "/environment",
                "/clientWorkload",
                "/serverWorkload",
                "/accessPolicy",
                "/clientWorkloads",
                "/serverWorkloads",
                "/accessPolicies",
                "/trustProviders",
                "/accessConditions",
                "/contentSecurity",
                "/credentialProvider",
                "/user"
            ]
        );
        for p in [
            "/clientRequest/version",
            "/clientRequest/network/transportProtocol",
            "/clientRequest/network/proxyPort",
        ] {
            assert!(expected.iter().any(|e| e == p), "{p}");
        }
        let full_expanded = expand(full.clone(), AUTHORIZATION_EVENT, &cols);
        assert_eq!(full_expanded["clientRequest"]["version"], "edge/v1");
        assert_eq!(full_expanded["clientRequest"]["network"]["transportProtocol"], "TCP");
        assert_eq!(full_expanded["clientRequest"]["network"]["proxyPort"], 0);
        assert_eq!(full_expanded["accessConditions"], serde_json::json!([]));
        let restored = expand(sparse, AUTHORIZATION_EVENT, &authorization_columns(None));
        // The sparse event's single objects are null: their keys are absent, as before; its
        // empty trust-provider list has no item keys.
        let nullable = [
            "/clientWorkload/",
            "/serverWorkload/",
            "/accessPolicy/",
            "/credentialProvider/",
            "/trustProviders[]/",
        ];
        let expected_sparse: Vec<String> = expected
            .iter()
            .filter(|p| !nullable.iter().any(|n| p.starts_with(n)))
            .cloned()
            .collect();
        assert_eq!(all_paths(&restored), expected_sparse);
        assert_eq!(restored["environment"]["cloudA"]["ecs"]["taskFamily"], Value::Null);
        assert_eq!(restored["clientWorkload"], Value::Null);
        assert_eq!(restored["trustProviders"], serde_json::json!([]));
        assert_eq!(
            full_expanded["trustProviders"][0]["expectedValues"],
            serde_json::json!(["e"])
        );
        assert_eq!(restored["user"], Value::Null);
        // A body stored in full (before this format) passes through unchanged.
        let old = full_expanded.clone();
        assert_eq!(expand(old.clone(), AUTHORIZATION_EVENT, &Columns::new()), old);
    }

    /// The log streams write the expanded events without building them (`write_expanded`): the
    /// same bytes as serialising `expand`'s result, whole or with the shared parts apart.
    #[test]
    fn writing_an_expanded_event_gives_the_bytes_of_expanding_it() {
        let cols = authorization_columns(Some("127.0.0.1"));
        // As stored: JSON text.
        let written = |v: &Value, shared: Option<&serde_json::Map<String, Value>>, shape, cols: &Columns| {
            let (body, shared) = (v.to_string(), shared.map(|m| Value::Object(m.clone()).to_string()));
            let shared = shared.as_deref().map(|s| Stored::parse(s).unwrap());
            let mut out = vec![];
            let body = Stored::parse(&body).unwrap();
            write_expanded(
                &mut out,
                &body,
                shared.as_ref(),
                shape,
                cols,
                &mut SharedParts::default(),
            );
            String::from_utf8(out).unwrap()
        };
        for full in [true, false] {
            let merged = event(full);
            let expanded = expand(merged.clone(), AUTHORIZATION_EVENT, &cols);
            let expected = serde_json::to_string(&expanded).unwrap();
            assert_eq!(written(&merged, None, AUTHORIZATION_EVENT, &cols), expected);
            let mut own = merged.as_object().unwrap().clone();
            let mut shared = serde_json::Map::new();
            for k in ["clientRequest", "environment"] {
                shared.insert(k.into(), own.remove(k).unwrap());
            }
            assert_eq!(
                written(&Value::Object(own.clone()), Some(&shared), AUTHORIZATION_EVENT, &cols),
                expected
            );
            // Three events of one request, then one of another: the shared parts written for the
            // first are copied for the next two, and written again for the other request.
            let mut memo = SharedParts::default();
            let mut other = shared.clone();
            other.insert("environment".into(), serde_json::json!({"host": {"hostname": "h2"}}));
            let other_cols = authorization_columns(Some("10.1.1.1"));
            let (text, other_text) = (
                Value::Object(shared.clone()).to_string(),
                Value::Object(other.clone()).to_string(),
            );
            let (parsed, other_parsed) = (Stored::parse(&text).unwrap(), Stored::parse(&other_text).unwrap());
            let body_text = Value::Object(own.clone()).to_string();
            let body = Stored::parse(&body_text).unwrap();
            for (sh, raw, c) in [
                (&shared, &parsed, &cols),
                (&shared, &parsed, &cols),
                (&shared, &parsed, &cols),
                (&other, &other_parsed, &other_cols),
            ] {
                if std::ptr::eq(raw, &other_parsed) {
                    memo.clear();
                }
                let mut out = vec![];
                write_expanded(&mut out, &body, Some(raw), AUTHORIZATION_EVENT, c, &mut memo);
                let mut whole = own.clone();
                whole.extend(sh.clone());
                let want = serde_json::to_string(&expand(Value::Object(whole), AUTHORIZATION_EVENT, c)).unwrap();
                assert_eq!(String::from_utf8(out).unwrap(), want);
            }
            // A body stored in full (before the sparse format) passes through.
            assert_eq!(written(&expanded, None, AUTHORIZATION_EVENT, &cols), expected);
        }
        let workload = serde_json::to_value(WorkloadEventBody {
            meta: WorkloadMeta { policy_id: None },
            network: WorkloadNetwork {
                server_workload_port: 443,
            },
            outcome: WorkloadOutcome { result: "Success" },
        })
        .unwrap();
        let mut wcols = Columns::new();
        wcols.insert("ts", 5i64.into());
        wcols.insert("action", "CredentialIssued".into());
        wcols.insert("client_ip", "10.0.0.1".into());
        wcols.insert("context_id", Uuid::nil().to_string().into());
        assert_eq!(
            written(&workload, None, WORKLOAD_EVENT, &wcols),
            serde_json::to_string(&expand(workload.clone(), WORKLOAD_EVENT, &wcols)).unwrap()
        );
    }

    #[test]
    fn the_search_text_is_stored_only_when_the_view_cannot_derive_it_from_the_body() {
        let with = |name: &str| Parts {
            client_workload: Some(EntityResult {
                name: "Build-Job".into(),
                ..Default::default()
            }),
            content_security: vec![AttestationResult {
                name: name.into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        // Printable ASCII: the view lowers the body's names and the search matches them unescaped.
        assert_eq!(stored_search(&with("Policy (v2) ~ 100%")), None);
        assert_eq!(stored_search(&Parts::default()), None);
        // Not ASCII (SQL's LOWER folds ASCII only), or escaped in the JSON: stored, every name.
        for odd in ["Zürich", "say \"hi\"", "back\\slash", "tab\there"] {
            assert_eq!(
                stored_search(&with(odd)).as_deref(),
                Some(format!("build-job\n{}", odd.to_lowercase()).as_str()),
                "{odd:?}"
            );
        }
    }

    /// `write_expanded` writes a shape's keys as they are, and copies the parts it takes from a
    /// request's shared parts only when they name no event's own column.
    #[test]
    fn shape_keys_need_no_escaping_and_shared_parts_name_only_row_columns() {
        fn keys(shape: Shape, out: &mut Vec<&'static str>) {
            if let Obj(f) | Nullable(f) | List(f) = shape {
                for (k, s) in f {
                    out.push(k);
                    keys(*s, out);
                }
            }
        }
        let mut all = vec![];
        keys(AUTHORIZATION_EVENT, &mut all);
        keys(WORKLOAD_EVENT, &mut all);
        for k in all {
            assert_eq!(serde_json::to_string(k).unwrap(), format!("\"{k}\""));
        }
        let Obj(top) = AUTHORIZATION_EVENT else { unreachable!() };
        let part = |name: &str| top.iter().find(|(k, _)| *k == name).unwrap().1;
        assert!(row_level(part("environment")) && row_level(part("clientRequest")));
        assert!(!row_level(part("meta")), "meta names the event's id and type");
    }

    #[test]
    fn search_text_is_the_parts_lowercased_one_per_line() {
        assert_eq!(
            search_text(["Build-JOB", "partner-api", "ΟΔΟΣ"]).as_deref(),
            Some("build-job\npartner-api\nοδος")
        );
        assert_eq!(search_text(["a", "", "B"]).as_deref(), Some("a\n\nb"));
        // The chosen workload and policy are also among the listed candidates: each name once.
        let named = |id: u128, name: &str| EntityResult {
            id: Uuid::from_u128(id),
            name: name.into(),
            result: "Identified",
            matches: None,
        };
        let parts = Parts {
            client_workload: Some(named(1, "job")),
            client_workloads: vec![named(1, "job"), named(2, "job-2")],
            server_workload: Some(named(3, "api")),
            access_policy: Some(named(4, "p1")),
            access_policies: vec![named(4, "p1"), named(5, "p2")],
            ..Default::default()
        };
        assert_eq!(
            search_text(names(&parts)).as_deref(),
            Some("job\njob-2\napi\np1\np2"),
            "once each"
        );
        assert_eq!(search_text([]).as_deref(), None);
    }

    #[test]
    fn authorization_event_values_held_in_columns_are_not_stored_and_come_back_from_them() {
        let stored = event(true).to_string();
        for key in [
            "clientIP",
            "timestamp",
            "eventType",
            "eventId",
            "resourceSetId",
            "directiveId",
            "severity",
            "sourceIP",
            "127.0.0.1",
        ] {
            assert!(!stored.contains(key), "{key} stored: {stored}");
        }
        assert_eq!(event(true)["outcome"], serde_json::json!({"reason": "r"}));
        let v = expand(
            event(true),
            AUTHORIZATION_EVENT,
            &authorization_columns(Some("127.0.0.1")),
        );
        let meta = &v["meta"];
        assert_eq!(meta["clientIP"], "127.0.0.1");
        assert_eq!(meta["timestamp"], "2026-11-18T11:06:40.123Z");
        assert_eq!(meta["eventType"], "access.credential");
        assert_eq!(meta["eventId"], "01a201c6-9ff3-76f2-b1b1-b696c4a51d6b");
        assert_eq!(meta["resourceSetId"], "ffffffff-ffff-ffff-ffff-ffffffffffff");
        assert_eq!(meta["directiveId"], meta["contextId"]);
        assert_eq!(meta["severity"], "Info");
        assert_eq!(v["outcome"], serde_json::json!({"result": "Authorized", "reason": "r"}));
        assert_eq!(v["clientRequest"]["network"]["sourceIP"], "127.0.0.1");
        assert_eq!(v["environment"]["network"]["sourceIP"], "127.0.0.1");
        // Sorting on such a field sorts on its column (or, for `directiveId`, on `contextId`).
        assert!(matches!(
            AUTHORIZATION_EVENT.leaf_path("clientRequest.network.sourceIP"),
            Some((_, Col("client_ip")))
        ));
        assert!(matches!(
            AUTHORIZATION_EVENT.leaf_path("directiveId"),
            Some((p, Sibling("contextId"))) if p == ["meta", "directiveId"]
        ));
    }

    #[test]
    fn stored_workload_events_expand_to_every_documented_key() {
        let body = |full: bool| {
            let id = Uuid::nil();
            serde_json::to_value(WorkloadEventBody {
                meta: WorkloadMeta {
                    policy_id: full.then_some(id),
                },
                network: WorkloadNetwork {
                    server_workload_port: 443,
                },
                outcome: WorkloadOutcome { result: "Success" },
            })
            .unwrap()
        };
        let mut cols = Columns::new();
        cols.insert("ts", 0i64.into());
        for (c, v) in [
            ("id", "e"),
            ("rs", "r"),
            ("event_type", "workload.credential"),
            ("severity", "Info"),
            ("action", "CredentialIssued"),
            ("client_workload", "c"),
            ("server_workload", "s"),
            ("app_protocol", "HTTP"),
            ("client_ip", "127.0.0.1"),
            ("context_id", "00000000-0000-0000-0000-000000000000"),
        ] {
            cols.insert(c, v.into());
        }
        let expected = all_paths(&expand(body(true), WORKLOAD_EVENT, &cols));
        assert_eq!(expected.len(), 3 + 12 + 5 + 1, "{expected:?}");
        let sparse = body(false);
        assert!(!sparse.to_string().contains("null"));
        let restored = expand(sparse, WORKLOAD_EVENT, &cols);
        assert_eq!(all_paths(&restored), expected);
        // The connection and the client's address are the request's: not stored, put back.
        assert_eq!(restored["network"]["clientWorkloadIP"], "127.0.0.1");
        assert_eq!(
            restored["meta"],
            serde_json::json!({
                "timestamp": "1970-01-01T00:00:00.000Z", "eventType": "workload.credential",
                "eventId": "e", "resourceSetId": "r", "policyId": null, "action": "CredentialIssued",
                "connectionId": Uuid::nil(), "severity": "Info", "clientWorkloadId": "c",
                "serverWorkloadId": "s", "applicationProtocol": "HTTP", "userId": null
            })
        );
        let full_paths = all_paths(&body(true));
        for p in &full_paths {
            assert!(expected.contains(p), "{p} missing from WORKLOAD_EVENT");
        }
    }
}
