//! PKCS#7 / CMS SignedData as the platforms emit it (cloudA `rsa2048`, cloudB attested documents):
//! BER normalised to DER (cloudA's documents use indefinite lengths and a chunked OCTET STRING),
//! parsed with `cms`, and one SignerInfo verified against a key the caller chose. Nothing here
//! decides which key to trust: the caller passes it (contract §4.5 "actual signer").

use aws_lc_rs::digest;
use aws_lc_rs::signature::{self, RsaParameters, UnparsedPublicKey};
use cms::cert::CertificateChoices;
use cms::content_info::ContentInfo;
use cms::signed_data::{SignedData, SignerIdentifier};
use der::asn1::{ObjectIdentifier, OctetString};
use der::{Decode, Encode};

const OID_SIGNED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.2");
const OID_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.1");
const OID_CONTENT_TYPE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.3");
const OID_MESSAGE_DIGEST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.4");
const OID_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.1");
const OID_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.2");
const OID_SHA512: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.3");
const OID_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const OID_SHA256_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");
const OID_SHA384_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.12");
const OID_SHA512_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.13");

/// Nesting allowed while normalising BER (real documents use fewer than 10 levels).
const MAX_DEPTH: usize = 32;

// ---- BER → DER ---------------------------------------------------------------------------------

struct Header {
    tag: Vec<u8>,
    constructed: bool,
    /// `None` = indefinite length.
    len: Option<usize>,
    header_len: usize,
}

fn read_header(input: &[u8]) -> Result<Header, String> {
    let first = *input.first().ok_or("truncated: missing tag")?;
    let mut i = 1;
    if first & 0x1f == 0x1f {
        // High tag number: base-128 continuation bytes (at most 4).
        loop {
            let b = *input.get(i).ok_or("truncated tag")?;
            i += 1;
            if b & 0x80 == 0 {
                break;
            }
            if i > 5 {
                return Err("tag number too large".into());
            }
        }
    }
    let tag = input[..i].to_vec();
    let l = *input.get(i).ok_or("truncated: missing length")?;
    i += 1;
    let len = match l {
        0x80 => None,
        n if n < 0x80 => Some(n as usize),
        0xff => return Err("invalid length octet".into()),
        n => {
            let count = (n & 0x7f) as usize;
            if count > 4 {
                return Err("length too large".into());
            }
            let mut v: usize = 0;
            for _ in 0..count {
                v = (v << 8) | *input.get(i).ok_or("truncated length")? as usize;
                i += 1;
            }
            Some(v)
        }
    };
    Ok(Header {
        constructed: first & 0x20 != 0,
        tag,
        len,
        header_len: i,
    })
}

fn push_len(out: &mut Vec<u8>, n: usize) {
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes = n.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
}

/// Normalises one TLV at the start of `input`; returns the DER bytes and how much was read.
fn normalize(input: &[u8], depth: usize) -> Result<(Vec<u8>, usize), String> {
    if depth > MAX_DEPTH {
        return Err("nested too deeply".into());
    }
    let h = read_header(input)?;
    let body = &input[h.header_len..];
    if !h.constructed {
        let len = h.len.ok_or("indefinite length on a primitive value")?;
        let value = body.get(..len).ok_or("truncated value")?;
        let mut out = h.tag.clone();
        push_len(&mut out, len);
        out.extend_from_slice(value);
        return Ok((out, h.header_len + len));
    }
    // Constructed: normalise the children, up to the length or the end-of-contents marker.
    let mut children: Vec<Vec<u8>> = Vec::new();
    let consumed = match h.len {
        Some(len) => {
            let mut rest = body.get(..len).ok_or("truncated value")?;
            while !rest.is_empty() {
                let (c, n) = normalize(rest, depth + 1)?;
                children.push(c);
                rest = &rest[n..];
            }
            h.header_len + len
        }
        None => {
            let mut pos = 0;
            loop {
                let rest = &body[pos..];
                if rest.starts_with(&[0, 0]) {
                    pos += 2;
                    break;
                }
                if rest.is_empty() {
                    return Err("missing end-of-contents".into());
                }
                let (c, n) = normalize(rest, depth + 1)?;
                children.push(c);
                pos += n;
            }
            h.header_len + pos
        }
    };
    let mut out;
    if h.tag == [0x24] {
        // A constructed OCTET STRING: DER has only the primitive form, the chunks concatenated.
        let mut value = Vec::new();
        for c in &children {
            let ch = read_header(c)?;
            if ch.tag != [0x04] {
                return Err("constructed OCTET STRING holds a non-OCTET STRING".into());
            }
            value.extend_from_slice(&c[ch.header_len..]);
        }
        out = vec![0x04];
        push_len(&mut out, value.len());
        out.extend_from_slice(&value);
    } else {
        let total: usize = children.iter().map(Vec::len).sum();
        out = h.tag.clone();
        push_len(&mut out, total);
        for c in children {
            out.extend_from_slice(&c);
        }
    }
    Ok((out, consumed))
}

/// Re-encodes BER (indefinite lengths, constructed OCTET STRINGs, long-form lengths) as DER.
/// DER input comes back unchanged. Trailing bytes are refused.
pub fn ber_to_der(input: &[u8]) -> Result<Vec<u8>, String> {
    let (out, n) = normalize(input, 0)?;
    if n != input.len() {
        return Err("trailing bytes after the structure".into());
    }
    Ok(out)
}

// ---- SignedData ---------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hash {
    Sha256,
    Sha384,
    Sha512,
}

impl Hash {
    fn digest_alg(self) -> &'static digest::Algorithm {
        match self {
            Hash::Sha256 => &digest::SHA256,
            Hash::Sha384 => &digest::SHA384,
            Hash::Sha512 => &digest::SHA512,
        }
    }

    /// RSA PKCS#1 v1.5 verification; `legacy_1024` admits 1024-bit keys (cloudA's `/signature`
    /// certificates are RSA-1024, contract §4.5 trusts them as published).
    pub fn rsa(self, legacy_1024: bool) -> &'static RsaParameters {
        match (self, legacy_1024) {
            (Hash::Sha256, true) => &signature::RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY,
            (Hash::Sha256, false) => &signature::RSA_PKCS1_2048_8192_SHA256,
            (Hash::Sha384, _) => &signature::RSA_PKCS1_2048_8192_SHA384,
            (Hash::Sha512, true) => &signature::RSA_PKCS1_1024_8192_SHA512_FOR_LEGACY_USE_ONLY,
            (Hash::Sha512, false) => &signature::RSA_PKCS1_2048_8192_SHA512,
        }
    }
}

/// The digest of a SignerInfo's `digestAlgorithm`; the RSA-with-hash OIDs are accepted there too
/// (cloudB's documents carry `sha256WithRSAEncryption` in that field).
fn digest_of(oid: &ObjectIdentifier) -> Option<Hash> {
    match *oid {
        OID_SHA256 | OID_SHA256_RSA => Some(Hash::Sha256),
        OID_SHA384 | OID_SHA384_RSA => Some(Hash::Sha384),
        OID_SHA512 | OID_SHA512_RSA => Some(Hash::Sha512),
        _ => None,
    }
}

/// The signature algorithm must be RSA, and a hash it names must be the digest's.
fn rsa_signature_fits(oid: &ObjectIdentifier, hash: Hash) -> bool {
    match *oid {
        OID_RSA => true,
        OID_SHA256_RSA => hash == Hash::Sha256,
        OID_SHA384_RSA => hash == Hash::Sha384,
        OID_SHA512_RSA => hash == Hash::Sha512,
        _ => false,
    }
}

/// How a SignerInfo names its certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignerId {
    /// DER of the issuer Name, serial number bytes.
    IssuerSerial {
        issuer: Vec<u8>,
        serial: Vec<u8>,
    },
    KeyId(Vec<u8>),
}

#[derive(Clone, Debug)]
pub struct Signer {
    pub id: SignerId,
    hash: Option<Hash>,
    sig_alg: ObjectIdentifier,
    /// DER of the signed attributes as a SET (what the signature covers), when present.
    signed_attrs: Option<Vec<u8>>,
    /// The `messageDigest` attribute values and `contentType` values, when attributes are present.
    message_digests: Vec<Vec<u8>>,
    content_types: Vec<ObjectIdentifier>,
    signature: Vec<u8>,
}

/// A parsed SignedData with embedded content. Nothing is verified yet.
#[derive(Clone, Debug)]
pub struct SignedMessage {
    pub content: Vec<u8>,
    /// DER of every certificate in the bag (other choices are skipped).
    pub certificates: Vec<Vec<u8>>,
    pub signers: Vec<Signer>,
}

/// Parses a ContentInfo holding SignedData (BER or DER) with embedded `id-data` content.
pub fn parse(input: &[u8]) -> Result<SignedMessage, String> {
    let der = ber_to_der(input)?;
    let ci = ContentInfo::from_der(&der).map_err(|e| format!("not a PKCS#7 ContentInfo: {e}"))?;
    if ci.content_type != OID_SIGNED_DATA {
        return Err("PKCS#7 content is not SignedData".into());
    }
    let sd: SignedData = ci
        .content
        .decode_as()
        .map_err(|e| format!("malformed SignedData: {e}"))?;
    if sd.encap_content_info.econtent_type != OID_DATA {
        return Err("signed content type is not id-data".into());
    }
    let econtent = sd
        .encap_content_info
        .econtent
        .as_ref()
        .ok_or("no embedded content (detached signature)")?;
    let content = econtent
        .decode_as::<OctetString>()
        .map_err(|e| format!("embedded content is not an OCTET STRING: {e}"))?
        .as_bytes()
        .to_vec();
    let mut certificates = Vec::new();
    if let Some(set) = &sd.certificates {
        for c in set.0.iter() {
            if let CertificateChoices::Certificate(cert) = c {
                certificates.push(cert.to_der().map_err(|e| format!("certificate: {e}"))?);
            }
        }
    }
    let mut signers = Vec::new();
    for si in sd.signer_infos.0.iter() {
        let id = match &si.sid {
            SignerIdentifier::IssuerAndSerialNumber(isn) => SignerId::IssuerSerial {
                issuer: isn.issuer.to_der().map_err(|e| e.to_string())?,
                serial: isn.serial_number.as_bytes().to_vec(),
            },
            SignerIdentifier::SubjectKeyIdentifier(ski) => SignerId::KeyId(ski.0.as_bytes().to_vec()),
        };
        let mut message_digests = Vec::new();
        let mut content_types = Vec::new();
        let signed_attrs = match &si.signed_attrs {
            None => None,
            Some(attrs) => {
                for a in attrs.iter() {
                    if a.oid == OID_MESSAGE_DIGEST {
                        for v in a.values.iter() {
                            let d = v
                                .decode_as::<OctetString>()
                                .map_err(|e| format!("messageDigest: {e}"))?;
                            message_digests.push(d.as_bytes().to_vec());
                        }
                    } else if a.oid == OID_CONTENT_TYPE {
                        for v in a.values.iter() {
                            content_types.push(
                                v.decode_as::<ObjectIdentifier>()
                                    .map_err(|e| format!("contentType: {e}"))?,
                            );
                        }
                    }
                }
                Some(attrs.to_der().map_err(|e| format!("signed attributes: {e}"))?)
            }
        };
        signers.push(Signer {
            id,
            hash: digest_of(&si.digest_alg.oid),
            sig_alg: si.signature_algorithm.oid,
            signed_attrs,
            message_digests,
            content_types,
            signature: si.signature.as_bytes().to_vec(),
        });
    }
    Ok(SignedMessage {
        content,
        certificates,
        signers,
    })
}

impl Signer {
    /// The digest algorithm, when it is one this service verifies.
    pub fn hash(&self) -> Option<Hash> {
        self.hash
    }

    /// Verifies this SignerInfo over `content` with an RSA public key (SubjectPublicKeyInfo DER).
    /// With signed attributes: exactly one `messageDigest` equal to the content's digest, any
    /// `contentType` equal to id-data, and the signature over the attributes' DER SET.
    pub fn verify(&self, content: &[u8], spki: &[u8], legacy_1024: bool) -> Result<(), String> {
        let hash = self.hash.ok_or("unsupported digest algorithm")?;
        if !rsa_signature_fits(&self.sig_alg, hash) {
            return Err("unsupported signature algorithm (RSA PKCS#1 v1.5 only)".into());
        }
        let signed: &[u8] = match &self.signed_attrs {
            None => content,
            Some(attrs) => {
                let want = digest::digest(hash.digest_alg(), content);
                if self.message_digests.len() != 1 || self.message_digests[0] != want.as_ref() {
                    return Err("messageDigest attribute does not match the content".into());
                }
                if self.content_types.iter().any(|t| *t != OID_DATA) {
                    return Err("contentType attribute is not id-data".into());
                }
                attrs
            }
        };
        UnparsedPublicKey::new(hash.rsa(legacy_1024), spki)
            .verify(signed, &self.signature)
            .map_err(|_| "signature does not verify".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ber_indefinite_lengths_and_chunked_octet_strings_become_der() {
        // SEQUENCE (indefinite) { [0] (indefinite) { OCTET STRING constructed (indefinite)
        //   { "ab", "c" } } }
        let ber = [
            0x30, 0x80, 0xa0, 0x80, 0x24, 0x80, 0x04, 0x02, b'a', b'b', 0x04, 0x01, b'c', 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00,
        ];
        let der = ber_to_der(&ber).unwrap();
        assert_eq!(der, [0x30, 0x07, 0xa0, 0x05, 0x04, 0x03, b'a', b'b', b'c']);
        assert_eq!(ber_to_der(&der).unwrap(), der, "DER is a fixed point");
        // Long-form length of a short value is re-encoded minimally.
        assert_eq!(ber_to_der(&[0x04, 0x81, 0x01, 0x41]).unwrap(), [0x04, 0x01, 0x41]);
        for bad in [
            &[0x30, 0x80, 0x04, 0x01][..],   // no end-of-contents
            &[0x04, 0x80, 0x00, 0x00],       // indefinite primitive
            &[0x04, 0x05, 0x01],             // truncated
            &[0x04, 0x01, 0x01, 0x00],       // trailing byte
            &[0x24, 0x03, 0x02, 0x01, 0x00], // chunk that is not an OCTET STRING
            &[],
        ] {
            assert!(ber_to_der(bad).is_err(), "{bad:?}");
        }
        // Deep nesting is refused, not a stack overflow.
        let mut deep = Vec::new();
        for _ in 0..100 {
            deep.extend_from_slice(&[0x30, 0x80]);
        }
        for _ in 0..100 {
            deep.extend_from_slice(&[0x00, 0x00]);
        }
        assert!(ber_to_der(&deep).is_err());
    }

    #[test]
    fn garbage_is_not_pkcs7() {
        assert!(parse(b"").is_err());
        assert!(parse(&[0x30, 0x03, 0x02, 0x01, 0x01]).is_err());
        assert!(parse(&[0xab; 256]).is_err());
    }

    mod fuzz {
        use proptest::prelude::*;

        use super::super::*;

        proptest! {
            #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

            #[test]
            fn ber_normaliser_never_panics(data in proptest::collection::vec(any::<u8>(), 0..512)) {
                let _ = ber_to_der(&data);
                let _ = parse(&data);
            }

            #[test]
            fn der_output_is_stable(data in proptest::collection::vec(any::<u8>(), 0..256)) {
                if let Ok(der) = ber_to_der(&data) {
                    prop_assert_eq!(ber_to_der(&der).unwrap(), der);
                }
            }
        }
    }
}
