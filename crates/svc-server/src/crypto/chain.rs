//! A small X.509 path builder for cloudB's attested-document signers (contract §4.5, §5.5): from
//! one leaf to configured roots through candidate intermediates, every signature verified with
//! its issuer's key on aws-lc, every certificate valid at the given time, issuers marked as CAs
//! (with `keyCertSign` and path-length limits honoured). Names are compared by their DER bytes.

use aws_lc_rs::signature::{self, UnparsedPublicKey, VerificationAlgorithm};
use der::asn1::ObjectIdentifier;
use der::{Decode, Encode, Reader};
use x509_cert::Certificate;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{AuthorityInfoAccessSyntax, BasicConstraints, KeyUsage, SubjectAltName};

use super::x509::{Spki, parse_spki};

const OID_SHA256_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");
const OID_SHA384_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.12");
const OID_SHA512_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.13");
const OID_ECDSA_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.2");
const OID_ECDSA_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.3");
const OID_CA_ISSUERS: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.48.2");

/// Longest chain searched (leaf + intermediates + root).
const MAX_PATH: usize = 6;

/// The facts of one certificate that path building and name checks need.
#[derive(Clone, Debug)]
pub struct Cert {
    pub der: Vec<u8>,
    /// DER of the subject and issuer Names.
    pub subject: Vec<u8>,
    pub issuer: Vec<u8>,
    pub serial: Vec<u8>,
    pub not_before: i64,
    pub not_after: i64,
    pub spki: Vec<u8>,
    /// `basicConstraints`: (cA, pathLenConstraint), when present.
    pub basic_constraints: Option<(bool, Option<u8>)>,
    /// `keyUsage` keyCertSign, when the extension is present.
    pub key_cert_sign: Option<bool>,
    pub v1: bool,
    /// The raw `tbsCertificate` (what the issuer signed).
    tbs: Vec<u8>,
    sig_alg: ObjectIdentifier,
    signature: Vec<u8>,
    pub dns_names: Vec<String>,
    pub common_name: Option<String>,
    /// AIA caIssuers URIs.
    pub ca_issuers: Vec<String>,
}

fn raw_tbs(der: &[u8]) -> Result<Vec<u8>, String> {
    let mut r = der::SliceReader::new(der).map_err(|e| e.to_string())?;
    let _outer = der::Header::decode(&mut r).map_err(|e| e.to_string())?;
    Ok(r.tlv_bytes().map_err(|e| e.to_string())?.to_vec())
}

impl Cert {
    pub fn parse(der: &[u8]) -> Result<Cert, String> {
        let cert = Certificate::from_der(der).map_err(|e| format!("not an X.509 certificate: {e}"))?;
        let tbs = cert.tbs_certificate();
        let ext_err = |name: &str, e: der::Error| format!("malformed {name} extension: {e}");
        let basic_constraints = tbs
            .get_extension::<BasicConstraints>()
            .map_err(|e| ext_err("basicConstraints", e))?
            .map(|(_, bc)| (bc.ca, bc.path_len_constraint));
        let key_cert_sign = tbs
            .get_extension::<KeyUsage>()
            .map_err(|e| ext_err("keyUsage", e))?
            .map(|(_, ku)| ku.key_cert_sign());
        let mut dns_names = Vec::new();
        if let Some((_, san)) = tbs
            .get_extension::<SubjectAltName>()
            .map_err(|e| ext_err("subjectAltName", e))?
        {
            for n in san.0 {
                if let GeneralName::DnsName(d) = n {
                    dns_names.push(d.to_string());
                }
            }
        }
        let mut ca_issuers = Vec::new();
        if let Some((_, aia)) = tbs
            .get_extension::<AuthorityInfoAccessSyntax>()
            .map_err(|e| ext_err("authorityInfoAccess", e))?
        {
            for ad in aia.0 {
                if ad.access_method == OID_CA_ISSUERS
                    && let GeneralName::UniformResourceIdentifier(u) = ad.access_location
                {
                    ca_issuers.push(u.to_string());
                }
            }
        }
        let common_name = tbs
            .subject()
            .common_name()
            .ok()
            .flatten()
            .map(|cn| cn.value().into_owned());
        Ok(Cert {
            der: der.to_vec(),
            subject: tbs.subject().to_der().map_err(|e| e.to_string())?,
            issuer: tbs.issuer().to_der().map_err(|e| e.to_string())?,
            serial: tbs.serial_number().as_bytes().to_vec(),
            not_before: tbs.validity().not_before.to_unix_duration().as_secs() as i64,
            not_after: tbs.validity().not_after.to_unix_duration().as_secs() as i64,
            spki: tbs.subject_public_key_info().to_der().map_err(|e| e.to_string())?,
            basic_constraints,
            key_cert_sign,
            v1: tbs.version() == x509_cert::certificate::Version::V1,
            tbs: raw_tbs(der)?,
            sig_alg: cert.signature_algorithm().oid,
            signature: cert
                .signature()
                .as_bytes()
                .ok_or("certificate signature has unused bits")?
                .to_vec(),
            dns_names,
            common_name,
            ca_issuers,
        })
    }

    pub fn valid_at(&self, now: i64) -> bool {
        self.not_before <= now && now <= self.not_after
    }

    /// Whether `issuer`'s key verifies this certificate's signature (RSA PKCS#1 v1.5 SHA-256/384/512
    /// with 2048+ bit keys, ECDSA P-256/P-384 with SHA-256/384).
    pub fn signed_by(&self, issuer: &Cert) -> bool {
        let Ok(spki) = parse_spki(&issuer.spki) else {
            return false;
        };
        let (alg, key): (&'static dyn VerificationAlgorithm, &[u8]) = match (spki, self.sig_alg) {
            (Spki::Rsa, OID_SHA256_RSA) => (&signature::RSA_PKCS1_2048_8192_SHA256, &issuer.spki),
            (Spki::Rsa, OID_SHA384_RSA) => (&signature::RSA_PKCS1_2048_8192_SHA384, &issuer.spki),
            (Spki::Rsa, OID_SHA512_RSA) => (&signature::RSA_PKCS1_2048_8192_SHA512, &issuer.spki),
            (Spki::Ec(kt, ref point), oid) => {
                use super::jose::KeyType;
                let alg: &'static dyn VerificationAlgorithm = match (kt, oid) {
                    (KeyType::EcP256, OID_ECDSA_SHA256) => &signature::ECDSA_P256_SHA256_ASN1,
                    (KeyType::EcP256, OID_ECDSA_SHA384) => &signature::ECDSA_P256_SHA384_ASN1,
                    (KeyType::EcP384, OID_ECDSA_SHA256) => &signature::ECDSA_P384_SHA256_ASN1,
                    (KeyType::EcP384, OID_ECDSA_SHA384) => &signature::ECDSA_P384_SHA384_ASN1,
                    _ => return false,
                };
                return UnparsedPublicKey::new(alg, point)
                    .verify(&self.tbs, &self.signature)
                    .is_ok();
            }
            _ => return false,
        };
        UnparsedPublicKey::new(alg, key)
            .verify(&self.tbs, &self.signature)
            .is_ok()
    }

    /// The names checked against allowed domains: DNS SANs, or the CN when there is no DNS SAN.
    pub fn dns_identities(&self) -> Vec<String> {
        if self.dns_names.is_empty() {
            self.common_name.iter().cloned().collect()
        } else {
            self.dns_names.clone()
        }
    }
}

/// Whether `name` equals `domain` or is a subdomain of it (ASCII case-insensitive, trailing dots
/// ignored).
pub fn within_domain(name: &str, domain: &str) -> bool {
    let n = name.trim_end_matches('.').to_ascii_lowercase();
    let d = domain.trim().trim_end_matches('.').to_ascii_lowercase();
    !d.is_empty() && (n == d || n.ends_with(&format!(".{d}")))
}

/// Why no path was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathError {
    pub reason: String,
    /// Certificates (DER) on the explored paths whose issuer was found nowhere: fetching their
    /// AIA caIssuers may help.
    pub missing_issuer_of: Vec<Vec<u8>>,
}

struct Search<'a> {
    pool: &'a [Cert],
    roots: &'a [Cert],
    now: i64,
    reason: Option<String>,
    missing: Vec<Vec<u8>>,
}

impl<'a> Search<'a> {
    fn fail(&mut self, r: String) {
        self.reason.get_or_insert(r);
    }

    /// Whether `issuer` may have issued `child` with `below` intermediates under it already.
    fn issuer_ok(&mut self, child: &Cert, issuer: &Cert, below: usize, anchor: bool) -> bool {
        match issuer.basic_constraints {
            Some((true, path_len)) => {
                if path_len.is_some_and(|p| (p as usize) < below) {
                    self.fail("path length constraint exceeded".into());
                    return false;
                }
            }
            // A v1 root carries no extensions: as a configured anchor it is trusted as a CA.
            None if anchor && issuer.v1 => {}
            _ => {
                self.fail("an issuing certificate is not a CA".into());
                return false;
            }
        }
        if issuer.key_cert_sign == Some(false) {
            self.fail("an issuing certificate may not sign certificates".into());
            return false;
        }
        if !issuer.valid_at(self.now) {
            self.fail("an issuing certificate is expired or not yet valid".into());
            return false;
        }
        if !child.signed_by(issuer) {
            self.fail("a certificate signature does not verify with its issuer's key".into());
            return false;
        }
        true
    }

    /// Depth-first: `path` ends with the certificate whose issuer is sought.
    fn extend(&mut self, path: &mut Vec<&'a Cert>) -> bool {
        let child = *path.last().expect("path is never empty");
        let below = path.len() - 1;
        let mut any_named = false;
        for root in self.roots {
            if root.subject == child.issuer {
                any_named = true;
                if self.issuer_ok(child, root, below, true) {
                    path.push(root);
                    return true;
                }
            }
        }
        if path.len() + 1 >= MAX_PATH {
            self.fail("chain too long".into());
            return false;
        }
        for cand in self.pool {
            if cand.subject != child.issuer || path.iter().any(|p| p.der == cand.der) {
                continue;
            }
            any_named = true;
            if self.issuer_ok(child, cand, below, false) {
                path.push(cand);
                if self.extend(path) {
                    return true;
                }
                path.pop();
            }
        }
        if !any_named {
            self.fail("no issuer certificate found for the chain".into());
            if !self.missing.contains(&child.der) {
                self.missing.push(child.der.clone());
            }
        }
        false
    }
}

/// A path `leaf, intermediates…, root` valid at `now`, or why there is none.
pub fn build_path<'a>(
    leaf: &'a Cert,
    pool: &'a [Cert],
    roots: &'a [Cert],
    now: i64,
) -> Result<Vec<&'a Cert>, PathError> {
    if !leaf.valid_at(now) {
        return Err(PathError {
            reason: "the signer certificate is expired or not yet valid".into(),
            missing_issuer_of: vec![],
        });
    }
    let mut s = Search {
        pool,
        roots,
        now,
        reason: None,
        missing: Vec::new(),
    };
    let mut path = vec![leaf];
    if s.extend(&mut path) {
        return Ok(path);
    }
    Err(PathError {
        reason: s.reason.unwrap_or_else(|| "no chain to a trusted root".into()),
        missing_issuer_of: s.missing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_matching() {
        assert!(within_domain("metadata.azure.com", "metadata.azure.com"));
        assert!(within_domain("EastUS.Metadata.Azure.com.", "metadata.azure.com"));
        assert!(!within_domain("evilmetadata.azure.com", "metadata.azure.com"));
        assert!(!within_domain("metadata.azure.com.evil", "metadata.azure.com"));
        assert!(!within_domain("x", ""));
    }

    #[test]
    fn compiled_roots_parse() {
        let text = crate::platform::CLOUDB_ROOTS_PEM;
        let blocks = crate::crypto::x509::pem_blocks(text).unwrap();
        assert_eq!(blocks.len(), 5);
        for (_, der) in &blocks {
            let c = Cert::parse(der).unwrap();
            assert!(c.basic_constraints.is_some_and(|b| b.0) || c.v1, "root is a CA");
        }
    }
}
