//! Records of the global entities: settings, resource sets, roles, users. The configuration
//! entities of the Edge API (trust providers, workloads, credential providers, policies) have
//! their own modules next to this one.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Meta, Perm, Secret, Tag, Timestamp, secret};

/// Sign-in policy and compliance settings: one record, id = nil UUID.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Settings {
    pub sso_required: bool,
    pub mfa_required: bool,
    /// When `mfaRequired` last became true (start of the MFA grace period).
    pub mfa_enabled_at: Option<Timestamp>,
    pub compliance: Vec<(String, ComplianceLevel)>,
    pub modified_at: Timestamp,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum ComplianceLevel {
    Required,
    Recommended,
    Optional,
}

impl ComplianceLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            ComplianceLevel::Required => "Required",
            ComplianceLevel::Recommended => "Recommended",
            ComplianceLevel::Optional => "Optional",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "Required" => Some(ComplianceLevel::Required),
            "Recommended" => Some(ComplianceLevel::Recommended),
            "Optional" => Some(ComplianceLevel::Optional),
            _ => None,
        }
    }
}

/// The four compliance settings of §3.22, in their GET order.
pub const COMPLIANCE_SETTINGS: [&str; 4] = [
    "ap_trust_prov_governance",
    "ap_access_cond_governance",
    "edge_trust_prov_governance",
    "edge_tls_hostname_governance",
];

impl Settings {
    pub fn initial(now: Timestamp) -> Settings {
        Settings {
            sso_required: false,
            mfa_required: false,
            mfa_enabled_at: None,
            compliance: COMPLIANCE_SETTINGS
                .iter()
                .map(|n| (n.to_string(), ComplianceLevel::Recommended))
                .collect(),
            modified_at: now,
        }
    }

    pub fn compliance(&self, name: &str) -> ComplianceLevel {
        self.compliance
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, l)| *l)
            .unwrap_or(ComplianceLevel::Recommended)
    }

    /// The compliance checks of §3.22 on one entity: each `(setting, field, missing)` whose
    /// `missing` holds fails with `400 <field>: required by compliance setting <setting>` when
    /// the setting is `Required`, and is returned (for `X-Svc-Compliance-Warning`) when it is
    /// `Recommended`.
    pub fn gate(&self, checks: &[(&'static str, &'static str, bool)]) -> crate::error::Result<Vec<&'static str>> {
        let mut warnings = Vec::new();
        for &(name, field, missing) in checks {
            if missing {
                match self.compliance(name) {
                    ComplianceLevel::Required => {
                        return Err(crate::error::Error::field(
                            field,
                            format!("required by compliance setting {name}"),
                        ));
                    }
                    ComplianceLevel::Recommended => warnings.push(name),
                    ComplianceLevel::Optional => {}
                }
            }
        }
        Ok(warnings)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ResourceSet {
    pub meta: Meta,
}

/// One permission a role grants.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Grant {
    pub perm: Perm,
    pub read: bool,
    pub write: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Role {
    pub meta: Meta,
    pub system: bool,
    pub grants: Vec<Grant>,
    /// System roles: every resource set, including future ones.
    pub all_resource_sets: bool,
    pub resource_sets: Vec<Uuid>,
}

impl Role {
    /// The access this role gives to `perm` in resource set `rs`: (read, write).
    pub fn access(&self, perm: Perm, rs: Uuid) -> (bool, bool) {
        if !self.meta.active || !(self.all_resource_sets || self.resource_sets.contains(&rs)) {
            return (false, false);
        }
        self.grants
            .iter()
            .find(|g| g.perm == perm)
            .map(|g| (g.read || g.write, g.write && !perm.read_only()))
            .unwrap_or((false, false))
    }

    pub fn covers(&self, rs: Uuid) -> bool {
        self.all_resource_sets || self.resource_sets.contains(&rs)
    }
}

/// Well-known ids of the system roles (the same on every node and every installation).
pub const SUPER_ADMIN_ROLE: Uuid = Uuid::from_u128(0x5ac0_0000_0000_4000_8000_0000_0000_0001);
pub const AUDITOR_ROLE: Uuid = Uuid::from_u128(0x5ac0_0000_0000_4000_8000_0000_0000_0002);

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct UserToken {
    pub id: Uuid,
    pub name: String,
    pub verified: bool,
    pub created_at: Timestamp,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct User {
    pub id: Uuid,
    pub seq: i32,
    pub email: String,
    pub first_name: String,
    pub last_name: String,
    pub phone_number: Option<String>,
    pub roles: Vec<Uuid>,
    pub active: bool,
    /// Locked until an administrator unlocks it (MFA not enrolled after the grace period, or a
    /// lock stored before lock-outs expired: issue 31). Ends the user's sessions.
    pub locked: bool,
    /// Consecutive failed sign-ins since the last success or lock-out.
    pub failed_logins: u32,
    /// A lock-out after failed sign-ins ends here (issue 31: never for good, so a stranger who
    /// knows an e-mail cannot shut its owner out; the user's sessions stay valid).
    #[serde(default)]
    pub locked_until: Option<Timestamp>,
    /// Lock-outs since the last successful sign-in: each lasts twice the one before.
    #[serde(default)]
    pub lockouts: u32,
    /// The identity-provider accounts this user signs in as (issue 31).
    #[serde(default)]
    pub sso_links: Vec<SsoLink>,
    pub tags: Vec<Tag>,
    pub tokens: Vec<UserToken>,
    pub created_at: Timestamp,
    pub modified_at: Timestamp,
    pub created_by: Option<super::Label>,
    pub modified_by: Option<super::Label>,
    /// Start of the user's own MFA grace period (creation or last unlock).
    pub mfa_grace_from: Timestamp,
    /// The user's session generation: a management token carries the one it was minted in
    /// (`sv`) and is refused once this moved on (password change, deactivation, lock, role
    /// change; issue 22). Never goes back, so re-activation revives no token.
    #[serde(default)]
    pub session_epoch: u32,
    /// The last TOTP time-step accepted for this user (RFC 6238 §5.2: a code is accepted at most
    /// once), kept in the record so every node refuses a replay.
    #[serde(default)]
    pub totp_last_step: i64,
    #[serde(skip)]
    pub secrets: UserSecrets,
}

/// The sealed part of a user: password hash and TOTP seeds.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct UserSecrets {
    #[serde(with = "secret::storage::option", default)]
    pub password_hash: Option<Secret<String>>,
    /// TOTP seeds (base32) by token id.
    #[serde(default)]
    pub totp: Vec<TotpSeed>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TotpSeed {
    pub id: Uuid,
    #[serde(with = "secret::storage")]
    pub secret: Secret<String>,
}

/// An identity-provider account bound to a user (issue 31): the IdP, where it pointed when the
/// account was bound (`oidcBaseURL`, `clientId`), and the ID token's `iss` and `sub`. A sign-in
/// through the IdP finds the user by these, never by e-mail once bound; an IdP moved to another
/// server or client binds nothing any more (whoever moved it may control the new one's `iss`
/// and `sub`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SsoLink {
    pub idp: Uuid,
    pub base_url: String,
    pub client_id: String,
    pub issuer: String,
    pub subject: String,
    /// The IdP created the user: its role mappings apply whoever configured it.
    pub created: bool,
}

/// A lock-out lasts one minute, then twice as long as the one before, at most an hour (issue
/// 31; the per-address throttle, `service::throttle`, is the main defence).
pub fn lockout_ms(lockouts_before: u32) -> i64 {
    (60_000i64 << lockouts_before.min(6)).min(3_600_000)
}

impl User {
    /// Whether sign-in is refused for now: locked by an administrator's rule, or within a
    /// lock-out after failed attempts.
    pub fn is_locked(&self, now_ms: i64) -> bool {
        self.locked || self.locked_until.is_some_and(|t| t.millis() > now_ms)
    }

    pub fn display_name(&self) -> String {
        format!("{} {}", self.first_name, self.last_name)
    }
    pub fn has_verified_totp(&self) -> bool {
        self.tokens.iter().any(|t| t.verified)
    }
    /// Ends every session of the user (issue 22): tokens minted before are refused.
    pub fn end_sessions(&mut self) {
        self.session_epoch = self.session_epoch.wrapping_add(1);
    }
}
