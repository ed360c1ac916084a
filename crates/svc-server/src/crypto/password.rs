//! Password hashing: argon2id (19 MiB, 2 passes, 1 lane: the crate's OWASP-aligned default),
//! PHC string format. Hashing is CPU-heavy: callers run it on the blocking pool.

use argon2::{Argon2, PasswordHasher, PasswordVerifier};

pub fn hash(password: &str) -> String {
    let salt = super::random_bytes::<16>();
    Argon2::default()
        .hash_password_with_salt(password.as_bytes(), &salt)
        .expect("argon2 hashing with valid parameters")
        .to_string()
}

pub fn verify(password: &str, phc: &str) -> bool {
    Argon2::default().verify_password(password.as_bytes(), phc).is_ok()
}

/// A hash of a random password, used to spend the same time when the user does not exist.
pub fn dummy_hash() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| hash(&super::random_token()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn hash_and_verify() {
        let h = super::hash("correct-horse-battery-staple");
        assert!(h.starts_with("$argon2id$"));
        assert!(super::verify("correct-horse-battery-staple", &h));
        assert!(!super::verify("wrong-horse-battery-staple", &h));
    }
}
