//! Log-stream delivery (contract §3.14, §5.4). Every `SVC_LOG_STREAM_INTERVAL_SECONDS` (60 s by
//! default) each active stream sends, as one transaction, the records of its `dataType` stored
//! since its last successful transaction (every resource set, at most [`MAX_RECORDS`]; an
//! acknowledged transaction is followed at once by the next while records stored before the cycle
//! began wait), each the exact DTO the event lists return (`events::shape` puts back what a row
//! is stored without). A transaction is counted in progress, then completed (2xx) or errored:
//! an errored one is sent again, with the same records, every cycle until it succeeds or its
//! first attempt is [`GIVE_UP_MS`] old, when it is dropped and the cursor moves past it.
//!
//! The stored events are the outbox: each stream's cursor (`store::streams`) is durable and only
//! moves once a sink answered, so a restart or a crash resumes where the last acknowledged
//! transaction ended. On PostgreSQL one node at a time delivers a stream (`store::Deliverer`: a
//! session advisory lock; another node takes over within a cycle of the holder's connection
//! ending). Right before a send the node catches up with other nodes' writes and checks the
//! stream is still there, active and of the same `dataType`; the cursor row, removed with the
//! stream, is the last check (a deleted stream stops at once).
//!
//! The counters GET shows are the rows' (what the stream did, whichever node delivered it),
//! read by every node at the start of each cycle and at start-up, and changed at once on the
//! node that delivers: on any other node they are at most one interval (plus a cycle) old.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;
use uuid::Uuid;

use crate::app::App;
use crate::domain::stream::{Destination, Hec, LogStream};
use crate::events::object_storage::{ObjectA, ObjectC, Upload, put_a, put_c};
use crate::events::shape;
use crate::events::streams::{GIVE_UP_MS, MAX_RECORDS, table_of};
use crate::store::{EventTable, Outcome, StoreError, StreamRecord};

/// The delivery loop of a node (started by `service::jobs`): a cycle every interval until the
/// node stops.
pub async fn run(app: App) {
    let every = Duration::from_secs(app.cfg.log_stream_interval_seconds.into());
    let mut stop = app.streams.stopping.subscribe();
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        cycle(&app).await;
    }
}

/// One cycle: the counters of every stream read again, then one transaction per active stream
/// this node delivers (the streams in parallel: a slow sink delays only its own stream), and
/// more at once while a stream's transactions come back acknowledged and records stored before
/// the cycle began are still waiting: a backlog (of more than [`MAX_RECORDS`], or the records
/// stored while a sink was failing, after its retried transaction) is sent in transactions one
/// after the other, not one per cycle (docs/API-CONVENTIONS.md: a stream catches up at once).
pub async fn cycle(app: &App) {
    let _running = app.streams.cycle.lock().await;
    if app.streams.stopping() {
        return;
    }
    let began = crate::clock::now_millis();
    let rows = match app.store.stream_cursors().await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::warn!(error = %e, "reading the log streams' cursors failed");
            return;
        }
    };
    app.streams.refresh(&rows);
    let st = app.state_full();
    let all: HashSet<Uuid> = st.log_streams.keys().copied().collect();
    app.streams.deliverer.release_except(&all).await;
    let active: Vec<Arc<LogStream>> = st.log_streams.values().filter(|s| s.meta.active).cloned().collect();
    drop(st);
    futures_util::future::join_all(
        active
            .into_iter()
            .map(|s| async move { while deliver(app, s.clone(), began).await && !app.streams.stopping() {} }),
    )
    .await;
}

/// The floors of retention: per event table, the lowest cursor of the active streams that carry
/// it (what they have not delivered is kept, §3.14).
pub async fn retention_floors(app: &App) -> Result<Vec<(EventTable, i64)>, StoreError> {
    let rows = app.store.stream_cursors().await?;
    let st = app.state();
    Ok(st
        .log_streams
        .values()
        .filter(|s| s.meta.active)
        .map(|s| {
            let delivered = rows
                .iter()
                .find(|r| r.stream == s.meta.id && r.data_type == s.data_type.as_str())
                .map_or(0, |r| r.delivered);
            (table_of(s.data_type), delivered)
        })
        .collect())
}

/// One stream's transaction of this cycle, if this node delivers it and it has records: `true`
/// when it was acknowledged and more records are waiting that were stored before the cycle
/// `began` (ms), or it was full (issue 34: a retried transaction carries only the records of its
/// first attempt, and those stored during the fault follow at once, not a period later).
async fn deliver(app: &App, s: Arc<LogStream>, began: i64) -> bool {
    let id = s.meta.id;
    match app.streams.deliverer.claim(id).await {
        Ok(true) => {}
        Ok(false) => return false,
        Err(e) => {
            tracing::warn!(stream = %id, error = %e, "log stream: taking the delivery lock failed");
            return false;
        }
    }
    let table = table_of(s.data_type);
    // Read again: another node may have moved it while this one did not deliver the stream.
    let row = match app.store.stream_cursor(id).await {
        Ok(Some(r)) => r,
        Ok(None) => {
            crate::service::load::catch_up(app).await;
            if app.state().log_streams.contains_key(&id)
                && let Err(e) = app
                    .streams
                    .deliverer
                    .start_missing(id, s.data_type.as_str(), table)
                    .await
            {
                tracing::warn!(stream = %id, error = %e, "log stream: storing its cursor failed");
            }
            return false;
        }
        Err(e) => {
            tracing::warn!(stream = %id, error = %e, "log stream: reading its cursor failed");
            return false;
        }
    };
    // A `dataType` change not seen by both yet (the row or this node's state): next cycle.
    if row.data_type != s.data_type.as_str() {
        return false;
    }
    let now = crate::clock::now_millis();
    let records = match app
        .store
        .records_after(table, row.delivered, row.pending_last, MAX_RECORDS)
        .await
    {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(stream = %id, error = %e, "log stream: reading records failed");
            return false;
        }
    };
    let Some(newest) = records.last().map(|r| r.seq) else {
        if let Some(p) = row.pending_last
            && let Err(e) = app
                .streams
                .deliverer
                .skip_pending(id, row.data_type.as_str(), p, now)
                .await
        {
            tracing::warn!(stream = %id, error = %e, "log stream: moving its cursor failed");
        }
        crate::metrics::log_stream_lag(s.meta.seq, 0.0);
        return false;
    };
    // A retry covers the same records: the transaction ends where its first attempt did.
    let last = row.pending_last.unwrap_or(newest);
    // Right before sending: the stream as committed now, on any node.
    crate::service::load::catch_up(app).await;
    let Some(current) = app.state().log_streams.get(&id).cloned() else {
        return false;
    };
    if !current.meta.active || current.data_type != s.data_type || app.streams.stopping() {
        return false;
    }
    match app.streams.deliverer.begin(id, &row.data_type, last, now).await {
        Ok(true) => {}
        // The row went with the stream (deleted on another node).
        Ok(false) => return false,
        Err(e) => {
            tracing::warn!(stream = %id, error = %e, "log stream: counting its transaction failed");
            return false;
        }
    }
    app.streams.change(id, |c| c.in_progress = 1);
    let count = records.len();
    let result = send(app, &current, table, records, now).await;
    let ended = crate::clock::now_millis();
    let first_attempt = row.pending_since.unwrap_or(now);
    let outcome = match &result {
        Ok(()) => Outcome::Completed,
        Err(_) if ended - first_attempt >= GIVE_UP_MS => Outcome::Dropped,
        Err(_) => Outcome::Errored,
    };
    if let Err(e) = &result {
        // Never a secret: the collector's answer is scrubbed of what was sent, and the
        // stream's own secret is taken out once more.
        let e = match current.secret() {
            Some(secret) if !secret.is_empty() => e.replace(secret, "***"),
            _ => e.clone(),
        };
        if outcome == Outcome::Dropped {
            tracing::error!(stream = %id, records = count, error = %e, "log stream transaction dropped after 24 h of failures");
        } else {
            tracing::warn!(stream = %id, records = count, error = %e, "log stream transaction failed; retried next cycle");
        }
    }
    if let Err(e) = app
        .streams
        .deliverer
        .finish(id, &row.data_type, last, outcome, ended)
        .await
    {
        tracing::warn!(stream = %id, error = %e, "log stream: recording its transaction failed");
    }
    app.streams.change(id, |c| {
        c.in_progress = 0;
        match outcome {
            Outcome::Completed => c.completed += 1,
            Outcome::Errored | Outcome::Dropped => c.errored += 1,
        }
    });
    crate::metrics::log_stream_transaction(
        s.meta.seq,
        match outcome {
            Outcome::Completed => "completed",
            Outcome::Errored => "errored",
            Outcome::Dropped => "dropped",
        },
    );
    if outcome == Outcome::Completed {
        app.streams.sent.fetch_add(1, Ordering::Relaxed);
    }
    let delivered = if outcome == Outcome::Errored {
        row.delivered
    } else {
        last
    };
    let mut behind = false;
    if let Ok(oldest) = app.store.first_time_after(table, delivered).await {
        let lag = oldest.map_or(0, |t| (ended - t).max(0));
        crate::metrics::log_stream_lag(s.meta.seq, lag as f64 / 1000.0);
        behind = oldest.is_some_and(|t| t <= began);
    }
    outcome == Outcome::Completed && (count as i64 == MAX_RECORDS || behind)
}

/// Writes a stored record as the event lists show it: `body` and `shared` (its request's shared
/// parts), parsed (see [`Records::write_each`]). `false` (nothing written): a body that is not
/// JSON, logged.
fn write_record(
    out: &mut Vec<u8>,
    table: EventTable,
    r: &StreamRecord,
    body: Option<&shape::Stored<'_>>,
    shared: Option<&shape::Stored<'_>>,
    memo: &mut shape::SharedParts,
) -> bool {
    let Some(body) = body else {
        tracing::error!(seq = r.seq, "log stream: a stored record is not JSON; skipped");
        return false;
    };
    let shape = match table {
        EventTable::Audit => {
            body.write(out);
            return true;
        }
        EventTable::Authorization => shape::AUTHORIZATION_EVENT,
        EventTable::Workload => shape::WORKLOAD_EVENT,
    };
    shape::write_expanded(out, body, shared, shape, &r.columns, memo);
    true
}

/// Milliseconds since the epoch as seconds with three decimals (`1732615200.123`).
fn epoch_seconds(ms: i64) -> String {
    format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
}

/// Sends one transaction to the stream's destination. `Err`: a text for the log, without a
/// secret.
async fn send(app: &App, s: &LogStream, table: EventTable, records: Vec<StreamRecord>, now: i64) -> Result<(), String> {
    let values = Records {
        table,
        records: &records,
    };
    match &s.dest {
        Destination::LogAnalyticsAHttpEventCollector(h) => {
            let token = s.secret().ok_or("the collector's authenticationToken is missing")?;
            let auth = format!("{} {token}", app.cfg.hec_auth_scheme);
            send_hec(app, h, &auth, values).await
        }
        Destination::SensorAHttpEventCollector(h) => {
            let key = s.secret().ok_or("the collector's apiKey is missing")?;
            send_hec(app, h, &format!("Bearer {key}"), values).await
        }
        Destination::ObjectStorageABucket(b) => {
            let ndjson = ndjson(values);
            let dest = ObjectA {
                region: &b.region,
                bucket: &b.bucket,
                prefix: b.prefix.as_deref(),
            };
            put_a(&app.services(), &dest, &upload(s, now, &ndjson)).await
        }
        Destination::ObjectStorageCBucket(b) => {
            let ndjson = ndjson(values);
            let dest = ObjectC {
                stream: s.meta.id,
                bucket: b.bucket.as_deref(),
                prefix: b.prefix.as_deref(),
                audience: b.audience.as_deref(),
                service_account_email: b.service_account_email.as_deref(),
                token_lifetime: b.token_lifetime,
            };
            put_c(&app.services(), &dest, &upload(s, now, &ndjson)).await
        }
    }
}

fn upload<'a>(s: &LogStream, now: i64, ndjson: &'a [u8]) -> Upload<'a> {
    Upload {
        data_type: s.data_type.as_str(),
        at: now,
        ndjson,
    }
}

/// A transaction's records, written straight into the request body.
struct Records<'a> {
    table: EventTable,
    records: &'a [StreamRecord],
}

impl Records<'_> {
    /// Each record written after `before` (and followed by `after`): its time, nothing when it
    /// cannot be written.
    fn write_each(&self, out: &mut Vec<u8>, before: impl Fn(&mut Vec<u8>, i64), after: &[u8]) {
        let mut memo = shape::SharedParts::default();
        // The stored text being written (a request's bodies, or one audit entry) and its request's
        // shared parts, each parsed once for the records that share them.
        let mut current: Option<(&StreamRecord, Option<shape::Stored<'_>>, Option<shape::Stored<'_>>)> = None;
        for r in self.records {
            if current
                .as_ref()
                .is_none_or(|(of, _, _)| !std::sync::Arc::ptr_eq(&of.text, &r.text))
            {
                memo.clear();
                current = Some((
                    r,
                    shape::Stored::parse(&r.text),
                    r.shared.as_deref().and_then(shape::Stored::parse),
                ));
            }
            let (_, text, shared) = current.as_ref().expect("set above");
            let body = match (r.index, text) {
                (None, body) => body.as_ref(),
                (Some(i), Some(shape::Stored::Array(bodies))) => bodies.get(i),
                _ => None,
            };
            let start = out.len();
            before(out, r.time);
            if write_record(out, self.table, r, body, shared.as_ref(), &mut memo) {
                out.extend_from_slice(after);
            } else {
                out.truncate(start);
            }
        }
    }
}

/// One JSON record per line.
fn ndjson(values: Records<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.records.len() * 3072);
    values.write_each(&mut out, |_, _| {}, b"\n");
    out
}

/// §5.4: `POST {https|http}://<hecHostPort>/services/collector/event` with the records as
/// concatenated `{"time", "source", "sourcetype": "_json", "event"}` objects.
async fn send_hec(app: &App, h: &Hec, auth: &str, values: Records<'_>) -> Result<(), String> {
    let source = Value::String(h.source_name.clone()).to_string();
    // An expanded authorization event is 2–3 KB: sized once, not grown through a dozen copies.
    let mut body: Vec<u8> = Vec::with_capacity(values.records.len() * 3072);
    values.write_each(
        &mut body,
        |out, time| {
            out.extend_from_slice(b"{\"time\":");
            out.extend_from_slice(epoch_seconds(time).as_bytes());
            out.extend_from_slice(b",\"source\":");
            out.extend_from_slice(source.as_bytes());
            out.extend_from_slice(b",\"sourcetype\":\"_json\",\"event\":");
        },
        b"}",
    );
    let scheme = if h.tls { "https" } else { "http" };
    let url = format!("{scheme}://{}/services/collector/event", h.host_port);
    let up = if h.verify {
        app.upstream.clone()
    } else {
        app.streams.unverified(&app.cfg)?
    };
    let url = up.check_url(&url).map_err(|e| e.to_string())?;
    let req = up
        .client
        .post(url)
        .header("authorization", auth)
        .header("content-type", "application/json")
        .body(body);
    let f = up.send(req).await.map_err(|e| e.to_string())?;
    if (200..300).contains(&f.status) {
        Ok(())
    } else {
        Err(format!("the collector answered {}", f.refusal()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hec_times_are_epoch_seconds_with_milliseconds() {
        assert_eq!(epoch_seconds(1_732_615_200_123), "1732615200.123");
        assert_eq!(epoch_seconds(1_732_615_200_005), "1732615200.005");
        assert_eq!(epoch_seconds(1_000), "1.000");
        assert_eq!(epoch_seconds(0), "0.000");
    }
}
