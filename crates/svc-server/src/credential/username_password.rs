//! `username-password`: a stored username and password (contract §3.5.2), issued as
//! `UsernamePassword` with no expiry.

use serde_json::Value;
use svc_api::edge::{CredentialType, EdgeCredentials};

use super::types::{self, TypeSpec};
use super::{Backend, Issued};
use crate::domain::Secret;
use crate::domain::credential::CredentialProvider;

pub struct UsernamePassword {
    username: String,
    password: Secret<String>,
}

impl std::fmt::Debug for UsernamePassword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UsernamePassword({}, ***)", self.username)
    }
}

impl UsernamePassword {
    pub fn issue(&self) -> Issued {
        Issued::Credential {
            credential_type: CredentialType::UsernamePassword,
            data: EdgeCredentials(vec![
                ("username", Some(self.username.clone())),
                ("password", Some(self.password.expose().clone())),
            ]),
            expires_at: None,
        }
    }
}

fn compile(p: &CredentialProvider) -> Backend {
    match (
        p.config.get("username").and_then(Value::as_str),
        p.secrets.get("password"),
    ) {
        (Some(u), Some(pw)) => Backend::UsernamePassword(UsernamePassword {
            username: u.to_string(),
            password: Secret::new(pw.to_string()),
        }),
        _ => Backend::Broken("username or password missing".into()),
    }
}

pub const SPEC: TypeSpec = TypeSpec {
    name: "username-password",
    credential_type: |_| CredentialType::UsernamePassword,
    secret_fields: &["password"],
    secret_destination: &[],
    required_secrets: &["password"],
    ro_fields: &[],
    lifetime: None,
    check: types::no_check,
    complete: types::no_complete,
    compile,
};
