//! SSO identity providers (contract §3.20): both variants' shapes and validation, the write-only
//! client secret (§1.9), role mappings, `verification` (OIDC discovery against the real
//! node-oidc-provider peer, SAML metadata with a certificate the test makes), RBAC with
//! `Identity Providers`, and the `sso` sign-in policy's rule (§3.19).

use serde_json::{Value, json};

use crate::support::harness::TestApp;

const PATH: &str = "/api/v1/sso-idps";

pub fn oidc_provider_url() -> String {
    std::env::var("SVC_TEST_OIDC_PROVIDER_URL").expect("SVC_TEST_OIDC_PROVIDER_URL (scripts/peers.sh)")
}

pub fn oidc_idp(base: &str) -> Value {
    json!({"type": "OIDCv1", "name": "corp", "isActive": true, "userAccessEnabled": true,
           "oidcBaseURL": base, "clientId": "svc-ac", "clientSecret": "svc-ac-secret",
           "scopes": "openid email profile", "authType": "ClientSecret", "pkceRequired": true})
}

/// Base64 of IdP metadata naming `entity`, an SSO URL and a signing certificate made here.
fn saml_metadata(entity: &str, cert_use: &str) -> String {
    let ck = rcgen::generate_simple_self_signed(vec!["idp.acme.test".to_string()]).unwrap();
    let cert = svc_server::crypto::b64std(ck.cert.der());
    let xml = format!(
        r#"<?xml version="1.0"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="{entity}">
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:KeyDescriptor {cert_use}>
      <ds:KeyInfo><ds:X509Data><ds:X509Certificate>
{cert}
      </ds:X509Certificate></ds:X509Data></ds:KeyInfo>
    </md:KeyDescriptor>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.acme.test/sso?a=1&amp;b=2"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>"#
    );
    svc_server::crypto::b64std(xml.as_bytes())
}

#[tokio::test]
async fn oidc_idp_shape_secret_and_crud() {
    let t = TestApp::start().await;
    let base = oidc_provider_url();
    let role = t.post("/api/v1/roles", json!({"name": "ops", "isActive": true})).await;
    let role = role.expect(201)["externalId"].as_str().unwrap().to_string();
    let mut body = oidc_idp(&base);
    body["ssoStatementRoleMappings"] =
        json!([{"attributeName": "groups", "attributeValue": "ops", "roleExternalId": role}]);
    let r = t.post(PATH, body.clone()).await;
    let v = r.expect(201).clone();
    let id = v["externalId"].as_str().unwrap().to_string();
    assert_eq!(r.header("location"), Some(format!("{PATH}/{id}").as_str()));
    assert_eq!(v["type"], "OIDCv1");
    assert_eq!(v["clientSecret"], Value::Null, "write-only");
    assert_eq!(v["oidcBaseURL"], base.as_str());
    assert_eq!(v["authType"], "ClientSecret");
    assert_eq!(v["pkceRequired"], true);
    assert_eq!(v["userAccessEnabled"], true);
    assert_eq!(v["svcRedirectUrl"], t.url("/api/v1/sso/callback").as_str());
    assert_eq!(v["svcJwksUrl"], t.url("/.well-known/jwks.json").as_str());
    assert_eq!(
        v["ssoStatementRoleMappings"],
        json!([{"attributeName": "groups", "attributeValue": "ops", "roleExternalId": role}])
    );
    assert!(v.get("resourceSet").is_none());
    assert!(!r.text.contains("svc-ac-secret"));

    let g = t.get(&format!("{PATH}/{id}")).await;
    assert_eq!(*g.expect(200), v);
    assert!(!g.text.contains("svc-ac-secret"));
    let list = t.get(PATH).await;
    assert_eq!(list.expect(200)["entities"][0]["externalId"], id.as_str());
    assert!(!list.text.contains("svc-ac-secret"));
    assert_eq!(
        t.get(&format!("{PATH}?filter=type:OIDCv1")).await.body["recordsTotal"],
        1
    );
    assert_eq!(
        t.get(&format!("{PATH}/00000000-0000-4000-8000-000000000001"))
            .await
            .status,
        204
    );

    // PUT without clientSecret keeps the stored one (verification still finds it).
    let mut put = v.clone();
    put["name"] = json!("corp-2");
    let u = t.put(PATH, put).await;
    assert_eq!(u.expect(200)["name"], "corp-2");
    let ver = t.get(&format!("{PATH}/{id}/verification")).await;
    assert_eq!(ver.expect(200)["success"], true, "{}", ver.text);
    assert_eq!(ver.body["id"], 0);
    // The type cannot be changed.
    let mut saml = json!({"externalId": id, "type": "SAMLv2", "name": "x", "isActive": true,
                          "metadataXml": saml_metadata("https://idp.acme.test", "")});
    t.put(PATH, saml.take())
        .await
        .expect_error(400, "type: cannot be changed");
    // PATCH (EntityPatchDTO).
    let p = t
        .patch(&format!("{PATH}/{id}"), json!({"description": "d", "isActive": false}))
        .await;
    assert_eq!(p.expect(200)["description"], "d");
    assert_eq!(p.body["isActive"], false);
    assert_eq!(p.body["clientId"], "svc-ac");
    t.patch(&format!("{PATH}/{id}"), json!({"clientId": "x"}))
        .await
        .expect_error(400, "clientId: unknown property");

    // The secret is sealed at rest (SQLite) and in no audit entry.
    if let Some(bytes) = t.sqlite_bytes() {
        assert!(!crate::support::harness::contains(&bytes, "svc-ac-secret"));
    }
    let audit = t.audit("").await;
    let text = serde_json::to_string(&audit).unwrap();
    assert!(!text.contains("svc-ac-secret"));
    let acts: Vec<&str> = audit
        .iter()
        .filter(|a| a["category"] == "IdentityProviders")
        .map(|a| a["activity"].as_str().unwrap())
        .collect();
    assert_eq!(acts, ["Patched", "Updated", "Created"]);

    // DELETE: 204, again 204.
    assert_eq!(t.delete(&format!("{PATH}/{id}")).await.status, 204);
    assert_eq!(t.delete(&format!("{PATH}/{id}")).await.status, 204);
    t.get(&format!("{PATH}/{id}/verification"))
        .await
        .expect_error(404, "Not found.");
}

#[tokio::test]
async fn idp_validation_of_both_variants() {
    let t = TestApp::start().await;
    let base = oidc_provider_url();
    let with = |f: &dyn Fn(&mut Value)| {
        let mut b = oidc_idp(&base);
        f(&mut b);
        b
    };
    let cases: Vec<(Value, &str)> = vec![
        (with(&|b| b["type"] = Value::Null), "type: is required"),
        (
            with(&|b| b["type"] = json!("OIDC")),
            "type: must be one of SAMLv2, OIDCv1",
        ),
        (with(&|b| b["name"] = Value::Null), "name: is required"),
        (with(&|b| b["oidcBaseURL"] = Value::Null), "oidcBaseURL: is required"),
        (
            with(&|b| b["oidcBaseURL"] = json!("ftp://x.test")),
            "oidcBaseURL: must be an https URL",
        ),
        (with(&|b| b["clientId"] = Value::Null), "clientId: is required"),
        (with(&|b| b["scopes"] = Value::Null), "scopes: is required"),
        (
            with(&|b| b["scopes"] = json!("email profile")),
            "scopes: must contain openid",
        ),
        (with(&|b| b["authType"] = Value::Null), "authType: is required"),
        (
            with(&|b| b["authType"] = json!("Basic")),
            "authType: must be one of KeyPair, ClientSecret",
        ),
        (with(&|b| b["clientSecret"] = Value::Null), "clientSecret: is required"),
        (
            with(&|b| b["metadataUrl"] = json!("https://x.test")),
            "metadataUrl: unknown property",
        ),
        (
            with(&|b| b["ssoStatementRoleMappings"] = json!([{"attributeName": "g", "attributeValue": "v"}])),
            "ssoStatementRoleMappings[0].roleExternalId: is required",
        ),
        (
            with(&|b| {
                b["ssoStatementRoleMappings"] = json!([{"attributeName": "g", "attributeValue": "v",
                    "roleExternalId": "00000000-0000-4000-8000-000000000001"}])
            }),
            "ssoStatementRoleMappings[0].roleExternalId: unknown role",
        ),
    ];
    for (body, msg) in cases {
        t.post(PATH, body).await.expect_error(400, msg);
    }
    // A duplicate mapping row.
    let roles = t.get("/api/v1/roles?filter=name:SuperAdmin").await;
    let sa = roles.body["roles"][0]["externalId"].clone();
    let row = json!({"attributeName": "g", "attributeValue": "v", "roleExternalId": sa});
    t.post(PATH, with(&|b| b["ssoStatementRoleMappings"] = json!([row, row])))
        .await
        .expect_error(400, "ssoStatementRoleMappings[1]: duplicate mapping");
    // KeyPair needs no secret.
    let kp = t
        .post(
            PATH,
            with(&|b| {
                b["authType"] = json!("KeyPair");
                b["clientSecret"] = Value::Null;
            }),
        )
        .await;
    let kp = kp.expect(201).clone();
    assert_eq!(kp["authType"], "KeyPair");
    // Switching it to ClientSecret without a secret: required.
    let mut sw = kp.clone();
    sw["authType"] = json!("ClientSecret");
    t.put(PATH, sw).await.expect_error(400, "clientSecret: is required");

    // SAML: exactly one of metadataUrl / metadataXml.
    let saml = |f: &dyn Fn(&mut Value)| {
        let mut b = json!({"type": "SAMLv2", "name": "s", "isActive": true});
        f(&mut b);
        b
    };
    let cases: Vec<(Value, &str)> = vec![
        (
            saml(&|_| {}),
            "metadataUrl: exactly one of metadataUrl or metadataXml is required",
        ),
        (
            saml(&|b| {
                b["metadataUrl"] = json!("https://idp.test/md");
                b["metadataXml"] = json!("PHg+PC94Pg==");
            }),
            "metadataXml: exactly one of metadataUrl or metadataXml is allowed",
        ),
        (
            saml(&|b| b["metadataUrl"] = json!("idp.test/md")),
            "metadataUrl: must be an https URL",
        ),
        (
            saml(&|b| b["metadataXml"] = json!("<xml/>")),
            "metadataXml: must be base64 of the metadata XML",
        ),
        (
            saml(&|b| {
                b["metadataUrl"] = json!("https://idp.test/md");
                b["clientId"] = json!("x");
            }),
            "clientId: unknown property",
        ),
    ];
    for (body, msg) in cases {
        t.post(PATH, body).await.expect_error(400, msg);
    }
}

#[tokio::test]
async fn saml_idp_verification_reads_the_metadata_and_its_certificate() {
    let t = TestApp::start().await;
    let md = saml_metadata("https://idp.acme.test/entity", r#"use="signing""#);
    let r = t
        .post(
            PATH,
            json!({"type": "SAMLv2", "name": "saml", "isActive": true, "metadataXml": md,
                   "entityId": "https://idp.acme.test/entity"}),
        )
        .await;
    let v = r.expect(201).clone();
    let id = v["externalId"].as_str().unwrap();
    assert_eq!(v["serviceProviderEntityId"], t.url("/api/v1/sso/saml").as_str());
    assert_eq!(v["serviceProviderSsoUrl"], t.url("/api/v1/sso/saml/acs").as_str());
    assert_eq!(v["metadataXml"], md.as_str());
    assert_eq!(v["metadataUrl"], Value::Null);
    assert!(v.get("clientSecret").is_none() && v.get("oidcBaseURL").is_none());
    let ver = t.get(&format!("{PATH}/{id}/verification")).await;
    assert_eq!(ver.expect(200)["success"], true, "{}", ver.text);
    let msg = ver.body["message"].as_str().unwrap();
    assert!(msg.contains("https://idp.acme.test/entity"), "{msg}");

    // A KeyDescriptor without `use` also signs; an encryption-only key does not.
    let any = saml_metadata("https://idp.acme.test/entity", "");
    let enc = saml_metadata("https://idp.acme.test/entity", r#"use="encryption""#);
    for (md, ok, want) in [
        (any, true, ""),
        (enc, false, "metadata: no signing certificate in the IDPSSODescriptor"),
        (
            svc_server::crypto::b64std(b"<md:EntityDescriptor entityID=\"x\"><oops></md:EntityDescriptor>"),
            false,
            "metadata: not well-formed XML",
        ),
    ] {
        let r = t
            .post(
                PATH,
                json!({"type": "SAMLv2", "name": "s", "isActive": true, "metadataXml": md}),
            )
            .await;
        let id = r.expect(201)["externalId"].as_str().unwrap().to_string();
        let ver = t.get(&format!("{PATH}/{id}/verification")).await;
        assert_eq!(ver.expect(200)["success"], ok, "{}", ver.text);
        assert!(ver.body["message"].as_str().unwrap().starts_with(want), "{}", ver.text);
    }
    // A configured entityId that the metadata does not name.
    let r = t
        .post(
            PATH,
            json!({"type": "SAMLv2", "name": "s", "isActive": true, "entityId": "https://other",
                   "metadataXml": saml_metadata("https://idp.acme.test/entity", "")}),
        )
        .await;
    let id = r.expect(201)["externalId"].as_str().unwrap().to_string();
    let ver = t.get(&format!("{PATH}/{id}/verification")).await;
    assert_eq!(ver.expect(200)["success"], false);
    assert_eq!(
        ver.body["message"],
        "entityId: does not match the metadata's entityID https://idp.acme.test/entity"
    );
}

#[tokio::test]
async fn oidc_verification_problems() {
    let t = TestApp::start().await;
    // Nothing listens there.
    let r = t.post(PATH, oidc_idp("http://127.0.0.1:9")).await;
    let id = r.expect(201)["externalId"].as_str().unwrap().to_string();
    let ver = t.get(&format!("{PATH}/{id}/verification")).await;
    assert_eq!(ver.expect(200)["success"], false);
    assert!(
        ver.body["message"]
            .as_str()
            .unwrap()
            .starts_with("discovery document could not be read"),
        "{}",
        ver.text
    );
    // The real provider: reachable and complete.
    let r = t.post(PATH, oidc_idp(&oidc_provider_url())).await;
    let id = r.expect(201)["externalId"].as_str().unwrap().to_string();
    let ver = t.get(&format!("{PATH}/{id}/verification")).await;
    assert_eq!(ver.expect(200)["success"], true, "{}", ver.text);
}

#[tokio::test]
async fn identity_provider_rbac_and_the_sso_policy() {
    let t = TestApp::start().await;
    // ssoRequired needs an active OIDCv1 IdP with userAccessEnabled.
    t.put("/api/v1/signin-policies/sso", json!({"ssoRequired": true}))
        .await
        .expect_error(
            400,
            "ssoRequired: requires an active OIDCv1 identity provider with userAccessEnabled",
        );
    let mut no_access = oidc_idp(&oidc_provider_url());
    no_access["userAccessEnabled"] = json!(false);
    t.post(PATH, no_access).await.expect(201);
    t.put("/api/v1/signin-policies/sso", json!({"ssoRequired": true}))
        .await
        .expect_error_prefix(400, "ssoRequired: requires");
    t.post(PATH, oidc_idp(&oidc_provider_url())).await.expect(201);
    let r = t.put("/api/v1/signin-policies/sso", json!({"ssoRequired": true})).await;
    assert_eq!(*r.expect(200), json!({"ssoRequired": true}));
    assert_eq!(
        *t.get("/api/v1/signin-policies").await.expect(200),
        json!({"ssoRequired": true, "mfaRequired": false})
    );
    // Password sign-in: refused for a user without SuperAdmin, allowed for SuperAdmin.
    const PW: &str = "a-long-enough-password";
    let ro = t
        .post(
            "/api/v1/roles",
            json!({"name": "idp-reader", "isActive": true,
                   "permissions": [{"name": "Identity Providers", "read": true}]}),
        )
        .await;
    let ro = ro.expect(201)["externalId"].as_str().unwrap().to_string();
    t.create_user("reader@acme.test", PW, &[&ro]).await;
    t.post_anon("/api/v1/login", json!({"email": "reader@acme.test", "password": PW}))
        .await
        .expect_error(403, "Sign-in with SSO is required.");
    t.login(
        crate::support::harness::ADMIN_EMAIL,
        crate::support::harness::ADMIN_PASSWORD,
    )
    .await;
    let audit = t.audit("").await;
    let refused = audit
        .iter()
        .find(|a| a["activity"] == "LoginFailed")
        .expect("the refused sign-in is audited");
    assert_eq!(refused["outcome"]["reason"], "SSO required");
    t.put("/api/v1/signin-policies/sso", json!({"ssoRequired": false}))
        .await
        .expect(200);
    let tok = t.login("reader@acme.test", PW).await;

    // RBAC: read may list and verify, not write; no permission: 403 everywhere.
    t.get_as(&tok, PATH).await.expect(200);
    t.post_as(&tok, PATH, oidc_idp(&oidc_provider_url()))
        .await
        .expect_error(403, "Forbidden.");
    let none = t
        .user_with_role("none@acme.test", json!([{"name": "Roles", "read": true}]))
        .await;
    t.get_as(&none, PATH).await.expect_error(403, "Forbidden.");
    let list = t.get(PATH).await;
    let id = list.body["entities"][0]["externalId"].as_str().unwrap().to_string();
    t.get_as(&none, &format!("{PATH}/{id}/verification"))
        .await
        .expect_error(403, "Forbidden.");
    t.get_as(&tok, &format!("{PATH}/{id}/verification")).await.expect(200);
    // SignOn Policy guards the policies.
    t.get_as(&none, "/api/v1/signin-policies")
        .await
        .expect_error(403, "Forbidden.");
}

#[tokio::test]
async fn deleting_a_role_removes_it_from_the_mappings() {
    let t = TestApp::start().await;
    let mk = |name: &'static str| {
        let t = &t;
        async move {
            let r = t.post("/api/v1/roles", json!({"name": name, "isActive": true})).await;
            r.expect(201)["externalId"].as_str().unwrap().to_string()
        }
    };
    let (a, b) = (mk("a").await, mk("b").await);
    let mut body = oidc_idp(&oidc_provider_url());
    body["ssoStatementRoleMappings"] = json!([
        {"attributeName": "groups", "attributeValue": "x", "roleExternalId": a},
        {"attributeName": "groups", "attributeValue": "y", "roleExternalId": b},
    ]);
    let idp = t.post(PATH, body).await;
    let idp = idp.expect(201)["externalId"].as_str().unwrap().to_string();
    t.delete(&format!("/api/v1/roles/{a}")).await.expect(204);
    let g = t.get(&format!("{PATH}/{idp}")).await;
    assert_eq!(
        g.expect(200)["ssoStatementRoleMappings"],
        json!([{"attributeName": "groups", "attributeValue": "y", "roleExternalId": b}])
    );
    // The GET body sent back is a valid PUT.
    t.put(PATH, g.body.clone()).await.expect(200);
    let updates = t
        .audit("")
        .await
        .iter()
        .filter(|e| e["category"] == "IdentityProviders" && e["activity"] == "Updated" && e["target"] == idp.as_str())
        .count();
    assert_eq!(updates, 2, "the role's deletion, then the PUT");
}

/// §3.3 and §1.10 rules 1 and 4: a client workload's `ssoIdentityProviders` name existing
/// identity providers, and an identity provider a client workload names cannot be deleted.
#[tokio::test]
async fn client_workloads_name_existing_identity_providers_which_then_cannot_be_deleted() {
    let t = TestApp::start().await;
    let idp = t.post(PATH, oidc_idp("https://idp.acme.test")).await.expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let workload = |sso: Value| {
        json!({"name": "deploy-job", "isActive": true, "ssoIdentityProviders": sso,
               "identities": [{"type": "oidcIdTokenSubject", "value": "repo:acme/app"}]})
    };
    t.post("/api/v1/client-workloads", workload(json!([uuid::Uuid::new_v4()])))
        .await
        .expect_error(400, "ssoIdentityProviders[0]: unknown SSO identity provider");
    let r = t.post("/api/v1/client-workloads", workload(json!([idp]))).await;
    assert_eq!(r.status, 204, "{:?}", r.body);
    let cw = r.header("location").unwrap().rsplit('/').next().unwrap().to_string();
    let shown = t.get(&format!("/api/v1/client-workloads/{cw}")).await;
    assert_eq!(shown.expect(200)["ssoIdentityProviders"], json!([idp]));
    t.delete(&format!("{PATH}/{idp}")).await.expect_error(
        400,
        &format!("clientWorkloads: referenced by client workload 'deploy-job' ({cw})"),
    );
    t.delete(&format!("/api/v1/client-workloads/{cw}")).await.expect(204);
    t.delete(&format!("{PATH}/{idp}")).await.expect(204);
}

/// §1.9: a stored client secret never follows the provider to another `oidcBaseURL` or
/// `clientId` (a PUT that moves it without a new secret would send the old one to the new
/// token endpoint).
#[tokio::test]
async fn a_stored_client_secret_never_follows_a_moved_identity_provider() {
    let t = TestApp::start().await;
    let created = t.post(PATH, oidc_idp("https://idp.acme.test")).await;
    let id = created.expect(201)["externalId"].as_str().unwrap().to_string();
    let mut body = oidc_idp("https://idp.acme.test");
    body["externalId"] = json!(id);
    body.as_object_mut().unwrap().remove("clientSecret");
    // Same IdP and client: the stored secret is kept.
    t.put(PATH, body.clone()).await.expect(200);
    for (field, value) in [("oidcBaseURL", "https://evil.example"), ("clientId", "another-client")] {
        let mut moved = body.clone();
        moved[field] = json!(value);
        t.put(PATH, moved)
            .await
            .expect_error(400, &format!("clientSecret: is required when {field} changes"));
    }
    // Moved through KeyPair (no secret needed) and back: the old secret is gone for good.
    let mut key_pair = body.clone();
    key_pair["authType"] = json!("KeyPair");
    key_pair["oidcBaseURL"] = json!("https://evil.example");
    t.put(PATH, key_pair).await.expect(200);
    let mut back = body.clone();
    back["oidcBaseURL"] = json!("https://evil.example");
    t.put(PATH, back).await.expect_error(400, "clientSecret: is required");
}
