//! The client-workload identity types of contract §3.3: one table that drives validation, the
//! `/client-workloads/identifiers` catalogue, the edge index and the matching rules (§4.6).

/// Where an identity type's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A verified fact of the edge token, by match attribute.
    Fact(&'static str),
    /// A claim of the verified token (`claims`), by dotted path into `kubernetes.io`.
    OrchestratorClaim(usize),
    /// The claim named by the identity's `key` (`oidcIdToken`).
    CustomClaim,
    /// Self-reported in the `/credentials` request body.
    Reported,
    /// The effective source IP.
    SourceIp,
}

pub struct IdentityType {
    pub name: &'static str,
    pub display_name: &'static str,
    pub environment_path: &'static str,
    pub source: Source,
    /// Usable as an exact-match index key (prefix and CIDR types are not).
    pub indexable: bool,
    /// Compared case-insensitively.
    pub case_insensitive: bool,
}

const fn t(
    name: &'static str,
    display_name: &'static str,
    environment_path: &'static str,
    source: Source,
) -> IdentityType {
    IdentityType {
        name,
        display_name,
        environment_path,
        source,
        indexable: true,
        case_insensitive: false,
    }
}

/// In index priority order: the most selective types first.
pub const IDENTITY_TYPES: &[IdentityType] = &[
    t(
        "svcClientId",
        "Svc client workload id",
        "os.environment.CLIENT_WORKLOAD_ID",
        Source::Reported,
    ),
    t(
        "oidcIdTokenSubject",
        "OIDC ID token subject",
        "oidc.identityToken.decode.payload.sub",
        Source::Fact("OidcSubject"),
    ),
    t(
        "ciAIdTokenSubject",
        "ciA ID token subject",
        "ciA.identityToken.decode.payload.sub",
        Source::Fact("CiASubject"),
    ),
    t(
        "ciBIdTokenSubject",
        "ciB ID token subject",
        "ciB.identityToken.decode.payload.sub",
        Source::Fact("CiBSubject"),
    ),
    t(
        "orchestratorServiceAccountUID",
        "Orchestrator service account UID",
        "orchestrator.serviceAccountToken.decode.payload.kubernetes.io.serviceaccount.uid",
        Source::OrchestratorClaim(4),
    ),
    t(
        "cloudAInstanceId",
        "cloudA instance id",
        "cloudA.instanceIdentityDocument.instanceId",
        Source::Fact("CloudAInstanceId"),
    ),
    t(
        "cloudBVmId",
        "cloudB VM id",
        "cloudB.attestedDocument.vmId",
        Source::Fact("CloudBVmId"),
    ),
    t(
        "cloudCIdentityToken",
        "cloudC identity token e-mail",
        "cloudC.identityToken.decode.payload.email",
        Source::Fact("Email"),
    ),
    t(
        "oidcIdToken",
        "OIDC ID token claim",
        "oidc.identityToken.decode.payload.<key>",
        Source::CustomClaim,
    ),
    t(
        "ciAIdTokenRepository",
        "ciA repository",
        "ciA.identityToken.decode.payload.repository",
        Source::Fact("CiARepository"),
    ),
    t(
        "ciBIdTokenProjectPath",
        "ciB project path",
        "ciB.identityToken.decode.payload.project_path",
        Source::Fact("CiBProjectPath"),
    ),
    t(
        "ciBIdTokenRefPath",
        "ciB ref path",
        "ciB.identityToken.decode.payload.ref_path",
        Source::Fact("CiBRefPath"),
    ),
    t(
        "ciBIdTokenNamespacePath",
        "ciB namespace path",
        "ciB.identityToken.decode.payload.namespace_path",
        Source::Fact("CiBNamespacePath"),
    ),
    t(
        "ciCIdTokenWorkspaceId",
        "ciC workspace id",
        "ciC.identityToken.decode.payload.terraform_workspace_id",
        Source::Fact("CiCWorkspaceId"),
    ),
    t(
        "ciCIdTokenProjectId",
        "ciC project id",
        "ciC.identityToken.decode.payload.terraform_project_id",
        Source::Fact("CiCProjectId"),
    ),
    t(
        "ciCIdTokenOrganizationId",
        "ciC organization id",
        "ciC.identityToken.decode.payload.terraform_organization_id",
        Source::Fact("CiCOrganizationId"),
    ),
    t(
        "orchestratorPodName",
        "Orchestrator pod name",
        "orchestrator.serviceAccountToken.decode.payload.kubernetes.io.pod.name",
        Source::Fact("OrchestratorIoPodName"),
    ),
    IdentityType {
        name: "orchestratorPodNamePrefix",
        display_name: "Orchestrator pod name prefix",
        environment_path: "orchestrator.serviceAccountToken.decode.payload.kubernetes.io.pod.name",
        source: Source::Fact("OrchestratorIoPodName"),
        indexable: false,
        case_insensitive: false,
    },
    t(
        "orchestratorServiceAccountName",
        "Orchestrator service account name",
        "orchestrator.serviceAccountToken.decode.payload.kubernetes.io.serviceaccount.name",
        Source::Fact("OrchestratorIoServiceAccountName"),
    ),
    t(
        "orchestratorNamespace",
        "Orchestrator namespace",
        "orchestrator.serviceAccountToken.decode.payload.kubernetes.io.namespace",
        Source::Fact("OrchestratorIoNamespace"),
    ),
    t(
        "cloudALambdaArn",
        "cloudA function ARN",
        "cloudA.lambda.arn",
        Source::Reported,
    ),
    t(
        "cloudAEcsServiceName",
        "cloudA container service name",
        "cloudA.ecs.taskMetadata.ServiceName",
        Source::Reported,
    ),
    t(
        "cloudAEcsTaskFamily",
        "cloudA container task family",
        "cloudA.ecs.taskMetadata.Family",
        Source::Reported,
    ),
    IdentityType {
        name: "hostname",
        display_name: "Host name",
        environment_path: "host.hostname",
        source: Source::Reported,
        indexable: true,
        case_insensitive: true,
    },
    t(
        "processPath",
        "Process executable path",
        "host.process.exePath",
        Source::Reported,
    ),
    t("processName", "Process name", "host.process.name", Source::Reported),
    t(
        "processCommandLine",
        "Process command line",
        "host.process.commandLine",
        Source::Reported,
    ),
    t(
        "processUserName",
        "Process user name",
        "host.process.userName",
        Source::Reported,
    ),
    t(
        "oidcIdTokenAudience",
        "OIDC ID token audience",
        "oidc.identityToken.decode.payload.aud",
        Source::Fact("OidcAudience"),
    ),
    t(
        "oidcIdTokenIssuer",
        "OIDC ID token issuer",
        "oidc.identityToken.decode.payload.iss",
        Source::Fact("OidcIssuer"),
    ),
    t(
        "cloudBSubscriptionId",
        "cloudB subscription id",
        "cloudB.attestedDocument.subscriptionId",
        Source::Fact("CloudBSubscriptionId"),
    ),
    t(
        "cloudAAccountId",
        "cloudA account id",
        "cloudA.instanceIdentityDocument.accountId",
        Source::Fact("CloudAAccountId"),
    ),
    t(
        "cloudARegion",
        "cloudA region",
        "cloudA.instanceIdentityDocument.region",
        Source::Fact("CloudARegion"),
    ),
    IdentityType {
        name: "sourceIPAddress",
        display_name: "Source IP address or CIDR",
        environment_path: "network.sourceIP",
        source: Source::SourceIp,
        indexable: false,
        case_insensitive: false,
    },
];

pub fn lookup(name: &str) -> Option<&'static IdentityType> {
    IDENTITY_TYPES.iter().find(|t| t.name == name)
}

/// Index priority of a type (lower is more selective).
pub fn priority(name: &str) -> usize {
    IDENTITY_TYPES.iter().position(|t| t.name == name).unwrap_or(usize::MAX)
}
