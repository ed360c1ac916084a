//! The service-wide settings: compliance settings (contract §3.22) and sign-in policies (§3.19).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `SettingDTO`: one compliance setting.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "SettingDTO")]
pub struct SettingDto {
    pub name: ComplianceSetting,
    pub value: ComplianceLevel,
}

/// The compliance settings, in the order GET lists them: what each checks on a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[allow(non_camel_case_types)]
pub enum ComplianceSetting {
    /// An access policy (v1, v2) names at least one trust provider.
    ap_trust_prov_governance,
    /// An access policy names at least one access condition.
    ap_access_cond_governance,
    /// An agent controller names a trust provider.
    edge_trust_prov_governance,
    /// An agent controller names an allowed TLS hostname.
    edge_tls_hostname_governance,
}

impl ComplianceSetting {
    pub const ALL: [ComplianceSetting; 4] = [
        ComplianceSetting::ap_trust_prov_governance,
        ComplianceSetting::ap_access_cond_governance,
        ComplianceSetting::edge_trust_prov_governance,
        ComplianceSetting::edge_tls_hostname_governance,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ComplianceSetting::ap_trust_prov_governance => "ap_trust_prov_governance",
            ComplianceSetting::ap_access_cond_governance => "ap_access_cond_governance",
            ComplianceSetting::edge_trust_prov_governance => "edge_trust_prov_governance",
            ComplianceSetting::edge_tls_hostname_governance => "edge_tls_hostname_governance",
        }
    }
}

/// What a failed check does: `Required` refuses the write (400), `Recommended` stores it with an
/// `X-Svc-Compliance-Warning` header naming the setting, `Optional` nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ComplianceLevel {
    Required,
    Recommended,
    Optional,
}

/// `GetSignInPolicyDTO`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "GetSignInPolicyDTO")]
pub struct GetSignInPolicyDto {
    /// Password sign-in is refused to users without SuperAdmin.
    pub sso_required: bool,
    /// Password sign-in asks for a TOTP code.
    pub mfa_required: bool,
}

/// `MFASignInPolicyDTO`: absent is `false`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "MFASignInPolicyDTO")]
pub struct MfaSignInPolicyDto {
    /// A user who sets it must have a verified TOTP authenticator (403 otherwise).
    #[serde(default)]
    pub mfa_required: bool,
}

/// `SSOSignInPolicyDTO`: absent is `false`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "SSOSignInPolicyDTO")]
pub struct SsoSignInPolicyDto {
    /// Needs an active `OIDCv1` identity provider with `userAccessEnabled`.
    #[serde(default)]
    pub sso_required: bool,
}
