//! `GET /api/v1/sso/providers` (public): the identity providers a sign-in page offers, by name.

use serde_json::{Value, json};

use crate::support::harness::TestApp;

async fn idp(t: &TestApp, body: Value) -> String {
    let r = t.post("/api/v1/sso-idps", body).await;
    r.expect(201)["externalId"].as_str().unwrap().to_string()
}

fn oidc(name: &str, active: bool, access: bool) -> Value {
    json!({"type": "OIDCv1", "name": name, "isActive": active, "userAccessEnabled": access,
           "oidcBaseURL": "https://idp.example.test", "clientId": "svc-console", "scopes": "openid email",
           "authType": "ClientSecret", "clientSecret": "canary-client-secret-4711"})
}

#[tokio::test]
async fn sso_providers_lists_by_name_only_the_idps_offering_sign_in() {
    let t = TestApp::start().await;
    let r = t.call(reqwest::Method::GET, "/api/v1/sso/providers", None, None).await;
    assert_eq!(r.expect(200), &json!({"providers": []}));
    let corp = idp(&t, oidc("Corp SSO", true, true)).await;
    let acme = idp(&t, oidc("acme login", true, true)).await;
    idp(&t, oidc("switched off", false, true)).await;
    idp(&t, oidc("admins only", true, false)).await;
    let saml = json!({"type": "SAMLv2", "name": "saml", "isActive": true, "userAccessEnabled": true,
                      "metadataUrl": "https://idp.example.test/metadata"});
    idp(&t, saml).await;
    // Anyone may read it (the sign-in page has no token yet); names sorted case-insensitively.
    let r = t.call(reqwest::Method::GET, "/api/v1/sso/providers", None, None).await;
    assert_eq!(r.header("cache-control"), Some("no-store"));
    assert_eq!(
        r.expect(200),
        &json!({"providers": [{"externalId": acme, "name": "acme login"}, {"externalId": corp, "name": "Corp SSO"}]})
    );
    assert!(!r.text.contains("canary") && !r.text.contains("idp.example.test") && !r.text.contains("svc-console"));
    // Deactivating one removes it at once.
    t.patch(&format!("/api/v1/sso-idps/{corp}"), json!({"isActive": false}))
        .await
        .expect(200);
    let r = t.call(reqwest::Method::GET, "/api/v1/sso/providers", None, None).await;
    assert_eq!(r.expect(200)["providers"].as_array().unwrap().len(), 1);
}
