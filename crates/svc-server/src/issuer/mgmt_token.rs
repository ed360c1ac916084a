//! Management tokens' claims and signing (docs/management-api.md, authentication): what
//! `service::auth` mints for users and `svc admin token`, and the workload token a
//! `svc-access-token` credential provider issues, signed with the key ring's internal HS256 key.
//! Validation and RBAC stay in `service::auth`.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::config::Config;
use crate::issuer::KeyRing;

pub const MGMT_AUDIENCE: &str = "svc-api";
pub const LEEWAY_SECS: i64 = 30;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MgmtClaims {
    pub iss: String,
    pub aud: String,
    pub sub: String,
    pub iat: i64,
    pub nbf: i64,
    pub exp: i64,
    pub jti: String,
    pub svc_auth: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default)]
    pub roles: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ap: Option<String>,
    /// User tokens: the user's session generation at minting (`User::session_epoch`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sv: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

pub(crate) fn sign(keys: &KeyRing, claims: &MgmtClaims) -> String {
    let bytes = serde_json::to_vec(claims).expect("claims serialise");
    keys.sign_internal(&bytes, crate::clock::now_millis())
}

pub(crate) fn base_claims(cfg: &Config, sub: String, svc_auth: &str, ttl: i64) -> MgmtClaims {
    let now = crate::clock::now_secs();
    MgmtClaims {
        iss: cfg.issuer().to_string(),
        aud: MGMT_AUDIENCE.into(),
        sub,
        iat: now,
        nbf: now,
        exp: now + ttl,
        jti: Uuid::new_v4().to_string(),
        svc_auth: svc_auth.into(),
        email: None,
        name: None,
        roles: vec![],
        cp: None,
        ap: None,
        sv: 0,
    }
}

/// A workload token issued by a `svc-access-token` credential provider; returns (token, exp).
pub fn mint_workload_token(
    cfg: &Config,
    keys: &KeyRing,
    cp: Uuid,
    ap: Option<Uuid>,
    role: Uuid,
    ttl: i64,
) -> (String, i64) {
    let mut c = base_claims(cfg, format!("credential-provider:{cp}"), "workload", ttl);
    c.roles = vec![role.to_string()];
    c.cp = Some(cp.to_string());
    c.ap = ap.map(|a| a.to_string());
    (sign(keys, &c), c.exp)
}
