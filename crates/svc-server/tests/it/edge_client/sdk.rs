//! The Rust SDK (`svc_edge::Client`) against the real service with a manual clock: the edge
//! token is renewed, with evidence collected afresh, when less than 20 % of its lifetime remains;
//! `--resource-set` reaches both calls.

use serde_json::json;
use svc_edge::client::{CredentialRequest, Renewal};
use svc_edge::clock::{Clock, ManualClock, SystemClock};
use svc_edge::config::{Config, Flags};

use super::*;
use crate::support::harness::TestApp;

#[tokio::test]
async fn the_token_is_renewed_at_twenty_percent_with_fresh_evidence() {
    let t = TestApp::start().await;
    let o = oidc_setup(&t, "sdk-key").await;
    let dir = crate::support::harness::temp_dir().keep();
    let file = dir.join("token");
    std::fs::write(&file, &o.token).unwrap();
    let cfg = Config::resolve(
        Flags {
            url: Some(t.base.clone()),
            client_id: Some(o.cid.clone()),
            token_file: Some(file.clone()),
            ..Default::default()
        },
        Default::default(),
    )
    .unwrap();
    let clock = ManualClock::at(SystemClock.now_ms());
    let client = svc_edge::Client::new(cfg, Arc::new(clock.clone()), Renewal::Fraction(0.2));
    let first = client.token().await.unwrap();
    let req = CredentialRequest::new("api.partner.example", 443, "ApiKey", vec![]).unwrap();
    assert_eq!(
        client.credentials(&req).await.unwrap().response.data.get("apiKey"),
        Some("sdk-key")
    );
    // 2879 s of 3600: more than 20 % left, the same token.
    clock.advance(2_879_000);
    assert_eq!(client.token().await.unwrap().access_token, first.access_token);
    assert_eq!(auth_calls(&t).await, 1);
    // The file rotated; at 2880 s the token is renewed and the new file is read.
    let rotated = mint(&[("sub", json!(o.sub)), ("aud", json!(t.base)), ("jti", json!("rotated"))]).await;
    std::fs::write(&file, &rotated).unwrap();
    clock.advance(1_000);
    let second = client.token().await.unwrap();
    assert_ne!(second.access_token, first.access_token);
    assert_eq!(auth_calls(&t).await, 2);
    assert_eq!(
        jwt_payload(&second.access_token)["svc"]["claims"]["jti"],
        "rotated",
        "evidence collected afresh"
    );
    assert_eq!(
        client.credentials(&req).await.unwrap().response.data.get("apiKey"),
        Some("sdk-key")
    );
}

#[tokio::test]
async fn resource_set_header_reaches_auth_and_credentials() {
    let t = TestApp::start().await;
    let rs = t
        .post("/api/v1/resource-sets", json!({"name": "team-b", "isActive": true}))
        .await
        .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let mock = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let tp = post_in(
        &t,
        Some(&rs),
        "/api/v1/trust-providers",
        json!({"name": "ci-b", "isActive": true, "provider": "OidcIdToken", "oidcUrl": mock}),
    )
    .await
    .expect(200)
    .clone();
    let (tp, cid) = (
        tp["externalId"].as_str().unwrap().to_string(),
        tp["edgeSdkClientId"].as_str().unwrap().to_string(),
    );
    let token = mint(&[("sub", json!("team-b-job")), ("aud", json!(t.base))]).await;
    grant_in(
        &t,
        Some(&rs),
        json!({"type": "oidcIdTokenSubject", "value": "team-b-job"}),
        &tp,
        "b.partner.example",
        443,
        vec![(json!({"type": "apikey", "apiKey": "team-b-key"}), json!({}))],
    )
    .await;
    // Both calls carry the header: the provider and the policy live only in team-b.
    let out = Edge::new(&t, &cid)
        .env("SVC_EDGE_TOKEN", &token)
        .args(&[
            "credentials",
            "--host",
            "b.partner.example",
            "--port",
            "443",
            "--type",
            "ApiKey",
            "--resource-set",
            &rs,
        ])
        .run()
        .await;
    assert_eq!(out.ok().json()["data"]["apiKey"], "team-b-key");
    let out = Edge::new(&t, &cid)
        .env("SVC_EDGE_TOKEN", &token)
        .env("SVC_EDGE_RESOURCE_SET", &rs)
        .args(&["token"])
        .run()
        .await;
    out.ok();
    // Without it, the default resource set: the provider is not there (401 → 3).
    let out = Edge::new(&t, &cid)
        .env("SVC_EDGE_TOKEN", &token)
        .args(&["token"])
        .run()
        .await;
    assert_eq!(out.code, 3, "{}", out.stderr);
}
