//! Structured logs: one JSON object per line (`ts`, `level`, `msg`, fields), on stderr, or on
//! stdout for the agent (whose stdout carries logs only). Callers pass only non-secret fields
//! (entry keys without meta values, statuses, service messages).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};

static TO_STDOUT: AtomicBool = AtomicBool::new(false);

/// Sends the log lines to stdout instead of stderr (the agent).
pub fn to_stdout() {
    TO_STDOUT.store(true, Ordering::SeqCst);
}

use crate::clock::Clock;

pub fn event(level: &str, msg: &str, fields: &[(&str, Value)]) {
    let mut m = Map::new();
    m.insert(
        "ts".into(),
        Value::String(svc_api::Timestamp::from_millis(crate::clock::SystemClock.now_ms()).to_rfc3339()),
    );
    m.insert("level".into(), Value::String(level.into()));
    m.insert("msg".into(), Value::String(msg.into()));
    for (k, v) in fields {
        m.insert((*k).into(), v.clone());
    }
    let line = format!("{}\n", Value::Object(m));
    if TO_STDOUT.load(Ordering::SeqCst) {
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(line.as_bytes()).and_then(|_| o.flush());
    } else {
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
}

pub fn info(msg: &str, fields: &[(&str, Value)]) {
    event("info", msg, fields)
}

pub fn warn(msg: &str, fields: &[(&str, Value)]) {
    event("warn", msg, fields)
}
