//! The object-storage destinations of log streams (contract §5.4), called directly as the
//! delivery loop calls them (`events::object_storage::put_a` / `put_c`): objectStorageA against
//! the signature-validating moto S3 with each source of the host's credential chain, objectStorageC
//! against the loopback cloudC fake (`support::cloudc`).

mod clouda;
mod cloudc;

use svc_server::events::object_storage::Upload;

/// 2026-03-04T05:06:07.890Z: the transaction time every test uploads at.
pub const AT: i64 = 1_772_600_767_890;
/// The object name's date path and time stamp of [`AT`].
pub const AT_PATH: &str = "2026/03/04/20260304T050607Z-";

/// Two audit records as the delivery loop sends them (one JSON object per line).
pub const NDJSON: &str = "{\"id\":1,\"category\":\"Create\",\"message\":\"created x\"}\n{\"id\":2,\"category\":\"Delete\",\"message\":\"deleted x\"}\n";

pub fn upload() -> Upload<'static> {
    Upload {
        data_type: "AuditLogs",
        at: AT,
        ndjson: NDJSON.as_bytes(),
    }
}

/// Asserts that `name` is `<prefix>/AuditLogs/<AT_PATH><uuid v4>.ndjson` (§5.4).
#[track_caller]
pub fn assert_object_name(name: &str, prefix: &str) {
    let head = format!("{prefix}AuditLogs/{AT_PATH}");
    let uuid = name
        .strip_prefix(&head)
        .and_then(|r| r.strip_suffix(".ndjson"))
        .unwrap_or_else(|| panic!("{name:?} is not {head}<uuid>.ndjson"));
    assert_eq!(uuid::Uuid::parse_str(uuid).unwrap().get_version_num(), 4, "{name}");
}
