//! The `environment` object of an edge request's events (§3.24, §3.25): verified facts and
//! self-reported context, never evidence or credentials, rendered once per request and shared by
//! its events. Its stored keys are described for reading by `events::shape::ENVIRONMENT` (a
//! test keeps the two in step).

use serde::Serialize;
use serde_json::value::RawValue;
use svc_api::edge::ClientWorkloadDetails;

use crate::trust::Facts;

/// `skip_serializing_if` for the environment's sub-objects: an object with no value is left out.
fn is_default<T: Default + PartialEq>(t: &T) -> bool {
    *t == T::default()
}

#[derive(Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Env<'a> {
    // `network.sourceIP` is the row's `client_ip`: the shape restores it.
    #[serde(skip_serializing_if = "is_default")]
    pub(crate) host: EnvHost<'a>,
    #[serde(skip_serializing_if = "is_default")]
    pub(crate) process: EnvProcess<'a>,
    #[serde(skip_serializing_if = "is_default")]
    pub(crate) svc: EnvSvc<'a>,
    #[serde(skip_serializing_if = "is_default")]
    #[serde(rename = "cloudA")]
    pub(crate) cloud_a: EnvCloudA<'a>,
    #[serde(skip_serializing_if = "is_default")]
    #[serde(rename = "cloudC")]
    pub(crate) cloud_c: EnvCloudC<'a>,
    #[serde(skip_serializing_if = "is_default")]
    #[serde(rename = "cloudB")]
    pub(crate) cloud_b: EnvCloudB<'a>,
    #[serde(skip_serializing_if = "is_default")]
    pub(crate) orchestrator: EnvOrchestrator<'a>,
    #[serde(skip_serializing_if = "is_default")]
    #[serde(rename = "ciB")]
    pub(crate) ci_b: EnvCiB<'a>,
    #[serde(skip_serializing_if = "is_default")]
    #[serde(rename = "ciA")]
    pub(crate) ci_a: EnvCiA<'a>,
    #[serde(skip_serializing_if = "is_default")]
    pub(crate) oidc: EnvOidc<'a>,
    #[serde(skip_serializing_if = "is_default")]
    #[serde(rename = "ciC")]
    pub(crate) ci_c: EnvCiC<'a>,
}

#[derive(Serialize, Default, PartialEq)]
pub(crate) struct EnvHost<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) hostname: Option<&'a str>,
}
#[derive(Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnvProcess<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) user_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) exe_path: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) command_line: Option<&'a str>,
}
#[derive(Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnvSvc<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) client_id: Option<&'a str>,
}
#[derive(Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnvCloudA<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) account_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) instance_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) region: Option<String>,
    #[serde(skip_serializing_if = "is_default")]
    pub(crate) ecs: EnvEcs<'a>,
    #[serde(skip_serializing_if = "is_default")]
    pub(crate) lambda: EnvLambda<'a>,
}
#[derive(Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnvEcs<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) task_family: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) service_name: Option<&'a str>,
}
#[derive(Serialize, Default, PartialEq)]
pub(crate) struct EnvLambda<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) arn: Option<&'a str>,
}
#[derive(Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnvCloudC<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) service_account: Option<&'a str>,
}
#[derive(Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnvCloudB<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) vm_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) subscription_id: Option<&'a str>,
}
#[derive(Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnvOrchestrator<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) namespace: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) pod_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) service_account_name: Option<&'a str>,
    #[serde(rename = "serviceAccountUID")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) service_account_uid: Option<String>,
}
#[derive(Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnvCiB<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) namespace_path: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) project_path: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ref_path: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) subject: Option<&'a str>,
}
#[derive(Serialize, Default, PartialEq)]
pub(crate) struct EnvCiA<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) repository: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) subject: Option<&'a str>,
}
#[derive(Serialize, Default, PartialEq)]
pub(crate) struct EnvOidc<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sub: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) aud: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) iss: Option<&'a str>,
}
#[derive(Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnvCiC<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) workspace_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) organization_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) project_id: Option<&'a str>,
}

/// The orchestrator pod name and service-account UID a request's subject shows: the only part
/// of the `environment` that needs the identified subject (`None, None` before it is known).
pub fn subject_ids(s: &crate::policy::identity::Subject<'_>) -> (Option<String>, Option<String>) {
    let first = |name: &str| {
        crate::domain::identity::lookup(name)
            .and_then(|t| s.values(t, None).into_iter().next())
            .map(|c| c.into_owned())
    };
    (first("orchestratorPodName"), first("orchestratorServiceAccountUID"))
}

/// Renders the `environment` object of a request's events: verified facts and self-reported
/// context, never evidence or credentials.
pub fn environment(
    facts: &Facts,
    (pod, sa_uid): (Option<String>, Option<String>),
    client: Option<&ClientWorkloadDetails>,
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
    let env = Env {
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
            // The subject's (the fact, else the reported name), or before it is known the fact.
            pod_name: pod.or_else(|| fo("OrchestratorIoPodName")),
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
