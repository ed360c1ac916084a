//! Small helpers with no better home: e-mail syntax, host names, constant-time comparison.

/// A pragmatic e-mail syntax check: `local@domain.tld`, no spaces.
pub fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    !local.is_empty()
        && local.len() <= 64
        && domain.len() >= 3
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
        && !domain.contains('@')
        && s.len() <= 254
}

/// Constant-time equality for secrets.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    aws_lc_rs::constant_time::verify_slices_are_equal(a, b).is_ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn emails() {
        assert!(super::is_email("admin@acme.test"));
        assert!(!super::is_email("admin@acme"));
        assert!(!super::is_email("a b@acme.test"));
        assert!(!super::is_email("@acme.test"));
    }
}
