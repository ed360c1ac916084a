//! Step 9 of `/edge/v1/credentials` for the service's own conditions: time windows in IANA
//! zones and GeoIP by the effective source IP, against a database the test builds (`mmdb`);
//! every condition's result in the authorization event.

use serde_json::{Value, json};

use super::mmdb;
use super::*;
use crate::support::cred::Rig;
use crate::support::edge::{authz_events, credentials};
use crate::support::harness::{Resp, TestApp};

/// An `apikey` provider behind a policy of the rig's pair with these conditions.
pub async fn guarded(t: &TestApp, rig: &Rig, conditions: &[&str]) -> String {
    let cp = rig
        .provider(
            t,
            json!({"type": "apikey", "name": "key", "isActive": true, "apiKey": "k-123"}),
        )
        .await;
    let r = t
        .post(
            "/api/v2/access-policies",
            json!({"name": "guarded", "isActive": true, "clientWorkload": rig.client_workload, "serverWorkload": rig.server_workload,
                   "trustProviders": [rig.trust_provider], "accessConditions": conditions,
                   "credentialProviders": [{"credentialProviderId": cp, "mappingType": "None"}]}),
        )
        .await;
    r.expect(200)["externalId"].as_str().unwrap().to_string()
}

/// `/credentials` for an API key with `client` fields beside the OIDC token.
pub async fn ask(t: &TestApp, rig: &Rig, client: Value) -> Resp {
    let mut c = json!({"oidc": {"identityToken": rig.id_token}});
    if let Value::Object(m) = client {
        for (k, v) in m {
            c[k] = v;
        }
    }
    let body = json!({"client": c, "server": {"transportProtocol": "TCP", "host": rig.host, "port": 443}, "credentialType": "ApiKey"});
    credentials(t, &rig.access, body).await
}

/// The newest `access.authorization` event.
pub async fn decision(t: &TestApp) -> Value {
    authz_events(t, "&event-type=access.authorization").await[0].clone()
}

/// Sunday = 0, today in UTC.
fn today() -> usize {
    time::OffsetDateTime::now_utc().weekday().number_days_from_sunday() as usize
}

#[tokio::test]
async fn a_time_condition_allows_inside_its_window_and_denies_outside() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let days = [
        "Sunday",
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
    ];
    let open = condition(&t, time_body("always", every_day("00:00", "24:00"))).await;
    guarded(&t, &rig, &[&open]).await;
    let r = ask(&t, &rig, json!({})).await;
    assert_eq!(r.expect(200)["data"]["apiKey"], "k-123");
    let ev = decision(&t).await;
    assert_eq!(ev["outcome"]["result"], "Authorized");
    assert_eq!(ev["accessConditions"][0]["id"], open.as_str());
    assert_eq!(ev["accessConditions"][0]["name"], "always");
    assert_eq!(ev["accessConditions"][0]["result"], "Passed");

    // Only on a day three days away (in UTC): denied, with what was compared.
    let other = days[(today() + 3) % 7];
    let mut b = time_body(
        "another day",
        json!([{"startTime": "00:00", "endTime": "24:00", "weekDay": {"name": other}}]),
    );
    b["timezone"] = json!({"timezone": "UTC"});
    let closed = condition(&t, b).await;
    let policy = t
        .get(&format!(
            "/api/v2/access-policies/getByWorkloadIds/{}/{}",
            rig.client_workload, rig.server_workload
        ))
        .await
        .body["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    t.patch(
        &format!("/api/v2/access-policies/{policy}"),
        json!({"accessConditions": [open, closed]}),
    )
    .await
    .expect(200);
    let r = ask(&t, &rig, json!({})).await;
    r.expect_error(403, "Not applicable for this request.");
    let ev = decision(&t).await;
    assert_eq!(ev["outcome"]["result"], "Unauthorized");
    assert_eq!(ev["outcome"]["reason"], "ConditionFailed");
    let results = ev["accessConditions"].as_array().unwrap();
    assert_eq!(results.len(), 2, "every condition is recorded: {ev}");
    assert_eq!(results[0]["result"], "Passed");
    let failed = &results[1];
    assert_eq!(failed["result"], "Failed");
    assert_eq!(failed["reason"], "ConditionFailed");
    assert_eq!(failed["attribute"], "time");
    assert_eq!(failed["expectedValues"], json!([format!("{other} 00:00-24:00")]));
    assert!(
        failed["actualValue"].as_str().unwrap().starts_with(days[today()]),
        "{failed}"
    );
    assert!(failed["actualValue"].as_str().unwrap().ends_with(" UTC"), "{failed}");
    // An inactive condition is skipped.
    t.patch(
        &format!("/api/v2/access-conditions/{closed}"),
        json!({"isActive": false}),
    )
    .await
    .expect(200);
    ask(&t, &rig, json!({})).await.expect(200);
    let ev = decision(&t).await;
    assert_eq!(ev["accessConditions"].as_array().unwrap().len(), 1);
}

fn geo_condition(locations: Value) -> Value {
    json!({"name": "where", "isActive": true, "integrationType": "SvcGeoIPCondition", "locations": locations})
}

async fn geo_app(db: Option<&[u8]>) -> (TestApp, std::path::PathBuf) {
    let dir = crate::support::harness::temp_dir().keep();
    let path = dir.join("geo.mmdb");
    if let Some(bytes) = db {
        std::fs::write(&path, bytes).unwrap();
    }
    let p = path.clone();
    let t = TestApp::start_with(move |env| {
        env.insert("SVC_TRUSTED_PROXIES".into(), "127.0.0.1".into());
        if db.is_some() {
            env.insert("SVC_GEOIP_DB".into(), p.display().to_string());
        }
    })
    .await;
    (t, path)
}

#[tokio::test]
async fn a_geoip_condition_compares_country_and_subdivision_of_the_source_ip() {
    let db = mmdb::standard();
    let (t, _) = geo_app(Some(&db)).await;
    let rig = Rig::new(&t).await;
    let texas_or_germany = condition(
        &t,
        geo_condition(json!([
            {"shortName": "United States", "alpha2Code": "US", "subdivisions": [{"name": "Texas", "subdivisionCode": "US-TX"}]},
            {"shortName": "germany"}
        ])),
    )
    .await;
    guarded(&t, &rig, &[&texas_or_germany]).await;
    // Texas and Germany (by name, no code) pass.
    for ip in ["203.0.113.7", "192.0.2.1"] {
        let r = ask(&t, &rig, json!({"sourceIP": ip})).await;
        assert_eq!(r.status, 200, "{ip}: {}", r.text);
    }
    let ev = decision(&t).await;
    assert_eq!(ev["accessConditions"][0]["result"], "Passed");
    // California: the country matches, the subdivision does not.
    ask(&t, &rig, json!({"sourceIP": "198.51.100.9"}))
        .await
        .expect_error(403, "Not applicable for this request.");
    let ev = decision(&t).await;
    let c = &ev["accessConditions"][0];
    assert_eq!(c["result"], "Failed");
    assert_eq!(c["attribute"], "subdivision");
    assert_eq!(c["expectedValues"], json!(["US-TX"]));
    assert_eq!(c["actualValue"], "US-CA");
    // France: another country.
    ask(&t, &rig, json!({"sourceIP": "100.64.3.4"})).await.expect(403);
    let c = decision(&t).await["accessConditions"][0].clone();
    assert_eq!(
        (c["attribute"].as_str(), c["actualValue"].as_str()),
        (Some("country"), Some("FR"))
    );
    assert_eq!(c["expectedValues"], json!(["US", "germany"]));
    // An address the database does not know, and the loopback peer itself: fail.
    ask(&t, &rig, json!({"sourceIP": "8.8.8.8"})).await.expect(403);
    let c = decision(&t).await["accessConditions"][0].clone();
    assert_eq!(
        (c["attribute"].as_str(), &c["actualValue"]),
        (Some("country"), &Value::Null)
    );
    ask(&t, &rig, json!({})).await.expect(403);
}

#[tokio::test]
async fn without_a_geoip_database_geoip_conditions_fail() {
    let (t, _) = geo_app(None).await;
    let rig = Rig::new(&t).await;
    let c = condition(&t, geo_condition(json!([{"shortName": "x", "alpha2Code": "US"}]))).await;
    guarded(&t, &rig, &[&c]).await;
    ask(&t, &rig, json!({"sourceIP": "203.0.113.7"}))
        .await
        .expect_error(403, "Not applicable for this request.");
    assert_eq!(decision(&t).await["outcome"]["reason"], "ConditionFailed");
}

#[tokio::test]
async fn a_replaced_geoip_database_is_read_without_a_restart() {
    let (t, path) = geo_app(Some(&mmdb::standard())).await;
    let rig = Rig::new(&t).await;
    let c = condition(&t, geo_condition(json!([{"shortName": "Spain", "alpha2Code": "ES"}]))).await;
    guarded(&t, &rig, &[&c]).await;
    ask(&t, &rig, json!({"sourceIP": "203.0.113.7"})).await.expect(403);
    // The operator's way: a new file renamed over the old one.
    let spain = mmdb::build(&[mmdb::Entry {
        net: "203.0.113.0".parse().unwrap(),
        len: 24,
        country: "ES",
        name: "Spain",
        subdivisions: &[],
    }]);
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, spain).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    let mut status = 0;
    for _ in 0..40 {
        status = ask(&t, &rig, json!({"sourceIP": "203.0.113.7"})).await.status;
        if status == 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    assert_eq!(status, 200, "the new database was not picked up");
}
