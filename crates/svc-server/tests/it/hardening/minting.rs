//! Issue 31, the third read: whoever configures credential providers cannot have the service
//! sign, with its published issuer key, the assertion a relying party trusts as another
//! workload's (`sub` = that client workload's id) or as a log stream's (`svc-log-stream:`),
//! neither through a provider's subject nor through a custom `sub` claim, in any spelling,
//! whether the workload exists when the provider is written or only when it is used.

use serde_json::{Value, json};

use crate::support::cred::{Answer, Recorder, Rig, id_of, verify_with_jwks};
use crate::support::harness::TestApp;

const CPS: &str = "/api/v2/credential-providers";
const NAMES_A_WORKLOAD: &str = "names a client workload, the subject of that workload's own assertions";

/// A vault provider at `vault` (plain http) with `subject` and extra fields.
fn vault(vault: &Recorder, subject: &str, extra: Value) -> Value {
    let port: i64 = vault.url.rsplit(':').next().unwrap().parse().unwrap();
    let mut b = json!({"type": "vaultClientToken", "name": "mint", "isActive": true, "subject": subject,
                       "lifetime": 3600, "vaultHost": "127.0.0.1", "port": port, "tls": false,
                       "authenticationPath": "x"});
    b.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    b
}

#[tokio::test]
async fn a_credential_provider_writer_cannot_mint_a_workloads_federation_subject() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await; // another team's workload, federated with a cloud role
    let victim = rig.client_workload.clone();
    let attacker = t
        .user_with_role(
            "cp-admin@example.test",
            json!([{"name": "Credential Providers", "read": true, "write": true}]),
        )
        .await;
    let evil = Recorder::start(Answer::Fixed(500, "text/plain", vec![], std::time::Duration::ZERO)).await;
    let uuid = uuid::Uuid::parse_str(&victim).unwrap();
    // The workload's id as the subject, in every spelling a UUID has.
    for spelling in [
        victim.clone(),
        victim.to_uppercase(),
        uuid.simple().to_string(),
        uuid.braced().to_string(),
        uuid.urn().to_string(),
        format!(" {victim} "),
    ] {
        t.post_as(&attacker, CPS, vault(&evil, &spelling, json!({})))
            .await
            .expect_error(400, &format!("subject: {NAMES_A_WORKLOAD}"));
    }
    // As a custom `sub` claim, of a vault provider or an oidc-id-token provider.
    let sub_claim = json!([{"key": "sub", "value": victim, "valueType": "literal"}]);
    t.post_as(
        &attacker,
        CPS,
        vault(&evil, "innocent", json!({"customClaimNames": sub_claim})),
    )
    .await
    .expect_error(400, &format!("customClaimNames[0].value: {NAMES_A_WORKLOAD}"));
    t.post_as(
        &attacker,
        CPS,
        json!({"type": "oidc-id-token", "name": "jwt", "isActive": true, "subject": "innocent",
               "audience": "sts.example.test", "customClaims": sub_claim}),
    )
    .await
    .expect_error(400, &format!("customClaims[0].value: {NAMES_A_WORKLOAD}"));
    // The log streams' subjects.
    t.post_as(&attacker, CPS, vault(&evil, "svc-log-stream:anything", json!({})))
        .await
        .expect_error(400, "subject: is reserved for the service's log-stream assertions");
    // Nor by changing a provider that has an ordinary subject.
    let r = t
        .post_as(&attacker, CPS, vault(&evil, "workload:deploy-job", json!({})))
        .await;
    let cp = r.expect(201)["externalId"].as_str().unwrap().to_string();
    t.patch_as(
        &attacker,
        &format!("{CPS}/{cp}"),
        json!({"providerDetailJSON": json!({"subject": victim}).to_string()}),
    )
    .await
    .expect_error(400, &format!("providerDetailJSON.subject: {NAMES_A_WORKLOAD}"));
    // The ordinary subject is minted as configured.
    t.get_as(&attacker, &format!("{CPS}/{cp}/verification"))
        .await
        .expect(200);
    let seen = evil.seen();
    assert_eq!(seen.len(), 1);
    let login: Value = serde_json::from_slice(&seen[0].body).unwrap();
    let (_, c) = verify_with_jwks(&t, login["jwt"].as_str().unwrap()).await;
    assert_eq!(c["sub"], json!("workload:deploy-job"));

    // A workload created after the provider, with the id the provider names (a POST may choose
    // its id): the subject is checked again when the provider is used, and nothing is signed.
    let later = uuid::Uuid::new_v4().to_string();
    let r = t.post_as(&attacker, CPS, vault(&evil, &later, json!({}))).await;
    let early = r.expect(201)["externalId"].as_str().unwrap().to_string();
    let cw = t
        .post(
            "/api/v1/client-workloads",
            json!({"externalId": later, "name": "later-job", "isActive": true,
                   "identities": [{"type": "oidcIdTokenSubject", "value": "system:job:later"}]}),
        )
        .await;
    assert_eq!(cw.status, 204, "{}", cw.text);
    let v = t.get_as(&attacker, &format!("{CPS}/{early}/verification")).await;
    assert_eq!(v.expect(200)["success"], false);
    assert!(
        v.body["message"].as_str().unwrap().contains("names a client workload"),
        "{}",
        v.text
    );
    assert_eq!(evil.count(), 1, "no JWT was sent for the workload's id");
}

/// A victim workload whose evidence is an identity token of this service's own issuer
/// (`isSvcTenantOidcToken`), with a SuperAdmin `svc-access-token` provider. Returns the trust
/// provider's edge client id.
async fn own_issuer_victim(t: &TestApp, subject: &str) -> String {
    const HOST: &str = "payments.example.test";
    let tp = t
        .post(
            "/api/v1/trust-providers",
            json!({"name": "chained", "isActive": true, "provider": "OidcIdToken", "isSvcTenantOidcToken": true}),
        )
        .await
        .expect(200)
        .clone();
    let cw = t
        .post(
            "/api/v1/client-workloads",
            json!({"name": "payments-job", "isActive": true, "identities": [{"type": "oidcIdTokenSubject", "value": subject}]}),
        )
        .await;
    assert_eq!(cw.status, 204, "{}", cw.text);
    let sw = t
        .post(
            "/api/v1/server-workloads",
            json!({"name": "svc", "isActive": true, "serviceEndpoint": {"host": HOST, "port": 443, "appProtocol": "HTTP", "transportProtocol": "TCP",
                   "requestedPort": 443, "requestedTls": true, "tls": true, "tlsVerification": "full"}}),
        )
        .await;
    assert_eq!(sw.status, 204, "{}", sw.text);
    let cp = t
        .post(
            CPS,
            json!({"type": "svc-access-token", "name": "automation", "isActive": true,
                   "roleId": svc_server::domain::records::SUPER_ADMIN_ROLE, "lifetimeInSeconds": 600}),
        )
        .await
        .expect(201)["externalId"]
        .clone();
    t.post(
        "/api/v2/access-policies",
        json!({"name": "payments", "isActive": true, "clientWorkload": id_of(&cw), "serverWorkload": id_of(&sw),
               "trustProviders": [tp["externalId"]], "credentialProviders": [{"credentialProviderId": cp, "mappingType": "None"}]}),
    )
    .await
    .expect(200);
    tp["edgeSdkClientId"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_credential_provider_writer_cannot_mint_evidence_for_a_trust_provider_of_the_services_own_issuer() {
    let t = TestApp::start().await;
    let subject = "system:job:payments";
    let client_id = own_issuer_victim(&t, subject).await;
    let attacker = t
        .user_with_role(
            "cp-admin@example.test",
            json!([{"name": "Credential Providers", "read": true, "write": true}]),
        )
        .await;
    let evil = Recorder::start(Answer::Fixed(500, "text/plain", vec![], std::time::Duration::ZERO)).await;
    // A custom `aud` naming the edge is refused: the login JWT is addressed to its vault.
    t.post_as(
        &attacker,
        CPS,
        vault(
            &evil,
            subject,
            json!({"customClaimNames": [{"key": "aud", "value": t.base, "valueType": "literal"}]}),
        ),
    )
    .await
    .expect_error(
        400,
        &format!(
            "customClaimNames[0].value: must be the vault's address {} (the login JWT's aud)",
            evil.url
        ),
    );
    // The provider's verification signs a login JWT for the victim's subject all the same...
    let cp = t
        .post_as(&attacker, CPS, vault(&evil, subject, json!({})))
        .await
        .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    t.get_as(&attacker, &format!("{CPS}/{cp}/verification"))
        .await
        .expect(200);
    let login: Value = serde_json::from_slice(&evil.seen()[0].body).unwrap();
    let jwt = login["jwt"].as_str().unwrap().to_string();
    let claims = crate::support::edge::jwt_payload(&jwt);
    assert_ne!(claims["aud"], json!(t.base), "{claims}");
    assert!(
        claims["aud"].as_str().unwrap().starts_with(evil.url.as_str()),
        "{claims}"
    );
    // ...which is no evidence for the service's own issuer, even with the edge's audience: only
    // an identity token the service handed to a workload is.
    let refused = |jwt: String| {
        let (t, client_id) = (&t, &client_id);
        async move {
            crate::support::edge::auth(t, client_id, json!({"oidc": {"identityToken": jwt}}))
                .await
                .expect_error(401, "Unauthorized.");
        }
    };
    refused(jwt).await;
    let mut forged = claims.clone();
    forged["aud"] = json!(t.base);
    let key = t.app.keys().ec_signer(svc_server::clock::now_millis());
    let resigned = svc_server::crypto::jose::sign_es256(&key.pair, &key.kid, forged.to_string().as_bytes());
    refused(resigned).await;
    let ev = crate::support::edge::last_authn(&t).await;
    assert_eq!(ev["trustProviders"][0]["reason"], "InvalidEvidence", "{ev}");
}
