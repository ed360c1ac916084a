//! Log streams (contract §3.14): four destination variants on the shared CRUD layer, global
//! entities (no `resourceSet`), an int `id`, the `dataType` they carry, the three transaction
//! counters (read from `events::streams`; `service::streams` delivers), and the collectors' write-only secrets
//! (§1.9: `authenticationToken`, `apiKey`). A stream's delivery row is created and removed with
//! it, in its write unit.

use serde_json::Value;
use svc_api::mgmt::{
    EntityPatch, LogStreamCommon, LogStreamDataType, LogStreamDto, LogStreamLogAnalyticsADestinationDto,
    LogStreamObjectStorageADestinationDto, LogStreamObjectStorageCDestinationDto, LogStreamSensorADestinationDto,
    TlsVerification,
};
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_dto, base_input, patch_input};
use super::crud::{self, OnMissing, Resource, RsFrom};
use crate::app::App;
use crate::domain::Meta;
use crate::domain::credential::SecretFields;
use crate::domain::stream::{BucketA, BucketC, DataType, Destination, Hec, LogStream};
use crate::error::{Error, Result};
use crate::http::api::Api;
use crate::http::list::{Base, ListSpec, field_filter};
use crate::service::write::{Author, Write};
use crate::state::State as Snapshot;
use crate::store::CursorOp;

/// `/api/v1/log-streams` on the shared CRUD layer: global entities.
pub struct LogStreams;

pub fn register(api: &mut Api<'_>) {
    crud::register::<LogStreams>(api, "/api/v1/log-streams");
}

const TYPES: &[&str] = &[
    "ObjectStorageABucket",
    "ObjectStorageCBucket",
    "LogAnalyticsAHttpEventCollector",
    "SensorAHttpEventCollector",
];

/// A POST or PUT body beyond the base block; `None` on PATCH (LogStreamPatchDTO is
/// EntityPatchDTO).
pub type Input = Option<StreamBody>;

pub struct StreamBody {
    data_type: DataType,
    dest: Destination,
    /// A new secret (non-empty); `None` keeps the stored one.
    secret: Option<String>,
}

// ---- the patterns of §3.14, by hand (no regex engine in the build) ------------------------------

fn lower_digit(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `^[a-z\-\d]+$`
fn region_ok(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| lower_digit(b) || b == b'-')
}

/// `^[a-z\d]+[a-z\-\.\d]*[a-z\d]+$`
fn bucket_a_ok(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2
        && lower_digit(b[0])
        && lower_digit(b[b.len() - 1])
        && b.iter().all(|&c| lower_digit(c) || c == b'-' || c == b'.')
}

/// No backslash, braces, caret, percent, backtick, quotes, tilde, hash, square or angle brackets,
/// pipe, or bytes 0x80–0xFF (any character beyond ASCII).
fn prefix_a_ok(s: &str) -> bool {
    s.bytes().all(|b| b < 0x80 && !br#"\{}^%`'"~#[]<>|"#.contains(&b))
}

/// `^[a-z\-_\d]{3,63}$` or `^(?=.*\.)[a-z\-\._\d]{3,222}$`
fn bucket_c_ok(s: &str) -> bool {
    let n = s.len();
    let chars = |dot: bool| {
        s.bytes()
            .all(|b| lower_digit(b) || b == b'-' || b == b'_' || (dot && b == b'.'))
    };
    ((3..=63).contains(&n) && chars(false)) || ((3..=222).contains(&n) && s.contains('.') && chars(true))
}

/// No `# [ ] * ? : " < >` or pipe.
fn prefix_c_ok(s: &str) -> bool {
    !s.chars().any(|c| "#[]*?:\"<>|".contains(c))
}

/// `^[a-zA-Z0-9\-\.]+:[0-9]{1,5}$`, and a port in 1..65535 (our choice: a port no connection can
/// be made to is refused, not stored).
fn host_port_ok(s: &str) -> bool {
    let Some((host, port)) = s.rsplit_once(':') else {
        return false;
    };
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        && (1..=5).contains(&port.len())
        && port.bytes().all(|b| b.is_ascii_digit())
        && port.parse::<u32>().is_ok_and(|p| (1..=65535).contains(&p))
}

/// `^[a-zA-Z0-9-]{32,40}$`
fn api_key_ok(s: &str) -> bool {
    (32..=40).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// `v` must pass `ok`, else `<field>: must match <pattern>`.
fn matching(field: &str, v: &str, ok: fn(&str) -> bool, pattern: &str) -> Result<()> {
    if !ok(v) {
        return Err(Error::field(field, format!("must match {pattern}")));
    }
    Ok(())
}

/// A collector's write-only secret: its field, the value given, and the value's rule.
struct HecSecret {
    field: &'static str,
    value: Option<String>,
    ok: fn(&str) -> bool,
    rule: &'static str,
}

/// The fields of an HTTP event collector and its secret.
fn parse_hec(
    app: &App,
    host_port: String,
    source_name: String,
    tls: bool,
    verification: TlsVerification,
    secret: HecSecret,
    mode: Mode,
) -> Result<(Hec, Option<String>)> {
    matching(
        "hecHostPort",
        &host_port,
        host_port_ok,
        r"^[a-zA-Z0-9\-\.]+:[0-9]{1,5}$",
    )?;
    let host = host_port.rsplit_once(':').map_or(host_port.as_str(), |(h, _)| h);
    crate::upstream::check_address_field("hecHostPort", host, &app.cfg)?;
    if !tls && !app.cfg.allow_insecure_upstream {
        return Err(Error::field("tls", "plain http needs SVC_ALLOW_INSECURE_UPSTREAM=true"));
    }
    let HecSecret { field, value, ok, rule } = secret;
    let value = value.filter(|s| !s.is_empty());
    if let Some(v) = &value
        && !ok(v)
    {
        return Err(Error::field(field, rule));
    }
    // The stored secret stays with the collector it was given for: the write unit refuses a
    // move to another host, port or TLS setting without a new one (issue 31). A PUT of an
    // unknown id is 404, found later; a stored stream without its secret, `check`.
    if value.is_none() && mode == Mode::Create {
        return Err(Error::field(field, "is required"));
    }
    let hec = Hec {
        host_port,
        source_name,
        tls,
        verify: verification == TlsVerification::Full,
    };
    Ok((hec, value))
}

fn data_type(d: LogStreamDataType) -> DataType {
    match d {
        LogStreamDataType::AuditLogs => DataType::AuditLogs,
        LogStreamDataType::AccessAuthorizationEvents => DataType::AccessAuthorizationEvents,
        LogStreamDataType::WorkloadEvents => DataType::WorkloadEvents,
    }
}

fn data_type_dto(d: DataType) -> LogStreamDataType {
    match d {
        DataType::AuditLogs => LogStreamDataType::AuditLogs,
        DataType::AccessAuthorizationEvents => LogStreamDataType::AccessAuthorizationEvents,
        DataType::WorkloadEvents => LogStreamDataType::WorkloadEvents,
    }
}

fn parse(app: &App, dto: LogStreamDto, mode: Mode) -> Result<(BaseInput, Input)> {
    let common = dto.common().clone();
    let base = base_input(common.base, None)?;
    let (dest, secret) = match dto {
        LogStreamDto::ObjectStorageABucket(d) => {
            matching("objectStorageABucketRegion", &d.region, region_ok, r"^[a-z\-\d]+$")?;
            matching(
                "objectStorageABucketName",
                &d.bucket,
                bucket_a_ok,
                r"^[a-z\d]+[a-z\-\.\d]*[a-z\d]+$",
            )?;
            let prefix = d.prefix.filter(|p| !p.is_empty());
            if let Some(p) = &prefix {
                svc_api::reader::check_len("objectStorageAPathPrefix", p, 3, 800)?;
                if !prefix_a_ok(p) {
                    return Err(Error::field(
                        "objectStorageAPathPrefix",
                        "must not contain \\ { } ^ % ` ' \" ~ # [ ] < > | or characters beyond ASCII",
                    ));
                }
            }
            let dest = Destination::ObjectStorageABucket(BucketA {
                region: d.region,
                bucket: d.bucket,
                prefix,
            });
            (dest, None)
        }
        LogStreamDto::ObjectStorageCBucket(d) => {
            let bucket = d.bucket.filter(|s| !s.is_empty());
            if bucket.as_deref().is_some_and(|b| !bucket_c_ok(b)) {
                return Err(Error::field(
                    "objectStorageCBucketName",
                    r"must match ^[a-z\-_\d]{3,63}$ or ^(?=.*\.)[a-z\-\._\d]{3,222}$",
                ));
            }
            let prefix = d.prefix.filter(|s| !s.is_empty());
            if prefix.as_deref().is_some_and(|p| !prefix_c_ok(p)) {
                return Err(Error::field(
                    "objectStorageCPathPrefix",
                    "must not contain # [ ] * ? : \" < > or |",
                ));
            }
            let dest = Destination::ObjectStorageCBucket(BucketC {
                bucket,
                prefix,
                audience: d.audience.filter(|s| !s.is_empty()),
                service_account_email: d.service_account_email.filter(|s| !s.is_empty()),
                token_lifetime: d.token_lifetime,
            });
            (dest, None)
        }
        LogStreamDto::LogAnalyticsAHttpEventCollector(d) => {
            let guid = |s: &str| svc_api::reader::parse_uuid(s).is_some();
            let secret = HecSecret {
                field: "authenticationToken",
                value: d.authentication_token,
                ok: guid,
                rule: "must be a GUID (8-4-4-4-12 hexadecimal digits)",
            };
            let (hec, secret) = parse_hec(
                app,
                d.hec_host_port,
                d.hec_source_name,
                d.tls,
                d.tls_verification,
                secret,
                mode,
            )?;
            (Destination::LogAnalyticsAHttpEventCollector(hec), secret)
        }
        LogStreamDto::SensorAHttpEventCollector(d) => {
            let secret = HecSecret {
                field: "apiKey",
                value: d.api_key,
                ok: api_key_ok,
                rule: "must match ^[a-zA-Z0-9-]{32,40}$",
            };
            let (hec, secret) = parse_hec(
                app,
                d.hec_host_port,
                d.hec_source_name,
                d.tls,
                d.tls_verification,
                secret,
                mode,
            )?;
            (Destination::SensorAHttpEventCollector(hec), secret)
        }
    };
    let input = StreamBody {
        data_type: data_type(common.data_type),
        dest,
        secret,
    };
    Ok((base, Some(input)))
}

/// Applies a POST or PUT body; a new secret replaces the stored one.
fn apply(s: &mut LogStream, b: StreamBody) {
    s.data_type = b.data_type;
    s.dest = b.dest;
    if let (Some(field), Some(v)) = (s.dest.secret_field(), b.secret) {
        s.secrets.set(field, v);
    }
}

/// Where a stream's delivery starts: after the newest record of its table (§3.14: a new stream
/// starts at its creation, not with the history).
fn start(s: &LogStream) -> CursorOp {
    CursorOp::Start {
        stream: s.meta.id,
        data_type: s.data_type.as_str(),
        table: crate::events::streams::table_of(s.data_type),
    }
}

/// The stream's DTO (its variant), the secret always `null`, the counters as last read.
pub fn stream_dto(app: &App, s: &LogStream) -> LogStreamDto {
    let c = app.streams.counters(s.meta.id);
    let n = |v: i64| v.clamp(0, i64::from(i32::MAX)) as i32;
    let common = LogStreamCommon {
        base: base_dto(&s.meta),
        id: s.meta.seq,
        data_type: data_type_dto(s.data_type),
        in_prog_transaction_count: n(c.in_progress),
        completed_transaction_count: n(c.completed),
        errored_transaction_count: n(c.errored),
    };
    let verification = |h: &Hec| {
        if h.verify {
            TlsVerification::Full
        } else {
            TlsVerification::None
        }
    };
    match &s.dest {
        Destination::ObjectStorageABucket(b) => {
            LogStreamDto::ObjectStorageABucket(LogStreamObjectStorageADestinationDto {
                common,
                region: b.region.clone(),
                bucket: b.bucket.clone(),
                prefix: b.prefix.clone(),
            })
        }
        Destination::ObjectStorageCBucket(b) => {
            LogStreamDto::ObjectStorageCBucket(LogStreamObjectStorageCDestinationDto {
                common,
                bucket: b.bucket.clone(),
                prefix: b.prefix.clone(),
                audience: b.audience.clone(),
                service_account_email: b.service_account_email.clone(),
                token_lifetime: b.token_lifetime,
            })
        }
        Destination::LogAnalyticsAHttpEventCollector(h) => {
            LogStreamDto::LogAnalyticsAHttpEventCollector(LogStreamLogAnalyticsADestinationDto {
                common,
                hec_host_port: h.host_port.clone(),
                authentication_token: None,
                hec_source_name: h.source_name.clone(),
                tls: h.tls,
                tls_verification: verification(h),
            })
        }
        Destination::SensorAHttpEventCollector(h) => {
            LogStreamDto::SensorAHttpEventCollector(LogStreamSensorADestinationDto {
                common,
                hec_host_port: h.host_port.clone(),
                api_key: None,
                hec_source_name: h.source_name.clone(),
                tls: h.tls,
                tls_verification: verification(h),
            })
        }
    }
}

impl Resource for LogStreams {
    type Record = LogStream;
    type Input = Input;
    type Dto = LogStreamDto;
    type Patch = EntityPatch;
    const NAME: &'static str = "log streams";
    const RS: RsFrom = RsFrom::Global;
    const LIST: ListSpec = ListSpec::new("logStreams", Base::Global)
        .fields(&[
            "type",
            "id",
            "dataType",
            "inProgTransactionCount",
            "completedTransactionCount",
            "erroredTransactionCount",
            "objectStorageABucketRegion",
            "objectStorageABucketName",
            "objectStorageAPathPrefix",
            "objectStorageCBucketName",
            "objectStorageCPathPrefix",
            "audience",
            "serviceAccountEmail",
            "tokenLifetime",
            "hecHostPort",
            "hecSourceName",
            "tls",
            "tlsVerification",
        ])
        .filters(&[field_filter("type"), field_filter("dataType")]);
    /// §3.14 lists only `204` for DELETE: an id already gone answers it too (§1.5).
    const ON_MISSING_DELETE: OnMissing = OnMissing::NoContent;

    fn prepare(body: &mut Value, stored: Option<&LogStream>) -> Result<()> {
        crud::discriminator_kept(body, "type", stored.map(|s| s.dest.type_name()), TYPES)
    }

    fn parse(app: &App, dto: LogStreamDto, mode: Mode, _: Option<&LogStream>) -> Result<(BaseInput, Input)> {
        parse(app, dto, mode)
    }

    /// LogStreamPatchDTO is the EntityPatchDTO.
    fn parse_patch(_: &App, patch: EntityPatch, _: Option<&LogStream>) -> Result<(BaseInput, Input)> {
        Ok((patch_input(patch)?, None))
    }

    fn create(w: &mut Write<'_>, input: Input, meta: Meta) -> Result<LogStream> {
        let b = input.ok_or_else(|| Error::internal("create without a body"))?;
        let mut s = LogStream {
            meta,
            data_type: b.data_type,
            dest: b.dest.clone(),
            secrets: SecretFields::default(),
        };
        apply(&mut s, b);
        w.stream_cursor(start(&s));
        Ok(s)
    }

    fn replace(w: &mut Write<'_>, input: Input, s: &mut LogStream) -> Result<()> {
        let b = input.ok_or_else(|| Error::internal("replace without a body"))?;
        if b.dest.type_name() != s.dest.type_name() {
            return Err(Error::field("type", "cannot be changed"));
        }
        let changed = b.data_type != s.data_type;
        apply(s, b);
        if changed {
            // Another table: the cursor counts there from now on (our choice, as a new stream).
            w.stream_cursor(start(s));
        }
        Ok(())
    }

    /// A collector has its secret (the one stored for the stream the unit sees).
    fn check(_: &Write<'_>, s: &LogStream) -> Result<()> {
        match s.dest.secret_field() {
            Some(f) if s.secrets.get(f).is_none() => Err(Error::field(f, "is required")),
            _ => Ok(()),
        }
    }

    fn before_delete(w: &mut Write<'_>, _: &Author, _: Uuid, id: Uuid) -> Result<()> {
        w.stream_cursor(CursorOp::Remove { stream: id });
        Ok(())
    }

    fn render(app: &App, _: &Snapshot, s: &LogStream) -> LogStreamDto {
        stream_dto(app, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        for ok in ["eu-west-1", "us-east-2", "abcdefgh"] {
            assert!(region_ok(ok), "{ok}");
        }
        for bad in ["EU-west-1", "eu_west_1", "eu west", ""] {
            assert!(!region_ok(bad), "{bad}");
        }
        for ok in ["ab", "my.bucket-1", "a1b"] {
            assert!(bucket_a_ok(ok), "{ok}");
        }
        for bad in ["-ab", "ab-", ".ab", "Ab", "a", "a_b"] {
            assert!(!bucket_a_ok(bad), "{bad}");
        }
        assert!(prefix_a_ok("logs/svc-1"));
        for bad in [
            "a\\b", "a{b", "a^b", "a%b", "a`b", "a'b", "a\"b", "a~b", "a#b", "a[b", "a<b", "a|b", "ü",
        ] {
            assert!(!prefix_a_ok(bad), "{bad}");
        }
        for ok in ["abc", "a_b-c", "my.bucket.example", &"a".repeat(63)] {
            assert!(bucket_c_ok(ok), "{ok}");
        }
        for bad in ["ab", &"a".repeat(64), "Abc", "a b", &format!("{}.x", "a".repeat(221))] {
            assert!(!bucket_c_ok(bad), "{bad}");
        }
        assert!(prefix_c_ok("logs/svc"));
        for bad in ["a#", "a[", "a]", "a*", "a?", "a:", "a\"", "a<", "a>", "a|"] {
            assert!(!prefix_c_ok(bad), "{bad}");
        }
        for ok in ["hec.example:8088", "10.0.0.1:443", "a-b:1", "h:65535"] {
            assert!(host_port_ok(ok), "{ok}");
        }
        for bad in [
            "hec.example",
            ":8088",
            "h:0",
            "h:65536",
            "h:123456",
            "h_x:80",
            "h:8a",
            "https://h:1",
        ] {
            assert!(!host_port_ok(bad), "{bad}");
        }
        assert!(api_key_ok(&"a".repeat(32)) && api_key_ok(&"A-9".repeat(13)));
        for bad in ["a".repeat(31), "a".repeat(41), format!("{}_", "a".repeat(32))] {
            assert!(!api_key_ok(&bad), "{bad}");
        }
    }
}
