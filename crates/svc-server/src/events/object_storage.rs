//! The object-storage destinations of log streams (contract §3.14, §5.4): `ObjectStorageABucket`
//! (SigV4-signed `PUT` with the host's own cloudA credentials) and `ObjectStorageCBucket`
//! (assertion → cloudC exchange → `generateAccessToken` → upload). One call uploads one
//! transaction's records as one NDJSON object; the delivery loop (`events::streams`) decides
//! what to send and keeps the cursor.

use uuid::Uuid;

use crate::credential::Services;

/// An `ObjectStorageABucket` stream's destination.
#[derive(Clone, Copy, Debug)]
pub struct ObjectA<'a> {
    pub region: &'a str,
    pub bucket: &'a str,
    /// `objectStorageAPathPrefix`; `None` puts the objects at the bucket's root.
    pub prefix: Option<&'a str>,
}

/// An `ObjectStorageCBucket` stream's destination.
#[derive(Clone, Copy, Debug)]
pub struct ObjectC<'a> {
    /// The stream's `externalId` (the assertion's subject is `svc-log-stream:<externalId>`).
    pub stream: Uuid,
    pub bucket: Option<&'a str>,
    pub prefix: Option<&'a str>,
    pub audience: Option<&'a str>,
    pub service_account_email: Option<&'a str>,
    /// `tokenLifetime`, seconds.
    pub token_lifetime: i32,
}

/// One transaction of a stream: its records as NDJSON (one JSON object per line, each the exact
/// DTO the event APIs return).
#[derive(Clone, Copy, Debug)]
pub struct Upload<'a> {
    /// `AuditLogs`, `AccessAuthorizationEvents` or `WorkloadEvents`.
    pub data_type: &'a str,
    /// When the transaction was made (milliseconds since the epoch): the object name's time.
    pub at: i64,
    pub ndjson: &'a [u8],
}

/// Uploads one transaction to an `ObjectStorageABucket`. `Err` carries a text for the log and
/// the stream's errored count, never a secret.
pub async fn put_a(_svc: &Services<'_>, _dest: &ObjectA<'_>, _upload: &Upload<'_>) -> Result<(), String> {
    Err("ObjectStorageABucket delivery is not built yet".into())
}

/// Uploads one transaction to an `ObjectStorageCBucket`.
pub async fn put_c(_svc: &Services<'_>, _dest: &ObjectC<'_>, _upload: &Upload<'_>) -> Result<(), String> {
    Err("ObjectStorageCBucket delivery is not built yet".into())
}
