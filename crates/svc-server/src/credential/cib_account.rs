//! `ciB-managed-account` (contract §3.5.2, §5.3): a service account this service creates and owns
//! in a ciB instance (through a `CiB` integration, §3.7), whose personal access tokens are the
//! credential. Provisioning runs right after the provider is created (`Pending` → `Provisioned` /
//! `Error`); a token is minted on first use, stored sealed, and reused until 60 s before it
//! expires; a replaced token is left to expire (workloads may hold it). Deleting the provider
//! revokes the current token (best effort).
//!
//! Like the authorization-code refresh, minting persists state from the edge path (the new token),
//! one mint at a time under the application's refresh lock.

use serde_json::{Value, json};
use svc_api::edge::{CredentialType, EdgeCredentials};
use svc_api::mgmt::CiBManagedAccountFields;
use svc_api::{FieldError, Timestamp};
use uuid::Uuid;

use super::types::{self, TypeSpec, cfg_str};
use super::upstream_call::{json_body, status_error};
use super::{Backend, IssueCx, IssueError, Issued, Services};
use crate::config::Config;
use crate::credential::Lookup;
use crate::domain::credential::{CredentialIntegration, CredentialProvider};
use crate::error::Error;
use crate::upstream::Fetched;

pub const TYPE: &str = "ciB-managed-account";
pub const INTEGRATION_KIND: &str = "CiB";
const REUSE_MARGIN_SECS: i64 = 60;
/// Server-maintained fields (read-only on the wire, kept across PUT/PATCH).
pub const STATE_FIELDS: &[&str] = &[
    "userId",
    "tokenSensitiveDataId",
    "tokenId",
    "tokenExpiration",
    "lastOperationTimestamp",
    "status",
    "errorMessage",
    "tokenFor",
];

#[derive(Debug)]
pub struct ManagedAccount {
    id: Uuid,
}

/// The ciB API of an integration: base URL and administrator token.
struct Api {
    base: String,
    token: String,
}

impl Api {
    fn of(integ: &CredentialIntegration) -> Option<Api> {
        Some(Api {
            base: cfg_str(&integ.config, "url")?.to_string(),
            token: integ.secrets.get("personalAccessToken")?.to_string(),
        })
    }

    async fn call(
        &self,
        svc: &Services<'_>,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Fetched, IssueError> {
        let u = svc.upstream.check_joined(&self.base, &format!("/api/v4/{path}"))?;
        let mut req = svc
            .upstream
            .client
            .request(method, u)
            .header("PRIVATE-TOKEN", &self.token)
            .header("accept", "application/json");
        if let Some(b) = body {
            req = req.json(b);
        }
        Ok(svc.upstream.send(req).await?)
    }
}

fn integration_of(st: &dyn Lookup, p: &CredentialProvider) -> Option<CredentialIntegration> {
    let id = cfg_str(&p.config, "credentialProviderIntegrationExternalId").and_then(|s| Uuid::parse_str(s).ok())?;
    st.credential_integration(&id)
        .filter(|i| i.int_type == INTEGRATION_KIND)
        .map(|i| (**i).clone())
}

/// Path segments of a comma-separated id/path list, URL-encoded (`group/sub` → `group%2Fsub`).
fn ids(list: Option<&str>) -> Vec<String> {
    list.unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| url::form_urlencoded::byte_serialize(s.as_bytes()).collect())
        .collect()
}

/// What the stored token was minted for: a change of scope or lifetime mints a new one.
fn token_for(p: &CredentialProvider) -> String {
    format!(
        "{}|{}",
        cfg_str(&p.config, "scope").unwrap_or_default(),
        p.config.get("lifetimeInSeconds").and_then(Value::as_i64).unwrap_or(0)
    )
}

/// Provisioning right after create (§5.3): the service account, then its memberships.
pub async fn provision(svc: Services<'_>, id: Uuid) {
    let mut user = None;
    let outcome = provision_steps(&svc, id, &mut user).await;
    let result = update(&svc, id, |p| {
        p.config
            .insert("lastOperationTimestamp".into(), json!(crate::clock::now()));
        // A created account is recorded even when a membership failed, so it is never orphaned.
        if let Some(u) = user {
            p.config.insert("userId".into(), json!(u));
        }
        match &outcome {
            Ok(_) => {
                p.config.insert("status".into(), json!("Provisioned"));
                p.config.remove("errorMessage");
            }
            Err(e) => {
                p.config.insert("status".into(), json!("Error"));
                p.config.insert("errorMessage".into(), json!(e.told()));
            }
        }
    })
    .await;
    match (&outcome, result) {
        (_, Err(e)) => tracing::warn!(provider = %id, error = %e.reason, "storing the provisioning outcome failed"),
        (Err(e), _) => tracing::warn!(provider = %id, reason = %e.reason, "ciB managed account provisioning failed"),
        (Ok(user), _) => tracing::info!(provider = %id, user, "ciB managed account provisioned"),
    }
}

async fn provision_steps(svc: &Services<'_>, id: Uuid, created: &mut Option<i64>) -> Result<i64, IssueError> {
    let st = svc.renewals.current();
    let p = st
        .credential_provider(&id)
        .cloned()
        .ok_or_else(|| IssueError::new("provider deleted"))?;
    let integ = integration_of(&*st, &p).ok_or_else(|| IssueError::new("integration missing"))?;
    drop(st);
    if !integ.meta.active {
        return Err(IssueError::new(format!(
            "the integration '{}' is inactive",
            integ.meta.name
        )));
    }
    let api = Api::of(&integ).ok_or_else(|| IssueError::new("integration incomplete"))?;
    let username = cfg_str(&p.config, "username").unwrap_or_default();
    let body = json!({"name": username, "username": username});
    let f = api
        .call(svc, reqwest::Method::POST, "service_accounts", Some(&body))
        .await?;
    let v = json_body("ciB service_accounts", &f)?;
    let user_id = v
        .get("id")
        .and_then(Value::as_i64)
        .ok_or_else(|| IssueError::upstream("ciB service_accounts answer has no id", None))?;
    *created = Some(user_id);
    let level = p.config.get("accessLevel").and_then(Value::as_i64).unwrap_or(0);
    let member = json!({"user_id": user_id, "access_level": level});
    for (kind, list) in [("groups", "groupIds"), ("projects", "projectIds")] {
        for target in ids(cfg_str(&p.config, list)) {
            let path = format!("{kind}/{target}/members");
            let f = api.call(svc, reqwest::Method::POST, &path, Some(&member)).await?;
            if !(200..300).contains(&f.status) {
                return Err(status_error(&format!("ciB {kind} members"), &f));
            }
        }
    }
    Ok(user_id)
}

/// Applies `f` to the stored provider in one write (no audit entry: server-maintained state).
async fn update(
    svc: &Services<'_>,
    id: Uuid,
    f: impl FnOnce(&mut CredentialProvider) + Send,
) -> Result<(), IssueError> {
    svc.renewals.update(id, Box::new(f)).await
}

/// UTC date of `t` rounded up to a whole day, as (`YYYY-MM-DD`, that day 00:00Z in seconds).
fn expiry_date(t: i64) -> (String, i64) {
    let day = t.div_euclid(86400) + i64::from(t.rem_euclid(86400) != 0);
    let midnight = day * 86400;
    let d = Timestamp::from_secs(midnight).to_offset().date();
    (
        format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day()),
        midnight,
    )
}

fn stored(p: &CredentialProvider, now: i64) -> Option<(String, Timestamp)> {
    let exp = p
        .config
        .get("tokenExpiration")
        .and_then(Value::as_str)
        .and_then(Timestamp::parse)?;
    let token = p.secrets.get("token")?;
    (cfg_str(&p.config, "tokenFor") == Some(token_for(p).as_str()) && exp.millis() / 1000 - REUSE_MARGIN_SECS > now)
        .then(|| (token.to_string(), exp))
}

fn credential(token: String, exp: Timestamp) -> Issued {
    Issued::Credential {
        credential_type: CredentialType::OAuthToken,
        data: EdgeCredentials(vec![("token", Some(token))]),
        expires_at: Some(exp),
    }
}

impl ManagedAccount {
    pub async fn issue(&self, cx: &IssueCx<'_>) -> Result<Issued, IssueError> {
        let svc = &cx.svc;
        let lookup = || svc.renewals.current().credential_provider(&self.id).cloned();
        let p = lookup().ok_or_else(|| IssueError::new("provider no longer exists"))?;
        if cfg_str(&p.config, "status") != Some("Provisioned") {
            return Ok(Issued::Nothing(format!(
                "the managed account is not provisioned (status {})",
                cfg_str(&p.config, "status").unwrap_or("Pending")
            )));
        }
        let integ =
            integration_of(&*svc.renewals.current(), &p).ok_or_else(|| IssueError::new("integration missing"))?;
        if !integ.meta.active {
            return Ok(Issued::Nothing(format!(
                "the integration '{}' is inactive",
                integ.meta.name
            )));
        }
        if let Some((t, exp)) = stored(&p, crate::clock::now_secs()) {
            return Ok(credential(t, exp));
        }
        let _g = svc.renewals.lock(self.id).await?;
        let p = lookup().ok_or_else(|| IssueError::new("provider no longer exists"))?;
        if let Some((t, exp)) = stored(&p, crate::clock::now_secs()) {
            return Ok(credential(t, exp));
        }
        let api = Api::of(&integ).ok_or_else(|| IssueError::new("integration incomplete"))?;
        let user_id = p
            .config
            .get("userId")
            .and_then(Value::as_i64)
            .ok_or_else(|| IssueError::new("the managed account has no user id"))?;
        let lifetime = p
            .config
            .get("lifetimeInSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(3600);
        let (date, midnight) = expiry_date(crate::clock::now_secs() + lifetime);
        let scopes: Vec<&str> = cfg_str(&p.config, "scope")
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        let body = json!({"name": format!("svc-{}", Uuid::new_v4()), "scopes": scopes, "expires_at": date});
        let path = format!("users/{user_id}/personal_access_tokens");
        let f = api.call(svc, reqwest::Method::POST, &path, Some(&body)).await?;
        let v = json_body("ciB personal_access_tokens", &f)?;
        let token = v
            .get("token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| IssueError::upstream("ciB personal_access_tokens answer has no token", None))?
            .to_string();
        let token_id = v.get("id").cloned().unwrap_or(Value::Null);
        let exp = Timestamp::from_secs(midnight);
        let (t2, for_) = (token.clone(), token_for(&p));
        update(svc, self.id, move |p| {
            p.secrets.set("token", t2);
            p.config
                .insert("tokenId".into(), json!(token_id.to_string().trim_matches('"')));
            p.config.insert("tokenExpiration".into(), json!(exp));
            p.config.insert("tokenSensitiveDataId".into(), json!(Uuid::new_v4()));
            p.config
                .insert("lastOperationTimestamp".into(), json!(crate::clock::now()));
            p.config.insert("tokenFor".into(), json!(for_));
        })
        .await?;
        // A replaced token is left to expire: workloads may still hold it until its `expiresAt`.
        Ok(credential(token, exp))
    }
}

/// Revokes the deleted provider's current token, best effort (a failure is logged); the
/// caller runs it in the background after the delete committed.
pub async fn revoke_after_delete(svc: Services<'_>, p: &CredentialProvider) {
    let (Some(token_id), Some(integ)) = (
        cfg_str(&p.config, "tokenId"),
        integration_of(&*svc.renewals.current(), p),
    ) else {
        return;
    };
    let Some(api) = Api::of(&integ) else {
        return;
    };
    let path = format!("personal_access_tokens/{token_id}");
    match api.call(&svc, reqwest::Method::DELETE, &path, None).await {
        Ok(f) if (200..300).contains(&f.status) || f.status == 404 => {}
        Ok(f) => tracing::warn!(status = f.status, "revoking a managed account token failed"),
        Err(e) => tracing::warn!(reason = %e.reason, "revoking a managed account token failed"),
    }
}

pub fn check_fields(f: &mut CiBManagedAccountFields) -> Result<(), FieldError> {
    types::non_empty(&mut f.group_ids, true);
    types::non_empty(&mut f.project_ids, true);
    types::non_empty(&mut f.username, false);
    Ok(())
}

fn check(p: &CredentialProvider, st: &dyn Lookup, _: &Config) -> Result<(), Error> {
    if cfg_str(&p.config, "groupIds").is_none() && cfg_str(&p.config, "projectIds").is_none() {
        return Err(Error::field("groupIds", "groupIds or projectIds is required"));
    }
    if let Some(u) = cfg_str(&p.config, "username")
        && !u.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return Err(Error::field(
            "username",
            "may contain letters, digits, '.', '_' and '-' only",
        ));
    }
    super::cloudb::check_integration(p, st, INTEGRATION_KIND)
}

/// Default username and the initial provisioning state.
fn complete(p: &mut CredentialProvider) -> Result<(), Error> {
    if cfg_str(&p.config, "username").is_none() {
        let name: String = p
            .meta
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        p.config
            .insert("username".into(), json!(format!("Svc_{name}_managed_service_account")));
    }
    if cfg_str(&p.config, "status").is_none() {
        p.config.insert("status".into(), json!("Pending"));
    }
    Ok(())
}

fn compile(p: &CredentialProvider) -> Backend {
    Backend::CiBAccount(ManagedAccount { id: p.meta.id })
}

pub const SPEC: TypeSpec = TypeSpec {
    name: TYPE,
    credential_type: |_| CredentialType::OAuthToken,
    secret_fields: &[],
    secret_destination: &[],
    required_secrets: &[],
    ro_fields: STATE_FIELDS,
    lifetime: None,
    check,
    complete,
    compile,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_dates_round_up() {
        assert_eq!(expiry_date(86400 * 20000).0, "2024-10-04");
        assert_eq!(expiry_date(86400 * 20000 + 1), ("2024-10-05".into(), 86400 * 20001));
        assert_eq!(ids(Some(" 12, acme/platform ,")), vec!["12", "acme%2Fplatform"]);
    }
}
