//! Audit entries (contract §1.11, §3.23): built from the actor, the client and the change, stored
//! as the exact AuditLogDTO JSON plus the columns the list queries filter on.

use serde_json::json;
use uuid::Uuid;

use crate::domain::{Actor, Timestamp};
use crate::store::AuditRow;

/// The caller's network and agent, for audit and events.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientInfo {
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    /// The address sign-in throttling keys on ([`crate::http::extract::sign_in_source`]); not
    /// recorded.
    pub source: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    Created,
    Updated,
    Patched,
    Deleted,
    NoteAdded,
    SecretAdded,
    SecretDeleted,
    Unlocked,
    Locked,
    DeviceCodeCreated,
    Authorized,
    LoginSucceeded,
    LoginFailed,
}

impl Activity {
    pub fn as_str(self) -> &'static str {
        match self {
            Activity::Created => "Created",
            Activity::Updated => "Updated",
            Activity::Patched => "Patched",
            Activity::Deleted => "Deleted",
            Activity::NoteAdded => "NoteAdded",
            Activity::SecretAdded => "SecretAdded",
            Activity::SecretDeleted => "SecretDeleted",
            Activity::Unlocked => "Unlocked",
            Activity::Locked => "Locked",
            Activity::DeviceCodeCreated => "DeviceCodeCreated",
            Activity::Authorized => "Authorized",
            Activity::LoginSucceeded => "LoginSucceeded",
            Activity::LoginFailed => "LoginFailed",
        }
    }

    /// `Warning` for deletions, failed logins and lockouts; `Info` otherwise.
    pub fn severity(self) -> &'static str {
        match self {
            Activity::Deleted | Activity::SecretDeleted | Activity::LoginFailed | Activity::Locked => "Warning",
            _ => "Info",
        }
    }
}

/// One audit entry about to be written.
pub struct AuditEntry<'a> {
    pub rs: Uuid,
    pub category: &'static str,
    pub activity: Activity,
    pub target: Option<String>,
    pub actor: &'a Actor,
    pub client: &'a ClientInfo,
    /// `Some(reason)` for a failed outcome.
    pub failure: Option<String>,
}

impl AuditEntry<'_> {
    pub fn to_row(&self, now: Timestamp) -> AuditRow {
        let id = Uuid::new_v4();
        let (atype, display, user, email, cp, ap) = match self.actor {
            Actor::User {
                email, display_name, ..
            } => (
                "User",
                Some(display_name.clone()),
                Some(email.clone()),
                Some(email.clone()),
                None,
                None,
            ),
            Actor::Role {
                credential_provider_id,
                access_policy_id,
                role_name,
            } => (
                "Role",
                Some(role_name.clone()),
                Some(format!("credential-provider:{credential_provider_id}")),
                None,
                Some(credential_provider_id.to_string()),
                access_policy_id.map(|a| a.to_string()),
            ),
            Actor::System => (
                "System",
                Some("system".to_string()),
                Some("system".to_string()),
                None,
                None,
                None,
            ),
            Actor::Anonymous { email } => ("User", None, email.clone(), email.clone(), None, None),
        };
        let (browser, os) = self
            .client
            .user_agent
            .as_deref()
            .map(parse_user_agent)
            .unwrap_or((None, None));
        let result = if self.failure.is_some() { "Failure" } else { "Success" };
        let body = json!({
            "externalId": id,
            "resourceSetId": self.rs,
            "category": self.category,
            "actor": {
                "type": atype,
                "displayName": display,
                "userName": user,
                "email": email,
                "credentialProviderId": cp,
                "accessPolicyId": ap,
            },
            "activity": self.activity.as_str(),
            "target": self.target,
            "client": {
                "ipAddress": self.client.ip,
                "userAgent": {"browser": browser, "operatingSystem": os, "raw": self.client.user_agent},
            },
            "outcome": {"reason": self.failure, "result": result},
            "trustProvider": null,
            "severity": self.activity.severity(),
            "createdAt": now,
        });
        let search = [
            Some(self.activity.as_str()),
            self.target.as_deref(),
            Some(self.category),
            email.as_deref(),
            display.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n")
        .to_lowercase();
        AuditRow {
            id: id.to_string(),
            rs: self.rs.to_string(),
            created_at: now.millis(),
            category: self.category.to_string(),
            activity: self.activity.as_str().to_string(),
            target: self.target.clone(),
            severity: self.activity.severity().to_string(),
            actor_type: atype.to_string(),
            actor_email: email,
            actor_name: display,
            result: result.to_string(),
            ip: self.client.ip.clone(),
            search,
            body: body.to_string(),
        }
    }
}

/// The key tree of an audit entry's body (AuditLogDTO, §3.23), for `order` on any scalar field.
pub const AUDIT_LOG: crate::events::shape::Shape = {
    use crate::events::shape::Shape::{Leaf, Obj, Opaque};
    Obj(&[
        ("externalId", Leaf),
        ("resourceSetId", Leaf),
        ("category", Leaf),
        (
            "actor",
            Obj(&[
                ("type", Leaf),
                ("displayName", Leaf),
                ("userName", Leaf),
                ("email", Leaf),
                ("credentialProviderId", Leaf),
                ("accessPolicyId", Leaf),
            ]),
        ),
        ("activity", Leaf),
        ("target", Leaf),
        (
            "client",
            Obj(&[
                ("ipAddress", Leaf),
                (
                    "userAgent",
                    Obj(&[("browser", Leaf), ("operatingSystem", Leaf), ("raw", Leaf)]),
                ),
            ]),
        ),
        ("outcome", Obj(&[("reason", Leaf), ("result", Leaf)])),
        ("trustProvider", Opaque),
        ("severity", Leaf),
        ("createdAt", Leaf),
    ])
};

/// Best-effort browser and operating-system names from a User-Agent header.
pub fn parse_user_agent(ua: &str) -> (Option<String>, Option<String>) {
    let browser = [
        ("Edg/", "Edge"),
        ("OPR/", "Opera"),
        ("Firefox/", "Firefox"),
        ("Chrome/", "Chrome"),
        ("Safari/", "Safari"),
        ("curl/", "curl"),
        ("python-requests/", "python-requests"),
        ("Go-http-client/", "Go-http-client"),
        ("reqwest", "reqwest"),
    ]
    .iter()
    .find(|(needle, _)| ua.contains(needle))
    .map(|(_, name)| name.to_string());
    let os = [
        ("Windows", "Windows"),
        ("iPhone", "iOS"),
        ("iPad", "iOS"),
        ("Android", "Android"),
        ("Mac OS X", "macOS"),
        ("Macintosh", "macOS"),
        ("CrOS", "ChromeOS"),
        ("Linux", "Linux"),
    ]
    .iter()
    .find(|(needle, _)| ua.contains(needle))
    .map(|(_, name)| name.to_string());
    (browser, os)
}

#[cfg(test)]
mod tests {
    #[test]
    fn user_agents() {
        let (b, o) = super::parse_user_agent(
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
        );
        assert_eq!((b.as_deref(), o.as_deref()), (Some("Chrome"), Some("Linux")));
        assert_eq!(super::parse_user_agent("curl/8.4.0"), (Some("curl".into()), None));
    }
}
