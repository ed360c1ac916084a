//! Access conditions and integrations (§3.10, §3.11) and their evaluation at
//! `/edge/v1/credentials` (§4.8 step 9): management rules, the GeoIP database the tests build
//! (`mmdb`), loopback fakes of the vendor APIs of §5.4, and content security (§3.13).

mod content_security;
mod discovery;
mod evaluation;
mod integrations;
mod mmdb;
mod rules;
mod sync;
mod vendors;

use serde_json::{Value, json};

use crate::support::harness::TestApp;

pub const SECRET: &str = "canary-integration-secret-7f3a";
pub const BUILTIN_CHANGE: &str = "integrationType: built-in integrations cannot be modified or deleted";

/// A v2 `SensorA` integration body.
pub fn sensor_a_body(token_url: &str) -> Value {
    json!({"name": "sensor", "isActive": true, "integrationType": "SensorA", "syncFrequencySeconds": 300,
           "endpoint": "https://api.sensor.example", "clientId": "sensor-client", "clientSecret": SECRET,
           "tokenUrl": token_url})
}

/// The built-in integration of `int_type` in the default resource set.
pub async fn builtin(t: &TestApp, int_type: &str) -> String {
    let r = t
        .get(&format!("/api/v2/integrations?filter=integrationType:{int_type}"))
        .await;
    r.expect(200)["integrations"][0]["externalId"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A v2 time condition open all week (`open`) or never open now (an empty minute window on a
/// day that is not today is impossible to guarantee, so: every day 00:00–00:01 in a zone where it
/// is not that minute).
pub fn time_body(name: &str, windows: Value) -> Value {
    json!({"name": name, "isActive": true, "integrationType": "SvcTimeCondition",
           "schedule": windows, "timezone": {"timezone": "Europe/Berlin", "group": "Europe", "label": "Berlin"}})
}

/// Every day from `start` to `end`.
pub fn every_day(start: &str, end: &str) -> Value {
    let days = [
        "Sunday",
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
    ];
    Value::Array(
        days.iter()
            .map(|d| json!({"startTime": start, "endTime": end, "weekDay": {"name": d}}))
            .collect(),
    )
}

/// Creates a v2 condition (asserting 201) and returns its id.
pub async fn condition(t: &TestApp, body: Value) -> String {
    let r = t.post("/api/v2/access-conditions", body).await;
    r.expect(201)["externalId"].as_str().unwrap().to_string()
}
