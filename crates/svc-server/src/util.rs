//! Small helpers with no better home: e-mail syntax, constant-time comparison, random UUIDs.

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

/// Random bytes drawn per refill of a thread's UUID buffer (64 UUIDs).
const UUID_POOL: usize = 1024;

thread_local! {
    static UUID_BYTES: std::cell::RefCell<([u8; UUID_POOL], usize)> =
        const { std::cell::RefCell::new(([0; UUID_POOL], UUID_POOL)) };
}

/// 16 bytes from the thread's buffer of cryptographically random bytes. The buffer is refilled
/// from aws-lc's DRBG 64 UUIDs at a time: `Uuid::new_v4` asks the kernel (`getrandom`) for every
/// id, and every edge request makes three or more (request id, context id, token id, event ids),
/// which cost ~4% of the request thread in the profiles (docs/PERFORMANCE.md).
fn random16() -> [u8; 16] {
    UUID_BYTES.with(|cell| {
        let mut guard = cell.borrow_mut();
        let (buf, used) = &mut *guard;
        if *used + 16 > UUID_POOL {
            aws_lc_rs::rand::fill(buf).expect("the system random source works");
            *used = 0;
        }
        let mut out = [0u8; 16];
        out.copy_from_slice(&buf[*used..*used + 16]);
        // Never hand out the same bytes twice.
        buf[*used..*used + 16].fill(0);
        *used += 16;
        out
    })
}

/// A random (version 4) UUID.
pub fn uuid_v4() -> uuid::Uuid {
    uuid::Builder::from_random_bytes(random16()).into_uuid()
}

/// A time-ordered (version 7) UUID for the given Unix time in milliseconds. Event ids are these,
/// made from the event's own time: the single-event read finds a row by the time its id carries,
/// through the `(rs, ts)` index, so the event tables need no index on `id` (docs/PERFORMANCE.md).
pub fn uuid_v7(unix_ms: i64) -> uuid::Uuid {
    let r = random16();
    let mut rand = [0u8; 10];
    rand.copy_from_slice(&r[..10]);
    uuid::Builder::from_unix_timestamp_millis(unix_ms.max(0) as u64, &rand).into_uuid()
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

    #[test]
    fn buffered_uuids_are_distinct_and_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..1000 {
            let a = super::uuid_v4();
            assert_eq!(a.get_version_num(), 4);
            assert_eq!(a.get_variant(), uuid::Variant::RFC4122);
            assert!(seen.insert(a));
            let b = super::uuid_v7(1_700_000_000_000 + i);
            assert_eq!(b.get_version_num(), 7);
            assert_eq!(b.get_variant(), uuid::Variant::RFC4122);
            let (secs, nanos) = b.get_timestamp().expect("v7 has a time").to_unix();
            assert_eq!(secs * 1000 + u64::from(nanos) / 1_000_000, 1_700_000_000_000 + i as u64);
            assert!(seen.insert(b));
        }
    }
}
