//! Issue 31, the fourth read: a resource set's routing decides the path of its upstream calls.
//! A plain-`http` call through a proxy is read and may be answered by the proxy, so only a
//! routing a caller holding every role wrote carries them; any other routing refuses them (a
//! Routing Configuration writer could otherwise answer a trust provider's key fetch with its own
//! keys, or read a stored secret in transit). `https` calls go through any routing (CONNECT: the
//! proxy sees neither what they carry nor can it answer them).

use std::sync::{Arc, Mutex};

use serde_json::json;

use crate::support::cred::{Rig, SUBJECT};
use crate::support::edge::auth;
use crate::support::fake_issuer::{FakeIssuer, rsa_jwk};
use crate::support::harness::{DEFAULT_RS, TestApp};

/// One request an [`evil_proxy`] received: the request line, the head and the body.
#[derive(Clone, Debug)]
struct Caught {
    line: String,
    head: String,
    body: String,
}

type Answerer = Arc<dyn Fn(&str) -> (u16, String) + Send + Sync>;

/// A forward HTTP proxy an attacker runs: it never forwards, it records every request sent
/// through it (absolute-form, `GET http://host/path HTTP/1.1`, with its headers and body) and
/// answers it itself with `answer(request line)`.
async fn evil_proxy(answer: Answerer) -> (String, Arc<Mutex<Vec<Caught>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let (log, answer) = (log.clone(), answer.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let end = loop {
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                };
                let head = String::from_utf8_lossy(&buf[..end]).to_string();
                let len = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.trim()
                            .eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                while buf.len() < end + len {
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let line = head.lines().next().unwrap_or_default().to_string();
                let body = String::from_utf8_lossy(&buf[end..]).to_string();
                let (status, reply) = answer(&line);
                log.lock().unwrap().push(Caught {
                    line: line.clone(),
                    head,
                    body,
                });
                let answer = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                    reply.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
            });
        }
    });
    (url, seen)
}

/// A routing to `proxy` for the default resource set, written by `who`; its id.
async fn route_through(t: &TestApp, who: &str, proxy: &str) -> String {
    t.post_as(
        who,
        "/api/v1/routings",
        json!({"name": "egress", "isActive": true, "resourceSetId": DEFAULT_RS, "proxyUrl": proxy}),
    )
    .await
    .expect(201)["externalId"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn routing_admin(t: &TestApp) -> String {
    t.user_with_role(
        "routing-admin@example.test",
        json!([{"name": "Routing Configuration", "read": true, "write": true}]),
    )
    .await
}

#[tokio::test]
async fn a_routing_writer_cannot_answer_a_trust_providers_key_fetch() {
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let cp = rig
        .provider(
            &t,
            json!({"type": "svc-access-token", "name": "automation", "isActive": true,
                   "roleId": svc_server::domain::records::SUPER_ADMIN_ROLE, "lifetimeInSeconds": 600}),
        )
        .await;
    rig.attach(&t, &cp).await;
    let attacker = routing_admin(&t).await;
    let evil = FakeIssuer::start().await;
    let issuer = rig._iss.url.clone();
    let jwks = json!({"keys": [rsa_jwk(&evil.rsa, "k1")]}).to_string();
    let discovery = json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks")}).to_string();
    let (proxy, seen) = evil_proxy(Arc::new(move |line: &str| {
        if line.contains("/.well-known/openid-configuration") {
            (200, discovery.clone())
        } else if line.contains("/jwks") {
            (200, jwks.clone())
        } else {
            (404, "{}".into())
        }
    }))
    .await;
    let routing = route_through(&t, &attacker, &proxy).await;
    // Evidence for the workload's subject signed with the attacker's key: the key fetch does
    // not go through the attacker's routing, so nothing verifies it.
    let mut claims = evil.claims(&t.base, SUBJECT);
    claims["iss"] = json!(issuer);
    claims["team"] = json!("platform");
    let forged = evil.sign(&claims);
    let r = auth(&t, &rig.client_id, json!({"oidc": {"identityToken": forged}})).await;
    assert!(r.status >= 400, "{} {}", r.status, r.text);
    assert!(seen.lock().unwrap().is_empty(), "nothing plain went through the proxy");
    // The workload's own evidence is refused too while the routing stands (fail closed: the
    // call must not bypass the set's proxy)...
    assert!(
        auth(&t, &rig.client_id, json!({"oidc": {"identityToken": rig.id_token}}))
            .await
            .status
            >= 400
    );
    // ...until a SuperAdmin saves the routing (it vouches for the proxy): then the set's plain
    // calls go through it, as §3.17 says.
    let stored = t.get(&format!("/api/v1/routings/{routing}")).await.body.clone();
    t.put("/api/v1/routings", stored).await.expect(200);
    let _ = auth(&t, &rig.client_id, json!({"oidc": {"identityToken": forged}})).await;
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .any(|c| c.line.contains("/.well-known/openid-configuration"))
    );
}

#[tokio::test]
async fn a_routing_writer_cannot_read_a_stored_secret_in_transit() {
    const SECRET: &str = "partner-s3cr3t-of-the-payments-team";
    let t = TestApp::start().await;
    let rig = Rig::new(&t).await;
    let cp = rig
        .provider(
            &t,
            json!({"type": "oauth-client-credential", "name": "partner", "isActive": true,
                   "clientID": "payments", "clientSecret": SECRET, "url": "http://token.partner.test/oauth/token"}),
        )
        .await;
    rig.attach(&t, &cp).await;
    let attacker = routing_admin(&t).await;
    let (proxy, seen) = evil_proxy(Arc::new(|_: &str| {
        (
            200,
            r#"{"access_token":"from-the-proxy","token_type":"Bearer","expires_in":3600}"#.into(),
        )
    }))
    .await;
    route_through(&t, &attacker, &proxy).await;
    let r = rig.request(&t, "OAuthToken", json!({})).await;
    assert_eq!(r.status, 500, "{}", r.text);
    assert!(!r.text.contains("from-the-proxy"), "{}", r.text);
    let basic = svc_server::crypto::b64std(format!("payments:{SECRET}").as_bytes());
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .all(|c| !c.head.contains(&basic) && !c.body.contains(SECRET)),
        "{:?}",
        seen.lock().unwrap()
    );
    assert!(seen.lock().unwrap().is_empty(), "{:?}", seen.lock().unwrap());
    // The event says why.
    let ev = crate::support::edge::authz_events(&t, "").await;
    assert!(
        ev[0].to_string().contains(svc_server::upstream::PLAINTEXT_REFUSED),
        "{}",
        ev[0]
    );
}

#[tokio::test]
async fn a_routing_proxy_is_not_a_link_local_address() {
    let t = TestApp::start().await;
    t.post(
        "/api/v1/routings",
        json!({"name": "egress", "isActive": true, "resourceSetId": DEFAULT_RS, "proxyUrl": "http://169.254.169.254:80"}),
    )
    .await
    .expect_error(400, "proxyUrl: must not be a link-local or metadata address");
}
