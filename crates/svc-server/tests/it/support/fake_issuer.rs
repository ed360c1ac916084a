//! A loopback OIDC issuer whose keys the test controls: discovery + JWKS (fetches counted), and
//! signing of arbitrary headers and claims, including the malformed and hostile ones.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::KeySize;
use aws_lc_rs::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};
use axum::Router;
use axum::routing::get;
use serde_json::{Value, json};
use svc_server::crypto::b64url;

pub struct FakeIssuer {
    pub url: String,
    pub rsa: RsaKeyPair,
    pub other_rsa: RsaKeyPair,
    pub ec: EcdsaKeyPair,
    pub jwks_fetches: Arc<AtomicUsize>,
    /// Issuer named in the discovery document (may differ from `url` for the mismatch test).
    pub published_keys: Arc<std::sync::Mutex<Value>>,
}

pub fn rsa_jwk(k: &RsaKeyPair, kid: &str) -> Value {
    let pk = k.public_key();
    json!({"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
        "n": b64url(pk.modulus().big_endian_without_leading_zero()), "e": b64url(pk.exponent().big_endian_without_leading_zero())})
}

pub fn ec_jwk(k: &EcdsaKeyPair, kid: &str) -> Value {
    let p = k.public_key().as_ref();
    json!({"kty": "EC", "kid": kid, "crv": "P-256", "x": b64url(&p[1..33]), "y": b64url(&p[33..65])})
}

impl FakeIssuer {
    pub async fn start() -> FakeIssuer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let rsa = RsaKeyPair::generate(KeySize::Rsa2048).unwrap();
        let other_rsa = RsaKeyPair::generate(KeySize::Rsa2048).unwrap();
        let ec = EcdsaKeyPair::generate(&signature::ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
        let keys = json!({"keys": [rsa_jwk(&rsa, "k1"), ec_jwk(&ec, "e1")]});
        let published = Arc::new(std::sync::Mutex::new(keys));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (u, p, f) = (url.clone(), published.clone(), fetches.clone());
        let app = Router::new()
            .route(
                "/.well-known/openid-configuration",
                get(move || {
                    let u = u.clone();
                    async move { axum::Json(json!({"issuer": u, "jwks_uri": format!("{u}/jwks")})) }
                }),
            )
            .route(
                "/jwks",
                get(move || {
                    let (p, f) = (p.clone(), f.clone());
                    async move {
                        f.fetch_add(1, Ordering::SeqCst);
                        axum::Json(p.lock().unwrap().clone())
                    }
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeIssuer {
            url,
            rsa,
            other_rsa,
            ec,
            jwks_fetches: fetches,
            published_keys: published,
        }
    }

    pub fn fetches(&self) -> usize {
        self.jwks_fetches.load(Ordering::SeqCst)
    }

    /// Default claims: this issuer, the given audience and subject, valid for five minutes.
    pub fn claims(&self, aud: &str, sub: &str) -> Value {
        let now = svc_server::clock::now_secs();
        json!({"iss": self.url, "sub": sub, "aud": aud, "iat": now, "exp": now + 300})
    }

    pub fn sign_rs256_with(key: &RsaKeyPair, header: Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            b64url(header.to_string().as_bytes()),
            b64url(claims.to_string().as_bytes())
        );
        let mut sig = vec![0u8; key.public_modulus_len()];
        key.sign(
            &signature::RSA_PKCS1_SHA256,
            &SystemRandom::new(),
            input.as_bytes(),
            &mut sig,
        )
        .unwrap();
        format!("{input}.{}", b64url(&sig))
    }

    /// RS256 with the published key `k1`.
    pub fn sign(&self, claims: &Value) -> String {
        Self::sign_rs256_with(&self.rsa, json!({"alg": "RS256", "kid": "k1", "typ": "JWT"}), claims)
    }

    pub fn sign_es256(&self, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            b64url(json!({"alg": "ES256", "kid": "e1"}).to_string().as_bytes()),
            b64url(claims.to_string().as_bytes())
        );
        let sig = self.ec.sign(&SystemRandom::new(), input.as_bytes()).unwrap();
        format!("{input}.{}", b64url(sig.as_ref()))
    }

    /// An unsigned token (`alg: none`).
    pub fn none(&self, claims: &Value) -> String {
        format!(
            "{}.{}.",
            b64url(br#"{"alg":"none","kid":"k1"}"#),
            b64url(claims.to_string().as_bytes())
        )
    }

    /// HS256 keyed with the issuer's public key (the classic algorithm-confusion attack).
    pub fn hs256_with_public_key(&self, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            b64url(br#"{"alg":"HS256","kid":"k1"}"#),
            b64url(claims.to_string().as_bytes())
        );
        let pk = self.rsa.public_key();
        let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, pk.as_ref());
        let tag = aws_lc_rs::hmac::sign(&key, input.as_bytes());
        format!("{input}.{}", b64url(tag.as_ref()))
    }
}
