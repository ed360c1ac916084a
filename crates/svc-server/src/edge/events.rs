//! The events the Edge API writes (contract §4.11): `access.authentication`, `access.request`,
//! `access.authorization`, `access.credential` (AuthorizationEventDTO, §3.24) and the workload event
//! (EventDTO, §3.25). One `contextId` per request; the environment (facts only, never evidence or
//! credentials) is rendered once per request and shared by its events.

use serde::Serialize;
use serde_json::value::RawValue;
use svc_api::Timestamp;
use svc_api::edge::ClientWorkloadDetails;
use uuid::Uuid;

use crate::app::App;
use crate::store::{EventRow, EventTable};
use crate::trust::Facts;

/// What every event of one request shares.
pub struct RequestInfo {
    pub context_id: Uuid,
    pub rs: Uuid,
    pub client_ip: Option<String>,
    pub source_port: u16,
    pub target_host: Option<String>,
    pub target_port: i32,
    pub transport: &'static str,
    pub environment: Box<RawValue>,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct EntityResult {
    pub id: Uuid,
    pub name: String,
    pub result: &'static str,
    pub matches: Option<Vec<Uuid>>,
}

#[derive(Serialize, Default, Clone)]
#[serde(rename_all = "camelCase")]
pub struct AttestationResult {
    pub id: Uuid,
    pub name: String,
    pub result: &'static str,
    pub matches: Option<Vec<Uuid>>,
    pub reason: Option<String>,
    pub attribute: Option<String>,
    pub expected_value: Option<String>,
    pub expected_values: Option<Vec<String>>,
    pub actual_value: Option<String>,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct CpResult {
    pub id: Uuid,
    pub name: String,
    pub result: &'static str,
    pub matches: Option<Vec<Uuid>>,
    #[serde(rename = "type")]
    pub cp_type: String,
    pub reason: Option<String>,
}

/// The variable parts of one authorization event.
#[derive(Default)]
pub struct Parts {
    pub client_workload: Option<EntityResult>,
    pub server_workload: Option<EntityResult>,
    pub access_policy: Option<EntityResult>,
    pub client_workloads: Vec<EntityResult>,
    pub server_workloads: Vec<EntityResult>,
    pub access_policies: Vec<EntityResult>,
    pub trust_providers: Vec<AttestationResult>,
    pub credential_provider: Option<CpResult>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Meta<'a> {
    #[serde(rename = "clientIP")]
    client_ip: Option<&'a str>,
    timestamp: Timestamp,
    event_type: &'a str,
    event_id: Uuid,
    resource_set_id: Uuid,
    context_id: Uuid,
    directive_id: Uuid,
    severity: &'a str,
}

#[derive(Serialize)]
struct Outcome<'a> {
    result: &'a str,
    reason: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Network<'a> {
    #[serde(rename = "sourceIP")]
    source_ip: Option<&'a str>,
    source_port: u16,
    transport_protocol: &'a str,
    proxy_port: i32,
    target_host: Option<&'a str>,
    target_port: i32,
}

#[derive(Serialize)]
struct ClientRequest<'a> {
    version: &'a str,
    network: Network<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AuthorizationEvent<'a> {
    authorization_chain: [(); 0],
    meta: Meta<'a>,
    outcome: Outcome<'a>,
    client_request: ClientRequest<'a>,
    environment: &'a RawValue,
    client_workload: &'a Option<EntityResult>,
    server_workload: &'a Option<EntityResult>,
    access_policy: &'a Option<EntityResult>,
    client_workloads: &'a [EntityResult],
    server_workloads: &'a [EntityResult],
    access_policies: &'a [EntityResult],
    trust_providers: &'a [AttestationResult],
    access_conditions: [(); 0],
    content_security: [(); 0],
    credential_provider: &'a Option<CpResult>,
    user: Option<()>,
}

pub fn severity_for(status: u16) -> &'static str {
    match status {
        500.. => "Error",
        400..=499 => "Warning",
        _ => "Info",
    }
}

fn names(parts: &Parts) -> String {
    let mut s = String::new();
    for e in [&parts.client_workload, &parts.server_workload, &parts.access_policy]
        .into_iter()
        .flatten()
    {
        s.push('\n');
        s.push_str(&e.name);
    }
    for t in &parts.trust_providers {
        s.push('\n');
        s.push_str(&t.name);
    }
    if let Some(c) = &parts.credential_provider {
        s.push('\n');
        s.push_str(&c.name);
    }
    s
}

/// A time-ordered (version 7) UUID for an event: the event tables' unique index on `id` then grows
/// at its end instead of taking each insert on a random page, which made every batch rewrite one
/// index page per event (profiled in docs/PERFORMANCE.md).
fn event_id(now_ms: i64) -> Uuid {
    let ms = now_ms.max(0) as u64;
    Uuid::new_v7(uuid::Timestamp::from_unix(
        uuid::NoContext,
        ms / 1000,
        (ms % 1000) as u32 * 1_000_000,
    ))
}

/// Queues one authorization event.
pub fn authorization(
    app: &App,
    info: &RequestInfo,
    event_type: &'static str,
    result: &str,
    reason: Option<&str>,
    severity: &'static str,
    parts: &Parts,
) {
    let now = crate::clock::now();
    let event_id = event_id(now.millis());
    let ev = AuthorizationEvent {
        authorization_chain: [],
        meta: Meta {
            client_ip: info.client_ip.as_deref(),
            timestamp: now,
            event_type,
            event_id,
            resource_set_id: info.rs,
            context_id: info.context_id,
            directive_id: info.context_id,
            severity,
        },
        outcome: Outcome { result, reason },
        client_request: ClientRequest {
            version: "edge/v1",
            network: Network {
                source_ip: info.client_ip.as_deref(),
                source_port: info.source_port,
                transport_protocol: info.transport,
                proxy_port: 0,
                target_host: info.target_host.as_deref(),
                target_port: info.target_port,
            },
        },
        environment: &info.environment,
        client_workload: &parts.client_workload,
        server_workload: &parts.server_workload,
        access_policy: &parts.access_policy,
        client_workloads: &parts.client_workloads,
        server_workloads: &parts.server_workloads,
        access_policies: &parts.access_policies,
        trust_providers: &parts.trust_providers,
        access_conditions: [],
        content_security: [],
        credential_provider: &parts.credential_provider,
        user: None,
    };
    // Sized for a typical event (about 2 KiB) so serialising does not grow the buffer step by step.
    let mut body = Vec::with_capacity(3072);
    serde_json::to_writer(&mut body, &ev).expect("event serialises");
    let body = String::from_utf8(body).expect("serde_json writes UTF-8");
    let search = format!(
        "{event_type}\n{}{}",
        info.client_ip.as_deref().unwrap_or(""),
        names(parts)
    )
    .to_lowercase();
    app.events.record(EventRow {
        table: EventTable::Authorization,
        id: event_id.to_string(),
        rs: info.rs.to_string(),
        ts: now.millis(),
        event_type: event_type.to_string(),
        severity: severity.to_string(),
        result: Some(result.to_string()),
        client_ip: info.client_ip.clone(),
        client_workload: None,
        server_workload: None,
        app_protocol: None,
        user_id: None,
        search,
        body,
    });
}

/// One workload event (a server workload was identified).
pub struct WorkloadEvent<'a> {
    pub action: &'static str,
    pub success: bool,
    pub severity: &'static str,
    pub policy: Option<Uuid>,
    pub client_workload: Option<Uuid>,
    pub server_workload: Uuid,
    pub app_protocol: &'a str,
    pub server_port: i32,
}

pub fn workload(app: &App, info: &RequestInfo, w: WorkloadEvent<'_>) {
    let now = crate::clock::now();
    let event_id = event_id(now.millis());
    let body = WorkloadEventBody {
        meta: WorkloadMeta {
            timestamp: now,
            event_type: "workload.credential",
            event_id,
            resource_set_id: info.rs,
            policy_id: w.policy,
            action: w.action,
            connection_id: info.context_id,
            severity: w.severity,
            client_workload_id: w.client_workload,
            server_workload_id: w.server_workload,
            application_protocol: w.app_protocol,
            user_id: None,
        },
        network: WorkloadNetwork {
            client_workload_ip: info.client_ip.as_deref(),
            client_workload_port: info.source_port,
            server_workload_ip: None,
            server_workload_port: w.server_port,
            proxy_port: None,
        },
        outcome: WorkloadOutcome {
            result: if w.success { "Success" } else { "Failure" },
        },
    };
    let search = format!(
        "workload.credential\n{}\n{}",
        w.action,
        info.client_ip.as_deref().unwrap_or("")
    )
    .to_lowercase();
    app.events.record(EventRow {
        table: EventTable::Workload,
        id: event_id.to_string(),
        rs: info.rs.to_string(),
        ts: now.millis(),
        event_type: "workload.credential".into(),
        severity: w.severity.to_string(),
        result: Some(w.action.to_string()),
        client_ip: info.client_ip.clone(),
        client_workload: w.client_workload.map(|c| c.to_string()),
        server_workload: Some(w.server_workload.to_string()),
        app_protocol: Some(w.app_protocol.to_string()),
        user_id: None,
        search,
        body: serde_json::to_string(&body).expect("event serialises"),
    });
}

#[derive(Serialize)]
struct WorkloadEventBody<'a> {
    meta: WorkloadMeta<'a>,
    network: WorkloadNetwork<'a>,
    outcome: WorkloadOutcome,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WorkloadMeta<'a> {
    timestamp: Timestamp,
    event_type: &'static str,
    event_id: Uuid,
    resource_set_id: Uuid,
    policy_id: Option<Uuid>,
    action: &'a str,
    connection_id: Uuid,
    severity: &'a str,
    client_workload_id: Option<Uuid>,
    server_workload_id: Uuid,
    application_protocol: &'a str,
    user_id: Option<()>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WorkloadNetwork<'a> {
    #[serde(rename = "clientWorkloadIP")]
    client_workload_ip: Option<&'a str>,
    client_workload_port: u16,
    #[serde(rename = "serverWorkloadIP")]
    server_workload_ip: Option<()>,
    server_workload_port: i32,
    proxy_port: Option<()>,
}

#[derive(Serialize)]
struct WorkloadOutcome {
    result: &'static str,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct Env<'a> {
    network: EnvNetwork<'a>,
    host: EnvHost<'a>,
    process: EnvProcess<'a>,
    svc: EnvSvc<'a>,
    #[serde(rename = "cloudA")]
    cloud_a: EnvCloudA<'a>,
    #[serde(rename = "cloudC")]
    cloud_c: EnvCloudC<'a>,
    #[serde(rename = "cloudB")]
    cloud_b: EnvCloudB<'a>,
    orchestrator: EnvOrchestrator<'a>,
    #[serde(rename = "ciB")]
    ci_b: EnvCiB<'a>,
    #[serde(rename = "ciA")]
    ci_a: EnvCiA<'a>,
    oidc: EnvOidc<'a>,
    #[serde(rename = "ciC")]
    ci_c: EnvCiC<'a>,
}

#[derive(Serialize, Default)]
struct EnvNetwork<'a> {
    #[serde(rename = "sourceIP")]
    source_ip: Option<&'a str>,
}
#[derive(Serialize, Default)]
struct EnvHost<'a> {
    hostname: Option<&'a str>,
}
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct EnvProcess<'a> {
    name: Option<&'a str>,
    user_name: Option<&'a str>,
    exe_path: Option<&'a str>,
    command_line: Option<&'a str>,
}
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct EnvSvc<'a> {
    client_id: Option<&'a str>,
}
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct EnvCloudA<'a> {
    account_id: Option<String>,
    instance_id: Option<String>,
    region: Option<String>,
    ecs: EnvEcs<'a>,
    lambda: EnvLambda<'a>,
}
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct EnvEcs<'a> {
    task_family: Option<&'a str>,
    service_name: Option<&'a str>,
}
#[derive(Serialize, Default)]
struct EnvLambda<'a> {
    arn: Option<&'a str>,
}
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct EnvCloudC<'a> {
    service_account: Option<&'a str>,
}
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct EnvCloudB<'a> {
    vm_id: Option<&'a str>,
    subscription_id: Option<&'a str>,
}
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct EnvOrchestrator<'a> {
    namespace: Option<&'a str>,
    pod_name: Option<String>,
    service_account_name: Option<&'a str>,
    #[serde(rename = "serviceAccountUID")]
    service_account_uid: Option<String>,
}
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct EnvCiB<'a> {
    namespace_path: Option<&'a str>,
    project_path: Option<&'a str>,
    ref_path: Option<&'a str>,
    subject: Option<&'a str>,
}
#[derive(Serialize, Default)]
struct EnvCiA<'a> {
    repository: Option<&'a str>,
    subject: Option<&'a str>,
}
#[derive(Serialize, Default)]
struct EnvOidc<'a> {
    sub: Option<&'a str>,
    aud: Option<String>,
    iss: Option<&'a str>,
}
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct EnvCiC<'a> {
    workspace_id: Option<&'a str>,
    organization_id: Option<&'a str>,
    project_id: Option<&'a str>,
}

/// Renders the `environment` object of a request's events: verified facts and self-reported
/// context, never evidence or credentials.
pub fn environment(
    facts: &Facts,
    subject: Option<&super::identity::Subject<'_>>,
    client: Option<&ClientWorkloadDetails>,
    source_ip: Option<&str>,
    client_id: Option<&str>,
) -> Box<RawValue> {
    let f = |k: &str| facts.get(k).and_then(|v| v.values().first()).map(String::as_str);
    let fo = |k: &str| f(k).map(str::to_string);
    let process = client.and_then(|c| c.host.as_ref()).and_then(|h| h.process.as_ref());
    let ecs_task: Option<serde_json::Value> = client
        .and_then(|c| c.cloud_a.as_ref())
        .and_then(|a| a.ecs.as_ref())
        .and_then(|e| e.task_metadata.as_ref())
        .and_then(|t| serde_json::from_str(t).ok());
    let (pod, sa_uid) = match subject {
        Some(s) => {
            let ty = |n: &str| crate::domain::identity::lookup(n);
            let pod = ty("orchestratorPodName")
                .and_then(|t| s.values(t, None).into_iter().next())
                .map(|c| c.into_owned());
            let uid = ty("orchestratorServiceAccountUID")
                .and_then(|t| s.values(t, None).into_iter().next())
                .map(|c| c.into_owned());
            (pod, uid)
        }
        None => (None, None),
    };
    let env = Env {
        network: EnvNetwork { source_ip },
        host: EnvHost {
            hostname: client.and_then(|c| c.host.as_ref()).and_then(|h| h.hostname.as_deref()),
        },
        process: EnvProcess {
            name: process.and_then(|p| p.name.as_deref()),
            user_name: process.and_then(|p| p.user_name.as_deref()),
            exe_path: process.and_then(|p| p.exe_path.as_deref()),
            command_line: process.and_then(|p| p.command_line.as_deref()),
        },
        svc: EnvSvc { client_id },
        cloud_a: EnvCloudA {
            account_id: fo("CloudAAccountId"),
            instance_id: fo("CloudAInstanceId"),
            region: fo("CloudARegion"),
            ecs: EnvEcs {
                task_family: ecs_task.as_ref().and_then(|t| t.get("Family")).and_then(|v| v.as_str()),
                service_name: ecs_task
                    .as_ref()
                    .and_then(|t| t.get("ServiceName"))
                    .and_then(|v| v.as_str()),
            },
            lambda: EnvLambda {
                arn: client
                    .and_then(|c| c.cloud_a.as_ref())
                    .and_then(|a| a.lambda.as_ref())
                    .and_then(|l| l.arn.as_deref()),
            },
        },
        cloud_c: EnvCloudC {
            service_account: f("Email"),
        },
        cloud_b: EnvCloudB {
            vm_id: f("CloudBVmId"),
            subscription_id: f("CloudBSubscriptionId"),
        },
        orchestrator: EnvOrchestrator {
            namespace: f("OrchestratorIoNamespace"),
            pod_name: pod,
            service_account_name: f("OrchestratorIoServiceAccountName"),
            service_account_uid: sa_uid,
        },
        ci_b: EnvCiB {
            namespace_path: f("CiBNamespacePath"),
            project_path: f("CiBProjectPath"),
            ref_path: f("CiBRefPath"),
            subject: f("CiBSubject"),
        },
        ci_a: EnvCiA {
            repository: f("CiARepository"),
            subject: f("CiASubject"),
        },
        oidc: EnvOidc {
            sub: f("OidcSubject"),
            aud: facts.get("OidcAudience").map(|a| a.values().join(",")),
            iss: f("OidcIssuer"),
        },
        ci_c: EnvCiC {
            workspace_id: f("CiCWorkspaceId"),
            organization_id: f("CiCOrganizationId"),
            project_id: f("CiCProjectId"),
        },
    };
    serde_json::value::to_raw_value(&env).expect("environment serialises")
}
