//! Secrets never leak (issue 5 "canary test"): every write-only field of every credential type, and
//! every credential handed out, is a unique canary; after configuring, reading (v1, v2, lists),
//! issuing and failing, none of them appears in a GET response, an event, a log line, an audit
//! entry, or the plaintext of the database file.

use serde_json::{Value, json};

use crate::support::cred::*;
use crate::support::harness::{TestApp, contains, logs};

fn canary(what: &str) -> String {
    format!("canary-{what}-{}", uuid::Uuid::new_v4().simple())
}

/// A token endpoint that answers with the canary access token of the request's client id.
fn token_endpoint(s: &Seen) -> (u16, Value) {
    match s
        .form_value("client_id")
        .or_else(|| s.header("authorization").map(str::to_string))
    {
        // A failing upstream that echoes the request (its secrets too) in its error answer.
        Some(_) if s.form_value("scope").as_deref() == Some("fail") => (
            401,
            json!({"error": "invalid_client", "error_description": format!(
                "echo {} {}",
                String::from_utf8_lossy(&s.body),
                s.header("authorization").unwrap_or_default()
            )}),
        ),
        Some(_) => (
            200,
            json!({"access_token": format!("canary-issued-{}", s.body.len()), "expires_in": 3600}),
        ),
        None => (400, json!({"error": "invalid_request"})),
    }
}

#[tokio::test]
async fn no_secret_or_credential_reaches_responses_events_logs_or_storage() {
    let fake = Recorder::start(Answer::Func(token_endpoint)).await;
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let mut secrets: Vec<String> = Vec::new();
    let mut providers: Vec<String> = Vec::new();

    let api_key = canary("apikey");
    let password = canary("password");
    let client_secret = canary("client-secret");
    let ac_secret = canary("ac-secret");
    let pat = canary("pat");
    secrets.extend([
        api_key.clone(),
        password.clone(),
        client_secret.clone(),
        ac_secret.clone(),
        pat.clone(),
    ]);
    let dir = crate::support::harness::temp_dir();
    let key_path = dir.join("k.pem");
    openssl(
        &[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            key_path.to_str().unwrap(),
        ],
        b"",
    );
    let private_key = std::fs::read_to_string(&key_path).unwrap();
    let key_line = private_key.lines().nth(3).unwrap().to_string();
    secrets.push(key_line.clone());

    let bodies = vec![
        json!({"type": "apikey", "name": "k", "isActive": true, "apiKey": api_key}),
        json!({"type": "username-password", "name": "u", "isActive": true, "username": "svc", "password": password}),
        json!({"type": "oauth-client-credential", "name": "cc", "isActive": true, "clientID": "c", "clientSecret": client_secret,
               "url": format!("{}/token", fake.url)}),
        json!({"type": "oauth-authorization-code", "name": "ac", "isActive": true, "clientID": "c", "clientSecret": ac_secret,
               "oAuthUrl": fake.url, "authorizationUrl": format!("{}/auth", fake.url), "tokenUrl": format!("{}/token", fake.url)}),
        json!({"type": "signed-jwt", "name": "sj", "isActive": true, "tokenConfiguration": "dataWarehouseA", "algorithmType": "RS256",
               "lifetime": 60, "subject": "ACME.U", "privateKey": private_key}),
    ];
    for b in bodies {
        let r = t.post("/api/v2/credential-providers", b).await;
        providers.push(r.expect(201)["externalId"].as_str().unwrap().to_string());
        for s in &secrets {
            assert!(!r.text.contains(s.as_str()), "create response leaks {s}");
        }
    }
    let integ = t
        .post(
            "/api/v1/credential-integrations",
            json!({"type": "CiB", "name": "gl", "isActive": true, "url": fake.url, "personalAccessToken": pat}),
        )
        .await;
    assert!(!integ.text.contains(&pat));

    // Issue each credential once through a policy (the stored ones and an upstream token).
    let mut issued: Vec<String> = Vec::new();
    for (cp, ty) in [
        (&providers[0], "ApiKey"),
        (&providers[1], "UsernamePassword"),
        (&providers[2], "OAuthToken"),
        (&providers[4], "OAuthToken"),
    ] {
        rig.attach(&t, cp).await;
        let v = rig.issue(&t, ty).await;
        for (k, val) in v["data"].as_object().unwrap() {
            if k != "username" {
                issued.push(val.as_str().unwrap().to_string());
            }
        }
    }
    assert!(issued.contains(&api_key) && issued.contains(&password));
    // A failing upstream call, so an error event exists too.
    t.patch(
        &format!("/api/v2/credential-providers/{}", providers[2]),
        json!({"providerDetailJSON": "{\"scope\": \"fail\"}"}),
    )
    .await
    .expect(200);
    rig.attach(&t, &providers[2]).await;
    rig.request(&t, "OAuthToken", json!({})).await.expect(500);
    let verification = t
        .get(&format!("/api/v2/credential-providers/{}/verification", providers[2]))
        .await;
    assert_eq!(verification.expect(200)["success"], false);
    // The upstream's error code is said; its text (which echoed the request) is not (issue 31).
    assert!(verification.text.contains("invalid_client"), "{}", verification.text);

    // Every read view.
    let mut views = vec![
        verification.text.clone(),
        t.get("/api/v2/credential-providers").await.text,
        t.get("/api/v1/credential-providers").await.text,
        t.get("/api/v1/credential-integrations").await.text,
    ];
    for cp in &providers {
        views.push(t.get(&format!("/api/v2/credential-providers/{cp}")).await.text);
        views.push(t.get(&format!("/api/v1/credential-providers/{cp}")).await.text);
    }
    t.app.events.flush().await;
    let events = [
        t.get("/api/v1/authorization-events?per-page=1000").await.text,
        t.get("/api/v1/workload-events?per-page=1000").await.text,
        t.get("/api/v1/audit-logs?per-page=1000").await.text,
    ];
    let log = logs();
    let db = t.sqlite_bytes();
    for s in secrets.iter().chain(&issued) {
        for v in &views {
            assert!(!v.contains(s.as_str()), "a GET response contains {s}");
        }
        for e in &events {
            assert!(!e.contains(s.as_str()), "an event or audit entry contains {s}");
        }
        assert!(!log.contains(s.as_str()), "the log contains {s}");
        if let Some(bytes) = &db {
            assert!(!contains(bytes, s), "the database file contains {s} in plaintext");
        }
    }
}
