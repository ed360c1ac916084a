//! `CloudAMetadataService`: cloudA's instance identity document (contract §4.5, §4.6). Trusted
//! signers = the platform's published certificates (`SVC_CLOUDA_IID_CERTS`) ∪ the provider's
//! `certificate` ∪ its certificate secrets, used as raw keys. A signature that parses as PKCS#7
//! SignedData (the `rsa2048` form) is verified with those keys only — certificates embedded in it
//! are ignored — and its embedded content must be byte-equal to the document sent (the SPIRE
//! 1.14.6 substitution bug). Otherwise it is the raw RSA PKCS#1 v1.5 SHA-256 form. Facts come only
//! from the verified bytes.

use serde_json::{Map, Value};
use svc_api::edge::ClientWorkloadDetails;

use super::anchors::{CloudAKey, add_dedup};
use super::{CompiledTrust, Fact, Facts, TrustError, Verified};

use crate::crypto::x509::{CertInfo, cert_info, pem_blocks, pem_text};
use crate::crypto::{b64_any_decode, pkcs7};
use crate::domain::trust::TrustKind;
use crate::trust::VerifyCx;
use crate::trust::kinds::{Evidence, KindSpec};

/// Match attribute ← document field (§4.6).
const FIELDS: &[(&str, &str)] = &[
    ("CloudAAccountId", "accountId"),
    ("CloudAArchitecture", "architecture"),
    ("CloudAAvailabilityZone", "availabilityZone"),
    ("CloudABillingProducts", "billingProducts"),
    ("CloudAImageId", "imageId"),
    ("CloudAInstanceId", "instanceId"),
    ("CloudAInstanceType", "instanceType"),
    ("CloudAKernelId", "kernelId"),
    ("CloudAMarketplaceProductCodes", "marketplaceProductCodes"),
    ("CloudAPendingTime", "pendingTime"),
    ("CloudAPrivateIp", "privateIp"),
    ("CloudARamdiskId", "ramdiskId"),
    ("CloudARegion", "region"),
    ("CloudAVersion", "version"),
];

pub const KIND: KindSpec = KindSpec {
    kind: TrustKind::CloudAMetadataService,
    name: "CloudAMetadataService",
    client_id_type: "cloudA_metadata",
    match_attributes: &[
        "CloudAAccountId",
        "CloudAArchitecture",
        "CloudAAvailabilityZone",
        "CloudABillingProducts",
        "CloudAImageId",
        "CloudAInstanceId",
        "CloudAInstanceType",
        "CloudAKernelId",
        "CloudAMarketplaceProductCodes",
        "CloudAPendingTime",
        "CloudAPrivateIp",
        "CloudARamdiskId",
        "CloudARegion",
        "CloudAVersion",
    ],
    key_fields: &["certificate"],
    one_key_source: false,
    accepts_secrets: true,
    jwt: false,
    payload_prefixes: &[],
    evidence: Evidence::Document(|c| evidence(c).is_some()),
};

/// The evidence pair (base64 text), when both parts are present and non-empty.
pub fn evidence(c: &ClientWorkloadDetails) -> Option<(&str, &str)> {
    let a = c.cloud_a.as_ref()?;
    let doc = super::non_empty(a.instance_identity_document.as_ref())?;
    let sig = super::non_empty(a.instance_identity_document_signature.as_ref())?;
    Some((doc, sig))
}

/// A provider `certificate` or certificate secret (PEM, or base64 of PEM) usable as a cloudA
/// signer: an X.509 certificate with an RSA key of 1024 to 8192 bits.
pub fn certificate_info(pem: &str) -> Result<CertInfo, String> {
    let text = pem_text(pem)?;
    let blocks = pem_blocks(&text)?;
    let (label, der) = &blocks[0];
    if label != "CERTIFICATE" {
        return Err(format!("a CERTIFICATE PEM block is required, not {label}"));
    }
    CloudAKey::from_cert(der)?;
    cert_info(der)
}

/// The trusted keys for one provider: the platform's, plus the provider's certificates.
fn provider_keys(tp: &CompiledTrust) -> Vec<CloudAKey> {
    let mut keys = Vec::new();
    for c in &tp.extra_certs {
        // Certificates were checked when stored; one that no longer parses adds nothing.
        if let Ok(k) = CloudAKey::from_cert(&c.der) {
            add_dedup(&mut keys, k);
        }
    }
    keys
}

/// Verifies the signature over `document` with the trusted keys; `Ok` means the document bytes
/// are the signed bytes.
pub fn verify_signature(document: &[u8], signature: &[u8], keys: &[&CloudAKey]) -> Result<(), TrustError> {
    if let Ok(msg) = pkcs7::parse(signature) {
        if msg.signers.len() != 1 {
            return Err(TrustError::InvalidEvidence(format!(
                "PKCS#7 signature has {} SignerInfos (exactly one expected)",
                msg.signers.len()
            )));
        }
        if msg.content != document {
            return Err(TrustError::InvalidSignature(
                "the PKCS#7 signed content is not the document sent".into(),
            ));
        }
        let signer = &msg.signers[0];
        // The key of the certificate the SignerInfo names first, then every other trusted key;
        // certificates embedded in the message are never used.
        let (named, rest): (Vec<&&CloudAKey>, Vec<&&CloudAKey>) = keys.iter().partition(|k| k.named_by(&signer.id));
        let mut last = None;
        for k in named.into_iter().chain(rest) {
            match signer.verify(&msg.content, &k.spki, true) {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
        }
        return Err(TrustError::InvalidSignature(format!(
            "PKCS#7 signature not made by a trusted cloudA signer ({})",
            last.unwrap_or_else(|| "no trusted key".into())
        )));
    }
    if keys.iter().any(|k| k.verify_raw(document, signature)) {
        Ok(())
    } else {
        Err(TrustError::InvalidSignature(
            "signature not made by a trusted cloudA signer".into(),
        ))
    }
}

/// Facts from the verified document: strings as they are, arrays as lists, numbers and booleans
/// as their JSON text; `null` and absent fields give no fact.
pub fn facts(doc: &Map<String, Value>) -> Facts {
    let mut facts = Facts::new();
    for (attr, field) in FIELDS {
        let fact = match doc.get(*field) {
            None | Some(Value::Null) | Some(Value::Object(_)) => continue,
            Some(Value::String(s)) => Fact::One(s.clone()),
            Some(Value::Array(a)) => Fact::Many(a.iter().flat_map(super::rules::claim_values).collect()),
            Some(v) => Fact::One(v.to_string()),
        };
        facts.insert(attr.to_string(), fact);
    }
    facts
}

/// Parses the verified document and applies the optional maximum age on `pendingTime`.
pub fn read_document(document: &[u8], max_age_secs: u64, now: i64) -> Result<Map<String, Value>, TrustError> {
    let doc = match serde_json::from_slice::<Value>(document) {
        Ok(Value::Object(m)) => m,
        _ => {
            return Err(TrustError::InvalidEvidence(
                "the instance identity document is not a JSON object".into(),
            ));
        }
    };
    if max_age_secs > 0 {
        let pending = doc
            .get("pendingTime")
            .and_then(Value::as_str)
            .and_then(|t| time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok())
            .ok_or_else(|| TrustError::InvalidEvidence("pendingTime is missing or not an RFC 3339 time".into()))?;
        if now.saturating_sub(pending.unix_timestamp()) > max_age_secs as i64 {
            return Err(TrustError::StaleEvidence(
                "the instance was launched longer ago than SVC_CLOUDA_IID_MAX_AGE_SECONDS".into(),
            ));
        }
    }
    Ok(doc)
}

pub async fn verify(
    cx: &VerifyCx<'_>,
    tp: &CompiledTrust,
    client: &ClientWorkloadDetails,
) -> Result<Verified, TrustError> {
    let (doc_b64, sig_b64) = evidence(client).ok_or(TrustError::NoDataFound)?;
    let document = b64_any_decode(doc_b64)
        .ok_or_else(|| TrustError::InvalidEvidence("instanceIdentityDocument is not base64".into()))?;
    let signature = b64_any_decode(sig_b64)
        .ok_or_else(|| TrustError::InvalidEvidence("instanceIdentityDocumentSignature is not base64".into()))?;
    let own = provider_keys(tp);
    let keys: Vec<&CloudAKey> = cx.platform.clouda_keys.iter().chain(own.iter()).collect();
    verify_signature(&document, &signature, &keys)?;
    let doc = read_document(&document, cx.cfg.clouda_iid_max_age_seconds, crate::clock::now_secs())?;
    Ok(Verified {
        facts: facts(&doc),
        ..Verified::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_follow_the_field_table() {
        let doc = serde_json::json!({
            "accountId": "123456789012", "billingProducts": ["bp-1"], "marketplaceProductCodes": null,
            "kernelId": null, "pendingTime": "2016-11-19T16:32:11Z", "region": "us-west-2", "version": "2017-09-30",
            "devpayProductCodes": null, "extra": "ignored"
        });
        let f = facts(doc.as_object().unwrap());
        assert_eq!(f["CloudAAccountId"], Fact::One("123456789012".into()));
        assert_eq!(f["CloudABillingProducts"], Fact::Many(vec!["bp-1".into()]));
        assert_eq!(f["CloudAPendingTime"], Fact::One("2016-11-19T16:32:11Z".into()));
        assert!(!f.contains_key("CloudAKernelId"));
        assert!(!f.contains_key("CloudAMarketplaceProductCodes"));
        assert_eq!(f.len(), 5);
    }

    #[test]
    fn maximum_age_on_pending_time() {
        let doc = br#"{"pendingTime": "2026-01-01T00:00:00Z"}"#;
        let t = 1_767_225_600; // 2026-01-01T00:00:00Z
        assert!(read_document(doc, 0, t + 10_000).is_ok(), "off by default");
        assert!(read_document(doc, 600, t + 599).is_ok());
        assert!(matches!(
            read_document(doc, 600, t + 601),
            Err(TrustError::StaleEvidence(_))
        ));
        assert!(matches!(
            read_document(br#"{"region": "x"}"#, 600, t),
            Err(TrustError::InvalidEvidence(_))
        ));
        assert!(matches!(
            read_document(b"[1]", 0, t),
            Err(TrustError::InvalidEvidence(_))
        ));
    }

    const SAMPLE_DOC: &[u8] = include_bytes!("../../tests/fixtures/clouda/sample-document.json");
    const SAMPLE_RSA2048: &str = include_str!("../../tests/fixtures/clouda/sample-rsa2048.b64");
    const SAMPLE_RAW: &str = include_str!("../../tests/fixtures/clouda/sample-signature.b64");

    fn fixture_key(name: &str) -> CloudAKey {
        let pem =
            std::fs::read_to_string(format!("{}/tests/fixtures/clouda/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let blocks = pem_blocks(&pem).unwrap();
        CloudAKey::from_cert(&blocks[0].1).unwrap()
    }

    #[test]
    fn sample_documents_verify_in_both_forms() {
        let signer = fixture_key("signer-cert.pem");
        let attacker = fixture_key("attacker-cert.pem");
        let p7 = b64_any_decode(SAMPLE_RSA2048.trim()).unwrap();
        let raw = b64_any_decode(SAMPLE_RAW.trim()).unwrap();
        for sig in [&p7, &raw] {
            assert_eq!(verify_signature(SAMPLE_DOC, sig, &[&attacker, &signer]), Ok(()));
            assert!(matches!(
                verify_signature(SAMPLE_DOC, sig, &[&attacker]),
                Err(TrustError::InvalidSignature(_))
            ));
            let mut other = SAMPLE_DOC.to_vec();
            other[20] ^= 1;
            assert!(matches!(
                verify_signature(&other, sig, &[&signer]),
                Err(TrustError::InvalidSignature(_))
            ));
        }
        let doc = read_document(SAMPLE_DOC, 0, 0).unwrap();
        assert_eq!(facts(&doc)["CloudAInstanceId"], Fact::One("i-0fedcba9876543210".into()));
    }

    #[test]
    fn certificate_info_accepts_rsa_1024_platform_certificates_only_as_certificates() {
        let first = crate::platform::CLOUDA_IID_CERTS_PEM.find("-----BEGIN").unwrap();
        let end = crate::platform::CLOUDA_IID_CERTS_PEM
            .find("-----END CERTIFICATE-----")
            .unwrap()
            + 25;
        let pem = &crate::platform::CLOUDA_IID_CERTS_PEM[first..end];
        assert!(certificate_info(pem).is_ok());
        assert!(certificate_info("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----").is_err());
    }

    mod fuzz {
        use proptest::prelude::*;

        use super::super::*;
        use super::{SAMPLE_DOC, SAMPLE_RSA2048, fixture_key};

        fn keys() -> &'static [CloudAKey] {
            static K: std::sync::OnceLock<Vec<CloudAKey>> = std::sync::OnceLock::new();
            K.get_or_init(|| {
                let cfg = crate::config::Config::from_map(&Default::default()).unwrap();
                crate::trust::anchors::PlatformTrust::load(&cfg).unwrap().clouda_keys
            })
        }

        const DOC: &str = r#"{
  "accountId" : "123456789012",
  "architecture" : "x86_64",
  "billingProducts" : null,
  "pendingTime" : "2016-11-19T16:32:11Z",
  "region" : "us-west-2",
  "version" : "2017-09-30"
}"#;

        proptest! {
            #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

            #[test]
            fn arbitrary_signatures_never_verify_or_panic(
                doc in proptest::collection::vec(any::<u8>(), 0..300),
                sig in proptest::collection::vec(any::<u8>(), 0..300),
            ) {
                let k: Vec<&CloudAKey> = keys().iter().take(4).collect();
                prop_assert!(verify_signature(&doc, &sig, &k).is_err());
                let _ = read_document(&doc, 60, 0);
            }

            #[test]
            fn mutated_pkcs7_never_panics_and_never_verifies_other_content(pos in 0usize..4096, byte in any::<u8>()) {
                static SIGNER: std::sync::OnceLock<CloudAKey> = std::sync::OnceLock::new();
                let signer = SIGNER.get_or_init(|| fixture_key("signer-cert.pem"));
                let mut p7 = b64_any_decode(SAMPLE_RSA2048.trim()).unwrap();
                let i = pos % p7.len();
                p7[i] = byte;
                if verify_signature(SAMPLE_DOC, &p7, &[signer]).is_ok() {
                    // Only changes outside the signed parts (the ignored certificate bag) may pass.
                    prop_assert_eq!(pkcs7::parse(&p7).unwrap().content, SAMPLE_DOC.to_vec());
                }
            }

            #[test]
            fn mutated_documents_parse_without_panic(pos in 0usize..DOC.len(), byte in any::<u8>(), max_age in 0u64..100) {
                let mut d = DOC.as_bytes().to_vec();
                d[pos] = byte;
                if let Ok(m) = read_document(&d, max_age, 1_500_000_000) {
                    let _ = facts(&m);
                }
            }
        }
    }
}
