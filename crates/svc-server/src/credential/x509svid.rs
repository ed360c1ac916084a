//! `x509svid` (contract §3.5.2, §4.10): an X.509-SVID for the workload's own key. The CSR must be a
//! PEM `CERTIFICATE REQUEST` with a valid self-signature and an RSA 2048/3072/4096 or ECDSA
//! P-256/P-384 key; only its public key is used. The certificate has exactly one URI SAN (the
//! resolved SPIFFE id), `CA:false`, key usage `digitalSignature`, EKU per the flags, a random
//! 128-bit serial, `notBefore = now − 10 s` and a lifetime capped at the CA's expiry. The private
//! key never exists on the server.

use aws_lc_rs::signature::{self, ParsedPublicKey, VerificationAlgorithm};
use der::{Decode, Encode};
use rcgen::{
    CertificateParams, DistinguishedName, DnType, DnValue, ExtendedKeyUsagePurpose, IsCa, KeyUsagePurpose, SanType,
    SerialNumber,
};
use serde_json::{Map, Value, json};
use svc_api::edge::{CredentialType, EdgeCredentials};
use svc_api::{FieldError, Obj, Timestamp};
use x509_cert::request::CertReq;

use super::dynamic;
use super::types::{self, Mode, TypeSpec, cfg_str, field_str, put};
use super::{Backend, IssueCx, IssueError, Issued, Prepared};
use crate::crypto::jose::KeyType;
use crate::crypto::x509::{Spki, parse_spki};
use crate::domain::credential::CredentialProvider;

/// A CSR's public key, as rcgen needs it to write the certificate's SubjectPublicKeyInfo.
struct CsrKey {
    raw: Vec<u8>,
    alg: &'static rcgen::SignatureAlgorithm,
}

impl rcgen::PublicKeyData for CsrKey {
    fn der_bytes(&self) -> &[u8] {
        &self.raw
    }
    fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
        self.alg
    }
}

/// Parses and checks a CSR: PEM, self-signature, key type and size.
fn parse_csr(pem: &str) -> Result<CsrKey, String> {
    let (label, der) =
        crate::crypto::x509::pem_decode(pem).map_err(|_| "must be a PEM CERTIFICATE REQUEST".to_string())?;
    if label != "CERTIFICATE REQUEST" && label != "NEW CERTIFICATE REQUEST" {
        return Err(format!("must be a PEM CERTIFICATE REQUEST, not {label}"));
    }
    let req = CertReq::from_der(&der).map_err(|_| "is not a valid PKCS#10 request".to_string())?;
    let spki_der = req.info.public_key.to_der().map_err(|e| e.to_string())?;
    let raw = req
        .info
        .public_key
        .subject_public_key
        .as_bytes()
        .ok_or("malformed public key")?
        .to_vec();
    let kind = parse_spki(&spki_der)?;
    let (alg, key_bytes): (&'static rcgen::SignatureAlgorithm, Vec<u8>) = match &kind {
        Spki::Rsa => {
            let bits = aws_lc_rs::rsa::PublicKey::from_der(&spki_der)
                .map_err(|_| "RSA key rejected")?
                .modulus_len()
                * 8;
            if ![2048, 3072, 4096].contains(&bits) {
                return Err(format!("RSA keys must be 2048, 3072 or 4096 bits, not {bits}"));
            }
            (&rcgen::PKCS_RSA_SHA256, spki_der.clone())
        }
        Spki::Ec(KeyType::EcP256, point) => (&rcgen::PKCS_ECDSA_P256_SHA256, point.clone()),
        Spki::Ec(KeyType::EcP384, point) => (&rcgen::PKCS_ECDSA_P384_SHA384, point.clone()),
        Spki::Ec(..) => return Err("unsupported key".into()),
    };
    let verify: &'static dyn VerificationAlgorithm = match (req.algorithm.oid.to_string().as_str(), &kind) {
        ("1.2.840.113549.1.1.11", Spki::Rsa) => &signature::RSA_PKCS1_2048_8192_SHA256,
        ("1.2.840.113549.1.1.12", Spki::Rsa) => &signature::RSA_PKCS1_2048_8192_SHA384,
        ("1.2.840.113549.1.1.13", Spki::Rsa) => &signature::RSA_PKCS1_2048_8192_SHA512,
        ("1.2.840.10045.4.3.2", Spki::Ec(KeyType::EcP256, _)) => &signature::ECDSA_P256_SHA256_ASN1,
        ("1.2.840.10045.4.3.3", Spki::Ec(KeyType::EcP256, _)) => &signature::ECDSA_P256_SHA384_ASN1,
        ("1.2.840.10045.4.3.4", Spki::Ec(KeyType::EcP256, _)) => &signature::ECDSA_P256_SHA512_ASN1,
        ("1.2.840.10045.4.3.2", Spki::Ec(KeyType::EcP384, _)) => &signature::ECDSA_P384_SHA256_ASN1,
        ("1.2.840.10045.4.3.3", Spki::Ec(KeyType::EcP384, _)) => &signature::ECDSA_P384_SHA384_ASN1,
        ("1.2.840.10045.4.3.4", Spki::Ec(KeyType::EcP384, _)) => &signature::ECDSA_P384_SHA512_ASN1,
        (oid, _) => return Err(format!("unsupported signature algorithm {oid}")),
    };
    let info = req.info.to_der().map_err(|e| e.to_string())?;
    let sig = req.signature.as_bytes().ok_or("malformed signature")?;
    let key = ParsedPublicKey::new(verify, &key_bytes).map_err(|_| "public key rejected".to_string())?;
    key.verify_sig(&info, sig)
        .map_err(|_| "the request's self-signature does not verify".to_string())?;
    // The SPKI bit string (PKCS#1 RSAPublicKey, or the EC point) is what rcgen writes back.
    Ok(CsrKey { raw, alg })
}

/// Checks a CSR at the edge's step 3 (`certSigningRequest: <reason>`).
pub fn check_csr(pem: &str) -> Result<(), String> {
    parse_csr(pem).map(|_| ())
}

/// A CSR for a fresh, discarded P-256 key (verification of a provider without a workload).
pub fn probe_csr() -> Result<String, String> {
    let key = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
    let params = CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
    let csr = params.serialize_request(&key).map_err(|e| e.to_string())?;
    csr.pem().map_err(|e| e.to_string())
}

/// A resolved value as it enters a dynamic SPIFFE id: a `/` in it is kept escaped (`%2F`), which
/// no SPIFFE id may contain, so a value (a claim, a self-reported `ORCH_POD_NAME`) can fill a
/// segment or part of one but never add path segments; the id is then refused by
/// [`check_spiffe_id`].
pub(crate) fn spiffe_value(v: &str) -> String {
    v.replace('/', "%2F")
}

/// `spiffe://<trust-domain>/<path>` (SPIFFE ID syntax).
pub fn check_spiffe_id(id: &str) -> Result<(), String> {
    let rest = id.strip_prefix("spiffe://").ok_or("must start with spiffe://")?;
    let (td, path) = rest.split_once('/').unwrap_or((rest, ""));
    if rest.ends_with('/') {
        return Err("must not end with '/'".into());
    }
    if td.is_empty()
        || !td
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '-' | '_'))
    {
        return Err("the trust domain must be lower-case letters, digits, '.', '-' or '_'".into());
    }
    if !path.is_empty()
        && path.split('/').any(|seg| {
            seg.is_empty()
                || seg == "."
                || seg == ".."
                || !seg
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        })
    {
        return Err("path segments must be non-empty and use letters, digits, '.', '-' or '_'".into());
    }
    if id.len() > 2048 {
        return Err("must be at most 2048 characters".into());
    }
    Ok(())
}

/// Escapes a value for an RFC 4514 string (§2.4): a dynamic value put into a subject template stays
/// one attribute value, whatever it holds (`x,O=Evil` cannot add or replace an attribute).
pub fn escape_dn_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let last = v.chars().count().saturating_sub(1);
    for (i, c) in v.chars().enumerate() {
        let edge_space = c == ' ' && (i == 0 || i == last);
        if matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';' | '=') || edge_space || (i == 0 && c == '#') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

const OID_STREET: [u64; 4] = [2, 5, 4, 9];
const OID_DC: [u64; 7] = [0, 9, 2342, 19_200_300, 100, 1, 25];
const OID_UID: [u64; 7] = [0, 9, 2342, 19_200_300, 100, 1, 1];

/// An attribute type given as a dotted OID (`2.5.4.5`; RFC 4514 §3 `numericoid`).
fn dotted_oid(s: &str) -> Option<Vec<u64>> {
    let arcs: Vec<u64> = s
        .split('.')
        .map(|a| {
            (!a.is_empty() && a.bytes().all(|b| b.is_ascii_digit()) && (a == "0" || !a.starts_with('0')))
                .then(|| a.parse().ok())
                .flatten()
        })
        .collect::<Option<_>>()?;
    (arcs.len() >= 2 && arcs[0] <= 2 && (arcs[0] == 2 || arcs[1] < 40)).then_some(arcs)
}

/// An RFC 4514 subject (`CN=x,O=y`) as a certificate name (RDNs in reverse textual order). Each
/// attribute type at most once: the certificate library keeps one value per type, and a second
/// value silently dropped would be a subject other than the one configured.
pub fn parse_subject(s: &str) -> Result<DistinguishedName, String> {
    let mut dn = DistinguishedName::new();
    let mut parts: Vec<String> = Vec::new();
    let (mut cur, mut escaped) = (String::new(), false);
    for c in s.chars() {
        match (escaped, c) {
            (true, c) => {
                cur.push(c);
                escaped = false;
            }
            (false, '\\') => escaped = true,
            (false, ',') => parts.push(std::mem::take(&mut cur)),
            // RFC 4514's multi-valued RDN; the certificate library writes one attribute per RDN,
            // so `CN=a+OU=b` would become a CN of "a+OU=b": refused (`\+` is a literal '+').
            (false, '+') => {
                return Err("multi-valued RDNs ('+') are not supported; write '\\+' for a literal '+'".into());
            }
            (false, c) => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        parts.push(cur);
    }
    for part in parts.iter().rev() {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("'{part}' is not KEY=value"))?;
        let ty = match k.trim().to_ascii_uppercase().as_str() {
            "CN" => DnType::CommonName,
            "O" => DnType::OrganizationName,
            "OU" => DnType::OrganizationalUnitName,
            "C" => DnType::CountryName,
            "L" => DnType::LocalityName,
            "ST" => DnType::StateOrProvinceName,
            "STREET" => DnType::CustomDnType(OID_STREET.to_vec()),
            "DC" => DnType::CustomDnType(OID_DC.to_vec()),
            "UID" => DnType::CustomDnType(OID_UID.to_vec()),
            other => match dotted_oid(other) {
                Some(arcs) => DnType::from_oid(&arcs),
                None => {
                    return Err(format!(
                        "unsupported attribute {other} (CN, O, OU, C, L, ST, STREET, DC, UID or a dotted OID)"
                    ));
                }
            },
        };
        if dn.get(&ty).is_some() {
            return Err(format!(
                "attribute {} appears more than once (one value per attribute type)",
                k.trim().to_ascii_uppercase()
            ));
        }
        // domainComponent is an IA5String (RFC 4519); every other value is UTF-8.
        if ty == DnType::CustomDnType(OID_DC.to_vec()) {
            let v = rcgen::string::Ia5String::try_from(v.trim()).map_err(|_| "DC must be ASCII".to_string())?;
            dn.push(ty, DnValue::Ia5String(v));
            continue;
        }
        dn.push(ty, v.trim());
    }
    Ok(dn)
}

#[derive(Debug)]
pub struct X509Svid {
    spiffe_id: String,
    spiffe_dynamic: bool,
    subject: Option<String>,
    subject_dynamic: bool,
    client_auth: bool,
    server_auth: bool,
    lifetime: i64,
}

impl X509Svid {
    pub fn prepare(&self, cx: &IssueCx<'_>) -> Result<Prepared, String> {
        let mut p = Prepared::default();
        let id = if self.spiffe_dynamic {
            dynamic::resolve_with(&self.spiffe_id, cx.values, spiffe_value)?
        } else {
            self.spiffe_id.clone()
        };
        check_spiffe_id(&id).map_err(|e| format!("{} ({e})", self.spiffe_id))?;
        p.0.insert("spiffeId".into(), id);
        if let Some(s) = &self.subject {
            let v = if self.subject_dynamic {
                dynamic::resolve_with(s, cx.values, escape_dn_value)?
            } else {
                s.clone()
            };
            parse_subject(&v).map_err(|e| format!("{s} ({e})"))?;
            p.0.insert("subject".into(), v);
        }
        Ok(p)
    }

    pub fn issue(&self, prepared: &Prepared, cx: &IssueCx<'_>) -> Result<Issued, IssueError> {
        let csr = cx
            .csr
            .ok_or_else(|| IssueError::new("no certificate signing request"))?;
        let key = parse_csr(csr).map_err(IssueError::new)?;
        let ca = cx.svc.ca;
        let now = crate::clock::now_secs();
        let not_after = (now + self.lifetime).min(ca.not_after);
        let mut params = CertificateParams::default();
        params.distinguished_name = match prepared.get("subject") {
            Some(s) => parse_subject(s).map_err(IssueError::new)?,
            None => DistinguishedName::new(),
        };
        let uri = rcgen::string::Ia5String::try_from(prepared.get("spiffeId").unwrap_or_default())
            .map_err(|e| IssueError::new(e.to_string()))?;
        params.subject_alt_names = vec![SanType::URI(uri)];
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = [
            (self.client_auth, ExtendedKeyUsagePurpose::ClientAuth),
            (self.server_auth, ExtendedKeyUsagePurpose::ServerAuth),
        ]
        .into_iter()
        .filter_map(|(on, p)| on.then_some(p))
        .collect();
        let mut serial = crate::crypto::random_bytes::<16>();
        serial[0] &= 0x7f;
        serial[0] |= 0x01;
        params.serial_number = Some(SerialNumber::from_slice(&serial));
        params.not_before = Timestamp::from_secs(now - 10).to_offset();
        params.not_after = Timestamp::from_secs(not_after).to_offset();
        params.use_authority_key_identifier_extension = true;
        let cert = params
            .signed_by(&key, &ca.issuer)
            .map_err(|e| IssueError::new(format!("signing failed: {e}")))?;
        Ok(Issued::Credential {
            credential_type: CredentialType::X509Svid,
            data: EdgeCredentials(vec![("certificateChain", Some(cert.pem() + &ca.chain_pem))]),
            expires_at: Some(Timestamp::from_secs(not_after)),
        })
    }
}

fn parse(o: &mut Obj, mode: Mode) -> Result<Map<String, Value>, FieldError> {
    let mut m = Map::new();
    let id = field_str(o, mode, "spiffeId", 1, 2048)?;
    let id_type = o.opt_enum("spiffeIdType", &["literal", "dynamic"])?;
    // In a PATCH without the `…Type` field the stored type decides; the merged re-check catches it.
    if let Some(i) = id.as_ref().filter(|_| mode == Mode::Full || id_type.is_some()) {
        if id_type.as_deref() == Some("dynamic") {
            dynamic::check_template(i).map_err(|e| FieldError::new(o.path("spiffeId"), e))?;
        } else {
            check_spiffe_id(i).map_err(|e| FieldError::new(o.path("spiffeId"), e))?;
        }
    }
    put(&mut m, "spiffeId", id);
    put(&mut m, "spiffeIdType", id_type);
    let subject = o.opt_str_len("subject", 0, 1024)?;
    let subject_type = o.opt_enum("subjectType", &["literal", "dynamic"])?;
    if let Some(s) = subject
        .as_ref()
        .filter(|_| mode == Mode::Full || subject_type.is_some())
    {
        if subject_type.as_deref() == Some("dynamic") {
            dynamic::check_template(s).map_err(|e| FieldError::new(o.path("subject"), e))?;
        } else {
            parse_subject(s).map_err(|e| FieldError::new(o.path("subject"), e))?;
        }
    }
    put(&mut m, "subject", subject);
    put(&mut m, "subjectType", subject_type);
    // The only usage is the default one: nothing to store (`[]` and repeats read as it).
    if let Some(usages) = o.opt_str_list("keyUsage")?
        && usages.iter().any(|u| u != "digitalSignature")
    {
        return Err(FieldError::new(
            o.path("keyUsage"),
            "only digitalSignature is supported",
        ));
    }
    put(&mut m, "idkpClientAuth", o.opt_bool("idkpClientAuth")?);
    put(&mut m, "idkpServerAuth", o.opt_bool("idkpServerAuth")?);
    Ok(m)
}

fn present(_: &CredentialProvider, _: &crate::config::Config, out: &mut Map<String, Value>) {
    out.entry("spiffeIdType").or_insert(json!("literal"));
    out.entry("subject").or_insert(Value::Null);
    out.entry("subjectType").or_insert(Value::Null);
    out.entry("keyUsage").or_insert(json!(["digitalSignature"]));
    out.entry("idkpClientAuth").or_insert(Value::Bool(true));
    out.entry("idkpServerAuth").or_insert(Value::Bool(false));
}

fn compile(p: &CredentialProvider) -> Backend {
    let c = &p.config;
    let Some(id) = cfg_str(c, "spiffeId") else {
        return Backend::Broken("spiffeId missing".into());
    };
    Backend::X509Svid(X509Svid {
        spiffe_id: id.to_string(),
        spiffe_dynamic: cfg_str(c, "spiffeIdType") == Some("dynamic"),
        subject: cfg_str(c, "subject").filter(|s| !s.is_empty()).map(str::to_string),
        subject_dynamic: cfg_str(c, "subjectType") == Some("dynamic"),
        client_auth: c.get("idkpClientAuth").and_then(Value::as_bool).unwrap_or(true),
        server_auth: c.get("idkpServerAuth").and_then(Value::as_bool).unwrap_or(false),
        lifetime: p.lifetime_time_span_seconds.max(900) as i64,
    })
}

pub const SPEC: TypeSpec = TypeSpec {
    name: "x509svid",
    credential_type: |_| CredentialType::X509Svid,
    secret_fields: &[],
    secret_destination: &[],
    required_secrets: &[],
    ro_fields: &[],
    lifetime: Some((900, 124_416_000, 3600)),
    parse,
    check: types::no_check,
    complete: types::no_complete,
    present,
    compile,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// A dynamic value is one attribute value: it cannot add, replace or split attributes.
    #[test]
    fn dynamic_subject_values_cannot_inject_attributes() {
        let team = "x,O=Evil Corp+CN=y\\";
        let subject = format!("CN={},O=Acme", escape_dn_value(team));
        let dn = parse_subject(&subject).unwrap();
        match dn.get(&DnType::CommonName) {
            Some(rcgen::DnValue::Utf8String(v)) => assert_eq!(v, team),
            other => panic!("{other:?}"),
        }
        match dn.get(&DnType::OrganizationName) {
            Some(rcgen::DnValue::Utf8String(v)) => assert_eq!(v, "Acme"),
            other => panic!("{other:?}"),
        }
        assert_eq!(escape_dn_value("#a b "), "\\#a b\\ ");
    }

    #[test]
    fn subjects_take_every_rfc4514_attribute_and_dotted_oids() {
        let dn = parse_subject("CN=svc,STREET=1 Main St,DC=acme,UID=u1,2.5.4.5=42").unwrap();
        match parse_subject("CN=a\\+b").unwrap().get(&DnType::CommonName) {
            Some(DnValue::Utf8String(v)) => assert_eq!(v, "a+b"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            dn.get(&DnType::CustomDnType(OID_DC.to_vec())),
            Some(&DnValue::Ia5String("acme".try_into().unwrap()))
        );
        assert_eq!(
            dn.get(&DnType::CustomDnType(vec![2, 5, 4, 5])),
            Some(&DnValue::Utf8String("42".into()))
        );
        assert_eq!(dn.iter().count(), 5);
        // A dotted OID is the same attribute as its short name.
        let e = parse_subject("CN=a,2.5.4.3=b").unwrap_err();
        assert!(e.contains("more than once"), "{e}");
        for bad in ["X=1", "1=a", "2.5.04.3=a", "3.1=a", "2..5=a", "DC=é", "CN=x+OU=z"] {
            assert!(parse_subject(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_repeated_subject_attribute_is_refused_not_dropped() {
        let e = parse_subject("CN=svc,OU=team-a,OU=team-b").unwrap_err();
        assert!(e.contains("OU appears more than once"), "{e}");
        assert!(parse_subject("CN=svc,OU=team-a,O=acme").is_ok());
    }

    #[test]
    fn spiffe_ids_end_without_a_slash() {
        assert!(check_spiffe_id("spiffe://acme.test/a/b").is_ok());
        assert!(check_spiffe_id("spiffe://acme.test").is_ok());
        for bad in ["spiffe://acme.test/", "spiffe://acme.test/a/", "spiffe://acme.test//a"] {
            assert!(check_spiffe_id(bad).is_err(), "{bad}");
        }
    }
}
