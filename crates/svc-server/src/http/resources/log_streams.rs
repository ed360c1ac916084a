//! Log streams (contract §3.14): four destination variants on the shared CRUD layer, global
//! entities (no `resourceSet`), an int `id`, the `dataType` they carry, the three transaction
//! counters (read from `events::streams`, which delivers), and the collectors' write-only secrets
//! (§1.9: `authenticationToken`, `apiKey`). A stream's delivery row is created and removed with
//! it, in its write unit.

use serde_json::{Map, Value, json};
use svc_api::Obj;
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_json, parse_base};
use super::crud::{self, OnMissing, Resource, RsFrom};
use crate::app::App;
use crate::domain::Meta;
use crate::domain::credential::SecretFields;
use crate::domain::stream::{BucketA, BucketC, DataType, Destination, Hec, LogStream};
use crate::error::{Error, Result};
use crate::http::api::{Api, Untyped};
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

const DATA_TYPES: &[&str] = &["AuditLogs", "AccessAuthorizationEvents", "WorkloadEvents"];

/// Read-only fields of the DTO (besides the base block's), accepted and ignored.
const RO: &[&str] = &[
    "inProgTransactionCount",
    "completedTransactionCount",
    "erroredTransactionCount",
];

/// `tokenLifetime` when absent (our choice: cloudC's own default for `generateAccessToken`).
const DEFAULT_TOKEN_LIFETIME: i32 = 3600;

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

/// `field` when present: within `min..max` characters and passing `ok`, else `must match …`.
fn matching(
    o: &mut Obj,
    field: &str,
    min: usize,
    max: usize,
    ok: fn(&str) -> bool,
    pattern: &str,
) -> Result<Option<String>> {
    let v = o.opt_str_len(field, min, max)?;
    if let Some(s) = &v
        && !ok(s)
    {
        return Err(Error::field(field, format!("must match {pattern}")));
    }
    Ok(v)
}

fn required<T>(field: &str, v: Option<T>) -> Result<T> {
    v.ok_or_else(|| Error::field(field, "is required"))
}

/// The fields of an HTTP event collector; `secret`/`check`: its write-only field and format.
fn parse_hec(
    app: &App,
    o: &mut Obj,
    mode: Mode,
    secret: &'static str,
    check: (fn(&str) -> bool, &'static str),
) -> Result<(Hec, Option<String>)> {
    let host_port = matching(o, "hecHostPort", 1, 260, host_port_ok, r"^[a-zA-Z0-9\-\.]+:[0-9]{1,5}$")?;
    let host_port = required("hecHostPort", host_port)?;
    let source_name = o.req_str_len("hecSourceName", 1, 256)?;
    let tls = o.opt_bool("tls")?.unwrap_or(true);
    let verify = o
        .opt_enum("tlsVerification", &["full", "none"])?
        .is_none_or(|v| v == "full");
    if !tls && !app.cfg.allow_insecure_upstream {
        return Err(Error::field("tls", "plain http needs SVC_ALLOW_INSECURE_UPSTREAM=true"));
    }
    let value = o.opt_str(secret)?.filter(|s| !s.is_empty());
    if let Some(v) = &value
        && !(check.0)(v)
    {
        return Err(Error::field(secret, check.1));
    }
    // The stored secret stays with the collector it was given for: the write unit refuses a
    // move to another host, port or TLS setting without a new one (issue 31). A PUT of an
    // unknown id is 404, found later; a stored stream without its secret, `check`.
    if value.is_none() && mode == Mode::Create {
        return Err(Error::field(secret, "is required"));
    }
    Ok((
        Hec {
            host_port,
            source_name,
            tls,
            verify,
        },
        value,
    ))
}

fn parse(app: &App, body: Value, mode: Mode, stored: Option<&LogStream>) -> Result<(BaseInput, Input)> {
    let mut o = Obj::root(body)?;
    let base = parse_base(&mut o, mode, false)?;
    o.ignore(RO);
    if mode == Mode::Patch {
        o.finish()?;
        return Ok((base, None));
    }
    let ty = o.req_enum("type", TYPES)?;
    if mode == Mode::Replace
        && let Some(s) = stored
        && s.dest.type_name() != ty
    {
        return Err(Error::field("type", "cannot be changed"));
    }
    let data_type = o.req_enum("dataType", DATA_TYPES)?;
    let data_type = DataType::parse(&data_type).expect("one of DATA_TYPES");
    let (dest, secret) = match ty.as_str() {
        "ObjectStorageABucket" => {
            let region = matching(&mut o, "objectStorageABucketRegion", 8, 30, region_ok, r"^[a-z\-\d]+$")?;
            let bucket = matching(
                &mut o,
                "objectStorageABucketName",
                3,
                63,
                bucket_a_ok,
                r"^[a-z\d]+[a-z\-\.\d]*[a-z\d]+$",
            )?;
            let prefix = o.opt_str("objectStorageAPathPrefix")?.filter(|p| !p.is_empty());
            if let Some(p) = &prefix {
                svc_api::reader::check_len("objectStorageAPathPrefix", p, 3, 800)?;
            }
            if prefix.as_deref().is_some_and(|p| !prefix_a_ok(p)) {
                return Err(Error::field(
                    "objectStorageAPathPrefix",
                    "must not contain \\ { } ^ % ` ' \" ~ # [ ] < > | or characters beyond ASCII",
                ));
            }
            let dest = Destination::ObjectStorageABucket(BucketA {
                region: required("objectStorageABucketRegion", region)?,
                bucket: required("objectStorageABucketName", bucket)?,
                prefix,
            });
            (dest, None)
        }
        "ObjectStorageCBucket" => {
            let bucket = o.opt_str("objectStorageCBucketName")?.filter(|s| !s.is_empty());
            if bucket.as_deref().is_some_and(|b| !bucket_c_ok(b)) {
                return Err(Error::field(
                    "objectStorageCBucketName",
                    r"must match ^[a-z\-_\d]{3,63}$ or ^(?=.*\.)[a-z\-\._\d]{3,222}$",
                ));
            }
            let prefix = o
                .opt_str_len("objectStorageCPathPrefix", 0, 256)?
                .filter(|s| !s.is_empty());
            if prefix.as_deref().is_some_and(|p| !prefix_c_ok(p)) {
                return Err(Error::field(
                    "objectStorageCPathPrefix",
                    "must not contain # [ ] * ? : \" < > or |",
                ));
            }
            let audience = o.opt_str_len("audience", 0, 256)?.filter(|s| !s.is_empty());
            let email = o.opt_str_len("serviceAccountEmail", 0, 90)?.filter(|s| !s.is_empty());
            let lifetime = o.opt_i32_range("tokenLifetime", 15, 3600)?;
            let dest = Destination::ObjectStorageCBucket(BucketC {
                bucket,
                prefix,
                audience,
                service_account_email: email,
                token_lifetime: lifetime.unwrap_or(DEFAULT_TOKEN_LIFETIME),
            });
            (dest, None)
        }
        "LogAnalyticsAHttpEventCollector" => {
            let check = (
                (|s: &str| svc_api::reader::parse_uuid(s).is_some()) as fn(&str) -> bool,
                "must be a GUID (8-4-4-4-12 hexadecimal digits)",
            );
            let (hec, secret) = parse_hec(app, &mut o, mode, "authenticationToken", check)?;
            (Destination::LogAnalyticsAHttpEventCollector(hec), secret)
        }
        _ => {
            let check = (api_key_ok as fn(&str) -> bool, "must match ^[a-zA-Z0-9-]{32,40}$");
            let (hec, secret) = parse_hec(app, &mut o, mode, "apiKey", check)?;
            (Destination::SensorAHttpEventCollector(hec), secret)
        }
    };
    o.finish()?;
    let input = StreamBody {
        data_type,
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
pub fn stream_json(app: &App, s: &LogStream) -> Value {
    let mut o = Map::new();
    o.insert("type".into(), json!(s.dest.type_name()));
    o.extend(base_json(&s.meta, false));
    o.insert("id".into(), json!(s.meta.seq));
    o.insert("dataType".into(), json!(s.data_type.as_str()));
    let c = app.streams.counters(s.meta.id);
    o.insert("inProgTransactionCount".into(), json!(c.in_progress));
    o.insert("completedTransactionCount".into(), json!(c.completed));
    o.insert("erroredTransactionCount".into(), json!(c.errored));
    match &s.dest {
        Destination::ObjectStorageABucket(b) => {
            o.insert("objectStorageABucketRegion".into(), json!(b.region));
            o.insert("objectStorageABucketName".into(), json!(b.bucket));
            o.insert("objectStorageAPathPrefix".into(), json!(b.prefix));
        }
        Destination::ObjectStorageCBucket(b) => {
            o.insert("objectStorageCBucketName".into(), json!(b.bucket));
            o.insert("objectStorageCPathPrefix".into(), json!(b.prefix));
            o.insert("audience".into(), json!(b.audience));
            o.insert("serviceAccountEmail".into(), json!(b.service_account_email));
            o.insert("tokenLifetime".into(), json!(b.token_lifetime));
        }
        Destination::LogAnalyticsAHttpEventCollector(h) | Destination::SensorAHttpEventCollector(h) => {
            o.insert("hecHostPort".into(), json!(h.host_port));
            if let Some(f) = s.dest.secret_field() {
                o.insert(f.into(), Value::Null);
            }
            o.insert("hecSourceName".into(), json!(h.source_name));
            o.insert("tls".into(), json!(h.tls));
            o.insert("tlsVerification".into(), json!(if h.verify { "full" } else { "none" }));
        }
    }
    Value::Object(o)
}

impl Resource for LogStreams {
    type Record = LogStream;
    type Input = Input;
    type Dto = Untyped;
    type Patch = Untyped;
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

    fn parse(app: &App, body: Untyped, mode: Mode, stored: Option<&LogStream>) -> Result<(BaseInput, Input)> {
        parse(app, body.0, mode, stored)
    }

    fn parse_patch(app: &App, body: Untyped, stored: Option<&LogStream>) -> Result<(BaseInput, Input)> {
        Self::parse(app, body, Mode::Patch, stored)
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

    fn render(app: &App, _: &Snapshot, s: &LogStream) -> Untyped {
        Untyped(stream_json(app, s))
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
