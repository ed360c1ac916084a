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
    /// Consecutive failed sign-ins since the last success (from any address; the lock-outs
    /// count per address, `source_locks`).
    pub failed_logins: u32,
    /// Failed sign-ins and lock-outs per source address (issue 31): five failures from an
    /// address lock the account for sign-ins from that address, for a while; a stranger who
    /// knows an e-mail cannot shut its owner out from the owner's own address, nor for good.
    #[serde(default)]
    pub source_locks: Vec<SourceLock>,
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

/// Failed sign-ins of one account from one source address (`http::extract::sign_in_source`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SourceLock {
    pub source: String,
    /// Consecutive failures since this address's last success or lock-out.
    pub failures: u32,
    /// Lock-outs of this address since its last success: each lasts twice the one before.
    pub lockouts: u32,
    pub until: Option<Timestamp>,
    /// The last failure from this address (`None` in records written before it was kept).
    #[serde(default)]
    pub last: Option<Timestamp>,
}

impl SourceLock {
    /// Whether the entry may make room for another address: not locked out and no failure for
    /// an hour (the longest lock-out), so no address forgets its own recent lock-outs.
    fn idle(&self, now_ms: i64) -> bool {
        let since = |t: Option<Timestamp>| t.is_none_or(|t| now_ms - t.millis() >= MAX_LOCKOUT_MS);
        self.source != OVERFLOW_SOURCE && since(self.until) && since(self.last)
    }
}

/// A lock-out lasts one minute, then twice as long as the one before, at most an hour (issue
/// 31; the per-address throttle, `limits::throttle`, is the main defence).
pub fn lockout_ms(lockouts_before: u32) -> i64 {
    (60_000i64 << lockouts_before.min(6)).min(MAX_LOCKOUT_MS)
}

const MAX_LOCKOUT_MS: i64 = 3_600_000;

/// At most this many addresses are remembered per account, besides [`OVERFLOW_SOURCE`]. Only an
/// idle one ([`SourceLock::idle`]) makes room for a new address (issue 31: addresses must not
/// evict their own lock-outs); while none is, new addresses share one entry.
const MAX_SOURCE_LOCKS: usize = 32;

/// The entry addresses share when [`MAX_SOURCE_LOCKS`] are remembered with lock-outs.
pub const OVERFLOW_SOURCE: &str = "overflow";

impl User {
    /// Whether the account shows as locked: by an administrator's rule (the MFA grace period),
    /// or for at least one address within a lock-out.
    pub fn is_locked(&self, now_ms: i64) -> bool {
        self.locked
            || self
                .source_locks
                .iter()
                .any(|l| l.until.is_some_and(|t| t.millis() > now_ms))
    }

    /// Whether a sign-in from `source` is refused for now.
    pub fn is_locked_for(&self, source: Option<&str>, now_ms: i64) -> bool {
        let key = self.lock_key(source, now_ms);
        self.locked
            || self
                .source_locks
                .iter()
                .any(|l| l.source == key && l.until.is_some_and(|t| t.millis() > now_ms))
    }

    /// The entry `source` counts under: its own when remembered or when there is room (an idle
    /// entry may be given up for it), else [`OVERFLOW_SOURCE`].
    fn lock_key<'s>(&self, source: Option<&'s str>, now_ms: i64) -> &'s str {
        let key = source.unwrap_or("unknown");
        let remembered = self.source_locks.iter().any(|l| l.source == key);
        let own = self.source_locks.iter().filter(|l| l.source != OVERFLOW_SOURCE).count();
        if remembered || own < MAX_SOURCE_LOCKS || self.source_locks.iter().any(|l| l.idle(now_ms)) {
            key
        } else {
            OVERFLOW_SOURCE
        }
    }

    /// Counts a failed sign-in from `source`; `true` when it locks the account for that address.
    pub fn failed_from(&mut self, source: Option<&str>, now_ms: i64, max_failures: u32) -> bool {
        self.failed_logins = self.failed_logins.saturating_add(1);
        let key = self.lock_key(source, now_ms).to_string();
        let i = match self.source_locks.iter().position(|l| l.source == key) {
            Some(i) => i,
            None => {
                let own = self.source_locks.iter().filter(|l| l.source != OVERFLOW_SOURCE).count();
                if key != OVERFLOW_SOURCE
                    && own >= MAX_SOURCE_LOCKS
                    && let Some(j) = self.source_locks.iter().position(|l| l.idle(now_ms))
                {
                    self.source_locks.remove(j);
                }
                self.source_locks.push(SourceLock {
                    source: key,
                    failures: 0,
                    lockouts: 0,
                    until: None,
                    last: None,
                });
                self.source_locks.len() - 1
            }
        };
        let l = &mut self.source_locks[i];
        l.failures += 1;
        l.last = Some(Timestamp::from_millis(now_ms));
        if l.failures < max_failures {
            return false;
        }
        l.until = Some(Timestamp::from_millis(now_ms + lockout_ms(l.lockouts)));
        l.lockouts = l.lockouts.saturating_add(1);
        l.failures = 0;
        true
    }

    /// A successful sign-in from `source`: its address starts over; the count from everywhere
    /// is reset (§2.2).
    pub fn succeeded_from(&mut self, source: Option<&str>) {
        self.failed_logins = 0;
        let key = source.unwrap_or("unknown");
        self.source_locks.retain(|l| l.source != key);
    }

    /// Clears every lock (`unlock`).
    pub fn unlock(&mut self) {
        self.locked = false;
        self.failed_logins = 0;
        self.source_locks.clear();
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
