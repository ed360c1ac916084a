//! Prometheus metrics (issue 22; docs/metrics.md): the `metrics` facade with the Prometheus
//! recorder of `metrics-exporter-prometheus` (no HTTP stack of its own), the helpers the code
//! records through; the tiny `/metrics` listener on `SVC_METRICS_LISTEN_ADDR` is `http::scrape`.
//!
//! Labels: only values from bounded sets, all `&'static str` (route templates, methods, status
//! codes, trust kinds, credential types, §4.11 reasons, configured upstream hosts). Never a raw
//! path, a client id, a token, an entity's name or an entity-given host. On the hot path a
//! metric handle is looked up in a per-thread map by the addresses of its static labels (no lock, no allocation); without an
//! installed recorder (`SVC_METRICS_LISTEN_ADDR` empty) every helper returns at once.

use std::collections::{HashMap, HashSet};
use std::sync::{OnceLock, RwLock};
use std::time::Duration;

use metrics::{Counter, Histogram, Label};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Seconds: 100 µs to 10 s.
const SECONDS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Events per commit: 1 to the writer's batch of 512.
const BATCH: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

pub const HTTP_REQUESTS: &str = "svc_http_requests_total";
pub const HTTP_DURATION: &str = "svc_http_request_duration_seconds";
pub const EDGE_DECISIONS: &str = "svc_edge_decisions_total";
pub const TRUST_DURATION: &str = "svc_trust_verification_duration_seconds";
pub const ISSUE_DURATION: &str = "svc_credential_issue_duration_seconds";
pub const UPSTREAM_REQUESTS: &str = "svc_upstream_requests_total";
pub const UPSTREAM_DURATION: &str = "svc_upstream_request_duration_seconds";
pub const EVENT_QUEUE_DEPTH: &str = "svc_event_queue_depth";
pub const EVENT_BATCH_SIZE: &str = "svc_event_commit_batch_size";
pub const EVENT_COMMIT_DURATION: &str = "svc_event_commit_duration_seconds";
pub const EVENTS_STORED: &str = "svc_events_stored_total";
pub const EVENTS_DROPPED: &str = "svc_events_dropped_total";
pub const RATE_LIMITED: &str = "svc_edge_rate_limited_total";
pub const EDGE_UNAVAILABLE: &str = "svc_edge_unavailable_total";
pub const STATE_ENTITIES: &str = "svc_state_entities";
pub const STATE_REBUILD: &str = "svc_state_rebuild_duration_seconds";
pub const CHANGELOG_LAG: &str = "svc_changelog_lag_changes";
pub const LOG_STREAM_LAG: &str = "svc_log_stream_lag_seconds";
pub const LOG_STREAM_TRANSACTIONS: &str = "svc_log_stream_transactions_total";

/// Installs the global recorder (once; later calls return the same handle). `serve` calls it
/// when `SVC_METRICS_LISTEN_ADDR` is set; nothing is recorded before.
pub fn install() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets(SECONDS)
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full(EVENT_BATCH_SIZE.into()), BATCH))
            .expect("non-empty bucket lists")
            .build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("a metrics recorder was already installed; /metrics shows only this one's");
        }
        describe();
        handle
    })
}

/// Whether a recorder is installed (callers that would compute a label first ask).
pub fn enabled() -> bool {
    HANDLE.get().is_some()
}

fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(HTTP_REQUESTS, "HTTP requests by route template, method and status.");
    describe_histogram!(
        HTTP_DURATION,
        Unit::Seconds,
        "HTTP request latency by route template, method and status."
    );
    describe_counter!(
        EDGE_DECISIONS,
        "Edge authorization events by endpoint, event type, result and §4.11 reason."
    );
    describe_histogram!(
        TRUST_DURATION,
        Unit::Seconds,
        "Trust-provider evidence verification by kind and result."
    );
    describe_histogram!(
        ISSUE_DURATION,
        Unit::Seconds,
        "Credential issuance by credential-provider type and result."
    );
    describe_counter!(
        UPSTREAM_REQUESTS,
        "Upstream HTTP calls by configured host (or `entity`) and result."
    );
    describe_histogram!(
        UPSTREAM_DURATION,
        Unit::Seconds,
        "Upstream HTTP call latency by configured host (or `entity`)."
    );
    describe_gauge!(
        EVENT_QUEUE_DEPTH,
        "Edge events queued and not yet handled by the writer."
    );
    describe_histogram!(
        EVENT_BATCH_SIZE,
        Unit::Count,
        "Edge events per commit of the event writer."
    );
    describe_histogram!(
        EVENT_COMMIT_DURATION,
        Unit::Seconds,
        "Commit latency of one event batch, by result."
    );
    describe_counter!(EVENTS_STORED, "Edge events stored.");
    describe_counter!(
        EVENTS_DROPPED,
        "Edge events dropped: recorded without room on a full queue, or lost after retries."
    );
    describe_counter!(
        EDGE_UNAVAILABLE,
        "Edge requests answered 503 because their events could not be committed in time (fail closed)."
    );
    describe_counter!(
        RATE_LIMITED,
        "Edge requests refused with 429 by a token bucket, by route template."
    );
    describe_gauge!(
        STATE_ENTITIES,
        "Entities in the in-memory configuration snapshot, by kind."
    );
    describe_histogram!(
        STATE_REBUILD,
        Unit::Seconds,
        "Time to build a new configuration snapshot, by cause (start, refresh)."
    );
    describe_gauge!(
        CHANGELOG_LAG,
        "PostgreSQL: changes in the cluster change log this node has not applied yet."
    );
    describe_gauge!(
        LOG_STREAM_LAG,
        Unit::Seconds,
        "Age of the oldest record a log stream has not delivered (0: caught up), by stream id; set by the delivering node."
    );
    describe_counter!(
        LOG_STREAM_TRANSACTIONS,
        "Log-stream transactions by stream id and result (completed, errored, dropped)."
    );
}

// ---- handle caches ---------------------------------------------------------------------------

/// A metric handle per (name, label values), keyed by the addresses and lengths of the static
/// strings. Each thread keeps its own map (a handful of runtime threads, tens of handles each):
/// a lookup is a hash of a few integers, with no lock, no shared cache line and no reference
/// count touched; the handle's own atomic update is the only write other cores see.
type Key = [(usize, usize); 5];

fn key(name: &'static str, labels: &[(&'static str, &'static str)]) -> Key {
    let mut k = [(0, 0); 5];
    k[0] = (name.as_ptr() as usize, name.len());
    for (slot, (_, v)) in k[1..].iter_mut().zip(labels) {
        *slot = (v.as_ptr() as usize, v.len());
    }
    k
}

/// Hashes the keys' integers (addresses and lengths, already well spread) by multiply-rotate
/// instead of SipHash: the keys come from the code, not from requests, so no flooding defence
/// is needed.
#[derive(Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

type Handles<T> = std::cell::RefCell<HashMap<Key, T, std::hash::BuildHasherDefault<KeyHasher>>>;

fn labels(l: &[(&'static str, &'static str)]) -> Vec<Label> {
    l.iter().map(|(k, v)| Label::from_static_parts(k, v)).collect()
}

thread_local! {
    static COUNTERS: Handles<Counter> = Default::default();
    static HISTOGRAMS: Handles<Histogram> = Default::default();
}

/// Runs `f` on this thread's handle (from `cache`, made by `make` the first time) of `name` with
/// labels `l`.
fn with_handle<T>(
    cache: &'static std::thread::LocalKey<Handles<T>>,
    name: &'static str,
    l: &[(&'static str, &'static str)],
    make: impl FnOnce() -> T,
    f: impl FnOnce(&T),
) {
    cache.with(|c| f(c.borrow_mut().entry(key(name, l)).or_insert_with(make)));
}

fn count(name: &'static str, l: &[(&'static str, &'static str)], n: u64) {
    with_handle(
        &COUNTERS,
        name,
        l,
        || metrics::counter!(name, labels(l)),
        |c| c.increment(n),
    );
}

fn observe(name: &'static str, l: &[(&'static str, &'static str)], v: f64) {
    with_handle(
        &HISTOGRAMS,
        name,
        l,
        || metrics::histogram!(name, labels(l)),
        |h| h.record(v),
    );
}

/// One `&'static str` per distinct text (route templates: a bounded set, leaked once).
fn intern(s: &str) -> &'static str {
    static I: OnceLock<RwLock<HashSet<&'static str>>> = OnceLock::new();
    let set = I.get_or_init(Default::default);
    if let Some(v) = set.read().ok().and_then(|m| m.get(s).copied()) {
        return v;
    }
    let mut m = set.write().expect("intern lock");
    if let Some(v) = m.get(s) {
        return v;
    }
    let v: &'static str = Box::leak(s.to_owned().into_boxed_str());
    m.insert(v);
    v
}

/// The route template's label, cached per thread by the address of the router's own text of it
/// (the same `Arc<str>` on every request of a route).
fn route_label(matched: Option<&str>) -> &'static str {
    thread_local! {
        static R: std::cell::RefCell<HashMap<(usize, usize), &'static str, std::hash::BuildHasherDefault<KeyHasher>>> =
            Default::default();
    }
    let Some(m) = matched else { return "unmatched" };
    R.with(|r| {
        *r.borrow_mut()
            .entry((m.as_ptr() as usize, m.len()))
            .or_insert_with(|| intern(m))
    })
}

fn method_label(m: &str) -> &'static str {
    match m {
        "GET" => "GET",
        "POST" => "POST",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "DELETE" => "DELETE",
        "HEAD" => "HEAD",
        "OPTIONS" => "OPTIONS",
        _ => "other",
    }
}

fn status_label(s: u16) -> &'static str {
    match s {
        200 => "200",
        201 => "201",
        202 => "202",
        204 => "204",
        301 => "301",
        302 => "302",
        303 => "303",
        304 => "304",
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        405 => "405",
        408 => "408",
        413 => "413",
        415 => "415",
        429 => "429",
        500 => "500",
        502 => "502",
        503 => "503",
        504 => "504",
        _ => match s / 100 {
            1 => "1xx",
            2 => "2xx",
            3 => "3xx",
            4 => "4xx",
            _ => "5xx",
        },
    }
}

// ---- what the code records -------------------------------------------------------------------

/// One HTTP request: `matched` is the router's route template (`None`: no route matched).
pub fn http_request(matched: Option<&str>, method: &str, status: u16, elapsed: Duration) {
    if !enabled() {
        return;
    }
    let l = [
        ("route", route_label(matched)),
        ("method", method_label(method)),
        ("status", status_label(status)),
    ];
    count(HTTP_REQUESTS, &l, 1);
    observe(HTTP_DURATION, &l, elapsed.as_secs_f64());
    // Only the Edge API's token buckets answer 429 (§4.12).
    if status == 429 {
        count(RATE_LIMITED, &[("route", l[0].1)], 1);
    }
}

/// The §4.11 reasons and results an authorization event may carry; anything else is `other`.
const REASONS: &[&str] = &[
    "NoDataFound",
    "InvalidSignature",
    "InvalidEvidence",
    "StaleEvidence",
    "MatchRuleFailed",
    "UpstreamError",
    "InvalidRequest",
    "InvalidClientId",
    "InvalidToken",
    "NoClientWorkload",
    "NoServerWorkload",
    "NoAccessPolicy",
    "MultipleAccessPolicies",
    "ResourceSetMismatch",
    "AttestationFailed",
    "ConditionFailed",
    "NoCredentialProvider",
    "SelectorRequired",
    "SelectorMismatch",
    "CredentialTypeMismatch",
    "UnresolvableClaim",
];

fn reason_label(reason: Option<&str>) -> &'static str {
    match reason {
        None => "none",
        Some(r) => REASONS.iter().copied().find(|k| *k == r).unwrap_or("other"),
    }
}

/// One authorization event of the Edge API (§4.11): its type names the endpoint.
pub fn edge_decision(event_type: &'static str, result: &'static str, reason: Option<&str>) {
    if !enabled() {
        return;
    }
    let endpoint = if event_type == "access.authentication" {
        "auth"
    } else {
        "credentials"
    };
    let l = [
        ("endpoint", endpoint),
        ("event", event_type),
        ("result", result),
        ("reason", reason_label(reason)),
    ];
    count(EDGE_DECISIONS, &l, 1);
}

/// One trust-provider verification: `kind` is the provider kind's name, `ok` its outcome.
pub fn trust_verified(kind: &'static str, ok: bool, elapsed: Duration) {
    if enabled() {
        let l = [("kind", kind), ("result", if ok { "ok" } else { "failed" })];
        observe(TRUST_DURATION, &l, elapsed.as_secs_f64());
    }
}

/// One credential issuance by a provider of type `kind`.
pub fn credential_issued(kind: &'static str, ok: bool, elapsed: Duration) {
    if enabled() {
        let l = [("type", kind), ("result", if ok { "ok" } else { "failed" })];
        observe(ISSUE_DURATION, &l, elapsed.as_secs_f64());
    }
}

/// One upstream call: `host` is a configured host (bounded by the configuration) or `entity`.
pub fn upstream_call(host: &'static str, result: &'static str, elapsed: Duration) {
    if enabled() {
        count(UPSTREAM_REQUESTS, &[("host", host), ("result", result)], 1);
        observe(UPSTREAM_DURATION, &[("host", host)], elapsed.as_secs_f64());
    }
}

/// The label of an upstream URL's host: the configured URL's host it matches (a template's
/// `{region}` matches any text), else `entity` (issuers, vaults, OAuth servers named by
/// entities: an unbounded set, never a label).
pub fn upstream_host(configured: &[&'static str], host: &str) -> &'static str {
    for &c in configured {
        let matches = match (c.find('{'), c.rfind('}')) {
            (Some(i), Some(j)) if i < j => {
                host.len() >= i + (c.len() - j - 1) && host.starts_with(&c[..i]) && host.ends_with(&c[j + 1..])
            }
            _ => c.eq_ignore_ascii_case(host),
        };
        if matches {
            return c;
        }
    }
    "entity"
}

/// The host of a configured URL (template braces kept), leaked once at start (a bounded set).
pub fn configured_host(url: &str) -> Option<&'static str> {
    let rest = url.split_once("://")?.1;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match authority.rfind(':') {
        Some(i) if !authority[i + 1..].contains(['}', ']']) => &authority[..i],
        _ => authority,
    };
    (!host.is_empty()).then(|| intern(&host.to_ascii_lowercase()))
}

/// One commit attempt of the event writer: the batch's size, how long the commit took, whether
/// it stored the batch; a failed `last` attempt loses the batch (no more retries).
pub fn event_batch(n: usize, stored: bool, last: bool, elapsed: Duration) {
    if !enabled() {
        return;
    }
    let l = [("result", if stored { "ok" } else { "failed" })];
    observe(EVENT_COMMIT_DURATION, &l, elapsed.as_secs_f64());
    if stored {
        observe(EVENT_BATCH_SIZE, &[], n as f64);
        count(EVENTS_STORED, &[], n as u64);
    } else if last {
        count(EVENTS_DROPPED, &[("cause", "write_failed")], n as u64);
    }
}

/// An edge request answered 503: its events were not committed in time.
pub fn edge_unavailable() {
    if enabled() {
        count(EDGE_UNAVAILABLE, &[], 1);
    }
}

/// A request's events found the queue full (never with a reservation).
pub fn event_dropped() {
    if enabled() {
        count(EVENTS_DROPPED, &[("cause", "queue_full")], 1);
    }
}

/// A new configuration snapshot was built (`start`: loaded from storage; `refresh`: other
/// nodes' changes applied).
pub fn state_rebuilt(cause: &'static str, elapsed: Duration) {
    if enabled() {
        observe(STATE_REBUILD, &[("cause", cause)], elapsed.as_secs_f64());
    }
}

/// A log stream's lag after its cycle: the age in seconds of the oldest record it has not
/// delivered. `stream` is the stream's int `id` (one per configured stream: bounded by the
/// configuration, and no entity id's shape).
pub fn log_stream_lag(stream: i32, seconds: f64) {
    if enabled() {
        metrics::gauge!(LOG_STREAM_LAG, "stream" => stream.to_string()).set(seconds);
    }
}

/// One ended log-stream transaction: `completed`, `errored` (retried) or `dropped` (after 24 h).
pub fn log_stream_transaction(stream: i32, result: &'static str) {
    if enabled() {
        metrics::counter!(LOG_STREAM_TRANSACTIONS, "stream" => stream.to_string(), "result" => result).increment(1);
    }
}

/// The installed recorder's handle, which `http::scrape` renders; `None` before [`install`].
pub fn handle() -> Option<&'static PrometheusHandle> {
    HANDLE.get()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_hosts_are_configured_ones_or_entity() {
        let configured = [
            configured_host("https://sts.{region}.amazonaws.example/x").unwrap(),
            configured_host("http://127.0.0.1:5000/token").unwrap(),
            configured_host("https://login.example:443/").unwrap(),
        ];
        assert_eq!(
            configured,
            ["sts.{region}.amazonaws.example", "127.0.0.1", "login.example"]
        );
        assert_eq!(
            upstream_host(&configured, "sts.eu-west-1.amazonaws.example"),
            configured[0]
        );
        assert_eq!(upstream_host(&configured, "127.0.0.1"), "127.0.0.1");
        assert_eq!(upstream_host(&configured, "vault.customer.example"), "entity");
        assert_eq!(upstream_host(&configured, "sts.amazonaws.example"), "entity");
    }

    #[test]
    fn labels_are_bounded() {
        assert_eq!(reason_label(Some("NoAccessPolicy")), "NoAccessPolicy");
        assert_eq!(reason_label(Some("client id abc.def")), "other");
        assert_eq!(reason_label(None), "none");
        assert_eq!(status_label(418), "4xx");
        assert_eq!(method_label("BREW"), "other");
        assert_eq!(route_label(None), "unmatched");
    }
}
