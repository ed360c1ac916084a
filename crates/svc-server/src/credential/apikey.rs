//! `apikey`: a stored API key (contract §3.5.2), issued as `ApiKey` with no expiry.

use serde_json::{Map, Value};
use svc_api::edge::{CredentialType, EdgeCredentials};
use svc_api::{FieldError, Obj};

use super::types::{self, Mode, TypeSpec};
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

fn parse(o: &mut Obj, _mode: Mode) -> Result<Map<String, Value>, FieldError> {
    // An empty value keeps the stored key (a write-only field, §1.9).
    if let Some(k) = o.peek_str("apiKey").filter(|k| !k.is_empty()) {
        svc_api::reader::check_len(&o.path("apiKey"), k, 1, 8192)?;
    }
    Ok(Map::new())
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
    parse,
    check: types::no_check,
    complete: types::no_complete,
    present: types::no_present,
    compile,
};
