//! Cryptographic building blocks, all on aws-lc (plus argon2 for passwords): encoding helpers,
//! randomness, the at-rest cipher, password hashing, TOTP and the JWS formats the service uses.

pub mod aead;
pub mod chain;
pub mod jose;
pub mod jws;
pub mod password;
pub mod pkcs7;
pub mod totp;
pub mod x509;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

pub fn b64std(data: &[u8]) -> String {
    STANDARD.encode(data)
}

pub fn b64std_decode(s: &str) -> Option<Vec<u8>> {
    STANDARD.decode(s).ok()
}

pub fn b64url(data: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(data)
}

pub fn b64url_decode(s: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(s).ok()
}

/// Standard or URL-safe base64, padded or not (evidence from platforms comes in every flavour).
pub fn b64_any_decode(s: &str) -> Option<Vec<u8>> {
    let cleaned: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    let trimmed = cleaned.trim_end_matches('=');
    if trimmed.contains(['-', '_']) {
        URL_SAFE_NO_PAD.decode(trimmed).ok()
    } else {
        base64::engine::general_purpose::STANDARD_NO_PAD.decode(trimmed).ok()
    }
}

/// Cryptographically secure random bytes.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    aws_lc_rs::rand::fill(&mut b).expect("system randomness is available");
    b
}

/// A random URL-safe token with 256 bits of entropy (OAuth state, PKCE verifier).
pub fn random_token() -> String {
    b64url(&random_bytes::<32>())
}

pub fn sha256(data: &[u8]) -> [u8; 32] {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, data);
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

pub fn hex(data: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(data.len() * 2);
    for b in data {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}
