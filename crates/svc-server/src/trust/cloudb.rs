//! `CloudBMetadataService`: cloudB's PKCS#7 attested document (contract §4.5, §5.5). Exactly one
//! SignerInfo; its certificate (issuer + serial) is taken from the bag and checks apply to THAT
//! certificate, never to whichever certificate comes first: the signature is verified with it, a
//! chain is built from it to `SVC_CLOUDB_ROOTS` valid now (intermediates from the bag, else
//! fetched from its AIA caIssuers URL when the host is in `SVC_CLOUDB_AIA_HOSTS`), and its DNS
//! name must fall within `SVC_CLOUDB_METADATA_DOMAINS`. The signed content gives the facts; its
//! nonce must equal the request's and be a Unix time within `SVC_EDGE_MAX_SKEW_SECONDS`.

use std::sync::Arc;

use serde_json::{Map, Value};
use svc_api::edge::ClientWorkloadDetails;

use super::{CompiledTrust, Fact, Facts, TrustError, Verified};

use crate::crypto::chain::{Cert, PathError, build_path, within_domain};
use crate::crypto::pkcs7::{self, SignedMessage, SignerId};
use crate::crypto::{b64_any_decode, x509::pem_blocks};
use crate::domain::trust::TrustKind;
use crate::trust::VerifyCx;
use crate::trust::kinds::{Evidence, KindSpec};

/// At most this many AIA documents are fetched for one verification.
const MAX_AIA_FETCHES: usize = 4;

pub const KIND: KindSpec = KindSpec {
    kind: TrustKind::CloudBMetadataService,
    name: "CloudBMetadataService",
    client_id_type: "cloudB_metadata",
    match_attributes: &["CloudBSku", "CloudBVmId", "CloudBSubscriptionId"],
    key_fields: &[],
    one_key_source: false,
    accepts_secrets: false,
    jwt: false,
    payload_prefixes: &[],
    evidence: Evidence::Document(|c| evidence(c).is_some()),
};

/// The evidence: (encoding, base64 signature, nonce), when the signature is present.
pub fn evidence(c: &ClientWorkloadDetails) -> Option<(Option<&str>, &str, Option<&str>)> {
    let d = c.cloud_b.as_ref()?.attested_document.as_ref()?;
    let sig = super::non_empty(d.signature.as_ref())?;
    Some((d.encoding.as_deref(), sig, d.nonce.as_deref()))
}

/// A parsed, not yet trusted attested document: the message and its signer's certificate.
pub struct Parsed {
    pub msg: SignedMessage,
    pub bag: Vec<Cert>,
    /// Index in `bag` of the certificate the SignerInfo names.
    pub signer: usize,
}

/// Decodes and parses the document; checks the encoding, the single SignerInfo, and finds its
/// certificate in the bag.
pub fn parse(encoding: Option<&str>, signature_b64: &str) -> Result<Parsed, TrustError> {
    if let Some(e) = encoding.map(str::trim).filter(|e| !e.is_empty())
        && !e.eq_ignore_ascii_case("pkcs7")
    {
        return Err(TrustError::InvalidEvidence("encoding is not pkcs7".into()));
    }
    let der = b64_any_decode(signature_b64)
        .ok_or_else(|| TrustError::InvalidEvidence("attestedDocument.signature is not base64".into()))?;
    let msg = pkcs7::parse(&der).map_err(TrustError::InvalidEvidence)?;
    if msg.signers.len() != 1 {
        return Err(TrustError::InvalidEvidence(format!(
            "the document has {} SignerInfos (exactly one required)",
            msg.signers.len()
        )));
    }
    let bag = msg
        .certificates
        .iter()
        .map(|d| Cert::parse(d))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TrustError::InvalidEvidence(format!("certificate in the document: {e}")))?;
    let signer = match &msg.signers[0].id {
        SignerId::IssuerSerial { issuer, serial } => bag
            .iter()
            .position(|c| &c.issuer == issuer && &c.serial == serial)
            .ok_or_else(|| TrustError::InvalidSignature("the signer's certificate is not in the document".into()))?,
        SignerId::KeyId(_) => {
            return Err(TrustError::InvalidEvidence(
                "signer identified by key identifier (issuer and serial expected)".into(),
            ));
        }
    };
    Ok(Parsed { msg, bag, signer })
}

/// The document's signature, verified with the signer certificate's key (RSA, 2048+ bits).
pub fn verify_signature(p: &Parsed) -> Result<(), TrustError> {
    p.msg.signers[0]
        .verify(&p.msg.content, &p.bag[p.signer].spki, false)
        .map_err(|e| TrustError::InvalidSignature(format!("attested document: {e}")))
}

/// The signer's name must equal or be a subdomain of a configured metadata domain.
pub fn check_name(signer: &Cert, domains: &[String]) -> Result<(), TrustError> {
    let names = signer.dns_identities();
    if names.iter().any(|n| domains.iter().any(|d| within_domain(n, d))) {
        Ok(())
    } else {
        Err(TrustError::InvalidEvidence(
            "the signer's name is not within SVC_CLOUDB_METADATA_DOMAINS".into(),
        ))
    }
}

/// Reads the verified content and applies the nonce rules.
pub fn read_content(content: &[u8], nonce: Option<&str>, now: i64, max_skew: i64) -> Result<Facts, TrustError> {
    let doc: Map<String, Value> = match serde_json::from_slice(content) {
        Ok(Value::Object(m)) => m,
        _ => {
            return Err(TrustError::InvalidEvidence(
                "the attested content is not a JSON object".into(),
            ));
        }
    };
    let vm_id = doc.get("vmId").and_then(Value::as_str).unwrap_or_default();
    if !is_uuid(vm_id) {
        return Err(TrustError::InvalidEvidence("vmId is not a UUID".into()));
    }
    let sent = nonce
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| TrustError::InvalidEvidence("attestedDocument.nonce is required".into()))?;
    if doc.get("nonce").and_then(Value::as_str) != Some(sent) {
        return Err(TrustError::StaleEvidence(
            "the signed nonce is not the request's nonce".into(),
        ));
    }
    if sent.is_empty() || sent.len() > 12 || !sent.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TrustError::InvalidEvidence(
            "the nonce is not a decimal Unix time".into(),
        ));
    }
    let at: i64 = sent
        .parse()
        .map_err(|_| TrustError::InvalidEvidence("the nonce is not a decimal Unix time".into()))?;
    if (now - at).abs() > max_skew {
        return Err(TrustError::StaleEvidence(
            "the nonce is outside SVC_EDGE_MAX_SKEW_SECONDS".into(),
        ));
    }
    let mut facts = Facts::new();
    for (attr, field) in [
        ("CloudBSku", "sku"),
        ("CloudBVmId", "vmId"),
        ("CloudBSubscriptionId", "subscriptionId"),
    ] {
        if let Some(v) = doc.get(field).and_then(Value::as_str).filter(|v| !v.is_empty()) {
            facts.insert(attr.into(), Fact::One(v.to_string()));
        }
    }
    Ok(facts)
}

/// A UUID in its hyphenated 8-4-4-4-12 form.
pub fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// Certificates of an AIA answer: DER, or PEM text.
fn certs_of(body: &[u8]) -> Vec<Cert> {
    if let Ok(text) = std::str::from_utf8(body)
        && text.trim_start().starts_with("-----BEGIN")
    {
        return pem_blocks(text)
            .unwrap_or_default()
            .into_iter()
            .filter(|(l, _)| l == "CERTIFICATE")
            .filter_map(|(_, d)| Cert::parse(&d).ok())
            .collect();
    }
    Cert::parse(body).into_iter().collect()
}

/// Whether an AIA URL may be fetched: http(s) to an allow-listed host.
pub fn aia_allowed(url: &str, hosts: &[String]) -> Option<reqwest::Url> {
    let u = reqwest::Url::parse(url).ok()?;
    if !matches!(u.scheme(), "http" | "https") || !u.username().is_empty() || u.password().is_some() {
        return None;
    }
    let host = u.host_str()?.to_ascii_lowercase();
    hosts.iter().any(|h| h.eq_ignore_ascii_case(&host)).then_some(u)
}

async fn fetch_aia(cx: &VerifyCx<'_>, url: reqwest::Url) -> Result<Arc<Vec<Cert>>, TrustError> {
    let now = crate::clock::now_secs();
    if let Some(c) = cx.platform.aia.get(url.as_str(), now) {
        return Ok(c);
    }
    let f = cx
        .upstream
        .send(cx.upstream.client.get(url.clone()))
        .await
        .map_err(|e| TrustError::Upstream(format!("AIA fetch: {e}")))?;
    if f.status != 200 {
        return Err(TrustError::Upstream(format!("AIA fetch answered {}", f.status)));
    }
    let certs = Arc::new(certs_of(&f.body));
    if certs.is_empty() {
        return Err(TrustError::Upstream("AIA answer holds no certificate".into()));
    }
    cx.platform.aia.put(url.as_str(), certs.clone(), now);
    Ok(certs)
}

/// Builds the chain from the signer; fetches AIA intermediates only when an issuer is missing.
async fn chain(cx: &VerifyCx<'_>, p: &Parsed, now: i64) -> Result<(), TrustError> {
    let roots = &cx.platform.cloudb_roots;
    let signer = &p.bag[p.signer];
    let mut pool: Vec<Cert> = p
        .bag
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != p.signer)
        .map(|(_, c)| c.clone())
        .collect();
    let mut fetched: Vec<String> = Vec::new();
    loop {
        let err: PathError = match build_path(signer, &pool, roots, now) {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        let urls: Vec<reqwest::Url> = err
            .missing_issuer_of
            .iter()
            .filter_map(|der| {
                if *der == signer.der {
                    Some(signer)
                } else {
                    pool.iter().find(|c| c.der == *der)
                }
            })
            .flat_map(|c| c.ca_issuers.iter())
            .filter_map(|u| aia_allowed(u, &cx.cfg.cloudb_aia_hosts))
            .filter(|u| !fetched.iter().any(|f| f == u.as_str()))
            .collect();
        if urls.is_empty() || fetched.len() >= MAX_AIA_FETCHES {
            return Err(TrustError::InvalidSignature(format!(
                "no chain from the signer to SVC_CLOUDB_ROOTS: {}",
                err.reason
            )));
        }
        for u in urls.into_iter().take(MAX_AIA_FETCHES - fetched.len()) {
            fetched.push(u.as_str().to_string());
            for c in fetch_aia(cx, u).await?.iter() {
                if !pool.iter().any(|x| x.der == c.der) {
                    pool.push(c.clone());
                }
            }
        }
    }
}

pub async fn verify(
    cx: &VerifyCx<'_>,
    _tp: &CompiledTrust,
    client: &ClientWorkloadDetails,
) -> Result<Verified, TrustError> {
    let (encoding, sig, nonce) = evidence(client).ok_or(TrustError::NoDataFound)?;
    let parsed = parse(encoding, sig)?;
    verify_signature(&parsed)?;
    let now = crate::clock::now_secs();
    chain(cx, &parsed, now).await?;
    check_name(&parsed.bag[parsed.signer], &cx.cfg.cloudb_metadata_domains)?;
    let facts = read_content(&parsed.msg.content, nonce, now, cx.cfg.edge_max_skew_seconds as i64)?;
    Ok(Verified {
        facts,
        ..Verified::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_767_225_600;

    fn content(nonce: &str, vm: &str) -> Vec<u8> {
        serde_json::json!({"licenseType": "", "nonce": nonce, "plan": {"name": "", "product": "", "publisher": ""},
            "sku": "22_04-lts-gen2", "subscriptionId": "05e8b285-4ce1-46a3-b4c9-f51ba67d6acc",
            "timeStamp": {"createdOn": "x", "expiresOn": "y"}, "vmId": vm})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn nonce_and_vm_id_rules() {
        let vm = "dc18de58-292f-4794-9a5d-a4192bad0039";
        let n = NOW.to_string();
        let f = read_content(&content(&n, vm), Some(&n), NOW + 10, 300).unwrap();
        assert_eq!(f["CloudBVmId"], Fact::One(vm.into()));
        assert_eq!(f["CloudBSku"], Fact::One("22_04-lts-gen2".into()));
        let stale = (NOW - 301).to_string();
        assert!(matches!(
            read_content(&content(&stale, vm), Some(&stale), NOW, 300),
            Err(TrustError::StaleEvidence(_))
        ));
        assert!(matches!(
            read_content(&content(&n, vm), Some("1767225601"), NOW, 300),
            Err(TrustError::StaleEvidence(_))
        ));
        assert!(matches!(
            read_content(&content("20260626-005645", vm), Some("20260626-005645"), NOW, 300),
            Err(TrustError::InvalidEvidence(_))
        ));
        assert!(matches!(
            read_content(&content(&n, vm), None, NOW, 300),
            Err(TrustError::InvalidEvidence(_))
        ));
        assert!(matches!(
            read_content(&content(&n, "not-a-uuid"), Some(&n), NOW, 300),
            Err(TrustError::InvalidEvidence(_))
        ));
    }

    #[test]
    fn uuid_and_aia_rules() {
        assert!(is_uuid("dc18de58-292f-4794-9a5d-a4192bad0039"));
        assert!(!is_uuid("dc18de58292f47949a5da4192bad0039"));
        assert!(!is_uuid("{dc18de58-292f-4794-9a5d-a4192bad0039}"));
        let hosts = vec!["www.microsoft.com".to_string()];
        assert!(aia_allowed("http://www.microsoft.com/pkiops/certs/x.crt", &hosts).is_some());
        assert!(aia_allowed("https://WWW.Microsoft.com/x.crt", &hosts).is_some());
        assert!(aia_allowed("http://evil.example/x.crt", &hosts).is_none());
        assert!(aia_allowed("http://www.microsoft.com.evil.example/x.crt", &hosts).is_none());
        assert!(aia_allowed("ftp://www.microsoft.com/x.crt", &hosts).is_none());
        assert!(aia_allowed("http://u:p@www.microsoft.com/x.crt", &hosts).is_none());
    }

    const SAMPLE: &str = include_str!("../../tests/fixtures/cloudb/sample-document.b64");

    fn fixture(name: &str) -> Cert {
        let pem =
            std::fs::read_to_string(format!("{}/tests/fixtures/cloudb/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        Cert::parse(&pem_blocks(&pem).unwrap()[0].1).unwrap()
    }

    #[test]
    fn sample_document_verifies_and_chains_to_the_fixture_root() {
        // Signed with sha256WithRSAEncryption in the digest field and no signed attributes.
        let p = parse(Some("PKCS7"), SAMPLE.trim()).unwrap();
        verify_signature(&p).unwrap();
        let signer = &p.bag[p.signer];
        let (root, inter) = (fixture("root-cert.pem"), fixture("intermediate-cert.pem"));
        let path = build_path(signer, std::slice::from_ref(&inter), std::slice::from_ref(&root), NOW).unwrap();
        assert_eq!(path.len(), 3);
        // Without the intermediate: its absence is reported for an AIA fetch.
        let e = build_path(signer, &[], std::slice::from_ref(&root), NOW).unwrap_err();
        assert_eq!(e.missing_issuer_of, vec![signer.der.clone()]);
        // A root with the same name but another key is not an issuer.
        let rogue = fixture("rogue-root-cert.pem");
        assert!(build_path(&inter, &[], std::slice::from_ref(&rogue), NOW).is_err());
        check_name(signer, &["test-cloudb.example".into()]).unwrap();
        assert!(check_name(signer, &["other.example".into()]).is_err());
        let f = read_content(&p.msg.content, Some("1767225600"), NOW, 300).unwrap();
        assert_eq!(
            f["CloudBVmId"],
            Fact::One("dc18de58-292f-4794-9a5d-a4192bad0039".into())
        );
        assert!(matches!(
            parse(Some("json"), SAMPLE.trim()),
            Err(TrustError::InvalidEvidence(_))
        ));
    }

    mod fuzz {
        use proptest::prelude::*;

        use super::*;

        proptest! {
            #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

            #[test]
            fn arbitrary_documents_never_panic(data in proptest::collection::vec(any::<u8>(), 0..600)) {
                let b64 = crate::crypto::b64std(&data);
                if let Ok(p) = parse(Some("pkcs7"), &b64) {
                    let _ = verify_signature(&p);
                }
                let _ = parse(None, &String::from_utf8_lossy(&data));
            }

            #[test]
            fn mutated_sample_never_panics(pos in 0usize..4096, byte in any::<u8>()) {
                let mut der = crate::crypto::b64_any_decode(SAMPLE.trim()).unwrap();
                let i = pos % der.len();
                der[i] = byte;
                if let Ok(p) = parse(None, &crate::crypto::b64std(&der))
                    && verify_signature(&p).is_ok()
                {
                    let _ = check_name(&p.bag[p.signer], &["test-cloudb.example".into()]);
                    let _ = read_content(&p.msg.content, Some("1767225600"), NOW, 300);
                }
            }

            #[test]
            fn content_reader_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300), nonce in ".{0,20}") {
                let _ = read_content(&data, Some(&nonce), NOW, 300);
            }

            #[test]
            fn mutated_content_never_panics(pos in 0usize..200, byte in any::<u8>()) {
                let n = NOW.to_string();
                let mut c = content(&n, "dc18de58-292f-4794-9a5d-a4192bad0039");
                let i = pos % c.len();
                c[i] = byte;
                let _ = read_content(&c, Some(&n), NOW, 300);
            }
        }
    }
}
