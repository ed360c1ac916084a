//! X.509 helpers: PEM parsing (text, or base64 of PEM text), certificate facts for
//! `publicKeyValidation` and trust-provider secrets, and SubjectPublicKeyInfo decoding.

use der::{Decode, Encode};
use svc_api::Timestamp;
use x509_cert::Certificate;
use x509_cert::spki::SubjectPublicKeyInfoOwned;

use super::jose::KeyType;
use super::{b64std_decode, hex, sha256};

const OID_RSA: &str = "1.2.840.113549.1.1.1";
const OID_EC: &str = "1.2.840.10045.2.1";
const OID_P256: &str = "1.2.840.10045.3.1.7";
const OID_P384: &str = "1.3.132.0.34";

pub enum Spki {
    Rsa,
    Ec(KeyType, Vec<u8>),
}

/// Reads a SubjectPublicKeyInfo: RSA, or EC on P-256/P-384 (returning the point).
pub fn parse_spki(der: &[u8]) -> Result<Spki, String> {
    let spki = SubjectPublicKeyInfoOwned::from_der(der).map_err(|e| format!("not a public key: {e}"))?;
    match spki.algorithm.oid.to_string().as_str() {
        OID_RSA => Ok(Spki::Rsa),
        OID_EC => {
            let curve = spki
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.decode_as::<der::asn1::ObjectIdentifier>().ok())
                .map(|o| o.to_string())
                .ok_or("EC key without a named curve")?;
            let kt = match curve.as_str() {
                OID_P256 => KeyType::EcP256,
                OID_P384 => KeyType::EcP384,
                other => return Err(format!("unsupported curve {other}")),
            };
            let point = spki.subject_public_key.as_bytes().ok_or("malformed EC point")?.to_vec();
            Ok(Spki::Ec(kt, point))
        }
        other => Err(format!("unsupported key algorithm {other}")),
    }
}

/// PEM text as given, or decoded from base64 of PEM text (detected by the `-----BEGIN` prefix).
pub fn pem_text(input: &str) -> Result<String, String> {
    let t = input.trim();
    if t.starts_with("-----BEGIN") {
        return Ok(t.to_string());
    }
    let compact: String = t.chars().filter(|c| !c.is_whitespace()).collect();
    let bytes = b64std_decode(&compact).ok_or("neither PEM text nor base64 of PEM text")?;
    let text = String::from_utf8(bytes).map_err(|_| "base64 does not hold PEM text")?;
    if !text.trim_start().starts_with("-----BEGIN") {
        return Err("base64 does not hold PEM text".into());
    }
    Ok(text.trim().to_string())
}

/// One PEM block: (label, DER). RFC 7468's strict form (64-character lines), else its lax form:
/// any line length, whitespace anywhere in the base64 (OpenSSL writes 64, other tools 76).
pub fn pem_decode(block: &str) -> Result<(String, Vec<u8>), String> {
    let block = block.trim();
    match der::pem::decode_vec(block.as_bytes()) {
        Ok((label, der)) => Ok((label.to_string(), der)),
        Err(strict) => {
            let lax = || -> Option<(String, Vec<u8>)> {
                let rest = block.strip_prefix("-----BEGIN ")?;
                let (label, body) = rest.split_once("-----")?;
                let end = format!("-----END {label}-----");
                let body = body.strip_suffix(end.as_str())?;
                let b64: String = body.chars().filter(|c| !c.is_whitespace()).collect();
                let der = super::b64std_decode(&b64).filter(|d| !d.is_empty())?;
                Some((label.to_string(), der))
            };
            lax().ok_or_else(|| strict.to_string())
        }
    }
}

/// The CERTIFICATE blocks (DER) of a PEM bundle: the file at `path`, or `default` without one;
/// an error names the configuration key `cfg_key` (the platforms' trust anchors, upstream roots).
pub fn bundle(cfg_key: &str, path: Option<&std::path::Path>, default: &str) -> Result<Vec<Vec<u8>>, String> {
    let text = match path {
        Some(p) => std::fs::read_to_string(p).map_err(|e| format!("{cfg_key}: cannot read {}: {e}", p.display()))?,
        None => default.to_string(),
    };
    let blocks = pem_blocks(&text).map_err(|e| format!("{cfg_key}: {e}"))?;
    let certs: Vec<Vec<u8>> = blocks
        .into_iter()
        .filter(|(label, _)| label == "CERTIFICATE")
        .map(|(_, der)| der)
        .collect();
    if certs.is_empty() {
        return Err(format!("{cfg_key}: no CERTIFICATE block"));
    }
    Ok(certs)
}

/// Every PEM block of a text: (label, DER).
pub fn pem_blocks(text: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let block = &rest[start..];
        let label_end = block[11..].find("-----").ok_or("unterminated PEM header")? + 11;
        let label = block[11..label_end].to_string();
        let end_marker = format!("-----END {label}-----");
        let end = block.find(&end_marker).ok_or_else(|| format!("missing {end_marker}"))? + end_marker.len();
        let (l, der) = pem_decode(&block[..end]).map_err(|e| format!("bad PEM block {label}: {e}"))?;
        out.push((l, der));
        rest = &block[end..];
    }
    if out.is_empty() {
        return Err("no PEM block".into());
    }
    Ok(out)
}

/// Facts about one certificate.
#[derive(Clone, Debug)]
pub struct CertInfo {
    pub der: Vec<u8>,
    pub subject: String,
    pub issuer: String,
    pub serial_hex: String,
    pub not_before: Timestamp,
    pub not_after: Timestamp,
    pub spki_der: Vec<u8>,
    /// Lowercase hex SHA-256 of the DER.
    pub thumbprint: String,
}

impl CertInfo {
    pub fn valid_at(&self, now: Timestamp) -> bool {
        self.not_before <= now && now <= self.not_after
    }
}

fn time(t: &x509_cert::time::Time) -> Timestamp {
    Timestamp::from_secs(t.to_unix_duration().as_secs() as i64)
}

pub fn cert_info(der: &[u8]) -> Result<CertInfo, String> {
    let cert = Certificate::from_der(der).map_err(|e| format!("not an X.509 certificate: {e}"))?;
    let tbs = cert.tbs_certificate();
    let spki_der = tbs.subject_public_key_info().to_der().map_err(|e| e.to_string())?;
    Ok(CertInfo {
        der: der.to_vec(),
        subject: tbs.subject().to_string(),
        issuer: tbs.issuer().to_string(),
        serial_hex: hex(tbs.serial_number().as_bytes()),
        not_before: time(&tbs.validity().not_before),
        not_after: time(&tbs.validity().not_after),
        spki_der,
        thumbprint: hex(&sha256(der)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_input_forms() {
        use aws_lc_rs::encoding::AsDer;
        use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
        let spki: aws_lc_rs::encoding::PublicKeyX509Der = pair.public_key().as_der().unwrap();
        let pem = der::pem::encode_string("PUBLIC KEY", der::pem::LineEnding::LF, spki.as_ref()).unwrap();
        assert_eq!(pem_text(&pem).unwrap(), pem.trim());
        let b64 = super::super::b64std(pem.as_bytes());
        assert_eq!(pem_text(&b64).unwrap(), pem.trim());
        assert!(pem_text("garbage!").is_err());
        let blocks = pem_blocks(&format!("{pem}\n{pem}")).unwrap();
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].0, "PUBLIC KEY");
        match parse_spki(&blocks[0].1).unwrap() {
            Spki::Ec(KeyType::EcP256, point) => assert_eq!(point, pair.public_key().as_ref()),
            _ => panic!("expected a P-256 key"),
        }
    }

    #[test]
    fn pem_with_other_line_lengths_is_read() {
        let der: Vec<u8> = (0..200u8).collect();
        let b64 = super::super::b64std(&der);
        for width in [76, 40, 1000] {
            let lines: Vec<String> = b64
                .as_bytes()
                .chunks(width)
                .map(|c| String::from_utf8(c.to_vec()).unwrap())
                .collect();
            let pem = format!(
                "-----BEGIN CERTIFICATE REQUEST-----\r\n{}\r\n-----END CERTIFICATE REQUEST-----\n",
                lines.join("\r\n")
            );
            assert_eq!(
                pem_decode(&pem).unwrap(),
                ("CERTIFICATE REQUEST".to_string(), der.clone()),
                "{width}"
            );
        }
        assert!(pem_decode("-----BEGIN X-----\n!!!\n-----END X-----").is_err());
        assert!(pem_decode("-----BEGIN X-----\nAAAA\n-----END Y-----").is_err());
    }
}
