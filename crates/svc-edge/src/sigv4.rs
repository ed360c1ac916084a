//! AWS Signature Version 4 (cloudA's request signing), for the one request `cloudA_role` needs:
//! a signed `GetCallerIdentity` the server forwards to STS (edge-api.md "Cloud-role attestation").
//!
//! Hand-written on aws-lc-rs (HMAC-SHA256, SHA-256), about 100 lines: the maintained crate
//! (`aws-sigv4`) pulls in the cloudA SDK's runtime crates (aws-smithy-*, aws-credential-types,
//! http 0.2 and 1.x, zeroize, ...), which would more than double this binary's dependency graph
//! for one signature. Checked against the published SigV4 example and the SigV4-verifying moto STS.

use aws_lc_rs::{digest, hmac};

/// The form body of `GetCallerIdentity`.
pub const GET_CALLER_IDENTITY: &str = "Action=GetCallerIdentity&Version=2011-06-15";
pub const FORM_CONTENT_TYPE: &str = "application/x-www-form-urlencoded; charset=utf-8";

#[derive(Clone, Debug)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn sha256_hex(b: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, b).as_ref())
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data)
        .as_ref()
        .to_vec()
}

/// RFC 3986 percent-encoding of everything but the unreserved characters (SigV4's `UriEncode`).
fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') || (keep_slash && b == b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The `Host` header value SigV4 signs: the host, with the port only when not the default.
pub fn host_header(url: &url::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    }
}

/// Signs `method url` with `headers` (name, value; `host` and `x-amz-date` are added) and `body`.
/// `amz_date` is `YYYYMMDDTHHMMSSZ`. Returns the headers to send: the given ones, `X-Amz-Date`,
/// `X-Amz-Security-Token` (with a session token) and `Authorization`; `Host` is not returned.
#[allow(clippy::too_many_arguments)]
pub fn sign(
    method: &str,
    url: &url::Url,
    headers: &[(&str, &str)],
    body: &[u8],
    service: &str,
    region: &str,
    creds: &Credentials,
    amz_date: &str,
) -> Vec<(String, String)> {
    let date = &amz_date[..8];
    let mut signed: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    signed.push(("host".into(), host_header(url)));
    signed.push(("x-amz-date".into(), amz_date.into()));
    if let Some(t) = &creds.session_token {
        signed.push(("x-amz-security-token".into(), t.clone()));
    }
    signed.sort();
    let canonical_headers: String = signed.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let signed_headers = signed.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(";");
    let mut query: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| (uri_encode(&k, false), uri_encode(&v, false)))
        .collect();
    query.sort();
    let canonical_query = query
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let path = if url.path().is_empty() { "/" } else { url.path() };
    let canonical_path = uri_encode(&percent_decode(path), true);
    let canonical_request = format!(
        "{method}\n{canonical_path}\n{canonical_query}\n{canonical_headers}\n{signed_headers}\n{}",
        sha256_hex(body)
    );
    let scope = format!("{date}/{region}/{service}/aws4_request");
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    );
    let k_date = hmac(format!("AWS4{}", creds.secret_access_key).as_bytes(), date.as_bytes());
    let k_region = hmac(&k_date, region.as_bytes());
    let k_service = hmac(&k_region, service.as_bytes());
    let k_signing = hmac(&k_service, b"aws4_request");
    let signature = hex(&hmac(&k_signing, string_to_sign.as_bytes()));
    let mut out: Vec<(String, String)> = headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    out.push(("X-Amz-Date".into(), amz_date.into()));
    if let Some(t) = &creds.session_token {
        out.push(("X-Amz-Security-Token".into(), t.clone()));
    }
    out.push((
        "Authorization".into(),
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
            creds.access_key_id
        ),
    ));
    out
}

fn percent_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// `YYYYMMDDTHHMMSSZ` for a Unix time in milliseconds.
pub fn amz_date(now_ms: i64) -> String {
    let t = svc_api::Timestamp::from_millis(now_ms).to_offset();
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year(),
        t.month() as u8,
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked example of the SigV4 documentation (IAM `ListUsers`, 2015-08-30).
    #[test]
    fn published_example() {
        let url = url::Url::parse("https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08").unwrap();
        let creds = Credentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        };
        let h = sign(
            "GET",
            &url,
            &[("Content-Type", FORM_CONTENT_TYPE)],
            b"",
            "iam",
            "us-east-1",
            &creds,
            "20150830T123600Z",
        );
        let auth = &h.iter().find(|(k, _)| k == "Authorization").unwrap().1;
        assert_eq!(
            auth,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date, \
             Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
        );
    }

    #[test]
    fn session_token_is_signed_and_sent() {
        let url = url::Url::parse("http://127.0.0.1:4566/").unwrap();
        let creds = Credentials {
            access_key_id: "AK".into(),
            secret_access_key: "s".into(),
            session_token: Some("tok".into()),
        };
        let h = sign(
            "POST",
            &url,
            &[("Content-Type", FORM_CONTENT_TYPE)],
            GET_CALLER_IDENTITY.as_bytes(),
            "sts",
            "eu-west-1",
            &creds,
            &amz_date(0),
        );
        let names: Vec<&str> = h.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            ["Content-Type", "X-Amz-Date", "X-Amz-Security-Token", "Authorization"]
        );
        assert!(
            h[3].1
                .contains("SignedHeaders=content-type;host;x-amz-date;x-amz-security-token,")
        );
        assert!(h[3].1.contains("/19700101/eu-west-1/sts/aws4_request"));
        assert_eq!(host_header(&url), "127.0.0.1:4566");
        assert_eq!(amz_date(1_700_000_000_123), "20231114T221320Z");
    }
}
