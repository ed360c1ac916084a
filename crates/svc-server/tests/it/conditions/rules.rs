//! Access-condition management (§3.10): the four variants in both views, validation, filters,
//! `accessPolicyCount`, policies that reference conditions (§3.8), deletion rules (§1.10) and the
//! `ap_access_cond_governance` compliance setting (§3.22).

use serde_json::{Value, json};

use super::*;
use crate::support::cred::Rig;
use crate::support::harness::TestApp;

#[tokio::test]
async fn each_variant_is_stored_once_and_shown_in_both_views() {
    let t = TestApp::start().await;
    let geo_int = builtin(&t, "SvcGeoIPCondition").await;
    let time_int = builtin(&t, "SvcTimeCondition").await;
    // GeoIP without `integrationID`: the resource set's built-in one.
    let r = t
        .post(
            "/api/v2/access-conditions",
            json!({"name": "us only", "isActive": true, "integrationType": "SvcGeoIPCondition",
                   "locations": [{"shortName": "United States", "alpha2Code": "us",
                                  "subdivisions": [{"name": "Texas", "subdivisionCode": "US-TX"}, {"name": "California", "alpha2Code": "CA"}]},
                                 {"shortName": "Germany"}]}),
        )
        .await;
    let geo = r.expect(201).clone();
    let geo_id = geo["externalId"].as_str().unwrap().to_string();
    assert_eq!(
        r.header("location"),
        Some(format!("/api/v2/access-conditions/{geo_id}").as_str())
    );
    assert_eq!(geo["integrationID"], geo_int.as_str());
    assert_eq!(geo["integration"]["name"], "GeoIP");
    assert_eq!(geo["accessPolicyCount"], 0);
    let loc = &geo["locations"][0];
    assert_eq!(loc["alpha2Code"], "US");
    assert_eq!(loc["id"], 1);
    assert_eq!(loc["subdivisions"][1]["alpha2Code"], "CA");
    assert_eq!(loc["subdivisions"][1]["geoIPAccessConditionLocationId"], 1);
    assert_eq!(geo["locations"][1]["alpha2Code"], Value::Null);
    assert_eq!(geo["locations"][1]["subdivisions"], json!([]));

    let time = t
        .post(
            "/api/v2/access-conditions",
            time_body(
                "office hours",
                json!([{"startTime": "09:00", "endTime": "17:30", "weekDay": {"name": "Monday", "ordinal": 1}},
                       {"startTime": "10:00", "endTime": "24:00", "weekDay": {"ordinal": 6}}]),
            ),
        )
        .await;
    let time = time.expect(201).clone();
    assert_eq!(time["integrationID"], time_int.as_str());
    assert_eq!(
        time["schedule"][1],
        json!({"startTime": "10:00", "endTime": "24:00", "weekDay": {"name": "Saturday", "ordinal": 6}})
    );
    assert_eq!(
        time["timezone"],
        json!({"timezone": "Europe/Berlin", "group": "Europe", "label": "Berlin"})
    );

    let sensor = t
        .post("/api/v2/integrations", sensor_a_body("https://t.example"))
        .await
        .expect(201)["externalId"]
        .clone();
    let s = t
        .post(
            "/api/v2/access-conditions",
            json!({"name": "managed", "isActive": true, "integrationType": "SensorA", "integrationID": sensor,
                   "maxLastSeenSeconds": 3600, "matchHostname": true}),
        )
        .await;
    let s = s.expect(201).clone();
    assert_eq!(s["matchHostname"], true);
    assert_eq!(s["matchSerialNumber"], false);
    assert_eq!(s["preventRestrictedFunctionalityMode"], false);
    assert_eq!(s["integration"]["clientSecret"], Value::Null);
    let s_id = s["externalId"].as_str().unwrap();
    // The v1 view: variant fields in `conditions`, the integration in its v1 shape.
    let v1 = t.get(&format!("/api/v1/access-conditions/{s_id}")).await;
    let v1 = v1.expect(200);
    assert_eq!(v1["integrationType"], "SensorA");
    assert_eq!(v1["conditions"]["maxLastSeenSeconds"], 3600);
    assert_eq!(v1["conditions"]["matchHostname"], true);
    assert!(v1["integration"]["integrationJSON"].is_object());
    assert!(v1.get("matchHostname").is_none());
    // A v1 create: the variant follows the integration's type.
    let r = t
        .post(
            "/api/v1/access-conditions",
            json!({"name": "weekends", "isActive": true, "integrationID": time_int,
                   "conditions": {"schedule": [{"startTime": "00:00", "endTime": "24:00", "weekDay": {"name": "Sunday"}}],
                                  "timezone": {"timezone": "UTC"}}}),
        )
        .await;
    let v1_time = r.expect(201)["externalId"].as_str().unwrap().to_string();
    let v2 = t.get(&format!("/api/v2/access-conditions/{v1_time}")).await;
    assert_eq!(v2.expect(200)["integrationType"], "SvcTimeCondition");
    // A GET body sent back in a PUT is accepted, in both views.
    let mut back = geo.clone();
    back["name"] = json!("us and de");
    t.put("/api/v2/access-conditions", back).await.expect(200);
    let mut back = t.get(&format!("/api/v1/access-conditions/{v1_time}")).await.body;
    back["description"] = json!("d");
    t.put("/api/v1/access-conditions", back).await.expect(200);
    // PATCH changes the base block.
    let r = t
        .patch(
            &format!("/api/v2/access-conditions/{geo_id}"),
            json!({"isActive": false}),
        )
        .await;
    assert_eq!(r.expect(200)["isActive"], false);
    // Filters.
    let r = t
        .get("/api/v2/access-conditions?filter=integrationType:SvcTimeCondition")
        .await;
    assert_eq!(r.expect(200)["recordsTotal"], 2);
    let r = t
        .get(&format!("/api/v1/access-conditions?filter=integrationID:{geo_int}"))
        .await;
    assert_eq!(r.expect(200)["accessConditions"][0]["externalId"], geo_id.as_str());
    // The integration counts its conditions.
    let i = t.get(&format!("/api/v2/integrations/{time_int}")).await;
    assert_eq!(i.expect(200)["accessConditionsCount"], 2);
    // The resource set counts them too.
    let rs = t
        .get(&format!(
            "/api/v1/resource-sets/{}",
            svc_server::domain::DEFAULT_RESOURCE_SET
        ))
        .await;
    assert_eq!(rs.expect(200)["accessConditionCount"], 4);
    // Audit entries under their category.
    let audit = t.audit("&category=AccessConditions").await;
    assert!(audit.len() >= 6, "{audit:?}");
}

#[tokio::test]
async fn condition_bodies_are_validated_field_by_field() {
    let t = TestApp::start().await;
    let sensor = t
        .post("/api/v2/integrations", sensor_a_body("https://t.example"))
        .await
        .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let geo = |locations: Value| json!({"name": "g", "isActive": true, "integrationType": "SvcGeoIPCondition", "locations": locations});
    let tm = |schedule: Value, tz: &str| json!({"name": "t", "isActive": true, "integrationType": "SvcTimeCondition", "schedule": schedule, "timezone": {"timezone": tz}});
    let window = |s: &str, e: &str, day: Value| json!([{"startTime": s, "endTime": e, "weekDay": day}]);
    let monday = json!({"name": "Monday"});
    let cases = [
        (json!({"name": "x", "isActive": true}), "integrationType: is required"),
        (
            json!({"name": "x", "isActive": true, "integrationType": "Nope"}),
            "integrationType: must be one of SensorA, CloudSecurityAIntegrationApi, SvcGeoIPCondition, SvcTimeCondition",
        ),
        (
            json!({"name": "x", "isActive": true, "integrationType": "SensorA", "maxLastSeenSeconds": 60}),
            "integrationID: is required",
        ),
        (
            json!({"name": "x", "isActive": true, "integrationType": "SensorA", "integrationID": sensor}),
            "maxLastSeenSeconds: is required",
        ),
        (
            json!({"name": "x", "isActive": true, "integrationType": "SensorA", "integrationID": sensor, "maxLastSeenSeconds": 0}),
            "maxLastSeenSeconds: must be 1..31449600",
        ),
        (
            json!({"name": "x", "isActive": true, "integrationType": "SensorA", "integrationID": sensor, "maxLastSeenSeconds": 31449601}),
            "maxLastSeenSeconds: must be 1..31449600",
        ),
        (
            json!({"name": "x", "isActive": true, "integrationType": "SensorA", "integrationID": sensor, "maxLastSeenSeconds": 60, "matchHostname": "yes"}),
            "matchHostname: must be a boolean, not a string",
        ),
        (
            json!({"name": "x", "isActive": true, "integrationType": "CloudSecurityAIntegrationApi", "integrationID": sensor, "maxLastSeenSeconds": 60}),
            "integrationID: unknown CloudSecurityAIntegrationApi integration in the condition's resource set",
        ),
        (geo(json!([])), "locations: must have at least one entry"),
        (geo(Value::Null), "locations: must have at least one entry"),
        (
            geo(json!([{"alpha2Code": "US"}])),
            "locations[0].shortName: is required",
        ),
        (
            geo(json!([{"shortName": "x", "alpha2Code": "USA"}])),
            "locations[0].alpha2Code: must be an ISO 3166-1 alpha-2 code",
        ),
        (
            geo(
                json!([{"shortName": "x", "alpha2Code": "US", "subdivisions": [{"name": "t", "subdivisionCode": "TX"}]}]),
            ),
            "locations[0].subdivisions[0].subdivisionCode: must be an ISO 3166-2 code such as US-TX",
        ),
        (
            geo(
                json!([{"shortName": "x", "alpha2Code": "US", "subdivisions": [{"name": "t", "subdivisionCode": "DE-BE"}]}]),
            ),
            "locations[0].subdivisions[0].subdivisionCode: must be in the location's country (alpha2Code)",
        ),
        (
            geo(json!([{"shortName": "x", "subdivisions": [{"name": "t"}]}])),
            "locations[0].subdivisions[0].subdivisionCode: is required (or alpha2Code with the location's alpha2Code)",
        ),
        (tm(json!([]), "UTC"), "schedule: must have at least one entry"),
        (
            tm(window("9:00", "10:00", monday.clone()), "UTC"),
            "schedule[0].startTime: must be HH:mm (24 h)",
        ),
        (
            tm(window("09:00", "25:00", monday.clone()), "UTC"),
            "schedule[0].endTime: must be HH:mm (24 h)",
        ),
        (
            tm(window("10:00", "10:00", monday.clone()), "UTC"),
            "schedule[0].endTime: must be after startTime",
        ),
        (
            tm(window("22:00", "02:00", monday.clone()), "UTC"),
            "schedule[0].endTime: must be after startTime",
        ),
        (
            tm(window("09:00", "10:00", json!({})), "UTC"),
            "schedule[0].weekDay.name: is required",
        ),
        (
            tm(window("09:00", "10:00", json!({"name": "Monday", "ordinal": 2})), "UTC"),
            "schedule[0].weekDay.ordinal: does not match name",
        ),
        (
            tm(window("09:00", "10:00", json!({"ordinal": 7})), "UTC"),
            "schedule[0].weekDay.ordinal: must be 0..6",
        ),
        (
            tm(window("09:00", "10:00", json!({"name": "monday"})), "UTC"),
            "schedule[0].weekDay.name: must be one of Sunday, Monday, Tuesday, Wednesday, Thursday, Friday, Saturday",
        ),
        (
            tm(window("09:00", "10:00", monday.clone()), "Mars/Olympus"),
            "timezone.timezone: unknown IANA time zone",
        ),
        (
            json!({"name": "t", "isActive": true, "integrationType": "SvcTimeCondition", "schedule": window("09:00", "10:00", monday.clone())}),
            "timezone: is required",
        ),
    ];
    for (body, message) in cases {
        let r = t.post("/api/v2/access-conditions", body.clone()).await;
        assert_eq!(r.status, 400, "{body} → {}", r.text);
        r.expect_error(400, message);
    }
    // v1: the conditions object and its paths.
    let time_int = builtin(&t, "SvcTimeCondition").await;
    t.post(
        "/api/v1/access-conditions",
        json!({"name": "x", "isActive": true, "integrationID": time_int}),
    )
    .await
    .expect_error(400, "conditions: is required");
    t.post(
        "/api/v1/access-conditions",
        json!({"name": "x", "isActive": true, "integrationID": time_int, "conditions": {"schedule": [], "timezone": {"timezone": "UTC"}}}),
    )
    .await
    .expect_error(400, "conditions.schedule: must have at least one entry");
    t.post(
        "/api/v1/access-conditions",
        json!({"name": "x", "isActive": true, "integrationID": sensor, "conditions": {"matchHostname": true}}),
    )
    .await
    .expect_error(400, "conditions.maxLastSeenSeconds: is required");
    t.post(
        "/api/v1/access-conditions",
        json!({"name": "x", "isActive": true, "conditions": {}}),
    )
    .await
    .expect_error(400, "integrationID: is required");
    // An integration of another resource set is unknown here (§1.4 rule 6).
    let rs = t
        .post("/api/v1/resource-sets", json!({"name": "other", "isActive": true}))
        .await
        .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let r = t
        .send(
            t.client
                .post(t.url("/api/v2/access-conditions"))
                .bearer_auth(&t.token)
                .header("X-Svc-ResourceSet", &rs)
                .json(&json!({"name": "x", "isActive": true, "integrationType": "SvcTimeCondition", "integrationID": time_int,
                               "schedule": window("09:00", "10:00", monday.clone()), "timezone": {"timezone": "UTC"}})),
        )
        .await;
    r.expect_error(
        400,
        "integrationID: unknown SvcTimeCondition integration in the condition's resource set",
    );
    // The discriminator cannot change on PUT.
    let id = condition(&t, tm(window("09:00", "10:00", monday.clone()), "UTC")).await;
    let mut b = geo(json!([{"shortName": "Germany", "alpha2Code": "DE"}]));
    b["externalId"] = json!(id);
    t.put("/api/v2/access-conditions", b)
        .await
        .expect_error(400, "integrationType: cannot be changed");
    // Nothing was stored by the refused requests.
    let r = t.get("/api/v2/access-conditions").await;
    assert_eq!(r.expect(200)["recordsTotal"], 1);
}

#[tokio::test]
async fn policies_reference_conditions_that_then_cannot_be_deleted() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let cond = condition(&t, time_body("always", every_day("00:00", "24:00"))).await;
    let body = json!({"name": "p", "isActive": true, "clientWorkload": rig.client_workload, "serverWorkload": rig.server_workload,
                      "trustProviders": [rig.trust_provider], "accessConditions": [cond]});
    let r = t.post("/api/v2/access-policies", body.clone()).await;
    let policy = r.expect(200)["externalId"].as_str().unwrap().to_string();
    assert_eq!(r.body["accessConditions"], json!([cond]));
    assert_eq!(r.header("x-svc-compliance-warning"), None);
    let g = t.get(&format!("/api/v2/access-policies/{policy}")).await;
    assert_eq!(g.expect(200)["accessConditions"][0]["name"], "always");
    assert_eq!(g.body["accessConditions"][0]["externalId"], cond.as_str());
    let v1 = t.get(&format!("/api/v1/access-policies/{policy}")).await;
    assert_eq!(
        v1.expect(200)["accessConditions"][0]["integrationType"],
        "SvcTimeCondition"
    );
    let c = t.get(&format!("/api/v2/access-conditions/{cond}")).await;
    assert_eq!(c.expect(200)["accessPolicyCount"], 1);
    let r = t
        .get(&format!("/api/v2/access-policies?filter=accessCondition:{cond}"))
        .await;
    assert_eq!(r.expect(200)["recordsTotal"], 1);
    // Unknown and duplicate references.
    let mut b = body.clone();
    b["isActive"] = json!(false);
    b["accessConditions"] = json!([cond, "00000000-0000-4000-8000-000000000009"]);
    t.post("/api/v2/access-policies", b.clone())
        .await
        .expect_error(400, "accessConditions[1]: unknown access condition");
    b["accessConditions"] = json!([cond, cond]);
    t.post("/api/v2/access-policies", b)
        .await
        .expect_error(400, "accessConditions[1]: duplicate access condition");
    // Referenced by an active policy: kept (both views).
    let msg = format!("accessConditions: referenced by access policy 'p' ({policy})");
    t.delete(&format!("/api/v2/access-conditions/{cond}"))
        .await
        .expect_error(400, &msg);
    t.delete(&format!("/api/v1/access-conditions/{cond}"))
        .await
        .expect_error(400, &msg);
    // An integration a condition uses is kept too.
    let sensor = t
        .post("/api/v2/integrations", sensor_a_body("https://t.example"))
        .await
        .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let sc = condition(
        &t,
        json!({"name": "managed", "isActive": true, "integrationType": "SensorA", "integrationID": sensor, "maxLastSeenSeconds": 60}),
    )
    .await;
    t.delete(&format!("/api/v2/integrations/{sensor}")).await.expect_error(
        400,
        &format!("accessConditions: referenced by access condition 'managed' ({sc})"),
    );
    // Inactive policy: the reference is removed with the condition.
    t.patch(&format!("/api/v2/access-policies/{policy}"), json!({"isActive": false}))
        .await
        .expect(200);
    t.delete(&format!("/api/v2/access-conditions/{cond}")).await.expect(204);
    let g = t.get(&format!("/api/v2/access-policies/{policy}")).await;
    assert_eq!(g.expect(200)["accessConditions"], json!([]));
    t.delete(&format!("/api/v2/access-conditions/{cond}"))
        .await
        .expect_error(404, "Not found.");
}

#[tokio::test]
async fn the_access_condition_compliance_setting_applies_to_policies() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let body = json!({"name": "p", "isActive": true, "clientWorkload": rig.client_workload, "serverWorkload": rig.server_workload,
                      "trustProviders": [rig.trust_provider]});
    let r = t.post("/api/v2/access-policies", body.clone()).await;
    assert_eq!(r.expect(200)["accessConditions"], json!([]));
    assert_eq!(r.header("x-svc-compliance-warning"), Some("ap_access_cond_governance"));
    let id = r.body["externalId"].as_str().unwrap().to_string();
    t.put(
        "/api/v1/compliance-settings",
        json!({"name": "ap_access_cond_governance", "value": "Required"}),
    )
    .await
    .expect(200);
    t.patch(&format!("/api/v2/access-policies/{id}"), json!({"description": "x"}))
        .await
        .expect_error(
            400,
            "accessConditions: required by compliance setting ap_access_cond_governance",
        );
    let cond = condition(&t, time_body("always", every_day("00:00", "24:00"))).await;
    let r = t
        .patch(
            &format!("/api/v2/access-policies/{id}"),
            json!({"accessConditions": [cond]}),
        )
        .await;
    r.expect(200);
    assert_eq!(r.header("x-svc-compliance-warning"), None);
}
