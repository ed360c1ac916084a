//! A rig for credential-provider tests: an OIDC trust provider on the fake issuer, one client
//! workload (by subject), one server workload, and helpers to attach providers through a policy and
//! request credentials the way a workload does. Also verification of JWTs the service signs,
//! against its published JWKS.

use aws_lc_rs::signature::{self, UnparsedPublicKey};
use serde_json::{Value, json};

use crate::support::edge::*;
use crate::support::fake_issuer::FakeIssuer;
use crate::support::harness::{Resp, TestApp};

pub const SUBJECT: &str = "system:job:deploy";

/// The `state` parameter of an authorization redirect (`Location` of `…/authorize`).
pub fn state_of(location: &str) -> String {
    url::Url::parse(location)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .to_string()
}

pub struct Rig {
    /// The issuer that signed `id_token` (kept so its JWKS stays served).
    pub _iss: FakeIssuer,
    pub trust_provider: String,
    pub client_id: String,
    pub client_workload: String,
    pub server_workload: String,
    pub host: String,
    pub id_token: String,
    pub access: String,
}

impl Rig {
    pub async fn new(t: &TestApp) -> Rig {
        let iss = FakeIssuer::start().await;
        let r = t
            .post(
                "/api/v1/trust-providers",
                json!({"name": "ci", "isActive": true, "provider": "OidcIdToken", "oidcUrl": iss.url}),
            )
            .await;
        let tp = r.expect(200).clone();
        let cw = t
            .post(
                "/api/v1/client-workloads",
                json!({"name": "deploy-job", "isActive": true, "identities": [{"type": "oidcIdTokenSubject", "value": SUBJECT}]}),
            )
            .await;
        assert_eq!(cw.status, 204, "{}", cw.text);
        let host = "upstream.example.test".to_string();
        let sw = t
            .post(
                "/api/v1/server-workloads",
                json!({"name": "upstream", "isActive": true, "serviceEndpoint": {"host": host, "port": 443, "appProtocol": "HTTP", "transportProtocol": "TCP",
                       "requestedPort": 443, "requestedTls": true, "tls": true, "tlsVerification": "full"}}),
            )
            .await;
        assert_eq!(sw.status, 204, "{}", sw.text);
        let client_id = tp["edgeSdkClientId"].as_str().unwrap().to_string();
        let mut claims = iss.claims(&t.base, SUBJECT);
        claims["team"] = json!("platform");
        let id_token = iss.sign(&claims);
        let access = auth_oidc(t, &client_id, &id_token).await;
        Rig {
            trust_provider: tp["externalId"].as_str().unwrap().to_string(),
            client_id,
            client_workload: id_of(&cw),
            server_workload: id_of(&sw),
            host,
            _iss: iss,
            id_token,
            access,
        }
    }

    /// Creates a v2 credential provider (asserting 201) and returns its id.
    pub async fn provider(&self, t: &TestApp, body: Value) -> String {
        let r = t.post("/api/v2/credential-providers", body).await;
        r.expect(201)["externalId"].as_str().unwrap().to_string()
    }

    /// The one policy of the rig's pair, with the given credential mappings (replaced on each call).
    pub async fn policy(&self, t: &TestApp, mappings: Value) -> String {
        let existing = t
            .get(&format!(
                "/api/v2/access-policies/getByWorkloadIds/{}/{}",
                self.client_workload, self.server_workload
            ))
            .await;
        if existing.status == 200 {
            let id = existing.body["externalId"].as_str().unwrap().to_string();
            t.delete(&format!("/api/v2/access-policies/{id}")).await.expect(204);
        }
        let r = t
            .post(
                "/api/v2/access-policies",
                json!({"name": "deploy-job to upstream", "isActive": true, "clientWorkload": self.client_workload,
                       "serverWorkload": self.server_workload, "trustProviders": [self.trust_provider],
                       "credentialProviders": mappings}),
            )
            .await;
        r.expect(200)["externalId"].as_str().unwrap().to_string()
    }

    /// A policy with exactly this provider (mapping `None`).
    pub async fn attach(&self, t: &TestApp, cp: &str) -> String {
        self.policy(t, json!([{"credentialProviderId": cp, "mappingType": "None"}]))
            .await
    }

    /// `/credentials` for the rig's server with extra body fields merged in.
    pub async fn request(&self, t: &TestApp, credential_type: &str, extra: Value) -> Resp {
        let mut body = json!({"client": {"oidc": {"identityToken": self.id_token}},
                              "server": {"transportProtocol": "TCP", "host": self.host, "port": 443},
                              "credentialType": credential_type});
        if let Value::Object(m) = extra {
            for (k, v) in m {
                body[k] = v;
            }
        }
        credentials(t, &self.access, body).await
    }

    /// `/credentials` that must succeed; returns the response body.
    pub async fn issue(&self, t: &TestApp, credential_type: &str) -> Value {
        let r = self.request(t, credential_type, json!({})).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["credentialType"], credential_type, "{}", r.text);
        r.body.clone()
    }
}

pub fn id_of(r: &Resp) -> String {
    r.header("location").unwrap().rsplit('/').next().unwrap().to_string()
}

pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// `expiresAt` of a credentials answer, in Unix seconds.
pub fn expires_at_secs(v: &Value) -> i64 {
    let s = v["expiresAt"].as_str().expect("expiresAt");
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .unwrap()
        .unix_timestamp()
}

/// The latest event of a type (flushing the queue first).
pub async fn last_event(t: &TestApp, event_type: &str) -> Value {
    authz_events(t, &format!("&event-type={event_type}")).await[0].clone()
}

/// Splits a JWT into (header, payload) after verifying its signature with a key from the service's
/// published JWKS (by `kid`), independently of the service's own code. Panics when it does not verify.
pub async fn verify_with_jwks(t: &TestApp, token: &str) -> (Value, Value) {
    let jwks: Value = reqwest::get(t.url("/.well-known/jwks.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "not a JWS: {token}");
    let header: Value = serde_json::from_slice(&svc_server::crypto::b64url_decode(parts[0]).unwrap()).unwrap();
    let kid = header["kid"].as_str().expect("kid");
    let jwk = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"] == kid)
        .unwrap_or_else(|| panic!("kid {kid} is not in the JWKS"))
        .clone();
    let signing_input = format!("{}.{}", parts[0], parts[1]);
    let sig = svc_server::crypto::b64url_decode(parts[2]).unwrap();
    let d = |k: &str| svc_server::crypto::b64url_decode(jwk[k].as_str().unwrap()).unwrap();
    match header["alg"].as_str().unwrap() {
        "ES256" => {
            assert_eq!(jwk["crv"], "P-256");
            let mut point = vec![4u8];
            point.extend(d("x"));
            point.extend(d("y"));
            UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                .verify(signing_input.as_bytes(), &sig)
                .expect("ES256 signature verifies under the published key");
        }
        "RS256" => {
            let key = signature::RsaPublicKeyComponents { n: d("n"), e: d("e") };
            key.verify(&signature::RSA_PKCS1_2048_8192_SHA256, signing_input.as_bytes(), &sig)
                .expect("RS256 signature verifies under the published key");
        }
        other => panic!("unexpected alg {other}"),
    }
    (header, jwt_payload(token))
}

/// Runs `openssl` with the arguments and stdin; returns stdout (panics on failure).
pub fn openssl(args: &[&str], stdin: &[u8]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("openssl")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("openssl");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

// ---- a recording upstream ---------------------------------------------------------------------------

/// One request an upstream received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub uri: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    /// The body as `application/x-www-form-urlencoded` pairs.
    pub fn form(&self) -> Vec<(String, String)> {
        url::form_urlencoded::parse(&self.body).into_owned().collect()
    }
    pub fn form_value(&self, key: &str) -> Option<String> {
        self.form().into_iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// What a [`Recorder`] answers.
#[derive(Clone)]
pub enum Answer {
    /// Forward to this base URL (path and query appended) and relay the answer.
    Proxy(String),
    /// A fixed answer: status, content type, body, delay before answering.
    Fixed(u16, &'static str, Vec<u8>, std::time::Duration),
    /// A JSON answer computed from the request (routes of a fake API).
    Func(fn(&Seen) -> (u16, Value)),
    /// Any answer computed from the request: status, content type, body.
    Raw(fn(&Seen) -> (u16, &'static str, String)),
}

/// A loopback HTTP server that records every request and answers per [`Answer`] (changeable).
pub struct Recorder {
    pub url: String,
    pub seen: std::sync::Arc<std::sync::Mutex<Vec<Seen>>>,
    pub answer: std::sync::Arc<std::sync::Mutex<Answer>>,
}

impl Recorder {
    pub async fn start(answer: Answer) -> Recorder {
        use axum::body::Body;
        use axum::http::Request;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Seen>::new()));
        let answer = std::sync::Arc::new(std::sync::Mutex::new(answer));
        let (s, a) = (seen.clone(), answer.clone());
        let client = reqwest::Client::new();
        let handler = move |req: Request<Body>| {
            let (s, a, client) = (s.clone(), a.clone(), client.clone());
            async move {
                let (parts, body) = req.into_parts();
                let body = axum::body::to_bytes(body, 16 << 20).await.unwrap().to_vec();
                let uri = parts.uri.path_and_query().map(|p| p.to_string()).unwrap_or_default();
                let headers: Vec<(String, String)> = parts
                    .headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                    .collect();
                s.lock().unwrap().push(Seen {
                    method: parts.method.to_string(),
                    uri: uri.clone(),
                    headers: headers.clone(),
                    body: body.clone(),
                });
                let answer = a.lock().unwrap().clone();
                let seen_now = s.lock().unwrap().last().cloned().unwrap();
                match answer {
                    Answer::Func(f) => {
                        let (status, v) = f(&seen_now);
                        axum::http::Response::builder()
                            .status(status)
                            .header("content-type", "application/json")
                            .body(Body::from(v.to_string()))
                            .unwrap()
                    }
                    Answer::Raw(f) => {
                        let (status, ct, body) = f(&seen_now);
                        axum::http::Response::builder()
                            .status(status)
                            .header("content-type", ct)
                            .body(Body::from(body))
                            .unwrap()
                    }
                    Answer::Fixed(status, ct, bytes, delay) => {
                        tokio::time::sleep(delay).await;
                        axum::http::Response::builder()
                            .status(status)
                            .header("content-type", ct)
                            .body(Body::from(bytes))
                            .unwrap()
                    }
                    Answer::Proxy(base) => {
                        let mut r = client.request(parts.method.clone(), format!("{base}{uri}"));
                        for (k, v) in &headers {
                            if !k.eq_ignore_ascii_case("host") && !k.eq_ignore_ascii_case("content-length") {
                                r = r.header(k, v);
                            }
                        }
                        let resp = r.body(body).send().await.unwrap();
                        let status = resp.status().as_u16();
                        let ct = resp
                            .headers()
                            .get("content-type")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("application/octet-stream")
                            .to_string();
                        let bytes = resp.bytes().await.unwrap();
                        axum::http::Response::builder()
                            .status(status)
                            .header("content-type", ct)
                            .body(Body::from(bytes))
                            .unwrap()
                    }
                }
            }
        };
        let app = axum::Router::new().fallback(handler);
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Recorder { url, seen, answer }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    pub fn set(&self, a: Answer) {
        *self.answer.lock().unwrap() = a;
    }
}

/// The fixed JSON answer `status` + `body`.
pub fn json_answer(status: u16, body: Value) -> Answer {
    Answer::Fixed(
        status,
        "application/json",
        body.to_string().into_bytes(),
        std::time::Duration::ZERO,
    )
}
