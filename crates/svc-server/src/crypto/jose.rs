//! JWS verification of evidence tokens and signing of the service's published tokens.
//!
//! Verification is explicit about every rule of contract §4.5: the caller passes the allow-list
//! of algorithms; `none` and every `HS*` are rejected before anything else; a key is used only for
//! algorithms of its own type (RSA keys for RS*/PS*, P-256 for ES256, P-384 for ES384), and a JWK
//! that names an `alg` is used only for that one. Keys are parsed once and cached per algorithm;
//! each key remembers the signatures it verified ([`Verified`]).

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Mutex, OnceLock};

use aws_lc_rs::encoding::{AsDer, PublicKeyX509Der};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, ParsedPublicKey, RsaPublicKeyComponents, VerificationAlgorithm};
use serde::Deserialize;
use serde_json::Value;

use super::{b64url, b64url_decode};

/// Asymmetric JWS algorithms this service knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Alg {
    RS256,
    RS384,
    RS512,
    PS256,
    PS384,
    PS512,
    ES256,
    ES384,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyType {
    Rsa,
    EcP256,
    EcP384,
}

impl Alg {
    pub const ALL: [Alg; 8] = [
        Alg::RS256,
        Alg::RS384,
        Alg::RS512,
        Alg::PS256,
        Alg::PS384,
        Alg::PS512,
        Alg::ES256,
        Alg::ES384,
    ];

    pub fn parse(s: &str) -> Option<Alg> {
        Self::ALL.into_iter().find(|a| a.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Alg::RS256 => "RS256",
            Alg::RS384 => "RS384",
            Alg::RS512 => "RS512",
            Alg::PS256 => "PS256",
            Alg::PS384 => "PS384",
            Alg::PS512 => "PS512",
            Alg::ES256 => "ES256",
            Alg::ES384 => "ES384",
        }
    }

    pub fn key_type(self) -> KeyType {
        match self {
            Alg::ES256 => KeyType::EcP256,
            Alg::ES384 => KeyType::EcP384,
            _ => KeyType::Rsa,
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    fn verification(self) -> &'static dyn VerificationAlgorithm {
        match self {
            Alg::RS256 => &signature::RSA_PKCS1_2048_8192_SHA256,
            Alg::RS384 => &signature::RSA_PKCS1_2048_8192_SHA384,
            Alg::RS512 => &signature::RSA_PKCS1_2048_8192_SHA512,
            Alg::PS256 => &signature::RSA_PSS_2048_8192_SHA256,
            Alg::PS384 => &signature::RSA_PSS_2048_8192_SHA384,
            Alg::PS512 => &signature::RSA_PSS_2048_8192_SHA512,
            Alg::ES256 => &signature::ECDSA_P256_SHA256_FIXED,
            Alg::ES384 => &signature::ECDSA_P384_SHA384_FIXED,
        }
    }
}

/// A public key for verifying JWS signatures.
pub struct VerifyingKey {
    pub kid: Option<String>,
    /// The JWK's own `alg`, when it names one: the key is then used for that algorithm only.
    pub alg: Option<Alg>,
    pub key_type: KeyType,
    /// SubjectPublicKeyInfo DER (RSA) or the uncompressed SEC1 point (EC).
    bytes: Vec<u8>,
    parsed: [OnceLock<Option<ParsedPublicKey>>; 8],
    verified: Mutex<Verified>,
}

/// Signatures one key verified, each with the algorithm and the exact message it verified.
/// Verifying is a pure function of those bytes and the key, so a hit (the same signature, then
/// the same algorithm and message compared byte for byte) answers what verifying again would, for
/// a hash of the signature and a comparison instead of an RSA-2048 verification (~260,000
/// instructions, half of an `/edge/v1/auth`). The same evidence comes back: a CI job's steps each
/// run `svc-edge` with the job's one ID token, an orchestrator's projected token serves an hour of
/// edge-token renewals. Only successes are kept, and only this key object's: a JWKS refresh or a
/// changed trust provider makes new key objects, which remember nothing. Time claims, issuer,
/// audience and match rules are checked at every use, as before.
///
/// Bounds: two generations of at most [`VERIFIED_GENERATION_BYTES`] per key (when the current
/// one is full it becomes the previous one, and the older is forgotten), and at most
/// [`VERIFIED_BYTES`] for every key of the process together ([`HELD`]; a signature is then not
/// remembered), so neither many configured keys nor a public issuer's tokens, which anyone can
/// mint, hold more. Messages over [`VERIFIED_MESSAGE_MAX`] and signatures over
/// [`VERIFIED_SIGNATURE_MAX`] are never looked up nor kept.
struct Verified {
    current: Generation,
    previous: Generation,
}

impl Default for Verified {
    fn default() -> Verified {
        Verified::counted_in(&HELD)
    }
}

/// A verified signature's algorithm and message.
type Signed = (Alg, Box<[u8]>);

/// Signature → what it signed, and the bytes they hold (counted in `held`, [`HELD`], too).
struct Generation {
    map: HashMap<Box<[u8]>, Signed>,
    bytes: usize,
    held: &'static AtomicUsize,
}

impl Generation {
    fn empty(held: &'static AtomicUsize) -> Generation {
        Generation {
            map: HashMap::new(),
            bytes: 0,
            held,
        }
    }
}

impl Drop for Generation {
    fn drop(&mut self) {
        self.held.fetch_sub(self.bytes, Relaxed);
    }
}

/// ~4 MB: a few thousand ID tokens (signature and signing input ~1.1 KB each).
const VERIFIED_GENERATION_BYTES: usize = 4 << 20;
/// Every key's remembered signatures together: 32 MB.
const VERIFIED_BYTES: usize = 32 << 20;
/// A longer message (evidence claims of many KB) is verified every time.
const VERIFIED_MESSAGE_MAX: usize = 16 << 10;
/// The longest signature of the algorithms verified here (RSA-4096); a longer one cannot verify,
/// and is not hashed under the lock.
const VERIFIED_SIGNATURE_MAX: usize = 512;
/// What one entry costs beyond its bytes (its map slot and two allocations), roughly.
const VERIFIED_ENTRY_OVERHEAD: usize = 64;

/// The bytes every key's [`Verified`] holds.
static HELD: AtomicUsize = AtomicUsize::new(0);

impl Verified {
    /// An empty memory counted in `held` (the process's [`HELD`]; tests count in their own).
    fn counted_in(held: &'static AtomicUsize) -> Verified {
        Verified {
            current: Generation::empty(held),
            previous: Generation::empty(held),
        }
    }

    fn rememberable(msg: &[u8], sig: &[u8]) -> bool {
        msg.len() <= VERIFIED_MESSAGE_MAX && sig.len() <= VERIFIED_SIGNATURE_MAX
    }

    fn contains(&self, alg: Alg, msg: &[u8], sig: &[u8]) -> bool {
        [&self.current, &self.previous]
            .iter()
            .any(|g| g.map.get(sig).is_some_and(|(a, m)| *a == alg && **m == *msg))
    }

    /// Remembers a verified signature; returns the generation it pushed out, for the caller to
    /// drop once the lock is released.
    #[must_use]
    fn insert(&mut self, alg: Alg, msg: &[u8], sig: &[u8]) -> Option<Generation> {
        let held = self.current.held;
        let cost = msg.len() + sig.len() + VERIFIED_ENTRY_OVERHEAD;
        let mut evicted = None;
        if self.current.bytes + cost > VERIFIED_GENERATION_BYTES || held.load(Relaxed) + cost > VERIFIED_BYTES {
            let fresh = Generation::empty(held);
            evicted = Some(std::mem::replace(
                &mut self.previous,
                std::mem::replace(&mut self.current, fresh),
            ));
        }
        // The evicted generation is still counted until it is dropped: the bound holds at every
        // moment, at the price of not remembering this one signature.
        if held.load(Relaxed) + cost > VERIFIED_BYTES {
            return evicted;
        }
        held.fetch_add(cost, Relaxed);
        self.current.bytes += cost;
        if let Some((_, old)) = self.current.map.insert(sig.into(), (alg, msg.into())) {
            let old_cost = old.len() + sig.len() + VERIFIED_ENTRY_OVERHEAD;
            self.current.bytes -= old_cost;
            held.fetch_sub(old_cost, Relaxed);
        }
        evicted
    }
}

impl std::fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VerifyingKey({:?}, {:?})", self.kid, self.key_type)
    }
}

impl VerifyingKey {
    fn new(kid: Option<String>, alg: Option<Alg>, key_type: KeyType, bytes: Vec<u8>) -> VerifyingKey {
        VerifyingKey {
            kid,
            alg,
            key_type,
            bytes,
            parsed: Default::default(),
            verified: Mutex::default(),
        }
    }

    /// From RSA modulus and exponent (big-endian bytes).
    pub fn rsa(kid: Option<String>, alg: Option<Alg>, n: &[u8], e: &[u8]) -> Result<VerifyingKey, String> {
        let der = RsaPublicKeyComponents { n, e }
            .as_der()
            .map_err(|_| "RSA key rejected".to_string())?;
        VerifyingKey::rsa_spki(kid, alg, der.as_ref().to_vec())
    }

    /// From an RSA SubjectPublicKeyInfo; keys under 2048 bits are refused here, not at first use.
    fn rsa_spki(kid: Option<String>, alg: Option<Alg>, der: Vec<u8>) -> Result<VerifyingKey, String> {
        let bits = aws_lc_rs::rsa::PublicKey::from_der(&der)
            .map_err(|_| "RSA key rejected".to_string())?
            .modulus_len()
            * 8;
        if bits < 2048 {
            return Err(format!("RSA key of {bits} bits rejected (at least 2048 required)"));
        }
        let key = VerifyingKey::new(kid, alg, KeyType::Rsa, der);
        if !key.usable_for(Alg::RS256) {
            return Err("RSA key rejected".into());
        }
        Ok(key)
    }

    /// From an uncompressed SEC1 point.
    pub fn ec(
        kid: Option<String>,
        alg: Option<Alg>,
        key_type: KeyType,
        point: Vec<u8>,
    ) -> Result<VerifyingKey, String> {
        let key = VerifyingKey::new(kid, alg, key_type, point);
        let probe = if key_type == KeyType::EcP256 {
            Alg::ES256
        } else {
            Alg::ES384
        };
        if !key.usable_for(probe) {
            return Err("EC key rejected (not a point on the curve)".into());
        }
        Ok(key)
    }

    /// From a SubjectPublicKeyInfo DER (RSA or EC P-256/P-384).
    pub fn from_spki_der(kid: Option<String>, der: &[u8]) -> Result<VerifyingKey, String> {
        let spki = super::x509::parse_spki(der)?;
        match spki {
            super::x509::Spki::Rsa => VerifyingKey::rsa_spki(kid, None, der.to_vec()),
            super::x509::Spki::Ec(kt, point) => VerifyingKey::ec(kid, None, kt, point),
        }
    }

    /// From one JWK object (`kty` RSA with `n`,`e`, or EC with `crv` P-256/P-384, `x`, `y`).
    pub fn from_jwk(jwk: &Value) -> Result<VerifyingKey, String> {
        let s = |k: &str| jwk.get(k).and_then(Value::as_str);
        let kid = s("kid").map(str::to_string);
        let alg = match s("alg") {
            None => None,
            Some(a) => Some(Alg::parse(a).ok_or_else(|| format!("unsupported alg {a:?}"))?),
        };
        match jwk.get("use") {
            None => {}
            Some(Value::String(u)) if u == "sig" => {}
            Some(u) => return Err(format!("key use {u} is not \"sig\"")),
        }
        let b = |k: &str| -> Result<Vec<u8>, String> {
            let v = s(k).ok_or_else(|| format!("missing {k}"))?;
            b64url_decode(v.trim_end_matches('=')).ok_or_else(|| format!("{k} is not base64url"))
        };
        match s("kty") {
            Some("RSA") => {
                let key = VerifyingKey::rsa(kid, alg, &b("n")?, &b("e")?)?;
                if alg.is_some_and(|a| a.key_type() != KeyType::Rsa) {
                    return Err("alg does not fit an RSA key".into());
                }
                Ok(key)
            }
            Some("EC") => {
                let (kt, len) = match s("crv") {
                    Some("P-256") => (KeyType::EcP256, 32),
                    Some("P-384") => (KeyType::EcP384, 48),
                    Some(other) => return Err(format!("unsupported curve '{other}' (P-256 or P-384)")),
                    None => return Err("crv: is required (P-256 or P-384)".into()),
                };
                let (x, y) = (b("x")?, b("y")?);
                if x.len() != len || y.len() != len {
                    return Err("x/y have the wrong length for the curve".into());
                }
                if alg.is_some_and(|a| a.key_type() != kt) {
                    return Err("alg does not fit the curve".into());
                }
                let mut point = Vec::with_capacity(1 + 2 * len);
                point.push(4);
                point.extend_from_slice(&x);
                point.extend_from_slice(&y);
                VerifyingKey::ec(kid, alg, kt, point)
            }
            Some(other) => Err(format!("unsupported kty {other:?}")),
            None => Err("missing kty".into()),
        }
    }

    /// Whether this key may verify `alg` (type fits, and the JWK's own `alg` if any).
    pub fn fits(&self, alg: Alg) -> bool {
        alg.key_type() == self.key_type && self.alg.is_none_or(|a| a == alg)
    }

    fn parsed_for(&self, alg: Alg) -> Option<&ParsedPublicKey> {
        self.parsed[alg.index()]
            .get_or_init(|| ParsedPublicKey::new(alg.verification(), &self.bytes).ok())
            .as_ref()
    }

    fn usable_for(&self, alg: Alg) -> bool {
        self.parsed_for(alg).is_some()
    }

    pub fn verify(&self, alg: Alg, msg: &[u8], sig: &[u8]) -> bool {
        if !self.fits(alg) {
            return false;
        }
        let Some(key) = self.parsed_for(alg) else {
            return false;
        };
        if !Verified::rememberable(msg, sig) {
            return key.verify_sig(msg, sig).is_ok();
        }
        let lock = || self.verified.lock().unwrap_or_else(|e| e.into_inner());
        if lock().contains(alg, msg, sig) {
            return true;
        }
        let ok = key.verify_sig(msg, sig).is_ok();
        if ok {
            let evicted = lock().insert(alg, msg, sig);
            drop(evicted);
        }
        ok
    }
}

/// Parses JWKS text `{"keys": [...]}`. Every key must be usable; at least one is required.
pub fn parse_jwks(text: &str) -> Result<Vec<VerifyingKey>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    parse_jwks_value(&v, true)
}

/// From a parsed JWKS document. Keys for other purposes ([`other_purpose`]) are skipped.
/// `strict` (configuration, §3.1): every other key must be usable (`kty` present; RSA keys with
/// `n`, `e`; EC keys with `crv` P-256/P-384, `x`, `y`), else the document is refused; not strict
/// (documents fetched from an issuer), unusable keys are skipped too. At least one key is required.
pub fn parse_jwks_value(v: &Value, strict: bool) -> Result<Vec<VerifyingKey>, String> {
    let keys = v
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("missing \"keys\" array")?;
    let mut out = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        match VerifyingKey::from_jwk(k) {
            Ok(key) => out.push(key),
            Err(e) if strict && !other_purpose(k) => return Err(format!("keys[{i}]: {e}")),
            Err(_) => {}
        }
    }
    if out.is_empty() {
        return Err("no usable key".into());
    }
    Ok(out)
}

/// A JWK that is not meant for verifying signatures of the algorithms verified here, as a JWKS
/// may list beside its signing keys: a registered key type other than `RSA`/`EC` (`oct`, `OKP`),
/// `use: "enc"`, or a registered algorithm this service does not verify (JWE key management, HMAC,
/// EdDSA, ES512, ES256K). Anything else that does not parse (a misspelt `kty`, `use` or `alg`) is
/// a mistake in the configuration, refused.
fn other_purpose(jwk: &Value) -> bool {
    const OTHER_KTY: &[&str] = &["oct", "OKP"];
    const OTHER_ALG: &[&str] = &[
        "RSA1_5",
        "RSA-OAEP",
        "RSA-OAEP-256",
        "RSA-OAEP-384",
        "RSA-OAEP-512",
        "A128KW",
        "A192KW",
        "A256KW",
        "dir",
        "ECDH-ES",
        "ECDH-ES+A128KW",
        "ECDH-ES+A192KW",
        "ECDH-ES+A256KW",
        "A128GCMKW",
        "A192GCMKW",
        "A256GCMKW",
        "PBES2-HS256+A128KW",
        "PBES2-HS384+A192KW",
        "PBES2-HS512+A256KW",
        "HS256",
        "HS384",
        "HS512",
        "EdDSA",
        "Ed25519",
        "Ed448",
        "ES512",
        "ES256K",
    ];
    let s = |k: &str| jwk.get(k).and_then(Value::as_str);
    s("kty").is_some_and(|t| OTHER_KTY.contains(&t))
        || s("use") == Some("enc")
        || s("alg").is_some_and(|a| OTHER_ALG.contains(&a))
}

#[derive(Debug, Deserialize)]
pub struct Header {
    pub alg: String,
    #[serde(default)]
    pub kid: Option<String>,
    #[serde(default)]
    pub crit: Option<Value>,
}

/// A compact JWS split into its parts (nothing verified yet).
#[derive(Debug)]
pub struct Jws<'a> {
    pub header: Header,
    pub payload: Vec<u8>,
    pub signing_input: &'a str,
    pub signature: Vec<u8>,
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwsError {
    /// Not a compact JWS, bad base64, bad header JSON, `crit` present.
    Malformed(String),
    /// `none`, `HS*`, or an algorithm outside the allow-list.
    Algorithm(String),
    /// No key fits, or the signature does not verify.
    Signature(String),
}

impl std::fmt::Display for JwsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JwsError::Malformed(m) => write!(f, "malformed token: {m}"),
            JwsError::Algorithm(m) => write!(f, "algorithm not accepted: {m}"),
            JwsError::Signature(m) => write!(f, "signature: {m}"),
        }
    }
}

pub fn split(token: &str) -> Result<Jws<'_>, JwsError> {
    let token = token.trim();
    let (signing_input, sig) = token
        .rsplit_once('.')
        .ok_or_else(|| JwsError::Malformed("not three parts".into()))?;
    let (h, p) = signing_input
        .split_once('.')
        .ok_or_else(|| JwsError::Malformed("not three parts".into()))?;
    if p.contains('.') {
        return Err(JwsError::Malformed("not three parts".into()));
    }
    let hb = b64url_decode(h).ok_or_else(|| JwsError::Malformed("header is not base64url".into()))?;
    let header: Header =
        serde_json::from_slice(&hb).map_err(|_| JwsError::Malformed("header is not a JSON object with alg".into()))?;
    if header.crit.is_some() {
        return Err(JwsError::Malformed(
            "critical header parameters are not supported".into(),
        ));
    }
    let payload = b64url_decode(p).ok_or_else(|| JwsError::Malformed("payload is not base64url".into()))?;
    let signature = b64url_decode(sig).ok_or_else(|| JwsError::Malformed("signature is not base64url".into()))?;
    Ok(Jws {
        header,
        payload,
        signing_input,
        signature,
    })
}

/// Checks the header's algorithm against the allow-list; `none` and `HS*` never pass.
pub fn check_alg(header: &Header, allowed: &[Alg]) -> Result<Alg, JwsError> {
    let a = header.alg.as_str();
    if a.eq_ignore_ascii_case("none") || a.to_ascii_uppercase().starts_with("HS") {
        return Err(JwsError::Algorithm(format!("{a} is never accepted")));
    }
    let alg = Alg::parse(a).ok_or_else(|| JwsError::Algorithm(format!("{a} is not supported")))?;
    if !allowed.contains(&alg) {
        return Err(JwsError::Algorithm(format!("{a} is not allowed for this provider")));
    }
    Ok(alg)
}

/// Verifies the signature with the key named by `kid` (when present) or any key that fits.
/// A `kid` that names no key is also tried against the fitting keys that have no `kid` of their
/// own (a configured PEM public key or certificate: an orchestrator's service-account tokens
/// always carry a `kid` their PEM key cannot name).
/// `Ok(false)` → a `kid` was given, no key has it and no key without one verifies (the caller
/// may refresh and retry).
pub fn verify_with(jws: &Jws<'_>, alg: Alg, keys: &[&VerifyingKey]) -> Result<bool, JwsError> {
    let msg = jws.signing_input.as_bytes();
    match &jws.header.kid {
        Some(kid) => {
            let named: Vec<&&VerifyingKey> = keys.iter().filter(|k| k.kid.as_deref() == Some(kid.as_str())).collect();
            if named.is_empty() {
                let unnamed = keys.iter().filter(|k| k.kid.is_none() && k.fits(alg));
                return Ok(unnamed.into_iter().any(|k| k.verify(alg, msg, &jws.signature)));
            }
            if named.iter().any(|k| k.verify(alg, msg, &jws.signature)) {
                Ok(true)
            } else if named.iter().any(|k| k.fits(alg)) {
                Err(JwsError::Signature("does not verify".into()))
            } else {
                Err(JwsError::Signature(format!("key {kid} does not fit {}", alg.as_str())))
            }
        }
        None => {
            let fitting: Vec<&&VerifyingKey> = keys.iter().filter(|k| k.fits(alg)).collect();
            if fitting.is_empty() {
                return Err(JwsError::Signature(format!("no key fits {}", alg.as_str())));
            }
            if fitting.iter().any(|k| k.verify(alg, msg, &jws.signature)) {
                Ok(true)
            } else {
                Err(JwsError::Signature("does not verify".into()))
            }
        }
    }
}

/// Signs `claims` with ES256 (`typ: JWT`).
pub fn sign_es256(key: &aws_lc_rs::signature::EcdsaKeyPair, kid: &str, claims: &[u8]) -> String {
    let input = signing_input(&format!(r#"{{"alg":"ES256","kid":"{kid}","typ":"JWT"}}"#), claims);
    let sig = key.sign(&SystemRandom::new(), input.as_bytes()).expect("ECDSA signing");
    format!("{input}.{}", b64url(sig.as_ref()))
}

/// Signs `claims` with RS256; `kid` omitted when `None`.
pub fn sign_rs256(key: &aws_lc_rs::signature::RsaKeyPair, kid: Option<&str>, claims: &[u8]) -> String {
    let header = match kid {
        Some(k) => format!(r#"{{"alg":"RS256","kid":"{k}","typ":"JWT"}}"#),
        None => r#"{"alg":"RS256","typ":"JWT"}"#.to_string(),
    };
    let input = signing_input(&header, claims);
    let mut sig = vec![0u8; key.public_modulus_len()];
    key.sign(
        &signature::RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        input.as_bytes(),
        &mut sig,
    )
    .expect("RSA signing");
    format!("{input}.{}", b64url(&sig))
}

fn signing_input(header: &str, claims: &[u8]) -> String {
    let mut s = b64url(header.as_bytes());
    s.push('.');
    s.push_str(&b64url(claims));
    s
}

/// The SPKI DER of an RSA key pair's public half (for PEM export).
pub fn rsa_public_spki(key: &aws_lc_rs::signature::RsaKeyPair) -> Vec<u8> {
    let pk = aws_lc_rs::signature::KeyPair::public_key(key);
    let der: PublicKeyX509Der = pk.as_der().expect("RSA public key encodes");
    der.as_ref().to_vec()
}

#[cfg(test)]
mod tests {
    use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair, RsaKeyPair};

    use super::*;

    fn ec_pair() -> EcdsaKeyPair {
        EcdsaKeyPair::generate(&signature::ECDSA_P256_SHA256_FIXED_SIGNING).unwrap()
    }

    fn ec_jwk(pair: &EcdsaKeyPair, kid: &str) -> Value {
        let p = pair.public_key().as_ref();
        serde_json::json!({"kty": "EC", "crv": "P-256", "kid": kid, "x": b64url(&p[1..33]), "y": b64url(&p[33..65])})
    }

    #[test]
    fn es256_round_trip_and_kid_selection() {
        let pair = ec_pair();
        let key = VerifyingKey::from_jwk(&ec_jwk(&pair, "k1")).unwrap();
        let t = sign_es256(&pair, "k1", br#"{"sub":"a"}"#);
        let jws = split(&t).unwrap();
        let alg = check_alg(&jws.header, &[Alg::ES256]).unwrap();
        assert_eq!(verify_with(&jws, alg, &[&key]), Ok(true));
        // A kid no key has → Ok(false) (refresh), a wrong algorithm → refused.
        let other = VerifyingKey::from_jwk(&ec_jwk(&pair, "k2")).unwrap();
        assert_eq!(verify_with(&jws, alg, &[&other]), Ok(false));
        assert!(check_alg(&jws.header, &[Alg::RS256]).is_err());
        // A key without a kid of its own (a configured PEM) verifies a token whose kid names
        // no key; another key without a kid does not.
        let without_kid = |pair: &EcdsaKeyPair| {
            let mut jwk = ec_jwk(pair, "");
            jwk.as_object_mut().unwrap().remove("kid");
            VerifyingKey::from_jwk(&jwk).unwrap()
        };
        let unnamed = without_kid(&pair);
        assert_eq!(verify_with(&jws, alg, &[&other, &unnamed]), Ok(true));
        let stranger = without_kid(&ec_pair());
        assert_eq!(verify_with(&jws, alg, &[&other, &stranger]), Ok(false));
        // A key that has the kid but does not verify is a refusal: no fallback to the others.
        let q2 = ec_pair();
        let named_wrong = VerifyingKey::from_jwk(&ec_jwk(&q2, "k1")).unwrap();
        assert!(verify_with(&jws, alg, &[&named_wrong, &unnamed]).is_err());
    }

    #[test]
    fn a_remembered_signature_answers_only_for_the_same_bytes_alg_and_key() {
        let pair = ec_pair();
        let key = VerifyingKey::from_jwk(&ec_jwk(&pair, "k1")).unwrap();
        let t = sign_es256(&pair, "k1", br#"{"sub":"a"}"#);
        let jws = split(&t).unwrap();
        let msg = jws.signing_input.as_bytes();
        assert!(key.verify(Alg::ES256, msg, &jws.signature));
        assert_eq!(key.verified.lock().unwrap().current.map.len(), 1, "remembered");
        assert!(key.verify(Alg::ES256, msg, &jws.signature), "a hit");
        // Another message with the remembered signature, the signature altered, another
        // algorithm: each is verified, and refused.
        let mut other_msg = msg.to_vec();
        *other_msg.last_mut().unwrap() ^= 1;
        assert!(!key.verify(Alg::ES256, &other_msg, &jws.signature));
        let mut other_sig = jws.signature.clone();
        other_sig[10] ^= 1;
        assert!(!key.verify(Alg::ES256, msg, &other_sig));
        assert!(!key.verify(Alg::ES384, msg, &jws.signature));
        // Another key object (a refreshed JWKS) remembers nothing, and another key refuses.
        let again = VerifyingKey::from_jwk(&ec_jwk(&pair, "k1")).unwrap();
        assert!(again.verified.lock().unwrap().current.map.is_empty());
        let stranger = VerifyingKey::from_jwk(&ec_jwk(&ec_pair(), "k1")).unwrap();
        assert!(!stranger.verify(Alg::ES256, msg, &jws.signature));
        // Failures are not remembered.
        assert_eq!(key.verified.lock().unwrap().current.map.len(), 1);
    }

    #[test]
    fn remembered_signatures_are_bounded_per_key_and_for_the_process() {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let mut v = Verified::counted_in(&COUNT);
        let msg = vec![7u8; 1000];
        let sig = |i: usize| (i as u64).to_be_bytes();
        let per = VERIFIED_GENERATION_BYTES / (msg.len() + 8 + VERIFIED_ENTRY_OVERHEAD);
        for i in 0..=per {
            drop(v.insert(Alg::RS256, &msg, &sig(i)));
        }
        assert!(v.contains(Alg::RS256, &msg, &sig(0)) && v.contains(Alg::RS256, &msg, &sig(per)));
        for i in per + 1..=2 * per + 1 {
            drop(v.insert(Alg::RS256, &msg, &sig(i)));
        }
        assert!(
            !v.contains(Alg::RS256, &msg, &sig(0)),
            "the oldest generation is forgotten"
        );
        assert!(v.current.bytes <= VERIFIED_GENERATION_BYTES && v.previous.bytes <= VERIFIED_GENERATION_BYTES);
        assert_eq!(COUNT.load(Relaxed), v.current.bytes + v.previous.bytes);
        // The same signature again replaces its entry, counted once.
        let before = v.current.bytes;
        drop(v.insert(Alg::RS256, &msg, &sig(2 * per + 1)));
        assert_eq!(v.current.bytes, before);
        // Many keys together stay under the process's bound.
        let mut keys: Vec<Verified> = (0..2 * VERIFIED_BYTES / VERIFIED_GENERATION_BYTES)
            .map(|_| Verified::counted_in(&COUNT))
            .collect();
        for (k, key) in keys.iter_mut().enumerate() {
            for i in 0..2 * per {
                drop(key.insert(Alg::RS256, &msg, &sig(k << 32 | i)));
                assert!(COUNT.load(Relaxed) <= VERIFIED_BYTES);
            }
        }
        drop(keys);
        drop(v);
        assert_eq!(COUNT.load(Relaxed), 0, "dropped keys give their bytes back");
        // Too long to remember: a message of evidence claims, an oversized signature.
        assert!(!Verified::rememberable(&[0; VERIFIED_MESSAGE_MAX + 1], &[0; 256]));
        assert!(!Verified::rememberable(&[0; 100], &[0; VERIFIED_SIGNATURE_MAX + 1]));
    }

    #[test]
    fn none_and_hmac_are_never_accepted() {
        for alg in ["none", "NONE", "HS256", "HS512", "hs256"] {
            let h = Header {
                alg: alg.into(),
                kid: None,
                crit: None,
            };
            assert!(matches!(check_alg(&h, &Alg::ALL), Err(JwsError::Algorithm(_))), "{alg}");
        }
    }

    #[test]
    fn rsa_key_is_not_used_for_es256_and_small_keys_are_rejected() {
        let rsa = RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        let spki = rsa_public_spki(&rsa);
        let key = VerifyingKey::from_spki_der(None, &spki).unwrap();
        assert_eq!(key.key_type, KeyType::Rsa);
        let t = sign_rs256(&rsa, None, br#"{"x":1}"#);
        let jws = split(&t).unwrap();
        assert_eq!(verify_with(&jws, Alg::RS256, &[&key]), Ok(true));
        assert!(verify_with(&jws, Alg::ES256, &[&key]).is_err());
        // The remembered RS256 signature does not answer for another algorithm of the same key.
        for other in [Alg::PS256, Alg::RS384, Alg::RS512, Alg::PS512] {
            assert!(
                !key.verify(other, jws.signing_input.as_bytes(), &jws.signature),
                "{other:?}"
            );
        }
        assert!(key.verify(Alg::RS256, jws.signing_input.as_bytes(), &jws.signature));
        // Tampered payload.
        let parts: Vec<&str> = t.split('.').collect();
        let bad = format!("{}.{}.{}", parts[0], b64url(br#"{"x":2}"#), parts[2]);
        assert!(verify_with(&split(&bad).unwrap(), Alg::RS256, &[&key]).is_err());
        // A 1024-bit modulus is refused as configuration.
        assert!(VerifyingKey::rsa(None, None, &[0xc5; 128], &[1, 0, 1]).is_err());
    }

    #[test]
    fn jwks_parsing_rules() {
        assert!(parse_jwks(r#"{"keys": []}"#).is_err());
        // Only keys for other purposes: no usable key.
        assert_eq!(
            parse_jwks(r#"{"keys": [{"kty": "oct", "k": "AAAA"}]}"#).unwrap_err(),
            "no usable key"
        );
        assert!(parse_jwks(r#"{"keys": [{"kty": "EC", "crv": "P-521", "x": "AA", "y": "AA"}]}"#).is_err());
        assert!(
            parse_jwks(r#"{"keys": [{"kty": "RSA", "e": "AQAB"}]}"#)
                .unwrap_err()
                .contains("missing n")
        );
        assert!(
            parse_jwks(r#"{"keys": [{"n": "AQAB", "e": "AQAB"}]}"#)
                .unwrap_err()
                .contains("missing kty")
        );
        let pair = ec_pair();
        let ok = serde_json::json!({"keys": [ec_jwk(&pair, "a")]}).to_string();
        assert_eq!(parse_jwks(&ok).unwrap().len(), 1);
        // Beside a signing key, keys for other purposes are skipped, not refused (§3.1 asks only
        // for `kty` and each key type's members).
        let mixed = serde_json::json!({"keys": [
            {"kty": "oct", "k": "AAAA"},
            {"kty": "OKP", "crv": "Ed25519", "x": "AAAA"},
            {"kty": "RSA", "use": "enc", "alg": "RSA-OAEP", "n": "AQAB", "e": "AQAB"},
            ec_jwk(&pair, "a"),
        ]})
        .to_string();
        assert_eq!(parse_jwks(&mixed).unwrap().len(), 1);
        // Misspelt members are mistakes, refused, not keys for other purposes; so is a `use`
        // that is not a string.
        for bad in [
            serde_json::json!({"kty": "EC", "use": ["enc"], "crv": "P-256", "x": "AA", "y": "AA"}),
            serde_json::json!({"kty": "rsa", "n": "AQAB", "e": "AQAB"}),
            serde_json::json!({"kty": "EC", "use": "Sig", "crv": "P-256", "x": "AA", "y": "AA"}),
            serde_json::json!({"kty": "EC", "alg": "RS265", "crv": "P-256", "x": "AA", "y": "AA"}),
        ] {
            let doc = serde_json::json!({"keys": [ec_jwk(&pair, "a"), bad]}).to_string();
            assert!(parse_jwks(&doc).unwrap_err().starts_with("keys[1]: "), "{doc}");
        }
        // A signing key of a supported type that is broken still refuses the document.
        let broken =
            serde_json::json!({"keys": [ec_jwk(&pair, "a"), {"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}]})
                .to_string();
        assert!(parse_jwks(&broken).unwrap_err().starts_with("keys[1]: "));
        assert!(split("a.b").is_err());
        let crit = format!(
            "{}.{}.{}",
            b64url(br#"{"alg":"ES256","crit":["exp"]}"#),
            b64url(b"{}"),
            b64url(b"s")
        );
        assert!(split(&crit).is_err());
    }

    /// Bounded fuzzing (proptest, in every `cargo test`) of the JWS and JWKS parsers under every
    /// JWT trust kind, `CloudCIdentityToken` included: arbitrary input never panics.
    mod fuzz {
        use proptest::prelude::*;

        use super::super::*;
        use crate::crypto::b64url;

        proptest! {
            #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

            #[test]
            fn split_never_panics(token in ".{0,300}") {
                let _ = split(&token);
            }

            #[test]
            fn structured_tokens_never_panic(
                kid in ".{0,60}",
                alg in "(RS256|ES256|PS256|none|HS256|[A-Za-z0-9]{0,6})",
                payload in proptest::collection::vec(any::<u8>(), 0..200),
                sig in proptest::collection::vec(any::<u8>(), 0..300),
            ) {
                let header = serde_json::json!({"alg": alg, "kid": kid}).to_string();
                let token = format!("{}.{}.{}", b64url(header.as_bytes()), b64url(&payload), b64url(&sig));
                if let Ok(jws) = split(&token) {
                    if let Ok(a) = check_alg(&jws.header, &[Alg::RS256, Alg::ES256, Alg::PS256]) {
                        let _ = verify_with(&jws, a, &[]);
                    }
                    if let Ok(Value::Object(claims)) = serde_json::from_slice::<Value>(&jws.payload) {
                        let _ = crate::trust::jwt::audiences(&claims);
                    }
                }
            }

            #[test]
            fn jwks_text_never_panics(text in ".{0,400}") {
                let _ = parse_jwks(&text);
            }

            #[test]
            fn jwk_shaped_input_never_panics(
                kty in "(RSA|EC|OKP|oct|[A-Z]{0,3})",
                n in "[A-Za-z0-9_-]{0,80}",
                e in "[A-Za-z0-9_-]{0,8}",
                crv in "(P-256|P-384|[A-Z0-9-]{0,6})",
                x in "[A-Za-z0-9_-]{0,60}",
                y in "[A-Za-z0-9_-]{0,60}",
            ) {
                let v = serde_json::json!({"keys": [{"kty": kty, "n": n, "e": e, "crv": crv, "x": x, "y": y, "kid": "k"}]});
                let _ = parse_jwks_value(&v, true);
                let _ = parse_jwks_value(&v, false);
            }
        }
    }
}
