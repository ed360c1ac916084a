//! Compact JWS for the service's own bearer tokens (edge access tokens and management tokens):
//! HS256 only, under the internal token key (contract §0.2, §5.1). Verification pins the
//! algorithm: a token whose header names anything but `HS256` is rejected before any key is used.

use aws_lc_rs::hmac;
use serde::Deserialize;

use super::{b64url, b64url_decode};

/// An HMAC key with its id.
pub struct HmacKey {
    pub kid: String,
    key: hmac::Key,
}

impl std::fmt::Debug for HmacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HmacKey({})", self.kid)
    }
}

impl HmacKey {
    pub fn new(kid: String, secret: &[u8]) -> HmacKey {
        HmacKey {
            kid,
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
        }
    }
}

#[derive(Deserialize)]
struct Header<'a> {
    alg: &'a str,
    kid: Option<&'a str>,
}

/// Signs `claims` (JSON text of an object) as `header.payload.signature`.
pub fn sign_hs256(key: &HmacKey, claims: &[u8]) -> String {
    let header = format!(r#"{{"alg":"HS256","kid":"{}","typ":"JWT"}}"#, key.kid);
    let mut token = String::with_capacity(64 + claims.len() * 4 / 3 + 48);
    token.push_str(&b64url(header.as_bytes()));
    token.push('.');
    token.push_str(&b64url(claims));
    let sig = hmac::sign(&key.key, token.as_bytes());
    token.push('.');
    token.push_str(&b64url(sig.as_ref()));
    token
}

/// The `kid` and payload bytes of a well-formed token, before any signature check (used only to
/// pick a rate-limit bucket, §4.12).
pub fn peek_payload(token: &str) -> Option<Vec<u8>> {
    let mut parts = token.split('.');
    let (_h, p, _s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    b64url_decode(p)
}

/// Verifies an HS256 token against the keys `lookup` returns for its `kid`; returns the payload.
pub fn verify_hs256<'k>(token: &str, lookup: impl Fn(&str) -> Option<&'k HmacKey>) -> Option<Vec<u8>> {
    let (signing_input, sig_b64) = token.rsplit_once('.')?;
    let (header_b64, payload_b64) = signing_input.split_once('.')?;
    if payload_b64.contains('.') {
        return None;
    }
    let header_bytes = b64url_decode(header_b64)?;
    let header: Header = serde_json::from_slice(&header_bytes).ok()?;
    if header.alg != "HS256" {
        return None;
    }
    let key = lookup(header.kid?)?;
    let sig = b64url_decode(sig_b64)?;
    hmac::verify(&key.key, signing_input.as_bytes(), &sig).ok()?;
    b64url_decode(payload_b64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_and_verify_pins_hs256() {
        let k = HmacKey::new("k1".into(), &[1u8; 32]);
        let t = sign_hs256(&k, br#"{"sub":"x"}"#);
        assert_eq!(
            verify_hs256(&t, |kid| (kid == "k1").then_some(&k)).unwrap(),
            br#"{"sub":"x"}"#
        );
        // Wrong key id, tampered payload, alg none.
        assert!(verify_hs256(&t, |_| None).is_none());
        let parts: Vec<&str> = t.split('.').collect();
        let tampered = format!("{}.{}.{}", parts[0], b64url(br#"{"sub":"y"}"#), parts[2]);
        assert!(verify_hs256(&tampered, |_| Some(&k)).is_none());
        let none = format!("{}.{}.", b64url(br#"{"alg":"none","kid":"k1"}"#), parts[1]);
        assert!(verify_hs256(&none, |_| Some(&k)).is_none());
    }
}
