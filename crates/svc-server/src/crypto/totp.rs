//! TOTP (RFC 6238): HMAC-SHA-1, 6 digits, 30-second steps, accepted within ±1 step.

use aws_lc_rs::hmac;

const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// RFC 4648 base32 without padding.
pub fn base32_encode(data: &[u8]) -> String {
    let mut out = String::new();
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for &b in data {
        buffer = (buffer << 8) | b as u32;
        bits += 8;
        while bits >= 5 {
            out.push(ALPHABET[((buffer >> (bits - 5)) & 31) as usize] as char);
            bits -= 5;
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

pub fn base32_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for c in s.trim_end_matches('=').chars() {
        let v = ALPHABET.iter().position(|&a| a as char == c.to_ascii_uppercase())? as u32;
        buffer = (buffer << 5) | v;
        bits += 5;
        if bits >= 8 {
            out.push((buffer >> (bits - 8)) as u8);
            bits -= 8;
        }
    }
    Some(out)
}

/// The 6-digit code for the 30-second step containing `unix_secs`.
pub fn code_at(secret: &[u8], unix_secs: i64) -> String {
    let counter = (unix_secs.div_euclid(30)) as u64;
    let key = hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, secret);
    let tag = hmac::sign(&key, &counter.to_be_bytes());
    let h = tag.as_ref();
    let offset = (h[19] & 0x0f) as usize;
    let bin = ((h[offset] as u32 & 0x7f) << 24)
        | ((h[offset + 1] as u32) << 16)
        | ((h[offset + 2] as u32) << 8)
        | h[offset + 3] as u32;
    format!("{:06}", bin % 1_000_000)
}

/// Accepts the code of the current step or the neighbouring ones.
pub fn verify(secret: &[u8], code: &str, unix_secs: i64) -> bool {
    matched_step(secret, code, unix_secs).is_some()
}

/// The time-step (`unix_secs / 30`) whose code `code` is, among the current step and its
/// neighbours; callers keep the last one accepted so a code is accepted at most once (RFC 6238
/// §5.2).
pub fn matched_step(secret: &[u8], code: &str, unix_secs: i64) -> Option<i64> {
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    [-30i64, 0, 30]
        .iter()
        .map(|d| unix_secs + d)
        .find(|t| crate::util::ct_eq(code_at(secret, *t).as_bytes(), code.as_bytes()))
        .map(|t| t.div_euclid(30))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6238_vectors() {
        // RFC 6238 appendix B, SHA-1 seed "12345678901234567890", last 6 digits.
        let seed = b"12345678901234567890";
        assert_eq!(code_at(seed, 59), "287082");
        assert_eq!(code_at(seed, 1111111109), "081804");
        assert_eq!(code_at(seed, 2000000000), "279037");
        assert!(verify(seed, "287082", 59 + 30));
        assert!(!verify(seed, "287082", 59 + 90));
    }

    #[test]
    fn base32_round_trip() {
        let data = b"\x00\x01hello world\xff";
        assert_eq!(base32_decode(&base32_encode(data)).unwrap(), data);
        assert_eq!(base32_encode(b"foobar"), "MZXW6YTBOI");
    }
}
