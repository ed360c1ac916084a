//! Structured logs: one JSON object per line on stderr (`ts`, `level`, `msg`, fields). Callers
//! pass only non-secret fields (entry keys without meta values, statuses, service messages).

use serde_json::{Map, Value};

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
    eprintln!("{}", Value::Object(m));
}

pub fn info(msg: &str, fields: &[(&str, Value)]) {
    event("info", msg, fields)
}

pub fn warn(msg: &str, fields: &[(&str, Value)]) {
    event("warn", msg, fields)
}
