//! `aiA-wif` and `aiB-wif` (contract §3.5.2, §5.3): AI-vendor workload identity federation. A
//! federation assertion signed by this service (subject: the client workload) is exchanged at the
//! vendor's token endpoint, RFC 8693 token exchange, for an access token.

use serde_json::Value;
use svc_api::FieldError;
use svc_api::edge::CredentialType;
use svc_api::mgmt::{AiAWifFields, AiBWifFields};

use super::types::{self, TypeSpec, cfg_str, matching, non_empty, prefixed, uuid_text};
use super::upstream_call::{oauth_credential, post_form};
use super::{Backend, IssueCx, IssueError, Issued, Prepared, assertion};
use crate::config::Config;
use crate::domain::credential::CredentialProvider;
use crate::upstream::Configured;

pub const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
pub const JWT_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:jwt";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    A,
    B,
}

/// One compiled AI-vendor provider: the form fields beyond the assertion, and the audience.
#[derive(Debug)]
pub struct AiWif {
    vendor: Vendor,
    audience: Option<String>,
    fields: Vec<(&'static str, String)>,
}

impl AiWif {
    fn token_url<'a>(&self, cfg: &'a Config) -> &'a str {
        match self.vendor {
            Vendor::A => &cfg.aia_token_url,
            Vendor::B => &cfg.aib_token_url,
        }
    }

    pub async fn issue(&self, prepared: &Prepared, cx: &IssueCx<'_>) -> Result<Issued, IssueError> {
        let url = self.token_url(cx.svc.cfg);
        let aud = self.audience.as_deref().unwrap_or(url);
        let jwt = assertion::federation(cx, prepared.get("clientWorkload").unwrap_or_default(), aud);
        let mut form: Vec<(&str, &str)> = vec![
            ("grant_type", TOKEN_EXCHANGE),
            ("subject_token", &jwt),
            ("subject_token_type", JWT_TOKEN_TYPE),
        ];
        form.extend(self.fields.iter().map(|(k, v)| (*k, v.as_str())));
        let f = post_form(&cx.svc, &Configured(url), &form, None).await?;
        oauth_credential("token endpoint", &f)
    }
}

pub fn check_fields_a(f: &mut AiAWifFields) -> Result<(), FieldError> {
    matching(
        "federationRuleId",
        &f.federation_rule_id,
        |s| prefixed(s, "fdrl_"),
        "^fdrl_.+$",
    )?;
    matching("organizationId", &f.organization_id, uuid_text, "a UUID")?;
    matching(
        "serviceAccountId",
        &f.service_account_id,
        |s| prefixed(s, "svac_"),
        "^svac_.+$",
    )?;
    non_empty(&mut f.workspace_id, false);
    if let Some(w) = &f.workspace_id {
        matching("workspaceId", w, |s| prefixed(s, "wrkspc_"), "^wrkspc_.+$")?;
    }
    // Not set, `audience` stays `null`: it follows the configured token URL (§3.5.2), which a value
    // shown here would pin once a GET is sent back in a PUT.
    non_empty(&mut f.audience, false);
    Ok(())
}

pub fn check_fields_b(f: &mut AiBWifFields) -> Result<(), FieldError> {
    matching(
        "identityProviderId",
        &f.identity_provider_id,
        |s| prefixed(s, "idp_"),
        "^idp_.+$",
    )?;
    matching(
        "serviceAccountId",
        &f.service_account_id,
        |s| prefixed(s, "user-"),
        "^user-.+$",
    )?;
    non_empty(&mut f.audience, false);
    Ok(())
}

fn compile(p: &CredentialProvider, vendor: Vendor) -> Backend {
    let c = &p.config;
    let s = |k: &str| cfg_str(c, k).map(str::to_string);
    let wire: &[(&str, &'static str)] = match vendor {
        Vendor::A => &[
            ("federationRuleId", "federation_rule_id"),
            ("organizationId", "organization_id"),
            ("serviceAccountId", "service_account_id"),
            ("workspaceId", "workspace_id"),
            ("scope", "scope"),
        ],
        Vendor::B => &[
            ("identityProviderId", "identity_provider_id"),
            ("serviceAccountId", "service_account_id"),
        ],
    };
    let mut fields: Vec<(&'static str, String)> = wire.iter().filter_map(|(k, w)| s(k).map(|v| (*w, v))).collect();
    if let Some(l) = c.get("lifetime").and_then(Value::as_i64) {
        fields.push(("requested_token_lifetime", l.to_string()));
    }
    Backend::AiWif(AiWif {
        vendor,
        audience: s("audience"),
        fields,
    })
}

pub const AIA_SPEC: TypeSpec = TypeSpec {
    name: "aiA-wif",
    credential_type: |_| CredentialType::OAuthToken,
    secret_fields: &[],
    secret_destination: &[],
    required_secrets: &[],
    ro_fields: &[],
    lifetime: None,
    check: types::no_check,
    complete: types::no_complete,
    compile: |p| compile(p, Vendor::A),
};

pub const AIB_SPEC: TypeSpec = TypeSpec {
    name: "aiB-wif",
    credential_type: |_| CredentialType::OAuthToken,
    secret_fields: &[],
    secret_destination: &[],
    required_secrets: &[],
    ro_fields: &[],
    lifetime: None,
    check: types::no_check,
    complete: types::no_complete,
    compile: |p| compile(p, Vendor::B),
};
