//! `Secret<T>`: a value that must never be printed or serialised by accident. `Debug` prints
//! `***`; there is no `Display` and no `Serialize`. The store encrypts secrets through the
//! explicit [`expose`](Secret::expose) path and the one serde adapter in [`storage`].

#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    pub fn new(v: T) -> Self {
        Secret(v)
    }
    /// The raw value: only for encryption, verification and the edge response that delivers it.
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> std::fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

impl From<String> for Secret<String> {
    fn from(s: String) -> Self {
        Secret(s)
    }
}

/// serde adapter used only by the per-record secret bundles that the store encrypts.
pub mod storage {
    use super::Secret;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer, T: Serialize>(v: &Secret<T>, s: S) -> Result<S::Ok, S::Error> {
        v.0.serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Secret<T>, D::Error> {
        T::deserialize(d).map(Secret)
    }

    pub mod option {
        use super::Secret;
        use serde::{Deserialize, Deserializer, Serialize, Serializer};

        pub fn serialize<S: Serializer, T: Serialize>(v: &Option<Secret<T>>, s: S) -> Result<S::Ok, S::Error> {
            v.as_ref().map(|x| &x.0).serialize(s)
        }
        pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
            d: D,
        ) -> Result<Option<Secret<T>>, D::Error> {
            Option::<T>::deserialize(d).map(|o| o.map(Secret))
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
