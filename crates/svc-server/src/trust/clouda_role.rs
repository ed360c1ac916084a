//! `CloudARole`: a SigV4-signed STS `GetCallerIdentity` request that the server **rebuilds**
//! (contract §4.5; "reconstruct, don't validate-and-forward", CVE-2020-16250): only the client's
//! allow-listed headers are taken; method, URL (from `SVC_CLOUDA_STS_URL_TEMPLATE` for an allowed
//! region), path, query and body are the server's. The credential scope must name the signed
//! region and `sts`; `X-Amz-Date` must be within `SVC_EDGE_MAX_SKEW_SECONDS`; an optional signed
//! server-id header binds the request to this deployment. The answer must be a 200 XML
//! `GetCallerIdentityResponse`, parsed strictly; the ARN gives the facts (§4.6).

use std::collections::BTreeMap;

use quick_xml::events::Event;
use svc_api::edge::ClientWorkloadDetails;

use super::{CompiledTrust, Fact, Facts, TrustError, Verified};
use crate::domain::trust::TrustKind;
use crate::trust::VerifyCx;
use crate::trust::kinds::{self, KindSpec};

/// The only body ever sent (the client cannot supply one).
pub const BODY: &str = "Action=GetCallerIdentity&Version=2011-06-15";
pub const CONTENT_TYPE: &str = "application/x-www-form-urlencoded; charset=utf-8";
pub const SERVER_ID_HEADER: &str = "x-svc-server-id";

/// Client header names that may be present (lowercase).
const ALLOWED_HEADERS: &[&str] = &[
    "authorization",
    "x-amz-date",
    "x-amz-security-token",
    "content-type",
    "host",
    SERVER_ID_HEADER,
];

fn invalid(m: impl Into<String>) -> TrustError {
    TrustError::InvalidEvidence(m.into())
}

/// The evidence: the signed headers and the region, when headers are present.
pub struct Evidence<'a> {
    pub headers: &'a BTreeMap<String, Option<String>>,
    pub region: Option<&'a str>,
}

pub const KIND: KindSpec = KindSpec {
    kind: TrustKind::CloudARole,
    name: "CloudARole",
    client_id_type: "cloudA_role",
    match_attributes: &[
        "CloudAAccountId",
        "CloudAAssumedRole",
        "CloudARoleARN",
        "CloudAUsername",
    ],
    key_fields: &[],
    one_key_source: false,
    accepts_secrets: false,
    jwt: false,
    payload_prefixes: &[],
    evidence: kinds::Evidence::Document(|c| evidence(c).is_some()),
};

pub fn evidence(c: &ClientWorkloadDetails) -> Option<Evidence<'_>> {
    let s = c.cloud_a.as_ref()?.sts_get_caller_identity.as_ref()?;
    let headers = s.headers.as_ref().filter(|h| !h.is_empty())?;
    Some(Evidence {
        headers,
        region: s.region.as_deref(),
    })
}

// ---- SigV4 Authorization header ---------------------------------------------------------------

/// The parts of an `AWS4-HMAC-SHA256` Authorization header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SigV4 {
    pub key_id: String,
    /// `YYYYMMDD` of the credential scope.
    pub date: String,
    pub region: String,
    pub service: String,
    /// Lowercase header names.
    pub signed_headers: Vec<String>,
    pub signature: String,
}

fn token_ok(s: &str, extra: &[u8]) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
}

/// Parses `AWS4-HMAC-SHA256 Credential=<id>/<date>/<region>/<service>/aws4_request,
/// SignedHeaders=<a;b;c>, Signature=<hex>` strictly: each component exactly once, nothing else.
pub fn parse_authorization(v: &str) -> Result<SigV4, String> {
    let rest = v
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .ok_or("Authorization is not an AWS4-HMAC-SHA256 (SigV4) header")?;
    let (mut cred, mut signed, mut sig) = (None, None, None);
    for part in rest.split(',') {
        let part = part.trim();
        let (k, val) = part.split_once('=').ok_or("malformed SigV4 component")?;
        let slot = match k {
            "Credential" => &mut cred,
            "SignedHeaders" => &mut signed,
            "Signature" => &mut sig,
            _ => return Err("unknown SigV4 component".into()),
        };
        if slot.replace(val).is_some() {
            return Err("repeated SigV4 component".into());
        }
    }
    let cred = cred.ok_or("SigV4 Credential missing")?;
    let parts: Vec<&str> = cred.split('/').collect();
    let [key_id, date, region, service, term] = parts[..] else {
        return Err("SigV4 credential scope is not <key>/<date>/<region>/<service>/aws4_request".into());
    };
    if term != "aws4_request"
        || !token_ok(key_id, b"")
        || date.len() != 8
        || !date.bytes().all(|b| b.is_ascii_digit())
        || !token_ok(region, b"-")
        || !token_ok(service, b"-")
    {
        return Err("malformed SigV4 credential scope".into());
    }
    let signed = signed.ok_or("SigV4 SignedHeaders missing")?;
    let signed_headers: Vec<String> = signed.split(';').map(str::to_string).collect();
    if signed_headers
        .iter()
        .any(|h| !token_ok(h, b"-") || h.bytes().any(|b| b.is_ascii_uppercase()))
    {
        return Err("malformed SigV4 SignedHeaders".into());
    }
    let signature = sig.ok_or("SigV4 Signature missing")?;
    if signature.len() != 64 || !signature.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err("malformed SigV4 Signature".into());
    }
    Ok(SigV4 {
        key_id: key_id.to_string(),
        date: date.to_string(),
        region: region.to_string(),
        service: service.to_string(),
        signed_headers,
        signature: signature.to_string(),
    })
}

/// `X-Amz-Date` (`YYYYMMDDTHHMMSSZ`) as Unix seconds.
pub fn parse_amz_date(v: &str) -> Option<i64> {
    let fmt = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    time::PrimitiveDateTime::parse(v, &fmt)
        .ok()
        .map(|t| t.assume_utc().unix_timestamp())
}

// ---- the rebuilt request ------------------------------------------------------------------------

/// What the server sends: its own URL and body, the client's allowed header values.
#[derive(Debug)]
pub struct Rebuilt {
    pub url: reqwest::Url,
    /// (canonical name, value); `Host` is implied by the URL.
    pub headers: Vec<(&'static str, String)>,
    pub region: String,
}

/// The settings a rebuild depends on.
pub struct Settings<'a> {
    pub url_template: &'a str,
    pub regions: &'a [String],
    pub server_id: Option<&'a str>,
    pub max_skew_secs: i64,
}

/// The `Host` value of a URL as SigV4 signers write it: host, plus the port when not the default.
pub fn host_of(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    }
}

/// Checks the evidence and rebuilds the request (no I/O).
pub fn rebuild(ev: &Evidence<'_>, s: &Settings<'_>, now: i64) -> Result<Rebuilt, TrustError> {
    let region = ev
        .region
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .ok_or_else(|| invalid("region is required"))?;
    if !s.regions.iter().any(|r| r == region) {
        return Err(invalid("region is not in SVC_CLOUDA_REGIONS"));
    }
    // Header names: the allow-list only, each once (case-insensitive).
    let mut names: Vec<&'static str> = Vec::new();
    let mut h: BTreeMap<&'static str, &str> = BTreeMap::new();
    for (name, value) in ev.headers {
        let lower = name.to_ascii_lowercase();
        let canon = *ALLOWED_HEADERS
            .iter()
            .find(|a| **a == lower)
            .ok_or_else(|| invalid("a header outside the allowed set was sent"))?;
        if names.contains(&canon) {
            return Err(invalid("a header was sent twice"));
        }
        names.push(canon);
        if let Some(v) = value {
            h.insert(canon, v.as_str());
        }
    }
    let auth = h
        .get("authorization")
        .ok_or_else(|| invalid("Authorization header missing"))?;
    let sig = parse_authorization(auth).map_err(invalid)?;
    if sig.region != region {
        return Err(invalid("the credential scope names another region"));
    }
    if sig.service != "sts" {
        return Err(invalid("the credential scope does not name the sts service"));
    }
    for required in ["host", "x-amz-date"] {
        if !sig.signed_headers.iter().any(|x| x == required) {
            return Err(invalid(format!("{required} is not a signed header")));
        }
    }
    if let Some(ct) = h.get("content-type")
        && !ct.trim().eq_ignore_ascii_case(CONTENT_TYPE)
    {
        return Err(invalid("Content-Type is not the form encoding of GetCallerIdentity"));
    }
    let date = h
        .get("x-amz-date")
        .ok_or_else(|| invalid("X-Amz-Date header missing"))?;
    let signed_at = parse_amz_date(date).ok_or_else(|| invalid("X-Amz-Date is malformed"))?;
    if (now - signed_at).abs() > s.max_skew_secs {
        return Err(TrustError::StaleEvidence(
            "X-Amz-Date is outside SVC_EDGE_MAX_SKEW_SECONDS".into(),
        ));
    }
    if !date.starts_with(&sig.date) {
        return Err(invalid("the credential scope date is not the X-Amz-Date day"));
    }
    if let Some(want) = s.server_id {
        if h.get(SERVER_ID_HEADER) != Some(&want) {
            return Err(invalid("X-Svc-Server-Id is missing or names another server"));
        }
        if !sig.signed_headers.iter().any(|x| x == SERVER_ID_HEADER) {
            return Err(invalid("X-Svc-Server-Id is not a signed header"));
        }
    }
    // Every signed header (but host, which comes from the URL) must be one the client gave.
    for name in &sig.signed_headers {
        if name != "host" && !h.contains_key(name.as_str()) {
            return Err(invalid("a signed header is missing from the request"));
        }
    }
    // The server's URL: the template for this region, path `/`, no query.
    let mut url = reqwest::Url::parse(&s.url_template.replace("{region}", region))
        .map_err(|_| TrustError::Upstream("SVC_CLOUDA_STS_URL_TEMPLATE does not give a URL".into()))?;
    url.set_path("/");
    url.set_query(None);
    url.set_fragment(None);
    if let Some(client_host) = h.get("host")
        && !client_host.trim().eq_ignore_ascii_case(&host_of(&url))
    {
        return Err(invalid("the Host header is not the configured STS host"));
    }
    let mut headers: Vec<(&'static str, String)> = Vec::new();
    for (name, canon) in [
        ("authorization", "Authorization"),
        ("x-amz-date", "X-Amz-Date"),
        ("x-amz-security-token", "X-Amz-Security-Token"),
        (SERVER_ID_HEADER, "X-Svc-Server-Id"),
    ] {
        if let Some(v) = h.get(name) {
            headers.push((canon, v.to_string()));
        }
    }
    headers.push((
        "Content-Type",
        h.get("content-type")
            .map_or(CONTENT_TYPE.to_string(), |v| v.to_string()),
    ));
    for (_, v) in &headers {
        if reqwest::header::HeaderValue::from_str(v).is_err() {
            return Err(invalid("a header value holds characters HTTP does not allow"));
        }
    }
    Ok(Rebuilt {
        url,
        headers,
        region: region.to_string(),
    })
}

// ---- the STS answer -----------------------------------------------------------------------------

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallerIdentity {
    pub arn: String,
    pub user_id: String,
    pub account: String,
}

const MAX_XML_DEPTH: usize = 8;

/// Outside the root, directly in it, or directly in `GetCallerIdentityResult`: places where only
/// elements (and whitespace) may appear. Text elsewhere (e.g. `ResponseMetadata/RequestId`) is
/// skipped.
fn structural(stack: &[String]) -> bool {
    stack.len() < 2 || (stack.len() == 2 && stack[1] == "GetCallerIdentityResult")
}

/// Parses a `GetCallerIdentityResponse` strictly: root element by exact name, exactly one
/// `GetCallerIdentityResult` holding exactly one each of `Arn`, `UserId`, `Account` (text only),
/// no DOCTYPE or processing instructions, nothing after the root.
pub fn parse_caller_identity(body: &[u8]) -> Result<CallerIdentity, String> {
    let text = std::str::from_utf8(body).map_err(|_| "answer is not UTF-8")?;
    let start = text.trim_start();
    if !(start.starts_with("<?xml") || start.starts_with("<GetCallerIdentityResponse")) {
        return Err("answer does not start with <?xml or <GetCallerIdentityResponse".into());
    }
    let mut r = quick_xml::Reader::from_str(text);
    r.config_mut().check_end_names = true;
    let mut stack: Vec<String> = Vec::new();
    let mut seen_root = false;
    let mut results = 0;
    let mut out = CallerIdentity::default();
    let mut found: [bool; 3] = [false; 3];
    // The field whose text is being read: (index, text so far).
    let mut field: Option<(usize, String)> = None;
    loop {
        let ev = r.read_event().map_err(|e| format!("malformed XML: {e}"))?;
        match ev {
            Event::Decl(_) | Event::Comment(_) => {
                if field.is_some() {
                    return Err("markup inside a result field".into());
                }
            }
            Event::DocType(_) | Event::PI(_) => return Err("DOCTYPE and processing instructions are refused".into()),
            Event::CData(c) => match &mut field {
                Some((_, t)) => t.push_str(&c),
                None if structural(&stack) => return Err("unexpected CDATA".into()),
                None => {}
            },
            Event::Text(t) => {
                let s = t.xml10_content();
                match &mut field {
                    Some((_, acc)) => acc.push_str(&s),
                    None if s.trim().is_empty() || !structural(&stack) => {}
                    None => return Err("unexpected text in the answer".into()),
                }
            }
            Event::GeneralRef(g) => {
                let Some((_, acc)) = &mut field else {
                    if structural(&stack) {
                        return Err("unexpected entity reference".into());
                    }
                    continue;
                };
                if g.is_char_ref() {
                    let c = g.resolve_char_ref().ok().flatten().ok_or("bad character reference")?;
                    acc.push(c);
                } else {
                    let name = g.xml10_content();
                    let v = quick_xml::escape::resolve_predefined_entity(&name).ok_or("unknown entity")?;
                    acc.push_str(v);
                }
            }
            Event::Start(e) | Event::Empty(e) if field.is_some() => {
                let _ = e;
                return Err("an element inside a result field".into());
            }
            Event::Start(e) => {
                let name = e.name().as_ref().to_string();
                let depth = stack.len();
                if depth == 0 {
                    if seen_root || name != "GetCallerIdentityResponse" {
                        return Err("the root element is not GetCallerIdentityResponse".into());
                    }
                    seen_root = true;
                } else if depth >= MAX_XML_DEPTH {
                    return Err("answer nested too deeply".into());
                } else if depth == 1 && name == "GetCallerIdentityResult" {
                    results += 1;
                    if results > 1 {
                        return Err("GetCallerIdentityResult repeated".into());
                    }
                } else if depth == 2 && stack[1] == "GetCallerIdentityResult" {
                    let idx = match name.as_str() {
                        "Arn" => 0,
                        "UserId" => 1,
                        "Account" => 2,
                        _ => return Err("unexpected element in GetCallerIdentityResult".into()),
                    };
                    if found[idx] {
                        return Err(format!("{name} repeated"));
                    }
                    found[idx] = true;
                    field = Some((idx, String::new()));
                }
                stack.push(name);
            }
            Event::Empty(e) => {
                let name = e.name().as_ref().to_string();
                if stack.is_empty() {
                    return Err("the root element is empty".into());
                }
                if stack.len() == 1 && name == "GetCallerIdentityResult" {
                    return Err("GetCallerIdentityResult is empty".into());
                }
                if stack.len() == 2 && stack[1] == "GetCallerIdentityResult" {
                    return Err(format!("{name} is empty or unexpected"));
                }
            }
            Event::End(_) => {
                if let Some((idx, t)) = field.take() {
                    let t = t.trim().to_string();
                    match idx {
                        0 => out.arn = t,
                        1 => out.user_id = t,
                        _ => out.account = t,
                    }
                }
                stack.pop();
            }
            Event::Eof => break,
        }
    }
    if !seen_root || !stack.is_empty() {
        return Err("incomplete answer".into());
    }
    if results != 1 || found != [true; 3] {
        return Err("GetCallerIdentityResult with Arn, UserId and Account expected".into());
    }
    if out.arn.is_empty() || out.user_id.is_empty() || out.account.is_empty() {
        return Err("empty Arn, UserId or Account".into());
    }
    if out.account.len() != 12 || !out.account.bytes().all(|b| b.is_ascii_digit()) {
        return Err("Account is not a 12-digit account id".into());
    }
    Ok(out)
}

/// The principal of a caller ARN.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    pub partition: String,
    pub account: String,
    /// `user`, `role`, `assumed-role`, `federated-user` or `root`.
    pub kind: String,
    /// The role name of an `assumed-role` ARN.
    pub assumed_role: Option<String>,
}

/// Parses `arn:<partition>:<iam|sts>::<account>:<resource>` for the caller types STS returns.
pub fn parse_arn(arn: &str) -> Result<Principal, String> {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    let [prefix, partition, service, region, account, resource] = parts[..] else {
        return Err("ARN does not have six parts".into());
    };
    if prefix != "arn" || !token_ok(partition, b"-") {
        return Err("not an ARN".into());
    }
    if !region.is_empty() || account.len() != 12 || !account.bytes().all(|b| b.is_ascii_digit()) {
        return Err("ARN region or account malformed".into());
    }
    let segs: Vec<&str> = resource.split('/').collect();
    if segs.iter().any(|s| s.is_empty()) && resource != "root" {
        return Err("ARN resource has an empty segment".into());
    }
    let (kind, assumed_role) = match (service, segs.as_slice()) {
        ("iam", ["root"]) => ("root", None),
        ("iam", ["user", _, ..]) => ("user", None),
        ("iam", ["role", _, ..]) => ("role", None),
        ("sts", ["assumed-role", role, _session]) => ("assumed-role", Some(role.to_string())),
        ("sts", ["federated-user", _]) => ("federated-user", None),
        _ => return Err("unsupported principal type in the ARN".into()),
    };
    Ok(Principal {
        partition: partition.to_string(),
        account: account.to_string(),
        kind: kind.to_string(),
        assumed_role,
    })
}

/// The facts of a verified caller (§4.6).
pub fn facts(id: &CallerIdentity, p: &Principal, region: &str) -> Facts {
    let mut f = Facts::new();
    f.insert("CloudAAccountId".into(), Fact::One(id.account.clone()));
    f.insert("CloudARoleARN".into(), Fact::One(id.arn.clone()));
    f.insert("CloudAUsername".into(), Fact::One(id.user_id.clone()));
    if let Some(r) = &p.assumed_role {
        f.insert("CloudAAssumedRole".into(), Fact::One(r.clone()));
    }
    f.insert("CloudARegion".into(), Fact::One(region.to_string()));
    f
}

fn is_xml(content_type: Option<&str>) -> bool {
    let Some(ct) = content_type else {
        return false;
    };
    let media = ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    media == "text/xml" || media == "application/xml"
}

pub async fn verify(
    cx: &VerifyCx<'_>,
    _tp: &CompiledTrust,
    client: &ClientWorkloadDetails,
) -> Result<Verified, TrustError> {
    let ev = evidence(client).ok_or(TrustError::NoDataFound)?;
    let settings = Settings {
        url_template: &cx.cfg.clouda_sts_url_template,
        regions: &cx.cfg.clouda_regions,
        server_id: cx.cfg.clouda_role_server_id.as_deref(),
        max_skew_secs: cx.cfg.edge_max_skew_seconds as i64,
    };
    let req = rebuild(&ev, &settings, crate::clock::now_secs())?;
    let mut rb = cx.upstream.client.post(req.url.clone()).body(BODY);
    for (name, value) in &req.headers {
        rb = rb.header(*name, value.as_str());
    }
    let answer = cx
        .upstream
        .send(rb)
        .await
        .map_err(|e| TrustError::Upstream(format!("STS: {e}")))?;
    // Error bodies are never logged: STS may echo the canonical request there.
    match answer.status {
        200 => {}
        400..=499 => {
            return Err(TrustError::InvalidSignature(format!(
                "STS refused the signed request ({})",
                answer.status
            )));
        }
        s => return Err(TrustError::Upstream(format!("STS answered {s}"))),
    }
    if !is_xml(answer.content_type.as_deref()) {
        return Err(TrustError::Upstream("STS answer is not XML".into()));
    }
    let id = parse_caller_identity(&answer.body).map_err(|e| TrustError::Upstream(format!("STS answer: {e}")))?;
    let principal = parse_arn(&id.arn).map_err(|e| TrustError::Upstream(format!("STS answer: {e}")))?;
    if principal.account != id.account {
        return Err(TrustError::Upstream(
            "STS answer: the ARN's account is not Account".into(),
        ));
    }
    Ok(Verified {
        facts: facts(&id, &principal, &req.region),
        ..Verified::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const AUTH: &str = "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20260101/us-east-1/sts/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-svc-server-id, Signature=cd991fd350ca5683eb51ff56b5bdb278f3ab2b0c293b88255bf509865042d9fd";
    const XML: &str = r#"<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><UserId>AROAEXAMPLE:session</UserId><Account>123456789012</Account><Arn>arn:aws:sts::123456789012:assumed-role/builder/session</Arn></GetCallerIdentityResult><ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata></GetCallerIdentityResponse>"#;

    fn headers(pairs: &[(&str, &str)]) -> BTreeMap<String, Option<String>> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Some(v.to_string())))
            .collect()
    }

    fn settings<'a>(regions: &'a [String], server_id: Option<&'a str>) -> Settings<'a> {
        Settings {
            url_template: "https://sts.{region}.example.test/ignored?x=1",
            regions,
            server_id,
            max_skew_secs: 300,
        }
    }

    const NOW: i64 = 1_767_225_600; // 2026-01-01T00:00:00Z

    #[test]
    fn authorization_parsing() {
        let a = parse_authorization(AUTH).unwrap();
        assert_eq!(a.region, "us-east-1");
        assert_eq!(a.service, "sts");
        assert_eq!(a.date, "20260101");
        assert_eq!(
            a.signed_headers,
            ["content-type", "host", "x-amz-date", "x-svc-server-id"]
        );
        for bad in [
            "",
            "Bearer x",
            "AWS4-HMAC-SHA256 Credential=A/20260101/us-east-1/sts/aws4_request, SignedHeaders=host, Signature=zz",
            "AWS4-HMAC-SHA256 Credential=A/2026011/us-east-1/sts/aws4_request, SignedHeaders=host, Signature=cd991fd350ca5683eb51ff56b5bdb278f3ab2b0c293b88255bf509865042d9fd",
            "AWS4-HMAC-SHA256 Credential=A/20260101/us-east-1/sts, SignedHeaders=host, Signature=cd991fd350ca5683eb51ff56b5bdb278f3ab2b0c293b88255bf509865042d9fd",
            "AWS4-HMAC-SHA256 Credential=A/20260101/us-east-1/sts/aws4_request, Credential=A/20260101/us-east-1/sts/aws4_request, SignedHeaders=host, Signature=cd991fd350ca5683eb51ff56b5bdb278f3ab2b0c293b88255bf509865042d9fd",
            "AWS4-HMAC-SHA256 Credential=A/20260101/us-east-1/sts/aws4_request, SignedHeaders=Host, Signature=cd991fd350ca5683eb51ff56b5bdb278f3ab2b0c293b88255bf509865042d9fd",
            "AWS4-HMAC-SHA256 Credential=A/20260101/us-east-1/sts/aws4_request, SignedHeaders=host, Signature=cd991fd350ca5683eb51ff56b5bdb278f3ab2b0c293b88255bf509865042d9fd, Extra=1",
        ] {
            assert!(parse_authorization(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rebuild_uses_the_servers_url_and_the_allowed_headers_only() {
        let regions = vec!["us-east-1".to_string()];
        let h = headers(&[
            ("authorization", AUTH),
            ("X-AMZ-DATE", "20260101T000100Z"),
            ("Content-Type", "application/x-www-form-urlencoded; charset=UTF-8"),
            ("Host", "STS.us-east-1.example.test"),
            ("X-Svc-Server-Id", "prod"),
        ]);
        let ev = Evidence {
            headers: &h,
            region: Some("us-east-1"),
        };
        let r = rebuild(&ev, &settings(&regions, Some("prod")), NOW).unwrap();
        assert_eq!(r.url.as_str(), "https://sts.us-east-1.example.test/");
        let names: Vec<&str> = r.headers.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            ["Authorization", "X-Amz-Date", "X-Svc-Server-Id", "Content-Type"]
        );

        let reject = |h: &BTreeMap<String, Option<String>>, region: &str, sid: Option<&str>| {
            let ev = Evidence {
                headers: h,
                region: Some(region),
            };
            rebuild(&ev, &settings(&regions, sid), NOW).unwrap_err()
        };
        let mut extra = h.clone();
        extra.insert("X-Forwarded-Host".into(), Some("evil".into()));
        assert!(matches!(
            reject(&extra, "us-east-1", None),
            TrustError::InvalidEvidence(_)
        ));
        let mut dup = h.clone();
        dup.insert("host".into(), Some("sts.us-east-1.example.test".into()));
        assert!(matches!(
            reject(&dup, "us-east-1", None),
            TrustError::InvalidEvidence(_)
        ));
        assert!(matches!(reject(&h, "eu-west-1", None), TrustError::InvalidEvidence(_)));
        let mut stale = h.clone();
        stale.insert("X-AMZ-DATE".into(), Some("20251231T230000Z".into()));
        assert!(matches!(
            reject(&stale, "us-east-1", None),
            TrustError::StaleEvidence(_)
        ));
        let mut elsewhere = h.clone();
        elsewhere.insert("Host".into(), Some("sts.evil.example".into()));
        assert!(matches!(
            reject(&elsewhere, "us-east-1", None),
            TrustError::InvalidEvidence(_)
        ));
        assert!(matches!(
            reject(&h, "us-east-1", Some("dev")),
            TrustError::InvalidEvidence(_)
        ));
        let mut ct = h.clone();
        ct.insert("Content-Type".into(), Some("application/json".into()));
        assert!(matches!(reject(&ct, "us-east-1", None), TrustError::InvalidEvidence(_)));
    }

    #[test]
    fn sts_answers_are_parsed_strictly() {
        let id = parse_caller_identity(XML.as_bytes()).unwrap();
        assert_eq!(id.account, "123456789012");
        assert_eq!(id.user_id, "AROAEXAMPLE:session");
        let with_decl = format!("  <?xml version=\"1.0\"?>\n{XML}");
        assert!(parse_caller_identity(with_decl.as_bytes()).is_ok());
        let bad = [
            "<Other><GetCallerIdentityResponse/></Other>".to_string(),
            XML.replace("<Arn>", "<Arn><x/>"),
            XML.replace(
                "</GetCallerIdentityResult>",
                "<Arn>arn:aws:iam::123456789012:root</Arn></GetCallerIdentityResult>",
            ),
            XML.replace("<Account>123456789012</Account>", ""),
            format!("<!DOCTYPE x [<!ENTITY a \"b\">]>{XML}"),
            format!("{XML}<GetCallerIdentityResponse/>"),
            format!("{{\"x\":1}}{XML}"),
            XML.replace("GetCallerIdentityResponse xmlns", "ns:GetCallerIdentityResponse xmlns"),
            format!("<?xml version=\"1.0\"?><AssumeRoleResponse>{XML}</AssumeRoleResponse>"),
        ];
        for b in bad {
            assert!(parse_caller_identity(b.as_bytes()).is_err(), "{b}");
        }
        let escaped = XML.replace("AROAEXAMPLE:session", "a&amp;b&#65;");
        assert_eq!(parse_caller_identity(escaped.as_bytes()).unwrap().user_id, "a&bA");
    }

    #[test]
    fn arn_types() {
        let p = parse_arn("arn:aws:sts::123456789012:assumed-role/builder/i-0abc").unwrap();
        assert_eq!(p.assumed_role.as_deref(), Some("builder"));
        assert_eq!(
            parse_arn("arn:aws:iam::123456789012:user/ops/alice").unwrap().kind,
            "user"
        );
        assert_eq!(parse_arn("arn:aws-cn:iam::123456789012:role/r").unwrap().kind, "role");
        assert_eq!(parse_arn("arn:aws:iam::123456789012:root").unwrap().kind, "root");
        for bad in [
            "arn:aws:s3:::bucket",
            "arn:aws:sts::123456789012:assumed-role/onlyrole",
            "arn:aws:iam:us-east-1:123456789012:user/a",
            "arn:aws:iam::12345:user/a",
            "arn:aws:iam::123456789012:user/",
            "urn:aws:iam::123456789012:user/a",
        ] {
            assert!(parse_arn(bad).is_err(), "{bad}");
        }
    }

    mod fuzz {
        use proptest::prelude::*;

        use super::*;

        proptest! {
            #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

            #[test]
            fn authorization_parser_never_panics(s in ".{0,300}") {
                let _ = parse_authorization(&s);
                let _ = parse_amz_date(&s);
            }

            #[test]
            fn mutated_authorization_never_panics(pos in 0usize..AUTH.len(), c in any::<char>()) {
                let mut s: Vec<char> = AUTH.chars().collect();
                s[pos] = c;
                let s: String = s.into_iter().collect();
                let _ = parse_authorization(&s);
            }

            #[test]
            fn xml_parser_never_panics(body in proptest::collection::vec(any::<u8>(), 0..400)) {
                let _ = parse_caller_identity(&body);
            }

            #[test]
            fn mutated_xml_never_panics(pos in 0usize..XML.len(), byte in any::<u8>(), cut in 0usize..XML.len()) {
                let mut b = XML.as_bytes().to_vec();
                b[pos] = byte;
                b.truncate(cut.max(1));
                let _ = parse_caller_identity(&b);
                let mut b = XML.as_bytes().to_vec();
                b[pos] = byte;
                if let Ok(id) = parse_caller_identity(&b)
                    && let Ok(p) = parse_arn(&id.arn)
                {
                    let _ = facts(&id, &p, "us-east-1");
                }
            }

            #[test]
            fn arn_parser_never_panics(s in "(arn:)?[a-z:/0-9-]{0,80}") {
                let _ = parse_arn(&s);
            }

            #[test]
            fn rebuild_never_panics(
                names in proptest::collection::vec("[A-Za-z-]{1,20}", 0..6),
                values in proptest::collection::vec(".{0,80}", 6),
                region in "[a-z0-9-]{0,12}",
            ) {
                let regions = vec!["us-east-1".to_string()];
                let mut h: BTreeMap<String, Option<String>> = names
                    .iter()
                    .zip(values.iter())
                    .map(|(n, v)| (n.clone(), Some(v.clone())))
                    .collect();
                h.insert("Authorization".into(), Some(AUTH.into()));
                let ev = Evidence { headers: &h, region: Some(&region) };
                let _ = rebuild(&ev, &settings(&regions, None), NOW);
            }
        }
    }
}
