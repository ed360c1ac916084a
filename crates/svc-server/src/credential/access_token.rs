//! `svc-access-token`: a management token carrying a role (contract §2.5, §3.5.2), so a workload
//! can call the management API through the edge flow. Its audit actor is the role (§1.11).

use serde_json::{Value, json};
use svc_api::Timestamp;
use svc_api::edge::{CredentialType, EdgeCredentials};
use uuid::Uuid;

use super::types::TypeSpec;
use super::{Backend, IssueCx, Issued};
use crate::config::Config;
use crate::credential::Lookup;
use crate::domain::credential::CredentialProvider;
use crate::error::Error;

pub const TYPE: &str = "svc-access-token";

/// The role a `svc-access-token` provider grants, if the provider exists and is active.
pub fn role_of(st: &dyn Lookup, cp: &Uuid) -> Option<Uuid> {
    let p = st.credential_provider(cp)?;
    if !p.meta.active || p.cp_type != TYPE {
        return None;
    }
    p.config
        .get("roleId")
        .and_then(|v| v.as_str())
        .and_then(|s| Uuid::parse_str(s).ok())
}

#[derive(Debug)]
pub struct AccessToken {
    role: Uuid,
    lifetime: i64,
}

impl AccessToken {
    pub fn issue(&self, cx: &IssueCx<'_>) -> Issued {
        let ap = (cx.access_policy != Uuid::nil()).then_some(cx.access_policy);
        let (token, exp) = crate::issuer::mgmt_token::mint_workload_token(
            cx.svc.cfg,
            &cx.svc.keys.load(),
            cx.credential_provider,
            ap,
            self.role,
            self.lifetime,
        );
        Issued::Credential {
            credential_type: CredentialType::OAuthToken,
            data: EdgeCredentials(vec![("token", Some(token))]),
            expires_at: Some(Timestamp::from_secs(exp)),
        }
    }
}

fn check(p: &CredentialProvider, st: &dyn Lookup, _: &Config) -> Result<(), Error> {
    let role = p
        .config
        .get("roleId")
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok());
    if !role.is_some_and(|r| st.has_role(&r)) {
        return Err(Error::field("roleId", "unknown role"));
    }
    let life = p.config.get("lifetimeInSeconds").and_then(Value::as_i64).unwrap_or(0);
    if let Some(abs) = p.config.get("absoluteTokenLifetime").and_then(Value::as_i64)
        && abs <= life
    {
        return Err(Error::field(
            "absoluteTokenLifetime",
            "must be greater than lifetimeInSeconds",
        ));
    }
    Ok(())
}

fn complete(p: &mut CredentialProvider) -> Result<(), Error> {
    p.config
        .insert("audience".into(), json!(crate::issuer::mgmt_token::MGMT_AUDIENCE));
    Ok(())
}

fn compile(p: &CredentialProvider) -> Backend {
    let role = p
        .config
        .get("roleId")
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok());
    let lifetime = p.config.get("lifetimeInSeconds").and_then(Value::as_i64);
    match (role, lifetime) {
        (Some(role), Some(lifetime)) => Backend::AccessToken(AccessToken { role, lifetime }),
        _ => Backend::Broken("roleId or lifetimeInSeconds missing".into()),
    }
}

pub const SPEC: TypeSpec = TypeSpec {
    name: TYPE,
    credential_type: |_| CredentialType::OAuthToken,
    secret_fields: &[],
    secret_destination: &[],
    required_secrets: &[],
    ro_fields: &["audience"],
    lifetime: None,
    check,
    complete,
    compile,
};
