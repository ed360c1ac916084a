//! The X.509 certificate authority that signs `x509svid` credentials (contract §3.28, §4.10): a
//! self-signed ECDSA P-256 CA valid ten years, generated at first start and stored sealed (shared by
//! every node), or loaded from `SVC_X509_CA_CERT` / `SVC_X509_CA_KEY`.

use der::asn1::{Ia5StringRef, PrintableStringRef, Utf8StringRef};
use der::{Decode, Tag, Tagged};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, DnValue, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use serde_json::{Value, json};
use x509_cert::Certificate;

use crate::config::Config;
use crate::crypto::aead::Cipher;
use crate::store::Store;

const META_KEY: &str = "x509_ca";

pub struct Ca {
    pub cert_pem: String,
    /// PEM certificates that follow an issued leaf: empty for a self-signed CA, else the CA
    /// certificate and its intermediates.
    pub chain_pem: String,
    pub issuer: Issuer<'static, KeyPair>,
    /// The CA's `notAfter` (Unix seconds): issued certificates never outlive it.
    pub not_after: i64,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ca(key ***)")
    }
}

fn generate() -> Result<(String, String), String> {
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(|e| e.to_string())?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "Svc");
    dn.push(DnType::CommonName, "Svc X.509-SVID CA");
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::minutes(5);
    params.not_after = ten_years_after(now);
    let cert = params.self_signed(&key).map_err(|e| e.to_string())?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// The same instant ten calendar years later (§3.28: 10-year validity); 29 February becomes
/// 28 February when the year has none.
fn ten_years_after(t: time::OffsetDateTime) -> time::OffsetDateTime {
    let year = t.year() + 10;
    t.replace_year(year)
        .or_else(|_| t.replace_day(28).and_then(|d| d.replace_year(year)))
        .unwrap_or(t + time::Duration::days(3652))
}

/// A certificate's subject as rcgen's name, attribute by attribute with the same string types,
/// so certificates issued under it name their issuer exactly as the CA names itself.
fn subject_of(cert: &Certificate) -> Result<DistinguishedName, String> {
    let mut dn = DistinguishedName::new();
    for rdn in cert.tbs_certificate().subject().iter_rdn() {
        for atv in rdn.iter() {
            let arcs: Vec<u64> = atv.oid.arcs().map(u64::from).collect();
            let v = &atv.value;
            let value = match v.tag() {
                Tag::PrintableString => {
                    let s = PrintableStringRef::try_from(v).map_err(|e| e.to_string())?;
                    DnValue::PrintableString(
                        rcgen::string::PrintableString::try_from(s.as_str()).map_err(|e| e.to_string())?,
                    )
                }
                Tag::Ia5String => {
                    let s = Ia5StringRef::try_from(v).map_err(|e| e.to_string())?;
                    DnValue::Ia5String(rcgen::string::Ia5String::try_from(s.as_str()).map_err(|e| e.to_string())?)
                }
                _ => DnValue::Utf8String(
                    Utf8StringRef::try_from(v)
                        .map_err(|e| e.to_string())?
                        .as_str()
                        .to_string(),
                ),
            };
            dn.push(DnType::CustomDnType(arcs), value);
        }
    }
    Ok(dn)
}

/// The PEM `CERTIFICATE` blocks of a bundle, in order.
fn pem_blocks(bundle: &str) -> Vec<String> {
    const END: &str = "-----END CERTIFICATE-----";
    let mut out = Vec::new();
    let mut rest = bundle;
    while let Some(start) = rest.find("-----BEGIN CERTIFICATE-----") {
        let Some(len) = rest[start..].find(END) else { break };
        out.push(format!("{}\n", &rest[start..start + len + END.len()]));
        rest = &rest[start + len + END.len()..];
    }
    out
}

fn parse_cert(pem: &str) -> Result<Certificate, String> {
    let (_, der) = der::pem::decode_vec(pem.trim().as_bytes()).map_err(|e| format!("CA certificate: {e}"))?;
    Certificate::from_der(&der).map_err(|e| format!("CA certificate: {e}"))
}

/// The certificate's SubjectKeyIdentifier, if it has one.
fn subject_key_id(c: &Certificate) -> Option<Vec<u8>> {
    use der::oid::AssociatedOid;
    use x509_cert::ext::pkix::SubjectKeyIdentifier;
    let ext = c
        .tbs_certificate()
        .extensions()?
        .iter()
        .find(|e| e.extn_id == SubjectKeyIdentifier::OID)?;
    let ski = SubjectKeyIdentifier::from_der(ext.extn_value.as_bytes()).ok()?;
    Some(ski.0.as_bytes().to_vec())
}

fn self_signed(c: &Certificate) -> bool {
    c.tbs_certificate().subject() == c.tbs_certificate().issuer()
}

/// `cert_pem` is the CA certificate, optionally followed by its own chain. When the CA is not a
/// self-signed root, it and its intermediates (never a self-signed root) follow every leaf.
fn build(cert_pem: &str, key_pem: &str) -> Result<Ca, String> {
    let key = KeyPair::from_pem(key_pem).map_err(|e| format!("CA key: {e}"))?;
    let blocks = pem_blocks(cert_pem);
    let first = blocks.first().ok_or("CA certificate: no PEM CERTIFICATE block")?;
    let cert = parse_cert(first)?;
    // A key that is not the certificate's would sign leaves no verifier accepts (§5.5: an invalid
    // value stops the start).
    let cert_key = cert
        .tbs_certificate()
        .subject_public_key_info()
        .subject_public_key
        .raw_bytes();
    if cert_key != rcgen::PublicKeyData::der_bytes(&key) {
        return Err("the CA key is not the key of the CA certificate".into());
    }
    let mut chain_pem = String::new();
    if !self_signed(&cert) {
        for b in &blocks {
            if !self_signed(&parse_cert(b)?) {
                chain_pem.push_str(b);
            }
        }
    }
    let cert_pem = first.clone();
    let not_after = cert.tbs_certificate().validity().not_after.to_unix_duration().as_secs() as i64;
    let mut params = CertificateParams::default();
    params.distinguished_name = subject_of(&cert)?;
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    // Leaves name the CA by its own subject key identifier (verifiers match AKI against it).
    if let Some(ski) = subject_key_id(&cert) {
        params.key_identifier_method = rcgen::KeyIdMethod::PreSpecified(ski);
    }
    Ok(Ca {
        cert_pem,
        chain_pem,
        issuer: Issuer::new(params, key),
        not_after,
    })
}

/// The CA of `SVC_X509_CA_CERT` / `SVC_X509_CA_KEY`, when both are set.
fn configured(cfg: &Config) -> Option<Result<Ca, String>> {
    let (c, k) = (cfg.x509_ca_cert.as_ref()?, cfg.x509_ca_key.as_ref()?);
    Some((|| {
        let cert = std::fs::read_to_string(c).map_err(|e| format!("SVC_X509_CA_CERT: {e}"))?;
        let key = std::fs::read_to_string(k).map_err(|e| format!("SVC_X509_CA_KEY: {e}"))?;
        build(&cert, &key).map_err(|e| format!("SVC_X509_CA_CERT/SVC_X509_CA_KEY: {e}"))
    })())
}

/// Checks the configured CA files as `serve` will load them (`svc config check`).
pub fn check_configured(cfg: &Config) -> Result<(), String> {
    configured(cfg).transpose().map(|_| ())
}

/// Loads (or on first start creates and stores) the CA.
pub async fn load(cfg: &Config, store: &Store, cipher: &Cipher) -> Result<Ca, String> {
    if let Some(ca) = configured(cfg) {
        return ca;
    }
    let sealed = match store.meta_get(META_KEY).await.map_err(|e| e.to_string())? {
        Some(s) => s,
        None => {
            let (cert, key) = generate()?;
            let sealed = cipher.seal(
                json!({"cert": cert, "key": key}).to_string().as_bytes(),
                &crate::store::sealed::meta_label(META_KEY),
            );
            // First writer wins when several nodes start together.
            store.meta_init(META_KEY, &sealed).await.map_err(|e| e.to_string())?
        }
    };
    let plain = cipher
        .open(&sealed, &crate::store::sealed::meta_label(META_KEY))
        .map_err(|e| format!("X.509 CA: {e}"))?;
    let v: Value = serde_json::from_slice(&plain).map_err(|e| e.to_string())?;
    build(
        v["cert"].as_str().unwrap_or_default(),
        v["key"].as_str().unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    #[test]
    fn the_ca_is_valid_for_ten_calendar_years() {
        assert_eq!(
            super::ten_years_after(datetime!(2026-11-25 10:00 UTC)),
            datetime!(2036-11-25 10:00 UTC)
        );
        assert_eq!(
            super::ten_years_after(datetime!(2028-02-29 10:00 UTC)),
            datetime!(2038-02-28 10:00 UTC)
        );
    }
}
