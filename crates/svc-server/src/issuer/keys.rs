//! Key material: one internal HMAC key (edge and management tokens, never published), one ES256
//! and one RS256 signing key (published in the JWKS). Keys live sealed in `signing_keys`, shared by
//! every node. Rotation (§5.1): a new key per algorithm is published at once and signs one hour
//! later; the key it replaces verifies (and stays in the JWKS) for 48 hours more, then is removed.

use std::sync::Arc;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::KeySize;
use aws_lc_rs::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};
use svc_api::mgmt::{EcJwkDto, JwkDto, JwksDto, RsaJwkDto};

use crate::crypto::aead::Cipher;
use crate::crypto::jose::{Alg, KeyType, VerifyingKey};
use crate::crypto::jws::{HmacKey, sign_hs256};
use crate::crypto::{b64url, hex, random_bytes, sha256};
use crate::store::{KeyRow, Store, StoreError};

pub const ALG_HMAC: &str = "HS256";
pub const ALG_ES256: &str = "ES256";
pub const ALG_RS256: &str = "RS256";

/// A replaced key stays valid this long after its successor becomes active.
pub const RETIRE_AFTER_MS: i64 = 48 * 3600 * 1000;
/// A new key is published this long before it signs.
pub const ACTIVATE_AFTER_MS: i64 = 3600 * 1000;

pub struct EcKey {
    pub kid: String,
    pub pair: EcdsaKeyPair,
    pub x: String,
    pub y: String,
}

pub struct RsaKey {
    pub kid: String,
    pub pair: RsaKeyPair,
    pub n: String,
    pub e: String,
}

struct Timed<T> {
    key: T,
    active_at: i64,
    retire_at: Option<i64>,
}

/// All key material currently valid, loaded from the store.
pub struct KeyRing {
    hmac: Vec<Timed<Arc<HmacKey>>>,
    ec: Vec<Timed<Arc<EcKey>>>,
    rsa: Vec<Timed<Arc<RsaKey>>>,
    /// The published keys as verification keys (own-issuer evidence, §4.5).
    verifying: Vec<Timed<Arc<VerifyingKey>>>,
}

fn current<T: Clone>(list: &[Timed<T>], now: i64) -> Option<T> {
    // Newest key already active; before any is active (fresh rotation), the newest overall.
    list.iter()
        .filter(|k| k.active_at <= now)
        .max_by_key(|k| k.active_at)
        .or_else(|| list.iter().min_by_key(|k| k.active_at))
        .map(|k| k.key.clone())
}

fn valid<T>(list: &[Timed<T>], now: i64) -> impl Iterator<Item = &T> {
    list.iter()
        .filter(move |k| k.retire_at.is_none_or(|r| r > now))
        .map(|k| &k.key)
}

impl KeyRing {
    pub fn from_rows(rows: &[KeyRow], cipher: &Cipher) -> Result<KeyRing, String> {
        let mut ring = KeyRing {
            hmac: vec![],
            ec: vec![],
            rsa: vec![],
            verifying: vec![],
        };

        for r in rows {
            let material = cipher
                .open(&r.material, &crate::store::sealed::key_label(&r.kid))
                .map_err(|e| format!("key {}: {e}", r.kid))?;
            match r.alg.as_str() {
                ALG_HMAC => ring.hmac.push(Timed {
                    key: Arc::new(HmacKey::new(r.kid.clone(), &material)),
                    active_at: r.active_at,
                    retire_at: r.retire_at,
                }),
                ALG_ES256 => {
                    let pair = EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &material)
                        .map_err(|e| format!("key {}: {e}", r.kid))?;
                    let (x, y) = ec_xy(&pair);
                    let point = pair.public_key().as_ref().to_vec();
                    let vk = VerifyingKey::ec(Some(r.kid.clone()), Some(Alg::ES256), KeyType::EcP256, point)?;
                    ring.verifying.push(Timed {
                        key: Arc::new(vk),
                        active_at: r.active_at,
                        retire_at: r.retire_at,
                    });
                    ring.ec.push(Timed {
                        key: Arc::new(EcKey {
                            kid: r.kid.clone(),
                            pair,
                            x,
                            y,
                        }),
                        active_at: r.active_at,
                        retire_at: r.retire_at,
                    });
                }
                ALG_RS256 => {
                    let pair = RsaKeyPair::from_pkcs8(&material).map_err(|e| format!("key {}: {e}", r.kid))?;
                    let (n, e) = rsa_ne(&pair);
                    let pk = pair.public_key();
                    let vk = VerifyingKey::rsa(
                        Some(r.kid.clone()),
                        Some(Alg::RS256),
                        pk.modulus().big_endian_without_leading_zero(),
                        pk.exponent().big_endian_without_leading_zero(),
                    )?;
                    ring.verifying.push(Timed {
                        key: Arc::new(vk),
                        active_at: r.active_at,
                        retire_at: r.retire_at,
                    });
                    ring.rsa.push(Timed {
                        key: Arc::new(RsaKey {
                            kid: r.kid.clone(),
                            pair,
                            n,
                            e,
                        }),
                        active_at: r.active_at,
                        retire_at: r.retire_at,
                    });
                }
                other => return Err(format!("key {}: unknown algorithm {other}", r.kid)),
            }
        }
        if ring.hmac.is_empty() || ring.ec.is_empty() || ring.rsa.is_empty() {
            return Err("key ring is incomplete".into());
        }
        Ok(ring)
    }

    /// The HMAC key that signs new tokens.
    pub fn hmac_signer(&self, now: i64) -> Arc<HmacKey> {
        current(&self.hmac, now).expect("non-empty ring")
    }

    pub fn ec_signer(&self, now: i64) -> Arc<EcKey> {
        current(&self.ec, now).expect("non-empty ring")
    }

    pub fn rsa_signer(&self, now: i64) -> Arc<RsaKey> {
        current(&self.rsa, now).expect("non-empty ring")
    }

    /// Signs claims (JSON object text) as an HS256 token with the current internal key.
    pub fn sign_internal(&self, claims: &[u8], now: i64) -> String {
        sign_hs256(&self.hmac_signer(now), claims)
    }

    /// Verifies an internal HS256 token; returns the payload bytes.
    pub fn verify_internal(&self, token: &str, now: i64) -> Option<Vec<u8>> {
        self.verify_internal_by(token, now).map(|(payload, _)| payload)
    }

    /// [`verify_internal`](Self::verify_internal), also naming the key (valid for verification
    /// at `now`, found by the token's `kid`) that verified it, which
    /// [`hmac_still_valid`](Self::hmac_still_valid) asks about later.
    pub fn verify_internal_by(&self, token: &str, now: i64) -> Option<(Vec<u8>, Arc<HmacKey>)> {
        let used = std::cell::OnceCell::new();
        let payload = crate::crypto::jws::verify_hs256(token, |kid| {
            let k = valid(&self.hmac, now).find(|k| k.kid == kid)?;
            Some(used.get_or_init(|| k.clone()).as_ref())
        })?;
        Some((payload, used.into_inner()?))
    }

    /// Whether `key` is still one of this ring's verification keys at `now`: not retired, and
    /// not replaced by a reload (a reloaded ring holds new keys, so what was verified under the
    /// old one is verified again).
    pub fn hmac_still_valid(&self, key: &Arc<HmacKey>, now: i64) -> bool {
        valid(&self.hmac, now).any(|k| Arc::ptr_eq(k, key))
    }

    /// The published JWKS document: every ES256 and RS256 key not yet removed.
    pub fn jwks(&self, now: i64) -> JwksDto {
        let mut keys = Vec::new();
        for k in valid(&self.ec, now) {
            keys.push(JwkDto::Ec(EcJwkDto {
                kid: k.kid.clone(),
                key_use: "sig".into(),
                alg: ALG_ES256.into(),
                crv: "P-256".into(),
                x: k.x.clone(),
                y: k.y.clone(),
            }));
        }
        for k in valid(&self.rsa, now) {
            keys.push(JwkDto::Rsa(RsaJwkDto {
                kid: k.kid.clone(),
                key_use: "sig".into(),
                alg: ALG_RS256.into(),
                n: k.n.clone(),
                e: k.e.clone(),
            }));
        }
        JwksDto { keys }
    }

    /// Public JWKs for verification of our own tokens (ES256/RS256), by kid.
    pub fn public_ec(&self, kid: &str, now: i64) -> Option<Arc<EcKey>> {
        valid(&self.ec, now).find(|k| k.kid == kid).cloned()
    }

    pub fn public_rsa(&self, kid: &str, now: i64) -> Option<Arc<RsaKey>> {
        valid(&self.rsa, now).find(|k| k.kid == kid).cloned()
    }

    /// The published keys still valid, for verifying tokens this service issued.
    pub fn verifying_keys(&self, now: i64) -> Vec<Arc<VerifyingKey>> {
        valid(&self.verifying, now).cloned().collect()
    }

    /// Newest creation-relevant activation time (for the rotation schedule).
    pub fn newest_active_at(&self) -> i64 {
        self.hmac.iter().map(|k| k.active_at).max().unwrap_or(0)
    }

    pub fn newest_hmac_kid(&self) -> String {
        self.hmac
            .iter()
            .max_by_key(|k| k.active_at)
            .map(|k| k.key.kid.clone())
            .unwrap_or_default()
    }
}

fn ec_xy(pair: &EcdsaKeyPair) -> (String, String) {
    let pt = pair.public_key().as_ref();
    // Uncompressed SEC1 point: 0x04 || X (32) || Y (32).
    (b64url(&pt[1..33]), b64url(&pt[33..65]))
}

fn rsa_ne(pair: &RsaKeyPair) -> (String, String) {
    let pk = pair.public_key();
    (
        b64url(pk.modulus().big_endian_without_leading_zero()),
        b64url(pk.exponent().big_endian_without_leading_zero()),
    )
}

/// RFC 7638 thumbprint of an EC P-256 key.
pub fn ec_thumbprint(x: &str, y: &str) -> String {
    b64url(&sha256(
        format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#).as_bytes(),
    ))
}

/// RFC 7638 thumbprint of an RSA key.
pub fn rsa_thumbprint(n: &str, e: &str) -> String {
    b64url(&sha256(format!(r#"{{"e":"{e}","kty":"RSA","n":"{n}"}}"#).as_bytes()))
}

fn new_key(alg: &str, cipher: &Cipher, now: i64, active_at: i64) -> Result<KeyRow, String> {
    let (kid, material) = match alg {
        ALG_HMAC => {
            let secret = random_bytes::<32>();
            (format!("hs-{}", hex(&random_bytes::<8>())), secret.to_vec())
        }
        ALG_ES256 => {
            let doc = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .map_err(|e| e.to_string())?;
            let pair = EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref())
                .map_err(|e| e.to_string())?;
            let (x, y) = ec_xy(&pair);
            (ec_thumbprint(&x, &y), doc.as_ref().to_vec())
        }
        ALG_RS256 => {
            let pair = RsaKeyPair::generate(KeySize::Rsa2048).map_err(|e| e.to_string())?;
            let der = aws_lc_rs::encoding::AsDer::<aws_lc_rs::encoding::Pkcs8V1Der>::as_der(&pair)
                .map_err(|e| e.to_string())?;
            let (n, e) = rsa_ne(&pair);
            (rsa_thumbprint(&n, &e), der.as_ref().to_vec())
        }
        other => return Err(format!("unknown algorithm {other}")),
    };
    let material = cipher.seal(&material, &crate::store::sealed::key_label(&kid));
    Ok(KeyRow {
        kid,
        alg: alg.to_string(),
        created_at: now,
        active_at,
        retire_at: None,
        material,
    })
}

/// Creates the first key of every algorithm that has none (first start). Idempotent.
pub async fn ensure(store: &Store, cipher: &Cipher, now: i64) -> Result<(), StoreError> {
    let rows = store.load_keys().await?;
    let mut insert = Vec::new();
    for alg in [ALG_HMAC, ALG_ES256, ALG_RS256] {
        if !rows.iter().any(|r| r.alg == alg) {
            insert.push(new_key(alg, cipher, now, now).map_err(StoreError::other)?);
        }
    }
    if !insert.is_empty() {
        // Several nodes may start at once: the first to hold the write lock stores its keys, the
        // others find them there (and read them only after that commit).
        store.save_first_keys(&insert).await?;
    }
    Ok(())
}

/// One rotation step: new keys for every algorithm (active in one hour), the current ones retired
/// 48 hours after that, and keys past retirement deleted.
pub async fn rotate(store: &Store, cipher: &Cipher, now: i64) -> Result<(), StoreError> {
    let rows = store.load_keys().await?;
    let active_at = now + ACTIVATE_AFTER_MS;
    let mut insert = Vec::new();
    let mut retire = Vec::new();
    for alg in [ALG_HMAC, ALG_ES256, ALG_RS256] {
        insert.push(new_key(alg, cipher, now, active_at).map_err(StoreError::other)?);
        for r in rows.iter().filter(|r| r.alg == alg && r.retire_at.is_none()) {
            retire.push((r.kid.clone(), active_at + RETIRE_AFTER_MS));
        }
    }
    let delete: Vec<String> = rows
        .iter()
        .filter(|r| r.retire_at.is_some_and(|t| t <= now))
        .map(|r| r.kid.clone())
        .collect();
    store.save_keys(&insert, &retire, &delete).await
}

/// Rotates when the newest key is older than `days` (called hourly by every node; the meta row
/// keyed by the generation being replaced lets exactly one node perform it).
pub async fn rotate_if_due(
    store: &Store,
    cipher: &Cipher,
    ring: &KeyRing,
    days: u32,
    now: i64,
    node: &str,
) -> Result<bool, StoreError> {
    let due = ring.newest_active_at() + days as i64 * 86_400_000;
    if now < due {
        return Ok(false);
    }
    let lock = format!("rotation-after:{}", ring.newest_hmac_kid());
    if store.meta_init(&lock, node).await? != node {
        return Ok(false);
    }
    rotate(store, cipher, now).await?;
    Ok(true)
}
