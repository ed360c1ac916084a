//! JWT trust-provider kinds against keys the test controls (contract §4.5, §4.6): every rejection
//! rule, each key source, and the facts each kind produces.

use serde_json::{Value, json};

use crate::support::edge::*;
use crate::support::fake_issuer::{FakeIssuer, rsa_jwk};
use crate::support::harness::TestApp;

fn oidc(token: &str) -> Value {
    json!({"oidc": {"identityToken": token}})
}

/// The `/auth` refusal's event names the failed check — the claim or rule, what it had to be
/// and what it was, in a line — for a wrong audience, issuer, expiry and a malformed token;
/// never the evidence. The answer stays `Unauthorized.`.
#[tokio::test]
async fn a_refusals_event_names_the_failed_check_never_the_evidence() {
    let t = TestApp::start().await;
    let iss = FakeIssuer::start().await;
    let (_, cid) = provider(&t, json!({"provider": "OidcIdToken", "oidcUrl": iss.url})).await;
    let aud = t.base.clone();
    let now = svc_server::clock::now_secs();
    let check = |attribute: &str, expected: Value, actual: Value, detail: &str| json!({"attribute": attribute, "expectedValues": expected, "actualValue": actual, "detail": detail});
    let mut expired = iss.claims(&aud, "a");
    expired["exp"] = json!(now - 3600);
    let mut other_iss = iss.claims(&aud, "a");
    other_iss["iss"] = json!("https://evil.example");
    let mut auds = iss.claims(&aud, "a");
    auds["aud"] = json!(["x", "y"]);
    let cases = [
        (
            iss.sign(&iss.claims("https://elsewhere", "a")),
            "InvalidEvidence",
            check(
                "aud",
                json!([aud]),
                json!("https://elsewhere"),
                "aud does not contain an accepted audience",
            ),
        ),
        (
            iss.sign(&auds),
            "InvalidEvidence",
            check(
                "aud",
                json!([aud]),
                json!("[\"x\",\"y\"]"),
                "aud does not contain an accepted audience",
            ),
        ),
        (
            iss.sign(&other_iss),
            "InvalidEvidence",
            check(
                "iss",
                json!([iss.url]),
                json!("https://evil.example"),
                "iss is not the expected issuer",
            ),
        ),
        (
            "not.a.jwt".to_string(),
            "InvalidEvidence",
            json!({"attribute": null, "expectedValues": null, "actualValue": null,
                   "detail": "malformed token: header is not base64url"}),
        ),
    ];
    for (token, reason, expected) in cases {
        let r = auth(&t, &cid, oidc(&token)).await;
        assert_eq!(
            (r.status, r.body.clone()),
            (401, json!({"success": false, "message": "Unauthorized.", "id": 0}))
        );
        let ev = last_authn(&t).await;
        let tp = &ev["trustProviders"][0];
        assert_eq!(tp["reason"], reason, "{ev}");
        for k in ["attribute", "expectedValues", "actualValue", "detail"] {
            assert_eq!(tp[k], expected[k], "{k}: {ev}");
        }
        // Never the evidence: not the token, nor its signature.
        let text = ev.to_string();
        assert!(!text.contains(&token), "{text}");
        assert!(!text.contains(token.rsplit('.').next().unwrap()), "{text}");
    }
    // Expired: the time it had to be after, and its `exp`, as times.
    refused(&t, &cid, oidc(&iss.sign(&expired)), "StaleEvidence").await;
    let tp = last_authn(&t).await["trustProviders"][0].clone();
    assert_eq!(tp["attribute"], "exp");
    assert_eq!(tp["detail"], "token expired");
    let expected = tp["expectedValues"][0].as_str().unwrap();
    let actual = tp["actualValue"].as_str().unwrap();
    assert!(expected.starts_with("after 20") && expected.ends_with('Z'), "{tp}");
    assert!(actual.starts_with("20") && actual < &expected["after ".len()..], "{tp}");
    // Accepted: no check, no detail.
    auth_oidc(&t, &cid, &iss.sign(&iss.claims(&aud, "a"))).await;
    let tp = last_authn(&t).await["trustProviders"][0].clone();
    assert_eq!(tp["result"], "Attested");
    assert!(tp.get("detail").is_none() && tp["attribute"].is_null(), "{tp}");
}

#[tokio::test]
async fn oidc_token_rejections_each_have_their_reason() {
    let t = TestApp::start().await;
    let iss = FakeIssuer::start().await;
    let (_, cid) = provider(&t, json!({"provider": "OidcIdToken", "oidcUrl": iss.url})).await;
    let aud = t.base.clone();
    let now = svc_server::clock::now_secs();

    // Accepted: RS256 and ES256, aud as a string and as an array.
    auth_oidc(&t, &cid, &iss.sign(&iss.claims(&aud, "a"))).await;
    auth_oidc(&t, &cid, &iss.sign_es256(&iss.claims(&aud, "a"))).await;
    let mut c = iss.claims(&aud, "a");
    c["aud"] = json!(["other", aud]);
    auth_oidc(&t, &cid, &iss.sign(&c)).await;

    // Wrong key (signed by another key under the published kid).
    let forged = FakeIssuer::sign_rs256_with(
        &iss.other_rsa,
        json!({"alg": "RS256", "kid": "k1"}),
        &iss.claims(&aud, "a"),
    );
    refused(&t, &cid, oidc(&forged), "InvalidSignature").await;
    // alg none, and HS256 keyed with the issuer's public key.
    refused(&t, &cid, oidc(&iss.none(&iss.claims(&aud, "a"))), "InvalidSignature").await;
    refused(
        &t,
        &cid,
        oidc(&iss.hs256_with_public_key(&iss.claims(&aud, "a"))),
        "InvalidSignature",
    )
    .await;
    // Expired, not yet valid, issued in the future (beyond the 60 s leeway).
    let mut c = iss.claims(&aud, "a");
    c["exp"] = json!(now - 120);
    refused(&t, &cid, oidc(&iss.sign(&c)), "StaleEvidence").await;
    let mut c = iss.claims(&aud, "a");
    c["nbf"] = json!(now + 600);
    refused(&t, &cid, oidc(&iss.sign(&c)), "StaleEvidence").await;
    let mut c = iss.claims(&aud, "a");
    c["iat"] = json!(now + 600);
    refused(&t, &cid, oidc(&iss.sign(&c)), "StaleEvidence").await;
    // Time claims at the ends of the range do not wrap around (an `exp` far ahead, an `nbf` or
    // `iat` far back, a float beyond i64): accepted.
    for (claim, v) in [
        ("exp", json!(i64::MAX)),
        ("exp", json!(u64::MAX)),
        ("exp", json!(1e30)),
        ("nbf", json!(i64::MIN)),
        ("nbf", json!(-1e30)),
        ("iat", json!(i64::MIN)),
    ] {
        let mut c = iss.claims(&aud, "a");
        c[claim] = v.clone();
        auth_oidc(&t, &cid, &iss.sign(&c)).await;
    }
    // No exp at all.
    let mut c = iss.claims(&aud, "a");
    c.as_object_mut().unwrap().remove("exp");
    refused(&t, &cid, oidc(&iss.sign(&c)), "InvalidEvidence").await;
    // Wrong issuer; also the discovery issuer with a `/` added (`iss` is that issuer exactly).
    let mut c = iss.claims(&aud, "a");
    c["iss"] = json!("https://evil.example");
    refused(&t, &cid, oidc(&iss.sign(&c)), "InvalidEvidence").await;
    c["iss"] = json!(format!("{}/", iss.url));
    refused(&t, &cid, oidc(&iss.sign(&c)), "InvalidEvidence").await;
    // Audience as a string and as an array without the edge audience.
    refused(
        &t,
        &cid,
        oidc(&iss.sign(&iss.claims("https://elsewhere", "a"))),
        "InvalidEvidence",
    )
    .await;
    let mut c = iss.claims(&aud, "a");
    c["aud"] = json!(["x", "y"]);
    refused(&t, &cid, oidc(&iss.sign(&c)), "InvalidEvidence").await;
    // Garbage and missing evidence.
    refused(&t, &cid, oidc("not.a.jwt"), "InvalidEvidence").await;
    refused(&t, &cid, json!({"oidc": {}}), "NoDataFound").await;
    refused(
        &t,
        &cid,
        json!({"ciA": {"identityToken": iss.sign(&iss.claims(&aud, "a"))}}),
        "NoDataFound",
    )
    .await;
}

#[tokio::test]
async fn unknown_kid_refreshes_once_a_minute_at_most() {
    let t = TestApp::start().await;
    let iss = FakeIssuer::start().await;
    let (_, cid) = provider(&t, json!({"provider": "OidcIdToken", "oidcUrl": iss.url})).await;
    let aud = t.base.clone();
    auth_oidc(&t, &cid, &iss.sign(&iss.claims(&aud, "a"))).await;
    assert_eq!(iss.fetches(), 1, "discovery + JWKS fetched once and cached");
    auth_oidc(&t, &cid, &iss.sign(&iss.claims(&aud, "a"))).await;
    assert_eq!(iss.fetches(), 1);

    // The issuer rotates in key k2: the first token naming it triggers one refresh and passes.
    iss.published_keys.lock().unwrap()["keys"]
        .as_array_mut()
        .unwrap()
        .push(rsa_jwk(&iss.other_rsa, "k2"));
    let k2 = FakeIssuer::sign_rs256_with(
        &iss.other_rsa,
        json!({"alg": "RS256", "kid": "k2"}),
        &iss.claims(&aud, "a"),
    );
    auth_oidc(&t, &cid, &k2).await;
    assert_eq!(iss.fetches(), 2);
    // An unknown kid within the same minute: no new fetch, 401.
    let k3 = FakeIssuer::sign_rs256_with(
        &iss.other_rsa,
        json!({"alg": "RS256", "kid": "k3"}),
        &iss.claims(&aud, "a"),
    );
    refused(&t, &cid, oidc(&k3), "InvalidSignature").await;
    refused(&t, &cid, oidc(&k3), "InvalidSignature").await;
    assert_eq!(iss.fetches(), 2, "at most one forced refresh per minute");
}

#[tokio::test]
async fn upstream_failures_are_500_with_the_reason_in_the_event() {
    let t = TestApp::start().await;
    // Nothing listens on this port: discovery is unreachable and nothing is cached.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}", l.local_addr().unwrap().port())
    };
    let (_, cid) = provider(&t, json!({"provider": "OidcIdToken", "oidcUrl": dead})).await;
    let iss = FakeIssuer::start().await;
    let r = auth(&t, &cid, oidc(&iss.sign(&iss.claims(&t.base, "a")))).await;
    r.expect_error(500, "Authentication failed due to an internal error.");
    let ev = last_authn(&t).await;
    assert_eq!(ev["trustProviders"][0]["reason"], "UpstreamError");
    assert_eq!(ev["outcome"]["result"], "Error");
    assert_eq!(ev["meta"]["severity"], "Error");
}

#[tokio::test]
async fn key_sources_inline_jwks_pem_and_own_issuer() {
    let t = TestApp::start().await;
    let iss = FakeIssuer::start().await;
    let aud = t.base.clone();
    // Inline JWKS.
    let jwks = json!({"keys": [rsa_jwk(&iss.rsa, "k1")]}).to_string();
    let (_, cid) = provider(&t, json!({"provider": "OidcIdToken", "jwks": jwks})).await;
    auth_oidc(&t, &cid, &iss.sign(&iss.claims(&aud, "a"))).await;
    refused(
        &t,
        &cid,
        oidc(&iss.sign_es256(&iss.claims(&aud, "a"))),
        "InvalidSignature",
    )
    .await;
    assert_eq!(iss.fetches(), 0, "inline keys: nothing fetched");

    // A PEM public key (base64 of PEM text accepted as well).
    let spki = svc_server::crypto::jose::rsa_public_spki(&iss.rsa);
    let pem = der::pem::encode_string("PUBLIC KEY", der::pem::LineEnding::LF, &spki).unwrap();
    let (_, cid) = provider(&t, json!({"provider": "OrchestratorServiceAccount", "certificate": svc_server::crypto::b64std(pem.as_bytes()), "pemType": "PublicKey"})).await;
    let mut c = iss.claims(&aud, "system:serviceaccount:ns1:builder");
    c["kubernetes.io"] = json!({"namespace": "ns1", "pod": {"name": "builder-7d9f", "uid": "pod-uid"}, "serviceaccount": {"name": "builder", "uid": "sa-uid"}});
    let token = FakeIssuer::sign_rs256_with(&iss.rsa, json!({"alg": "RS256"}), &c);
    let r = auth(&t, &cid, json!({"orchestrator": {"serviceAccountToken": token}})).await;
    let facts = jwt_payload(r.expect(200)["accessToken"].as_str().unwrap())["svc"]["facts"].clone();
    assert_eq!(
        facts,
        json!({"OrchestratorIss": iss.url, "OrchestratorSub": "system:serviceaccount:ns1:builder", "OrchestratorIoNamespace": "ns1", "OrchestratorIoPodName": "builder-7d9f", "OrchestratorIoServiceAccountName": "builder"})
    );
    // The authentication event's environment shows the verified pod and service account.
    let ev = authz_events(&t, "&event-type=access.authentication").await;
    assert_eq!(
        ev[0]["environment"]["orchestrator"],
        json!({"namespace": "ns1", "podName": "builder-7d9f", "serviceAccountName": "builder", "serviceAccountUID": "sa-uid"})
    );
    // Real service-account tokens carry a kid, which a PEM key cannot name: still verified
    // by the configured key (and only by it).
    let with_kid = FakeIssuer::sign_rs256_with(&iss.rsa, json!({"alg": "RS256", "kid": "sa-key-2026"}), &c);
    auth(&t, &cid, json!({"orchestrator": {"serviceAccountToken": with_kid}}))
        .await
        .expect(200);
    let stranger = aws_lc_rs::signature::RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
    let forged = FakeIssuer::sign_rs256_with(&stranger, json!({"alg": "RS256", "kid": "sa-key-2026"}), &c);
    refused(
        &t,
        &cid,
        json!({"orchestrator": {"serviceAccountToken": forged}}),
        "InvalidSignature",
    )
    .await;
    // A number or boolean claim is its JSON text (§4.6), as for the other kinds.
    let mut c = iss.claims(&aud, "numbers");
    c["kubernetes.io"] = json!({"namespace": 5, "serviceaccount": {"name": true, "uid": 42}});
    let token = FakeIssuer::sign_rs256_with(&iss.rsa, json!({"alg": "RS256"}), &c);
    let r = auth(&t, &cid, json!({"orchestrator": {"serviceAccountToken": token}})).await;
    let facts = jwt_payload(r.expect(200)["accessToken"].as_str().unwrap())["svc"]["facts"].clone();
    assert_eq!(
        (
            facts["OrchestratorIoNamespace"].clone(),
            facts["OrchestratorIoServiceAccountName"].clone()
        ),
        (json!("5"), json!("true"))
    );
    // Legacy claims are read too; a token without exp is refused.
    let mut c = iss.claims(&aud, "legacy");
    c["kubernetes.io/serviceaccount/namespace"] = json!("old-ns");
    let token = FakeIssuer::sign_rs256_with(&iss.rsa, json!({"alg": "RS256"}), &c);
    let r = auth(&t, &cid, json!({"orchestrator": {"serviceAccountToken": token}})).await;
    assert_eq!(
        jwt_payload(r.expect(200)["accessToken"].as_str().unwrap())["svc"]["facts"]["OrchestratorIoNamespace"],
        "old-ns"
    );
    c.as_object_mut().unwrap().remove("exp");
    let token = FakeIssuer::sign_rs256_with(&iss.rsa, json!({"alg": "RS256"}), &c);
    refused(
        &t,
        &cid,
        json!({"orchestrator": {"serviceAccountToken": token}}),
        "InvalidEvidence",
    )
    .await;

    // This service's own issuer: tokens signed with its published ES256 key.
    // Evidence is an identity token it handed to a workload: its `svc` object names the
    // workload and an `oidc-id-token` provider.
    let (_, cid) = provider(&t, json!({"provider": "OidcIdToken", "isSvcTenantOidcToken": true})).await;
    let id_token = t
        .post(
            "/api/v2/credential-providers",
            json!({"type": "oidc-id-token", "name": "id", "isActive": true, "audience": aud, "subject": "self"}),
        )
        .await
        .expect(201)["externalId"]
        .clone();
    let now = svc_server::clock::now_secs();
    let mut claims = json!({"iss": t.base, "sub": "self", "aud": aud, "iat": now, "exp": now + 60,
                            "svc": {"clientWorkloadId": uuid::Uuid::new_v4(), "credentialProviderId": id_token}});
    let key = t.app.keys().ec_signer(svc_server::clock::now_millis());
    let sign_own =
        |c: &serde_json::Value| svc_server::crypto::jose::sign_es256(&key.pair, &key.kid, c.to_string().as_bytes());
    auth_oidc(&t, &cid, &sign_own(&claims)).await;
    // The same claims signed by someone else's key are refused.
    refused(&t, &cid, oidc(&iss.sign(&claims)), "InvalidSignature").await;
    // A JWT the service signed for anything else (a vault login, a federation assertion) is no
    // evidence (issue 31).
    for svc in [
        json!(null),
        json!({"clientWorkloadId": uuid::Uuid::new_v4(), "credentialProviderId": uuid::Uuid::new_v4()}),
    ] {
        claims["svc"] = svc;
        refused(&t, &cid, oidc(&sign_own(&claims)), "InvalidEvidence").await;
    }
    // The same holds for a provider that names the service's published keys itself (a static
    // JWKS copied from svcJwksUrl): the token names the service as its issuer.
    let own_jwks = t.get("/.well-known/jwks.json").await.expect(200).to_string();
    let (_, copied) = provider(&t, json!({"provider": "OidcIdToken", "jwks": own_jwks})).await;
    claims["svc"] = json!(null);
    refused(&t, &copied, oidc(&sign_own(&claims)), "InvalidEvidence").await;
    claims["svc"] = json!({"clientWorkloadId": uuid::Uuid::new_v4(), "credentialProviderId": id_token});
    auth_oidc(&t, &copied, &sign_own(&claims)).await;
}

#[tokio::test]
async fn oidc_audience_rules_replace_the_edge_audience() {
    let t = TestApp::start().await;
    let iss = FakeIssuer::start().await;
    let (_, cid) = provider(&t, json!({"provider": "OidcIdToken", "oidcUrl": iss.url, "matchRules": [{"attribute": "OidcAudience", "value": "my-app"}]})).await;
    auth_oidc(&t, &cid, &iss.sign(&iss.claims("my-app", "a"))).await;
    refused(&t, &cid, oidc(&iss.sign(&iss.claims(&t.base, "a"))), "InvalidEvidence").await;
    // Custom claims (nested by dotted path) in match rules.
    let (_, cid) = provider(
        &t,
        json!({"provider": "OidcIdToken", "oidcUrl": iss.url, "matchRules": [{"attribute": "OidcCustom", "key": "org.team", "value": "blue"}, {"attribute": "OidcCustom", "key": "level", "value": "3"}]}),
    )
    .await;
    let mut c = iss.claims(&t.base, "a");
    c["org"] = json!({"team": "blue"});
    c["level"] = json!(3);
    auth_oidc(&t, &cid, &iss.sign(&c)).await;
    c["level"] = json!(4);
    refused(&t, &cid, oidc(&iss.sign(&c)), "MatchRuleFailed").await;
    let ev = last_authn(&t).await;
    assert_eq!(
        (
            ev["trustProviders"][0]["attribute"].clone(),
            ev["trustProviders"][0]["actualValue"].clone()
        ),
        (json!("OidcCustom"), json!("4"))
    );
}

#[tokio::test]
async fn ci_tokens_are_rs256_only_and_yield_immutable_ids() {
    let t = TestApp::start().await;
    let iss = FakeIssuer::start().await;
    let (_, cid) = provider(
        &t,
        json!({"provider": "CiAIdentityToken", "oidcUrl": iss.url, "matchRules": [{"attribute": "CiARepositoryId", "value": "123456"}, {"attribute": "CiARepository", "value": "acme/app"}]}),
    )
    .await;
    let mut c = iss.claims(&t.base, "repo:acme/app:ref:refs/heads/main");
    for (k, v) in [
        ("repository", json!("acme/app")),
        ("repository_id", json!(123456)),
        ("repository_owner_id", json!("42")),
        ("actor", json!("octo")),
        ("workflow", json!("ci")),
        ("ref", json!("refs/heads/main")),
    ] {
        c[k] = v;
    }
    let r = auth(&t, &cid, json!({"ciA": {"identityToken": iss.sign(&c)}})).await;
    let facts = jwt_payload(r.expect(200)["accessToken"].as_str().unwrap())["svc"]["facts"].clone();
    assert_eq!(facts["CiARepositoryId"], "123456", "numbers compare by their JSON text");
    assert_eq!(facts["CiASubject"], "repo:acme/app:ref:refs/heads/main");
    refused(
        &t,
        &cid,
        json!({"ciA": {"identityToken": iss.sign_es256(&c)}}),
        "InvalidSignature",
    )
    .await;
    // A provider without oidcUrl uses SVC_CIB_ISSUER.
    let t2 = TestApp::start_with(|e| {
        e.insert("SVC_CIB_ISSUER".into(), iss.url.clone());
    })
    .await;
    let (_, cid) = provider(&t2, json!({"provider": "CiBIdentityToken"})).await;
    let mut c = iss.claims(&t2.base, "project_path:g/p:ref_type:branch:ref:main");
    c["project_path"] = json!("g/p");
    c["namespace_id"] = json!("77");
    let r = auth(&t2, &cid, json!({"ciB": {"identityToken": iss.sign(&c)}})).await;
    let facts = jwt_payload(r.expect(200)["accessToken"].as_str().unwrap())["svc"]["facts"].clone();
    assert_eq!(
        (facts["CiBProjectPath"].clone(), facts["CiBNamespaceId"].clone()),
        (json!("g/p"), json!("77"))
    );
}

#[tokio::test]
async fn cloudc_token_needs_the_platform_jwks_issuer_and_email() {
    let iss = FakeIssuer::start().await;
    let t = TestApp::start_with(|e| {
        e.insert("SVC_CLOUDC_JWKS_URL".into(), format!("{}/jwks", iss.url));
        e.insert("SVC_CLOUDC_ISSUERS".into(), format!("{}, accounts.example", iss.url));
    })
    .await;
    let (_, cid) = provider(&t, json!({"provider": "CloudCIdentityToken", "matchRules": [{"attribute": "Email", "value": "sa@proj.iam.example"}]})).await;
    let mut c = iss.claims(&t.base, "1234");
    c["email"] = json!("sa@proj.iam.example");
    auth(&t, &cid, json!({"cloudC": {"identityToken": iss.sign(&c)}}))
        .await
        .expect(200);
    // A key outside the platform JWKS (a service account's own key) is never accepted.
    let own = FakeIssuer::sign_rs256_with(&iss.other_rsa, json!({"alg": "RS256", "kid": "sa-key"}), &c);
    refused(&t, &cid, json!({"cloudC": {"identityToken": own}}), "InvalidSignature").await;
    // HS256/none and ES256 are refused; email is required; the issuer must be allowed.
    refused(
        &t,
        &cid,
        json!({"cloudC": {"identityToken": iss.none(&c)}}),
        "InvalidSignature",
    )
    .await;
    refused(
        &t,
        &cid,
        json!({"cloudC": {"identityToken": iss.sign_es256(&c)}}),
        "InvalidSignature",
    )
    .await;
    let mut no_email = c.clone();
    no_email.as_object_mut().unwrap().remove("email");
    refused(
        &t,
        &cid,
        json!({"cloudC": {"identityToken": iss.sign(&no_email)}}),
        "InvalidEvidence",
    )
    .await;
    let mut bad_iss = c.clone();
    bad_iss["iss"] = json!("https://accounts.evil");
    refused(
        &t,
        &cid,
        json!({"cloudC": {"identityToken": iss.sign(&bad_iss)}}),
        "InvalidEvidence",
    )
    .await;
}

#[tokio::test]
async fn client_id_and_resource_set_rules() {
    let t = TestApp::start().await;
    let iss = FakeIssuer::start().await;
    let (tp, cid) = provider(&t, json!({"provider": "OidcIdToken", "oidcUrl": iss.url})).await;
    let token = iss.sign(&iss.claims(&t.base, "a"));
    for bad in [
        "",
        "svc:local:default:identity:oidc_idtoken",
        "svc:local:other:identity:oidc_idtoken:x",
        "svc:prod:default:identity:oidc_idtoken:",
        "xyz:local:default:identity:oidc_idtoken:",
    ] {
        let id = if bad.ends_with(':') {
            format!("{bad}{tp}")
        } else {
            bad.to_string()
        };
        auth(&t, &id, oidc(&token))
            .await
            .expect_error(400, "Invalid client ID.");
    }
    auth(
        &t,
        &format!("svc:local:default:identity:nope_idtoken:{tp}"),
        oidc(&token),
    )
    .await
    .expect_error(400, "Invalid client ID.");
    auth(
        &t,
        &format!("svc:local:default:identity:oidc_idtoken:{}", uuid::Uuid::new_v4()),
        oidc(&token),
    )
    .await
    .expect_error(401, "Unauthorized.");
    // The type segment must match the provider's kind.
    auth(
        &t,
        &format!("svc:local:default:identity:ciA_idtoken:{tp}"),
        oidc(&token),
    )
    .await
    .expect_error(401, "Unauthorized.");
    // Missing fields.
    let r = t
        .send(t.client.post(t.url("/edge/v1/auth")).json(&json!({"clientId": cid})))
        .await;
    r.expect_error(400, "The authentication request is invalid.");
    let r = t
        .send(
            t.client
                .post(t.url("/edge/v1/auth"))
                .json(&json!({"clientId": 5, "client": {}})),
        )
        .await;
    r.expect_error(400, "The authentication request is invalid.");
    let r = t.send(t.client.post(t.url("/edge/v1/auth")).body("{")).await;
    r.expect_error(400, "The authentication request is invalid.");
    // Resource sets: header and SVC_RESOURCE_SET_ID must agree and exist; the provider must live there.
    let rs = t
        .post("/api/v1/resource-sets", json!({"name": "b", "isActive": true}))
        .await
        .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string();
    let r = t
        .send(
            t.client
                .post(t.url("/edge/v1/auth"))
                .header("X-Svc-ResourceSet", &rs)
                .json(&json!({"clientId": cid, "client": oidc(&token)})),
        )
        .await;
    r.expect_error(401, "Unauthorized.");
    let r = t
        .send(
            t.client
                .post(t.url("/edge/v1/auth"))
                .header("X-Svc-ResourceSet", "garbage")
                .json(&json!({"clientId": cid, "client": oidc(&token)})),
        )
        .await;
    r.expect_error(400, "The authentication request is invalid.");
    let mut client = oidc(&token);
    client["os"] = json!({"environment": {"SVC_RESOURCE_SET_ID": rs}});
    let r = t
        .send(
            t.client
                .post(t.url("/edge/v1/auth"))
                .header("X-Svc-ResourceSet", crate::support::harness::DEFAULT_RS)
                .json(&json!({"clientId": cid, "client": client})),
        )
        .await;
    r.expect_error(400, "The authentication request is invalid.");
    let ev = last_authn(&t).await;
    assert_eq!(
        ev["outcome"],
        json!({"result": "Unauthorized", "reason": "InvalidRequest"})
    );
}
