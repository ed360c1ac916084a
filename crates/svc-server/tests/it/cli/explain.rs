//! `svc admin explain`: the body built from its flags (or `--body`) is the one the API explains,
//! and the answer is printed as the API gives it (`-o json`) or as a table of the steps.

use serde_json::{Value, json};

use super::{ok, refused, svc};
use crate::support::cred::Rig;
use crate::support::harness::TestApp;

const EVALUATE: &str = "/api/v1/access-policies/evaluate";

#[tokio::test]
async fn explain_prints_what_the_api_answers() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let cp = rig
        .provider(
            &t,
            json!({"type": "apikey", "name": "key", "isActive": true, "apiKey": "s3cr3t-explain-canary"}),
        )
        .await;
    rig.attach(&t, &cp).await;
    let evidence = t.dir.join("evidence.yaml");
    std::fs::write(&evidence, format!("oidc:\n  identityToken: {}\n", rig.id_token)).unwrap();
    let evidence = evidence.display().to_string();
    let flags = [
        "admin",
        "explain",
        "--client-id",
        rig.client_id.as_str(),
        "--evidence",
        evidence.as_str(),
        "--host",
        rig.host.as_str(),
        "--port",
        "443",
        "--type",
        "ApiKey",
    ];
    let body = json!({"clientId": rig.client_id, "client": {"oidc": {"identityToken": rig.id_token}},
                      "server": {"host": rig.host, "port": 443, "transportProtocol": "TCP"},
                      "credentialType": "ApiKey"});
    let api = t.post(EVALUATE, body.clone()).await.expect(200).clone();
    assert_eq!(api["status"], 200, "{api}");

    let mut json_args = flags.to_vec();
    json_args.extend(["-o", "json"]);
    let out: Value = serde_json::from_str(&ok(&svc(&t, &json_args).await)).unwrap();
    assert_eq!(out, api);

    let table = ok(&svc(&t, &flags).await);
    assert!(table.starts_with("status: 200\nreason: -\n\nSTEP  NAME"), "{table}");
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no {name} row: {table}"))
            .to_string()
    };
    assert!(row("clientWorkloads").contains("Passed") && row("clientWorkloads").contains("chosen: deploy-job ("));
    assert!(row("accessPolicy").contains("Passed"), "{table}");
    assert!(row("fetch").contains("Skipped"), "{table}");
    assert!(row("edgeToken").contains("trust provider: ci ("), "{table}");
    assert!(!table.contains("s3cr3t-explain-canary") && !table.contains(&rig.id_token));

    // A denial: its status and reason, as the API says; --body with a flag over it.
    let file = t.dir.join("body.json");
    std::fs::write(&file, body.to_string()).unwrap();
    let f = file.display().to_string();
    let args = [
        "admin",
        "explain",
        "--body",
        f.as_str(),
        "--type",
        "OAuthToken",
        "-o",
        "json",
    ];
    let out: Value = serde_json::from_str(&ok(&svc(&t, &args).await)).unwrap();
    let mut denied = body.clone();
    denied["credentialType"] = json!("OAuthToken");
    let api = t.post(EVALUATE, denied).await.expect(200).clone();
    assert_ne!(api["status"], 200, "{api}");
    assert_eq!(out, api);
    let table = ok(&svc(&t, &args[..6]).await);
    assert!(
        table.starts_with(&format!(
            "status: {}\nreason: {}\n",
            api["status"],
            api["reason"].as_str().unwrap()
        )),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.contains("credentialType") && l.contains("Failed")),
        "{table}"
    );

    // Evidence /auth refuses: the table says which check failed, what it expected and found.
    let wrong_aud = rig._iss.sign(
        &rig._iss
            .claims("https://elsewhere.example", crate::support::cred::SUBJECT),
    );
    let evidence = t.dir.join("wrong-aud.json");
    std::fs::write(&evidence, json!({"oidc": {"identityToken": wrong_aud}}).to_string()).unwrap();
    let evidence = evidence.display().to_string();
    let mut refused_flags = flags.to_vec();
    refused_flags[5] = evidence.as_str();
    let table = ok(&svc(&t, &refused_flags).await);
    assert!(table.starts_with("status: 401\nreason: InvalidToken\n"), "{table}");
    let row = table
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("edgeToken"))
        .unwrap();
    assert!(row.contains("Failed") && row.contains("InvalidEvidence"), "{table}");
    assert!(
        row.contains(&format!(
            "aud: expected [{}], got \"https://elsewhere.example\"",
            t.base
        )),
        "{table}"
    );
    assert!(row.contains("aud does not contain an accepted audience"), "{table}");
    assert!(!table.contains(&wrong_aud));

    // The API's refusals are the command's: a body without clientId.
    refused(
        &svc(&t, &["admin", "explain", "--type", "ApiKey"]).await,
        1,
        "svc: POST /api/v1/access-policies/evaluate: 400 clientId: is required",
    );
    refused(
        &svc(&t, &["admin", "explain", "--meta", "nokey"]).await,
        2,
        "--meta \"nokey\": expected KEY=VALUE",
    );
}
