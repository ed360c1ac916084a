//! `apikey`: a stored API key (contract §3.5.2), issued as `ApiKey` with no expiry.

use svc_api::FieldError;
use svc_api::edge::{CredentialType, EdgeCredentials};
use svc_api::mgmt::ApiKeyFields;

use super::types::{self, TypeSpec};
use super::{Backend, Issued};
use crate::domain::Secret;
use crate::domain::credential::CredentialProvider;

pub struct ApiKey {
    key: Secret<String>,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

impl ApiKey {
    pub fn issue(&self) -> Issued {
        Issued::Credential {
            credential_type: CredentialType::ApiKey,
            data: EdgeCredentials(vec![("apiKey", Some(self.key.expose().clone()))]),
            expires_at: None,
        }
    }
}

pub fn check_fields(f: &mut ApiKeyFields) -> Result<(), FieldError> {
    // An empty value keeps the stored key (a write-only field, §1.9).
    if let Some(k) = f.api_key.as_deref().filter(|k| !k.is_empty()) {
        svc_api::reader::check_len("apiKey", k, 1, 8192)?;
    }
    Ok(())
}

fn compile(p: &CredentialProvider) -> Backend {
    match p.secrets.get("apiKey") {
        Some(k) => Backend::ApiKey(ApiKey {
            key: Secret::new(k.to_string()),
        }),
        None => Backend::Broken("apiKey missing".into()),
    }
}

pub const SPEC: TypeSpec = TypeSpec {
    name: "apikey",
    credential_type: |_| CredentialType::ApiKey,
    secret_fields: &["apiKey"],
    secret_destination: &[],
    required_secrets: &["apiKey"],
    ro_fields: &[],
    lifetime: None,
    check: types::no_check,
    complete: types::no_complete,
    compile,
};
