//! `Secret<T>`: a value that must never be printed or serialised by accident. `Debug` prints
//! `***`; there is no `Display` and no `Serialize`. The store encrypts secrets through the
//! explicit [`expose`](Secret::expose) path and the one serde adapter in [`storage`].

/// A secret value and its stamp: a number unique to each [`Secret::new`] in this process (0 for
/// one read from storage), so a write unit can tell a secret it carried over from one a caller
/// gave again, even with the same value (issue 31: [`SecretHome`]). Two secrets are equal when
/// their values are.
#[derive(Clone, Default)]
pub struct Secret<T> {
    value: T,
    stamp: u64,
}

static STAMPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl<T> Secret<T> {
    pub fn new(v: T) -> Self {
        Secret {
            value: v,
            stamp: STAMPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }
    /// The raw value: only for encryption, verification and the edge response that delivers it.
    pub fn expose(&self) -> &T {
        &self.value
    }
    /// Which [`Secret::new`] made this value (0: read from storage).
    pub fn stamp(&self) -> u64 {
        self.stamp
    }
    /// A value read from storage (stamp 0).
    pub fn stored(value: T) -> Self {
        Secret { value, stamp: 0 }
    }
}

impl<T: PartialEq> PartialEq for Secret<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T: Eq> Eq for Secret<T> {}

impl<T> std::fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

impl From<String> for Secret<String> {
    fn from(s: String) -> Self {
        Secret::new(s)
    }
}

/// Where a record's write-only secrets go (issue 31, §1.9): the fields that name their
/// destination, with their values (empty: the secrets are sent nowhere, or handed to workloads),
/// and the names of the secrets a caller gives (the others the service obtained itself, such as
/// stored OAuth tokens). A write that changes the destination keeps no secret that was not given
/// again (`service::write::Write::commit`): a stored secret goes only to the URL it was stored with.
#[derive(Debug, Default, PartialEq)]
pub struct SecretHome {
    pub fields: Vec<(&'static str, String)>,
    pub given: &'static [&'static str],
    /// Every secret the record holds: its name (as in the sealed bundle's JSON) and its stamp.
    pub held: Vec<(String, u64)>,
}

impl SecretHome {
    /// The home of a record whose secrets are sent nowhere (or that has none).
    pub fn nowhere() -> SecretHome {
        SecretHome::default()
    }
}

/// serde adapter used only by the per-record secret bundles that the store encrypts.
pub mod storage {
    use super::Secret;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer, T: Serialize>(v: &Secret<T>, s: S) -> Result<S::Ok, S::Error> {
        v.expose().serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Secret<T>, D::Error> {
        T::deserialize(d).map(Secret::stored)
    }

    pub mod option {
        use super::Secret;
        use serde::{Deserialize, Deserializer, Serialize, Serializer};

        pub fn serialize<S: Serializer, T: Serialize>(v: &Option<Secret<T>>, s: S) -> Result<S::Ok, S::Error> {
            v.as_ref().map(|x| x.expose()).serialize(s)
        }
        pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
            d: D,
        ) -> Result<Option<Secret<T>>, D::Error> {
            Option::<T>::deserialize(d).map(|o| o.map(Secret::stored))
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn debug_hides_the_value() {
        let s = super::Secret::new("pk_live_51Hx9".to_string());
        assert_eq!(format!("{s:?}"), "***");
        assert_eq!(format!("{:?}", Some(&s)), "Some(***)");
    }
}
