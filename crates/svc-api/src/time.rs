//! Timestamps as the contract writes them: RFC 3339, UTC, `Z`, milliseconds (§1.2).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

/// Milliseconds since the Unix epoch. Serialises as `2026-11-21T10:15:30.123Z`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub fn from_millis(ms: i64) -> Self {
        Timestamp(ms)
    }
    pub fn millis(self) -> i64 {
        self.0
    }
    pub fn secs(self) -> i64 {
        self.0.div_euclid(1000)
    }
    pub fn from_secs(s: i64) -> Self {
        Timestamp(s.saturating_mul(1000))
    }
    pub fn plus_secs(self, s: i64) -> Self {
        Timestamp(self.0.saturating_add(s.saturating_mul(1000)))
    }
    pub fn to_offset(self) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp_nanos(self.0 as i128 * 1_000_000).unwrap_or(OffsetDateTime::UNIX_EPOCH)
    }
    pub fn from_offset(t: OffsetDateTime) -> Self {
        Timestamp((t.unix_timestamp_nanos() / 1_000_000) as i64)
    }

    /// `2026-11-21T10:15:30.123Z`
    pub fn to_rfc3339(self) -> String {
        let t = self.to_offset().to_offset(UtcOffset::UTC);
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            t.year(),
            t.month() as u8,
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
            t.millisecond()
        )
    }

    /// Parses RFC 3339 with any offset.
    pub fn parse(s: &str) -> Option<Self> {
        OffsetDateTime::parse(s.trim(), &Rfc3339).ok().map(Self::from_offset)
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

/// RFC 3339 text (`format: date-time`), inlined where it is used.
impl schemars::JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "DateTime".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "format": "date-time"})
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Timestamp::parse(&s).ok_or_else(|| serde::de::Error::custom("invalid RFC 3339 timestamp"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_millis_and_z() {
        let t = Timestamp::parse("2026-11-21T12:15:30.123+02:00").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-21T10:15:30.123Z");
        assert_eq!(Timestamp(0).to_rfc3339(), "1970-01-01T00:00:00.000Z");
    }
}
