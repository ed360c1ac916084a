//! Permission names of contract §2.7, in their documented order.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Perm {
    AccessPolicies,
    AccessConditions,
    Integrations,
    ClientWorkloads,
    ServerWorkloads,
    TrustProviders,
    CredentialProviders,
    CredentialProviderIntegrations,
    AgentControllers,
    DiscoveryIntegrations,
    RoutingConfiguration,
    StandaloneCertificateAuthorities,
    LogStreams,
    ResourceSets,
    Roles,
    Users,
    SignOnPolicy,
    IdentityProviders,
    GlobalPolicyCompliance,
    GlobalPolicyComplianceReport,
    AuditLogs,
    AccessAuthorizationEvents,
    WorkloadEvents,
}

impl Perm {
    pub const ALL: [Perm; 23] = [
        Perm::AccessPolicies,
        Perm::AccessConditions,
        Perm::Integrations,
        Perm::ClientWorkloads,
        Perm::ServerWorkloads,
        Perm::TrustProviders,
        Perm::CredentialProviders,
        Perm::CredentialProviderIntegrations,
        Perm::AgentControllers,
        Perm::DiscoveryIntegrations,
        Perm::RoutingConfiguration,
        Perm::StandaloneCertificateAuthorities,
        Perm::LogStreams,
        Perm::ResourceSets,
        Perm::Roles,
        Perm::Users,
        Perm::SignOnPolicy,
        Perm::IdentityProviders,
        Perm::GlobalPolicyCompliance,
        Perm::GlobalPolicyComplianceReport,
        Perm::AuditLogs,
        Perm::AccessAuthorizationEvents,
        Perm::WorkloadEvents,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Perm::AccessPolicies => "Access Policies",
            Perm::AccessConditions => "Access Conditions",
            Perm::Integrations => "Integrations",
            Perm::ClientWorkloads => "Client Workloads",
            Perm::ServerWorkloads => "Server Workloads",
            Perm::TrustProviders => "Trust Providers",
            Perm::CredentialProviders => "Credential Providers",
            Perm::CredentialProviderIntegrations => "Credential Provider Integrations",
            Perm::AgentControllers => "Agent Controllers",
            Perm::DiscoveryIntegrations => "Discovery Integrations",
            Perm::RoutingConfiguration => "Routing Configuration",
            Perm::StandaloneCertificateAuthorities => "Standalone Certificate Authorities",
            Perm::LogStreams => "Log Streams",
            Perm::ResourceSets => "Resource Sets",
            Perm::Roles => "Roles",
            Perm::Users => "Users",
            Perm::SignOnPolicy => "SignOn Policy",
            Perm::IdentityProviders => "Identity Providers",
            Perm::GlobalPolicyCompliance => "Global Policy Compliance",
            Perm::GlobalPolicyComplianceReport => "Global Policy Compliance Report",
            Perm::AuditLogs => "Audit Logs",
            Perm::AccessAuthorizationEvents => "Access Authorization Events",
            Perm::WorkloadEvents => "Workload Events",
        }
    }

    pub fn parse(name: &str) -> Option<Perm> {
        Perm::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Read-only permissions (`R` in §2.7): write is never granted.
    pub fn read_only(self) -> bool {
        matches!(
            self,
            Perm::GlobalPolicyComplianceReport
                | Perm::AuditLogs
                | Perm::AccessAuthorizationEvents
                | Perm::WorkloadEvents
        )
    }
}

impl serde::Serialize for Perm {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Perm {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Perm::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown permission {s:?}")))
    }
}
