//! Evidence collectors, one per trust-provider kind (api-contract §3.1, §4.2): each reads the
//! platform's real endpoint or variable by default (docs/edge-client.md lists them with their
//! sources), every address overridable for tests.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine;
use serde_json::Value;
use svc_api::edge::{
    AttestedDocument, ClientWorkloadDetails, CloudA, CloudB, CloudC, IdentityToken, Orchestrator, StsGetCallerIdentity,
};

use crate::config::Config;
use crate::error::Error;
use crate::sigv4;

/// cloudA's instance metadata service (IMDS), link-local.
pub const CLOUDA_IMDS_URL: &str = "http://169.254.169.254";
/// cloudB's instance metadata service, link-local.
pub const CLOUDB_IMDS_URL: &str = "http://169.254.169.254";
/// cloudC's metadata server.
pub const CLOUDC_METADATA_URL: &str = "http://metadata.google.internal";
/// The orchestrator's projected service-account token.
pub const ORCHESTRATOR_TOKEN_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";
/// cloudA's regional STS endpoint.
pub const CLOUDA_STS_URL_TEMPLATE: &str = "https://sts.{region}.amazonaws.com/";
/// cloudB's attested-document API version.
pub const CLOUDB_API_VERSION: &str = "2020-09-01";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Oidc,
    CiA,
    CiB,
    CiC,
    Orchestrator,
    CloudAMetadata,
    CloudARole,
    CloudBMetadata,
    CloudCIdToken,
}

impl Kind {
    pub const ALL: [Kind; 9] = [
        Kind::Oidc,
        Kind::CiA,
        Kind::CiB,
        Kind::CiC,
        Kind::Orchestrator,
        Kind::CloudAMetadata,
        Kind::CloudARole,
        Kind::CloudBMetadata,
        Kind::CloudCIdToken,
    ];

    /// The clientId `<type>` segment (§4.2).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Oidc => "oidc_idtoken",
            Kind::CiA => "ciA_idtoken",
            Kind::CiB => "ciB_idtoken",
            Kind::CiC => "ciC_idtoken",
            Kind::Orchestrator => "orchestrator_idtoken",
            Kind::CloudAMetadata => "cloudA_metadata",
            Kind::CloudARole => "cloudA_role",
            Kind::CloudBMetadata => "cloudB_metadata",
            Kind::CloudCIdToken => "cloudC_idtoken",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Kinds whose evidence is an ID token the workload is handed (file, variable, CI API).
    pub fn is_token(self) -> bool {
        matches!(
            self,
            Kind::Oidc | Kind::CiA | Kind::CiB | Kind::CiC | Kind::Orchestrator
        )
    }
}

/// The HTTP client for platform endpoints: short timeouts, never through a proxy (metadata
/// services are link-local), no redirects.
pub fn metadata_http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("HTTP client")
}

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

fn fail(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Failure(format!("{what}: {e}"))
}

/// Collects the evidence of `cfg.evidence` into a `client` object.
pub async fn collect(cfg: &Config, http: &reqwest::Client, now_ms: i64) -> Result<ClientWorkloadDetails, Error> {
    let mut c = ClientWorkloadDetails::default();
    let tok = |t: String| {
        Some(IdentityToken {
            identity_token: Some(t),
        })
    };
    match cfg.evidence {
        Kind::Oidc => c.oidc = tok(id_token(cfg, http).await?),
        Kind::CiA => c.ci_a = tok(id_token(cfg, http).await?),
        Kind::CiB => c.ci_b = tok(id_token(cfg, http).await?),
        Kind::CiC => c.ci_c = tok(id_token(cfg, http).await?),
        Kind::Orchestrator => {
            c.orchestrator = Some(Orchestrator {
                service_account_token: Some(id_token(cfg, http).await?),
            })
        }
        Kind::CloudAMetadata => c.cloud_a = Some(clouda_metadata(cfg, http).await?),
        Kind::CloudARole => c.cloud_a = Some(clouda_role(cfg, http, now_ms).await?),
        Kind::CloudBMetadata => c.cloud_b = Some(cloudb_metadata(cfg, http, now_ms).await?),
        Kind::CloudCIdToken => c.cloud_c = Some(cloudc_token(cfg, http).await?),
    }
    Ok(c)
}

/// The ID token of a token kind: `--token-file`, else `SVC_EDGE_TOKEN`, else the platform's own
/// source (orchestrator: the projected token file; ciA: the token-request URL; ciB/ciC: the
/// job's variable).
async fn id_token(cfg: &Config, http: &reqwest::Client) -> Result<String, Error> {
    if let Some(path) = &cfg.token_file {
        return read_token_file(path, "--token-file (SVC_EDGE_TOKEN_FILE)");
    }
    if let Some(t) = cfg.var("SVC_EDGE_TOKEN") {
        return Ok(t.trim().to_string());
    }
    let from_env = |default: &str| -> Result<String, Error> {
        let name = cfg.var("SVC_EDGE_TOKEN_ENV").unwrap_or(default);
        cfg.var(name).map(|t| t.trim().to_string()).ok_or_else(|| {
            Error::Config(format!(
                "no ID token: {name} is not set (set --token-file, SVC_EDGE_TOKEN, or SVC_EDGE_TOKEN_ENV)"
            ))
        })
    };
    match cfg.evidence {
        Kind::Orchestrator => read_token_file(
            std::path::Path::new(ORCHESTRATOR_TOKEN_FILE),
            "the orchestrator's service-account token (default of --token-file)",
        ),
        Kind::CiA => cia_token(cfg, http).await,
        Kind::CiB => from_env("SVC_ID_TOKEN"),
        Kind::CiC => from_env("TFC_WORKLOAD_IDENTITY_TOKEN"),
        _ => match cfg.var("SVC_EDGE_TOKEN_ENV") {
            Some(_) => from_env(""),
            None => Err(Error::Config(
                "no ID token: set --token-file (SVC_EDGE_TOKEN_FILE) or SVC_EDGE_TOKEN".into(),
            )),
        },
    }
}

fn read_token_file(path: &std::path::Path, what: &str) -> Result<String, Error> {
    let t = std::fs::read_to_string(path)
        .map_err(|e| Error::Config(format!("{what}: cannot read {}: {e}", path.display())))?;
    let t = t.trim();
    if t.is_empty() {
        return Err(Error::Config(format!("{what}: {} is empty", path.display())));
    }
    Ok(t.to_string())
}

/// ciA: `GET $ACTIONS_ID_TOKEN_REQUEST_URL&audience=<aud>` with the request token as bearer;
/// answer `{"value": "<jwt>"}`.
async fn cia_token(cfg: &Config, http: &reqwest::Client) -> Result<String, Error> {
    let (Some(url), Some(bearer)) = (
        cfg.var("ACTIONS_ID_TOKEN_REQUEST_URL"),
        cfg.var("ACTIONS_ID_TOKEN_REQUEST_TOKEN"),
    ) else {
        return Err(Error::Config(
            "no ID token: ACTIONS_ID_TOKEN_REQUEST_URL and ACTIONS_ID_TOKEN_REQUEST_TOKEN are not set (the job needs `id-token: write`), and neither --token-file nor SVC_EDGE_TOKEN is given".into(),
        ));
    };
    let sep = if url.contains('?') { '&' } else { '?' };
    let aud: String = url::form_urlencoded::byte_serialize(cfg.audience.as_bytes()).collect();
    let r = http
        .get(format!("{url}{sep}audience={aud}"))
        .bearer_auth(bearer)
        .header("accept", "application/json")
        .send()
        .await
        .map_err(|e| fail("ciA token request", e))?;
    if !r.status().is_success() {
        return Err(Error::Failure(format!(
            "ciA token request: status {}",
            r.status().as_u16()
        )));
    }
    let v: Value = r
        .json()
        .await
        .map_err(|e| fail("ciA token request: malformed answer", e))?;
    v["value"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .ok_or_else(|| Error::Failure("ciA token request: answer has no \"value\"".into()))
}

fn imds_base(cfg: &Config, var: &str, default: &str) -> String {
    cfg.var(var).unwrap_or(default).trim_end_matches('/').to_string()
}

/// IMDSv2 session token: `PUT /latest/api/token` with a TTL header.
async fn imds_session(http: &reqwest::Client, base: &str) -> Result<String, Error> {
    let r = http
        .put(format!("{base}/latest/api/token"))
        .header("X-aws-ec2-metadata-token-ttl-seconds", "21600")
        .send()
        .await
        .map_err(|e| fail("cloudA instance metadata (IMDSv2 token)", e))?;
    if !r.status().is_success() {
        return Err(Error::Failure(format!(
            "cloudA instance metadata (IMDSv2 token): status {}",
            r.status().as_u16()
        )));
    }
    r.text().await.map_err(|e| fail("cloudA instance metadata", e))
}

async fn imds_get(http: &reqwest::Client, base: &str, session: &str, path: &str) -> Result<Vec<u8>, Error> {
    let r = http
        .get(format!("{base}{path}"))
        .header("X-aws-ec2-metadata-token", session)
        .send()
        .await
        .map_err(|e| fail(&format!("cloudA instance metadata {path}"), e))?;
    if !r.status().is_success() {
        return Err(Error::Failure(format!(
            "cloudA instance metadata {path}: status {}",
            r.status().as_u16()
        )));
    }
    Ok(r.bytes()
        .await
        .map_err(|e| fail("cloudA instance metadata", e))?
        .to_vec())
}

/// cloudA instance identity document and its PKCS#7 signature (`/rsa2048`, SHA-256).
async fn clouda_metadata(cfg: &Config, http: &reqwest::Client) -> Result<CloudA, Error> {
    let base = imds_base(cfg, "SVC_EDGE_CLOUDA_IMDS_URL", CLOUDA_IMDS_URL);
    let s = imds_session(http, &base).await?;
    let doc = imds_get(http, &base, &s, "/latest/dynamic/instance-identity/document").await?;
    let sig = imds_get(http, &base, &s, "/latest/dynamic/instance-identity/rsa2048").await?;
    let sig: String = String::from_utf8_lossy(&sig)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    Ok(CloudA {
        instance_identity_document: Some(b64(&doc)),
        instance_identity_document_signature: Some(sig),
        ..Default::default()
    })
}

/// The standard cloudA credential chain, reduced to what a workload host has: the environment
/// keys, then the instance role from IMDS.
async fn clouda_credentials(cfg: &Config, http: &reqwest::Client, base: &str) -> Result<sigv4::Credentials, Error> {
    if let (Some(id), Some(secret)) = (cfg.var("AWS_ACCESS_KEY_ID"), cfg.var("AWS_SECRET_ACCESS_KEY")) {
        return Ok(sigv4::Credentials {
            access_key_id: id.into(),
            secret_access_key: secret.into(),
            session_token: cfg.var("AWS_SESSION_TOKEN").map(str::to_string),
        });
    }
    let s = imds_session(http, base).await?;
    let list = imds_get(http, base, &s, "/latest/meta-data/iam/security-credentials/").await?;
    let role = String::from_utf8_lossy(&list)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string);
    let Some(role) = role else {
        return Err(Error::Failure(
            "cloudA credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are not set and the instance has no role"
                .into(),
        ));
    };
    let body = imds_get(
        http,
        base,
        &s,
        &format!("/latest/meta-data/iam/security-credentials/{role}"),
    )
    .await?;
    let v: Value = serde_json::from_slice(&body)
        .map_err(|_| Error::Failure("cloudA instance role credentials: malformed answer".into()))?;
    let field = |k: &str| v[k].as_str().filter(|s| !s.is_empty()).map(str::to_string);
    match (field("AccessKeyId"), field("SecretAccessKey")) {
        (Some(id), Some(secret)) => Ok(sigv4::Credentials {
            access_key_id: id,
            secret_access_key: secret,
            session_token: field("Token"),
        }),
        _ => Err(Error::Failure(
            "cloudA instance role credentials: answer lacks AccessKeyId/SecretAccessKey".into(),
        )),
    }
}

/// `SVC_EDGE_CLOUDA_REGION`, `AWS_REGION`, `AWS_DEFAULT_REGION`, else IMDS placement.
async fn clouda_region(cfg: &Config, http: &reqwest::Client, base: &str) -> Result<String, Error> {
    for v in ["SVC_EDGE_CLOUDA_REGION", "AWS_REGION", "AWS_DEFAULT_REGION"] {
        if let Some(r) = cfg.var(v) {
            return Ok(r.trim().to_string());
        }
    }
    let s = imds_session(http, base).await?;
    let r = imds_get(http, base, &s, "/latest/meta-data/placement/region").await?;
    let r = String::from_utf8_lossy(&r).trim().to_string();
    if r.is_empty() {
        return Err(Error::Config(
            "cloudA region unknown: set SVC_EDGE_CLOUDA_REGION or AWS_REGION".into(),
        ));
    }
    Ok(r)
}

/// The STS URL the request is signed for.
pub fn clouda_sts_url(cfg: &Config, region: &str) -> Result<url::Url, Error> {
    let (raw, name) = if let Some(u) = cfg.var("SVC_EDGE_CLOUDA_STS_URL") {
        (u.to_string(), "SVC_EDGE_CLOUDA_STS_URL")
    } else if let Some(u) = cfg.var("AWS_ENDPOINT_URL_STS") {
        (u.to_string(), "AWS_ENDPOINT_URL_STS")
    } else if let Some(u) = cfg.var("AWS_ENDPOINT_URL") {
        (u.to_string(), "AWS_ENDPOINT_URL")
    } else {
        (
            CLOUDA_STS_URL_TEMPLATE.replace("{region}", region),
            "the regional STS endpoint",
        )
    };
    let u = url::Url::parse(raw.trim()).map_err(|e| Error::Config(format!("{name}: not a URL: {e}")))?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() {
        return Err(Error::Config(format!("{name}: must be an http(s) URL")));
    }
    Ok(u)
}

/// cloudA role: a SigV4-signed `GetCallerIdentity` the server forwards to STS.
async fn clouda_role(cfg: &Config, http: &reqwest::Client, now_ms: i64) -> Result<CloudA, Error> {
    let base = imds_base(cfg, "SVC_EDGE_CLOUDA_IMDS_URL", CLOUDA_IMDS_URL);
    let creds = clouda_credentials(cfg, http, &base).await?;
    let region = clouda_region(cfg, http, &base).await?;
    let url = clouda_sts_url(cfg, &region)?;
    let mut headers = vec![("Content-Type", sigv4::FORM_CONTENT_TYPE)];
    let server_id = cfg.var("SVC_EDGE_CLOUDA_SERVER_ID");
    if let Some(id) = server_id {
        headers.push(("X-Svc-Server-Id", id));
    }
    let signed = sigv4::sign(
        "POST",
        &url,
        &headers,
        sigv4::GET_CALLER_IDENTITY.as_bytes(),
        "sts",
        &region,
        &creds,
        &sigv4::amz_date(now_ms),
    );
    let headers: BTreeMap<String, Option<String>> = signed.into_iter().map(|(k, v)| (k, Some(v))).collect();
    Ok(CloudA {
        sts_get_caller_identity: Some(StsGetCallerIdentity {
            headers: Some(headers),
            region: Some(region),
        }),
        ..Default::default()
    })
}

/// cloudB attested document with a fresh nonce (decimal Unix seconds, §4.5).
async fn cloudb_metadata(cfg: &Config, http: &reqwest::Client, now_ms: i64) -> Result<CloudB, Error> {
    let base = imds_base(cfg, "SVC_EDGE_CLOUDB_IMDS_URL", CLOUDB_IMDS_URL);
    let nonce = now_ms.div_euclid(1000).to_string();
    let r = http
        .get(format!(
            "{base}/metadata/attested/document?api-version={CLOUDB_API_VERSION}&nonce={nonce}"
        ))
        .header("Metadata", "true")
        .send()
        .await
        .map_err(|e| fail("cloudB instance metadata", e))?;
    if !r.status().is_success() {
        return Err(Error::Failure(format!(
            "cloudB instance metadata: status {}",
            r.status().as_u16()
        )));
    }
    let v: Value = r
        .json()
        .await
        .map_err(|e| fail("cloudB instance metadata: malformed answer", e))?;
    let signature = v["signature"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Error::Failure("cloudB instance metadata: answer has no signature".into()))?;
    Ok(CloudB {
        attested_document: Some(AttestedDocument {
            encoding: Some(v["encoding"].as_str().unwrap_or("pkcs7").to_string()),
            signature: Some(signature.chars().filter(|c| !c.is_whitespace()).collect()),
            nonce: Some(nonce),
        }),
    })
}

/// cloudC identity token for the audience, `format=full`.
async fn cloudc_token(cfg: &Config, http: &reqwest::Client) -> Result<CloudC, Error> {
    let base = match cfg.var("SVC_EDGE_CLOUDC_METADATA_URL") {
        Some(u) => u.trim_end_matches('/').to_string(),
        None => match cfg.var("GCE_METADATA_HOST") {
            Some(h) => format!("http://{h}"),
            None => CLOUDC_METADATA_URL.to_string(),
        },
    };
    let aud: String = url::form_urlencoded::byte_serialize(cfg.audience.as_bytes()).collect();
    let r = http
        .get(format!(
            "{base}/computeMetadata/v1/instance/service-accounts/default/identity?audience={aud}&format=full"
        ))
        .header("Metadata-Flavor", "Google")
        .send()
        .await
        .map_err(|e| fail("cloudC metadata server", e))?;
    if !r.status().is_success() {
        return Err(Error::Failure(format!(
            "cloudC metadata server: status {}",
            r.status().as_u16()
        )));
    }
    let t = r.text().await.map_err(|e| fail("cloudC metadata server", e))?;
    let t = t.trim();
    if t.split('.').count() != 3 {
        return Err(Error::Failure("cloudC metadata server: answer is not a JWT".into()));
    }
    Ok(CloudC {
        identity_token: Some(t.to_string()),
        instance_document: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_their_type_strings() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.as_str()), Some(k));
        }
        assert_eq!(Kind::parse("auto"), None);
        assert_eq!(Kind::ALL.iter().filter(|k| k.is_token()).count(), 5);
    }
}
