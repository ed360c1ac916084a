//! The object-storage destinations of log streams (contract §3.14, §5.4): `ObjectStorageABucket`
//! (SigV4-signed `PUT` with the host's own cloudA credentials) and `ObjectStorageCBucket`
//! (assertion → cloudC exchange → `generateAccessToken` → upload). One call uploads one
//! transaction's records as one NDJSON object; the delivery loop (`service::streams`) decides
//! what to send and keeps the cursor. Object naming, the credential chain and the keys are in
//! docs/log-streams/object-storage.md.

pub mod clouda_chain;

use std::time::{Duration, UNIX_EPOCH};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings, UriPathNormalizationMode,
    sign,
};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use svc_api::edge::{CredentialType, EdgeCredentials};
use time::OffsetDateTime;
use time::macros::format_description;
use uuid::Uuid;

use crate::credential::upstream_call::status_error;
use crate::credential::{IssueError, Issued, Services, assertion, cloudc_wif};
use crate::upstream::{Configured, UpstreamUrl};

/// The media type of the uploaded objects.
const NDJSON: &str = "application/x-ndjson";

/// SigV4's `UriEncode` (and RFC 3986's unreserved set): every byte but `A-Z a-z 0-9 - . _ ~` is
/// percent-encoded. An S3 key in a path keeps its `/`.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');
const KEY_IN_PATH: &AsciiSet = &UNRESERVED.remove(b'/');

/// An `ObjectStorageABucket` stream's destination.
#[derive(Clone, Copy, Debug)]
pub struct ObjectA<'a> {
    pub region: &'a str,
    pub bucket: &'a str,
    /// `objectStorageAPathPrefix`; `None` puts the objects at the bucket's root.
    pub prefix: Option<&'a str>,
}

/// An `ObjectStorageCBucket` stream's destination.
#[derive(Clone, Copy, Debug)]
pub struct ObjectC<'a> {
    /// The stream's `externalId` (the assertion's subject is `svc-log-stream:<externalId>`).
    pub stream: Uuid,
    pub bucket: Option<&'a str>,
    pub prefix: Option<&'a str>,
    pub audience: Option<&'a str>,
    pub service_account_email: Option<&'a str>,
    /// `tokenLifetime`, seconds.
    pub token_lifetime: i32,
}

/// One transaction of a stream: its records as NDJSON (one JSON object per line, each the exact
/// DTO the event APIs return).
#[derive(Clone, Copy, Debug)]
pub struct Upload<'a> {
    /// `AuditLogs`, `AccessAuthorizationEvents` or `WorkloadEvents`.
    pub data_type: &'a str,
    /// When the transaction was made (milliseconds since the epoch): the object name's time.
    pub at: i64,
    pub ndjson: &'a [u8],
}

/// Uploads one transaction to an `ObjectStorageABucket`. `Err` carries a text for the log and
/// the stream's errored count, never a secret.
pub async fn put_a(svc: &Services<'_>, dest: &ObjectA<'_>, upload: &Upload<'_>) -> Result<(), String> {
    let key = object_name(dest.prefix, upload);
    if key.split('/').any(|s| s == "." || s == "..") {
        // A URL cannot carry them: they would be resolved away before the request is sent.
        return Err("objectStorageAPathPrefix: a \".\" or \"..\" segment cannot be uploaded to".into());
    }
    let url = object_a_url(&svc.cfg.objectstoragea_url_template, dest.region, dest.bucket, &key);
    let url = Configured(&url)
        .checked(svc.upstream)
        .map_err(|e| format!("objectStorageA: {e}"))?;
    let creds = clouda_chain::credentials(svc)
        .await
        .map_err(|e| format!("objectStorageA credentials: {e}"))?;
    let signed = sign_put(&creds, dest.region, &url, upload.ndjson)?;
    let mut req = svc.upstream.client.put(url).body(upload.ndjson.to_vec());
    for (name, value) in signed {
        req = req.header(name, value);
    }
    let mut f = svc
        .upstream
        .send(req)
        .await
        .map_err(|e| format!("objectStorageA: {e}"))?;
    if (200..300).contains(&f.status) {
        return Ok(());
    }
    // Never sent, but no text is trusted to be free of it.
    f.sent.push(creds.secret_access_key.expose().clone());
    Err(format!("objectStorageA answered {}", f.refusal()))
}

/// Uploads one transaction to an `ObjectStorageCBucket`.
pub async fn put_c(svc: &Services<'_>, dest: &ObjectC<'_>, upload: &Upload<'_>) -> Result<(), String> {
    let (Some(bucket), Some(audience), Some(account)) = (dest.bucket, dest.audience, dest.service_account_email) else {
        let missing: Vec<&str> = [
            ("objectStorageCBucketName", dest.bucket.is_none()),
            ("audience", dest.audience.is_none()),
            ("serviceAccountEmail", dest.service_account_email.is_none()),
        ]
        .into_iter()
        .filter_map(|(name, absent)| absent.then_some(name))
        .collect();
        return Err(format!("objectStorageC: {} not set", missing.join(", ")));
    };
    let cache_key = format!(
        "log-stream:objectStorageC\u{0}{}\u{0}{audience}\u{0}{account}\u{0}{}",
        dest.stream, dest.token_lifetime
    );
    let token = cloudc_token(svc, dest, audience, account, &cache_key)
        .await
        .map_err(|e| format!("objectStorageC token: {}", e.reason))?;
    let url = format!(
        "{}/b/{}/o?uploadType=media&name={}",
        svc.cfg.objectstoragec_upload_url.trim_end_matches('/'),
        utf8_percent_encode(bucket, UNRESERVED),
        utf8_percent_encode(&object_name(dest.prefix, upload), UNRESERVED)
    );
    let url = Configured(&url)
        .checked(svc.upstream)
        .map_err(|e| format!("objectStorageC: {e}"))?;
    let req = svc
        .upstream
        .client
        .post(url)
        .bearer_auth(&token)
        .header("content-type", NDJSON)
        .header("accept", "application/json")
        .body(upload.ndjson.to_vec());
    let f = svc
        .upstream
        .send(req)
        .await
        .map_err(|e| format!("objectStorageC: {e}"))?;
    if (200..300).contains(&f.status) {
        return Ok(());
    }
    if f.status == 401 {
        // Revoked or otherwise refused before its expiry: the next cycle exchanges anew.
        svc.cache.remove(&cache_key);
    }
    Err(status_error("objectStorageC upload", &f).reason)
}

/// The stream's cloudC access token: reused from the credential cache until 60 s before its
/// expiry, else the exchange of §5.3 with an assertion of §5.2 (`sub` =
/// `svc-log-stream:<externalId>`, `aud` = the stream's `audience`).
async fn cloudc_token(
    svc: &Services<'_>,
    dest: &ObjectC<'_>,
    audience: &str,
    account: &str,
    cache_key: &str,
) -> Result<String, IssueError> {
    if let Some(Issued::Credential { data, .. }) = svc.cache.get(cache_key)
        && let Some((_, Some(token))) = data.0.first()
    {
        return Ok(token.clone());
    }
    let jwt = assertion::service_federation(svc, &format!("svc-log-stream:{}", dest.stream), audience);
    let (token, expires_at) =
        cloudc_wif::access_token(svc, &jwt, audience, account, dest.token_lifetime.into()).await?;
    let issued = Issued::Credential {
        credential_type: CredentialType::CloudCWorkloadIdentityFederation,
        data: EdgeCredentials(vec![("token", Some(token.clone()))]),
        expires_at: Some(expires_at),
    };
    svc.cache.put(cache_key.to_string(), issued, expires_at.millis());
    Ok(token)
}

/// `<prefix>/<dataType>/<yyyy>/<MM>/<dd>/<yyyyMMddTHHmmssZ>-<uuid>.ndjson` (§5.4), in UTC of
/// `upload.at`, with a fresh UUID. The prefix loses its leading and trailing `/`; an empty one
/// is no prefix.
pub fn object_name(prefix: Option<&str>, upload: &Upload<'_>) -> String {
    let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(upload.at) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let day = at
        .format(format_description!("[year]/[month]/[day]"))
        .expect("a date formats");
    let stamp = at
        .format(format_description!("[year][month][day]T[hour][minute][second]Z"))
        .expect("a time formats");
    let name = format!("{}/{day}/{stamp}-{}.ndjson", upload.data_type, crate::util::uuid_v4());
    match prefix.map(|p| p.trim_matches('/')).filter(|p| !p.is_empty()) {
        Some(p) => format!("{p}/{name}"),
        None => name,
    }
}

/// The object's URL: `SVC_OBJECTSTORAGEA_URL_TEMPLATE` with `{bucket}` and `{region}` filled,
/// then the key. A bucket name with a dot cannot be an `https` virtual host (the platform's
/// wildcard certificate covers one label), so, as the platform's SDKs do, such a bucket moves
/// from the host into the path.
fn object_a_url(template: &str, region: &str, bucket: &str, key: &str) -> String {
    let template = template.replace("{region}", region);
    let base = match template.strip_prefix("https://{bucket}.") {
        Some(rest) if bucket.contains('.') => format!("https://{}/{bucket}", rest.trim_end_matches('/')),
        _ => template.replace("{bucket}", bucket),
    };
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        utf8_percent_encode(key, KEY_IN_PATH)
    )
}

/// The headers of a SigV4-signed `PUT` of `body` to S3 (`x-amz-date`, `x-amz-content-sha256` =
/// the body's SHA-256, `x-amz-security-token` with session credentials, `authorization`), plus
/// the content type they sign. S3's rules: the path is signed as sent (already `UriEncode`d
/// once, not normalised).
fn sign_put(
    creds: &clouda_chain::Creds,
    region: &str,
    url: &reqwest::Url,
    body: &[u8],
) -> Result<Vec<(&'static str, String)>, String> {
    let identity = Credentials::new(
        &creds.access_key_id,
        creds.secret_access_key.expose(),
        creds.session_token.as_ref().map(|t| t.expose().clone()),
        None,
        "svc-host-chain",
    )
    .into();
    let mut settings = SigningSettings::default();
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    let now = UNIX_EPOCH + Duration::from_millis(crate::clock::now_millis().max(0) as u64);
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("s3")
        .time(now)
        .settings(settings)
        .build()
        .map_err(|e| format!("objectStorageA signing: {e}"))?
        .into();
    let request = SignableRequest::new(
        "PUT",
        url.as_str(),
        [("content-type", NDJSON)].into_iter(),
        SignableBody::Bytes(body),
    )
    .map_err(|e| format!("objectStorageA signing: {e}"))?;
    let (instructions, _) = sign(request, &params)
        .map_err(|e| format!("objectStorageA signing: {e}"))?
        .into_parts();
    let (headers, _) = instructions.into_parts();
    let mut out: Vec<(&'static str, String)> = headers.iter().map(|h| (h.name(), h.value().to_string())).collect();
    out.push(("content-type", NDJSON.to_string()));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upload(at: i64) -> Upload<'static> {
        Upload {
            data_type: "AuditLogs",
            at,
            ndjson: b"{}\n",
        }
    }

    /// §5.4: `<prefix>/<dataType>/<yyyy>/<MM>/<dd>/<yyyyMMddTHHmmssZ>-<uuid>.ndjson`, UTC.
    #[test]
    fn object_names_follow_the_contract() {
        // 2026-03-04T05:06:07.890Z
        let at = 1_772_600_767_890;
        let n = object_name(Some("logs/svc"), &upload(at));
        let (head, tail) = n.split_at("logs/svc/AuditLogs/2026/03/04/20260304T050607Z-".len());
        assert_eq!(head, "logs/svc/AuditLogs/2026/03/04/20260304T050607Z-");
        let uuid = tail.strip_suffix(".ndjson").unwrap();
        assert_eq!(Uuid::parse_str(uuid).unwrap().get_version_num(), 4);
        assert_ne!(
            object_name(None, &upload(at)),
            object_name(None, &upload(at)),
            "a fresh uuid"
        );
        for none in [None, Some(""), Some("/"), Some("//")] {
            assert!(
                object_name(none, &upload(at)).starts_with("AuditLogs/2026/03/04/"),
                "{none:?}"
            );
        }
        assert!(object_name(Some("/a/b/"), &upload(at)).starts_with("a/b/AuditLogs/"));
    }

    #[test]
    fn object_a_urls() {
        let t = "https://{bucket}.s3.{region}.amazonaws.com";
        assert_eq!(
            object_a_url(t, "eu-west-1", "logs", "p q/a+b*c~d/x.ndjson"),
            "https://logs.s3.eu-west-1.amazonaws.com/p%20q/a%2Bb%2Ac~d/x.ndjson"
        );
        assert_eq!(
            object_a_url(t, "eu-west-1", "my.logs", "k"),
            "https://s3.eu-west-1.amazonaws.com/my.logs/k"
        );
        assert_eq!(
            object_a_url("http://127.0.0.1:9000/{bucket}/", "us-east-1", "my.logs", "a/b"),
            "http://127.0.0.1:9000/my.logs/a/b"
        );
    }
}
