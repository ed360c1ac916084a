//! `aiA-wif` and `aiB-wif` (contract §3.5.2, §5.3): AI-vendor workload identity federation. A
//! federation assertion signed by this service (subject: the client workload) is exchanged at the
//! vendor's token endpoint, RFC 8693 token exchange, for an access token.

use serde_json::{Map, Value};
use svc_api::edge::CredentialType;
use svc_api::{FieldError, Obj};

use super::types::{self, Mode, TypeSpec, cfg_str, field_match, prefixed, put, uuid_text};
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

fn parse_a(o: &mut Obj, mode: Mode) -> Result<Map<String, Value>, FieldError> {
    let mut m = Map::new();
    let fdrl = |s: &str| prefixed(s, "fdrl_");
    let svac = |s: &str| prefixed(s, "svac_");
    let wrk = |s: &str| prefixed(s, "wrkspc_");
    put(
        &mut m,
        "federationRuleId",
        field_match(o, mode, true, "federationRuleId", 256, fdrl, "^fdrl_.+$")?,
    );
    put(
        &mut m,
        "organizationId",
        field_match(o, mode, true, "organizationId", 36, uuid_text, "a UUID")?,
    );
    put(
        &mut m,
        "serviceAccountId",
        field_match(o, mode, true, "serviceAccountId", 256, svac, "^svac_.+$")?,
    );
    put(
        &mut m,
        "workspaceId",
        field_match(o, mode, false, "workspaceId", 256, wrk, "^wrkspc_.+$")?,
    );
    put(
        &mut m,
        "audience",
        o.opt_str_len("audience", 0, 2048)?.filter(|s| !s.is_empty()),
    );
    put(&mut m, "scope", types::field_str(o, mode, "scope", 1, 4096)?);
    put(&mut m, "lifetime", o.opt_i32_range("lifetime", 300, 43200)?);
    Ok(m)
}

fn parse_b(o: &mut Obj, mode: Mode) -> Result<Map<String, Value>, FieldError> {
    let mut m = Map::new();
    let idp = |s: &str| prefixed(s, "idp_");
    let user = |s: &str| prefixed(s, "user-");
    put(
        &mut m,
        "identityProviderId",
        field_match(o, mode, true, "identityProviderId", 256, idp, "^idp_.+$")?,
    );
    put(
        &mut m,
        "serviceAccountId",
        field_match(o, mode, true, "serviceAccountId", 256, user, "^user-.+$")?,
    );
    put(
        &mut m,
        "audience",
        o.opt_str_len("audience", 0, 2048)?.filter(|s| !s.is_empty()),
    );
    Ok(m)
}

/// An `audience` not set stays `null`: it follows the configured token URL (§3.5.2), which a
/// value shown here would pin once a GET is sent back in a PUT.
fn present_a(_: &CredentialProvider, _: &Config, out: &mut Map<String, Value>) {
    for k in ["workspaceId", "audience", "lifetime"] {
        out.entry(k).or_insert(Value::Null);
    }
}

fn present_b(_: &CredentialProvider, _: &Config, out: &mut Map<String, Value>) {
    out.entry("audience").or_insert(Value::Null);
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
    parse: parse_a,
    check: types::no_check,
    complete: types::no_complete,
    present: present_a,
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
    parse: parse_b,
    check: types::no_check,
    complete: types::no_complete,
    present: present_b,
    compile: |p| compile(p, Vendor::B),
};
