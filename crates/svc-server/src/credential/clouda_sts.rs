//! `cloudA-sts-oidc` (contract §3.5.2, §5.3): `AssumeRoleWithWebIdentity` with a JWT this service
//! signs (RS256, `aud = SVC_CLOUDA_STS_AUDIENCE`, `sub` = the client workload's id), unsigned, to
//! `SVC_CLOUDA_STS_FEDERATION_URL`; the XML answer's credentials become `CloudAStsFederation`.

use quick_xml::Reader;
use quick_xml::events::Event;
use serde_json::{Map, Value};
use svc_api::edge::{CredentialType, EdgeCredentials};
use svc_api::{FieldError, Obj, Timestamp};

use super::types::{self, Mode, TypeSpec, cfg_str, put};
use super::upstream_call::post_form_accepting;
use super::{Backend, IssueCx, IssueError, Issued, Prepared, assertion};
use crate::domain::credential::CredentialProvider;
use crate::upstream::Configured;

#[derive(Debug)]
pub struct CloudASts {
    role_arn: String,
    lifetime: i64,
}

/// Text of the elements at the given paths (root-relative, `/`-joined), from a strict parse that
/// requires the named root element. Entity and character references are resolved.
pub fn xml_fields(body: &[u8], root: &str, wanted: &[&str]) -> Result<Vec<Option<String>>, String> {
    let text = std::str::from_utf8(body).map_err(|_| "XML is not UTF-8".to_string())?;
    let mut r = Reader::from_str(text);
    let mut path: Vec<String> = Vec::new();
    let mut out: Vec<Option<String>> = vec![None; wanted.len()];
    let mut seen_root = false;
    let slot = |path: &[String]| -> Option<usize> {
        let joined = path.iter().skip(1).cloned().collect::<Vec<_>>().join("/");
        wanted.iter().position(|w| *w == joined)
    };
    loop {
        match r.read_event().map_err(|e| format!("malformed XML: {e}"))? {
            Event::Start(e) => {
                let name = e.local_name().as_ref().to_string();
                if path.is_empty() {
                    if name != root {
                        return Err(format!("unexpected root element {name}"));
                    }
                    seen_root = true;
                }
                path.push(name);
            }
            Event::Empty(e) if path.is_empty() => {
                let name = e.local_name().as_ref().to_string();
                return Err(format!("unexpected root element {name}"));
            }
            Event::End(_) => {
                path.pop();
            }
            Event::Text(t) => {
                if let Some(i) = slot(&path) {
                    out[i].get_or_insert_with(String::new).push_str(t.into_inner().trim());
                }
            }
            Event::GeneralRef(g) => {
                if let Some(i) = slot(&path) {
                    let c = if g.is_char_ref() {
                        g.resolve_char_ref().ok().flatten().ok_or("bad character reference")?
                    } else {
                        match &*g {
                            "amp" => '&',
                            "lt" => '<',
                            "gt" => '>',
                            "quot" => '"',
                            "apos" => '\'',
                            other => return Err(format!("unknown entity &{other};")),
                        }
                    };
                    out[i].get_or_insert_with(String::new).push(c);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !seen_root {
        return Err(format!("no {root} element"));
    }
    if !path.is_empty() {
        return Err("unclosed element".into());
    }
    Ok(out)
}

impl CloudASts {
    pub async fn issue(&self, prepared: &Prepared, cx: &IssueCx<'_>) -> Result<Issued, IssueError> {
        let cw = prepared.get("clientWorkload").unwrap_or_default();
        let jwt = assertion::federation(cx, cw, &cx.svc.cfg.clouda_sts_audience);
        let session = format!("svc-{cw}");
        let duration = self.lifetime.to_string();
        let form = [
            ("Action", "AssumeRoleWithWebIdentity"),
            ("Version", "2011-06-15"),
            ("RoleArn", self.role_arn.as_str()),
            ("RoleSessionName", session.as_str()),
            ("WebIdentityToken", jwt.as_str()),
            ("DurationSeconds", duration.as_str()),
        ];
        // The STS query API answers JSON when asked for it; the contract reads its XML (§5.3).
        let f = post_form_accepting(
            &cx.svc,
            &Configured(&cx.svc.cfg.clouda_sts_federation_url),
            &form,
            None,
            "text/xml",
        )
        .await?;
        if !(200..300).contains(&f.status) {
            return Err(IssueError::upstream(format!("STS answered {}", f.refusal()), f.code()));
        }
        let fields = xml_fields(
            &f.body,
            "AssumeRoleWithWebIdentityResponse",
            &[
                "AssumeRoleWithWebIdentityResult/Credentials/AccessKeyId",
                "AssumeRoleWithWebIdentityResult/Credentials/SecretAccessKey",
                "AssumeRoleWithWebIdentityResult/Credentials/SessionToken",
                "AssumeRoleWithWebIdentityResult/Credentials/Expiration",
            ],
        )
        .map_err(|e| IssueError::upstream(format!("STS answer: {e}"), None))?;
        let [Some(key), Some(secret), session_token, Some(expiration)] =
            <[Option<String>; 4]>::try_from(fields).map_err(|_| IssueError::upstream("STS answer incomplete", None))?
        else {
            return Err(IssueError::upstream("STS answer lacks credentials", None));
        };
        let expires_at = Timestamp::parse(&expiration)
            .ok_or_else(|| IssueError::upstream("STS answer has an unreadable Expiration", None))?;
        Ok(Issued::Credential {
            credential_type: CredentialType::CloudAStsFederation,
            data: EdgeCredentials(vec![
                ("cloudAAccessKeyId", Some(key)),
                ("cloudASecretAccessKey", Some(secret)),
                ("cloudASessionToken", session_token),
            ]),
            expires_at: Some(expires_at),
        })
    }
}

fn valid_role_arn(s: &str) -> bool {
    let parts: Vec<&str> = s.splitn(6, ':').collect();
    matches!(parts.as_slice(), ["arn", partition, "iam", "", account, res]
        if !partition.is_empty() && account.len() == 12 && account.chars().all(|c| c.is_ascii_digit()) && res.strip_prefix("role/").is_some_and(|r| !r.is_empty()))
}

fn parse(o: &mut Obj, mode: Mode) -> Result<Map<String, Value>, FieldError> {
    let mut m = Map::new();
    let arn = if mode == Mode::Full {
        Some(o.req_str_len("cloudAIAMRoleArn", 1, 2048)?)
    } else {
        o.opt_str_len("cloudAIAMRoleArn", 1, 2048)?
    };
    if let Some(a) = &arn
        && !valid_role_arn(a)
    {
        return Err(FieldError::new(
            o.path("cloudAIAMRoleArn"),
            "must match ^arn:[^:]+:iam::\\d{12}:role/.+$",
        ));
    }
    put(&mut m, "cloudAIAMRoleArn", arn);
    put(&mut m, "lifetime", o.opt_i32_range("lifetime", 900, 43200)?);
    Ok(m)
}

fn compile(p: &CredentialProvider) -> Backend {
    match cfg_str(&p.config, "cloudAIAMRoleArn") {
        Some(arn) => Backend::CloudASts(CloudASts {
            role_arn: arn.to_string(),
            lifetime: types::cfg_lifetime(&p.config),
        }),
        None => Backend::Broken("cloudAIAMRoleArn missing".into()),
    }
}

pub const SPEC: TypeSpec = TypeSpec {
    name: "cloudA-sts-oidc",
    credential_type: |_| CredentialType::CloudAStsFederation,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_arns_and_xml() {
        assert!(valid_role_arn("arn:aws:iam::123456789012:role/build"));
        assert!(valid_role_arn("arn:aws-cn:iam::123456789012:role/path/x"));
        assert!(!valid_role_arn("arn:aws:iam::12345:role/x"));
        assert!(!valid_role_arn("arn:aws:iam::123456789012:user/x"));
        let xml = br#"<?xml version="1.0"?><AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIA1</AccessKeyId><SecretAccessKey>s&amp;1</SecretAccessKey><Expiration>2026-11-22T00:00:00Z</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"#;
        let f = xml_fields(
            xml,
            "AssumeRoleWithWebIdentityResponse",
            &[
                "AssumeRoleWithWebIdentityResult/Credentials/AccessKeyId",
                "AssumeRoleWithWebIdentityResult/Credentials/SecretAccessKey",
                "AssumeRoleWithWebIdentityResult/Credentials/SessionToken",
            ],
        )
        .unwrap();
        assert_eq!(f, vec![Some("ASIA1".into()), Some("s&1".into()), None]);
        assert!(xml_fields(b"<Other/>", "AssumeRoleWithWebIdentityResponse", &[]).is_err());
        assert!(xml_fields(b"<a><b></a>", "a", &[]).is_err());
    }
}
