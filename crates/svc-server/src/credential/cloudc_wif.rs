//! `cloudC-identity-federation` (contract §3.5.2, §5.3): workload identity federation into cloudC.
//! (1) RFC 8693 token exchange of a federation assertion at the STS for a federated token, then
//! (2) `generateAccessToken` for the configured service account with that token as bearer. The
//! exchange itself ([`access_token`]) is shared with objectStorageC log streams.

use serde_json::{Map, Value, json};
use svc_api::edge::{CredentialType, EdgeCredentials};
use svc_api::{FieldError, Obj, Timestamp};

use super::ai_wif::{JWT_TOKEN_TYPE, TOKEN_EXCHANGE};
use super::types::{self, Mode, TypeSpec, cfg_str, email, field_match, put};
use super::upstream_call::{json_body, post_json};
use super::{Backend, IssueCx, IssueError, Issued, Prepared, Services, assertion};
use crate::domain::credential::CredentialProvider;
use crate::upstream::Configured;

const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// What of a service-account e-mail is percent-encoded in a URL path: everything but RFC 3986's
/// unreserved characters, `@` and `+`.
const EMAIL_IN_PATH: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'@')
    .remove(b'+');

#[derive(Debug)]
pub struct CloudCWif {
    audience: String,
    service_account: String,
    lifetime: i64,
}

impl CloudCWif {
    pub async fn issue(&self, prepared: &Prepared, cx: &IssueCx<'_>) -> Result<Issued, IssueError> {
        let jwt = assertion::federation(cx, prepared.get("clientWorkload").unwrap_or_default(), &self.audience);
        let (token, expires_at) =
            access_token(&cx.svc, &jwt, &self.audience, &self.service_account, self.lifetime).await?;
        Ok(Issued::Credential {
            credential_type: CredentialType::CloudCWorkloadIdentityFederation,
            data: EdgeCredentials(vec![("token", Some(token))]),
            expires_at: Some(expires_at),
        })
    }
}

/// The cloudC exchange of §5.3, shared by this credential type and objectStorageC log streams
/// (§5.4): (1) the STS token exchange of `assertion` for a federated token, (2)
/// `generateAccessToken` for `service_account` with a lifetime of `lifetime` seconds. Returns the
/// access token and its `expireTime`. The e-mail is percent-encoded into the path (a no-op for
/// the credential type's validated e-mails; a log stream's is only length-checked, §3.14).
pub async fn access_token(
    svc: &Services<'_>,
    assertion: &str,
    audience: &str,
    service_account: &str,
    lifetime: i64,
) -> Result<(String, Timestamp), IssueError> {
    let cfg = &svc.cfg;
    let exchange = json!({
        "grantType": TOKEN_EXCHANGE,
        "audience": audience,
        "scope": cfg.cloudc_scope,
        "requestedTokenType": ACCESS_TOKEN_TYPE,
        "subjectToken": assertion,
        "subjectTokenType": JWT_TOKEN_TYPE,
    });
    let f = post_json(svc, &Configured(&cfg.cloudc_sts_url), &exchange, None, &[]).await?;
    let v = json_body("STS", &f)?;
    let federated = v
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| IssueError::upstream("STS answer has no access_token", None))?;
    let url = format!(
        "{}/v1/projects/-/serviceAccounts/{}:generateAccessToken",
        cfg.cloudc_iamcredentials_url.trim_end_matches('/'),
        percent_encoding::utf8_percent_encode(service_account, EMAIL_IN_PATH)
    );
    let body = json!({"scope": [cfg.cloudc_scope], "lifetime": format!("{lifetime}s")});
    let bearer = format!("Bearer {federated}");
    let f = post_json(svc, &Configured(&url), &body, Some(&bearer), &[]).await?;
    let v = json_body("generateAccessToken", &f)?;
    let token = v
        .get("accessToken")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| IssueError::upstream("generateAccessToken answer has no accessToken", None))?;
    let expires_at = v
        .get("expireTime")
        .and_then(Value::as_str)
        .and_then(Timestamp::parse)
        .ok_or_else(|| IssueError::upstream("generateAccessToken answer has no readable expireTime", None))?;
    Ok((token.to_string(), expires_at))
}

fn parse(o: &mut Obj, mode: Mode) -> Result<Map<String, Value>, FieldError> {
    let mut m = Map::new();
    put(&mut m, "audience", types::field_str(o, mode, "audience", 1, 2048)?);
    put(
        &mut m,
        "serviceAccountEmail",
        field_match(o, mode, true, "serviceAccountEmail", 320, email, "an e-mail address")?,
    );
    put(&mut m, "lifetime", o.opt_i32_range("lifetime", 1, 43200)?);
    Ok(m)
}

fn compile(p: &CredentialProvider) -> Backend {
    match (
        cfg_str(&p.config, "audience"),
        cfg_str(&p.config, "serviceAccountEmail"),
    ) {
        (Some(a), Some(e)) => Backend::CloudCWif(CloudCWif {
            audience: a.to_string(),
            service_account: e.to_string(),
            lifetime: types::cfg_lifetime(&p.config),
        }),
        _ => Backend::Broken("audience or serviceAccountEmail missing".into()),
    }
}

pub const SPEC: TypeSpec = TypeSpec {
    name: "cloudC-identity-federation",
    credential_type: |_| CredentialType::CloudCWorkloadIdentityFederation,
    secret_fields: &[],
    secret_destination: &[],
    required_secrets: &[],
    ro_fields: &[],
    lifetime: None,
    parse,
    check: types::no_check,
    complete: types::no_complete,
    present: types::present_lifetime,
    compile,
};
