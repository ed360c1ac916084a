//! Encryption of secrets at rest: AES-256-GCM with a random 96-bit nonce, the key id stored with
//! every ciphertext (`v1:<kid>:<base64(nonce|ciphertext|tag)>`) and an associated-data label that
//! binds a ciphertext to its row, so one row's secret cannot be pasted into another.

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};

use super::{b64std, b64std_decode, hex, random_bytes, sha256};

pub struct Cipher {
    kid: String,
    key: LessSafeKey,
}

impl std::fmt::Debug for Cipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cipher({})", self.kid)
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum OpenError {
    Malformed,
    UnknownKey(String),
    Tampered,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Malformed => f.write_str("malformed ciphertext"),
            OpenError::UnknownKey(k) => write!(f, "ciphertext was made with key {k}, which is not configured"),
            OpenError::Tampered => f.write_str("ciphertext failed authentication (wrong key or tampered data)"),
        }
    }
}

impl Cipher {
    pub fn new(key: &[u8; 32]) -> Cipher {
        let kid = hex(&sha256(key)[..6]);
        let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).expect("32-byte key"));
        Cipher { kid, key }
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    pub fn seal(&self, plaintext: &[u8], label: &str) -> String {
        let nonce_bytes = random_bytes::<NONCE_LEN>();
        let mut buf = plaintext.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce_bytes),
                Aad::from(label.as_bytes()),
                &mut buf,
            )
            .expect("AES-GCM seal");
        let mut out = Vec::with_capacity(NONCE_LEN + buf.len());
        out.extend_from_slice(&nonce_bytes);
        out.extend_from_slice(&buf);
        format!("v1:{}:{}", self.kid, b64std(&out))
    }

    pub fn open(&self, sealed: &str, label: &str) -> Result<Vec<u8>, OpenError> {
        let mut parts = sealed.splitn(3, ':');
        let (Some("v1"), Some(kid), Some(data)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(OpenError::Malformed);
        };
        if kid != self.kid {
            return Err(OpenError::UnknownKey(kid.to_string()));
        }
        let raw = b64std_decode(data).ok_or(OpenError::Malformed)?;
        if raw.len() < NONCE_LEN + 16 {
            return Err(OpenError::Malformed);
        }
        let (nonce, ct) = raw.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| OpenError::Malformed)?;
        let mut buf = ct.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(label.as_bytes()), &mut buf)
            .map_err(|_| OpenError::Tampered)?;
        Ok(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_binding() {
        let c = Cipher::new(&[7u8; 32]);
        let s = c.seal(b"hunter2hunter2", "entity:user:1");
        assert!(s.starts_with(&format!("v1:{}:", c.kid())));
        assert!(!s.contains("hunter2"));
        assert_eq!(c.open(&s, "entity:user:1").unwrap(), b"hunter2hunter2");
        assert_eq!(c.open(&s, "entity:user:2").unwrap_err(), OpenError::Tampered);
        let other = Cipher::new(&[8u8; 32]);
        assert!(matches!(other.open(&s, "entity:user:1"), Err(OpenError::UnknownKey(_))));
    }
}
