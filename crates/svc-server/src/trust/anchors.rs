//! The platforms' trust material, parsed once at start (contract §5.5): cloudA's instance-identity
//! signers (`SVC_CLOUDA_IID_CERTS`, default the compiled-in bundle) as raw keys, cloudB's roots
//! (`SVC_CLOUDB_ROOTS`, default compiled in), and the cache of intermediates fetched through AIA.
//!
//! The cloudA certificates are anchors, not a chain: several are expired, X.509 v1, self-signed
//! with SHA-1 or hold RSA-1024 keys (assets/platform/README.md), so only their keys are used,
//! de-duplicated (77 certificates hold 60 keys).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aws_lc_rs::signature::{self, ParsedPublicKey};

use crate::config::Config;
use crate::crypto::chain::Cert;
use crate::crypto::pkcs7::SignerId;
use crate::crypto::x509::{Spki, bundle, parse_spki};

/// A trusted cloudA identity-document signing key and the certificates that carry it.
pub struct CloudAKey {
    pub spki: Vec<u8>,
    /// (issuer Name DER, serial) of every certificate with this key, for PKCS#7 SignerInfo lookup.
    ids: Vec<(Vec<u8>, Vec<u8>)>,
    /// The key parsed for the raw form (RSA PKCS#1 v1.5 SHA-256, 1024 bits and up).
    raw: ParsedPublicKey,
}

impl std::fmt::Debug for CloudAKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CloudAKey({} certificates)", self.ids.len())
    }
}

impl CloudAKey {
    /// From a certificate's DER: an RSA key of at least 1024 bits; validity is not checked.
    pub fn from_cert(der: &[u8]) -> Result<CloudAKey, String> {
        let c = Cert::parse(der)?;
        if !matches!(parse_spki(&c.spki)?, Spki::Rsa) {
            return Err("the certificate's key is not RSA".into());
        }
        let raw = ParsedPublicKey::new(&signature::RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY, &c.spki)
            .map_err(|_| "RSA key rejected (1024 to 8192 bits)".to_string())?;
        Ok(CloudAKey {
            spki: c.spki,
            ids: vec![(c.issuer, c.serial)],
            raw,
        })
    }

    /// Whether this key's certificates include the one a SignerInfo names.
    pub fn named_by(&self, id: &SignerId) -> bool {
        match id {
            SignerId::IssuerSerial { issuer, serial } => self.ids.iter().any(|(i, s)| i == issuer && s == serial),
            SignerId::KeyId(_) => false,
        }
    }

    /// The raw form: RSA PKCS#1 v1.5 SHA-256 over the document bytes.
    pub fn verify_raw(&self, document: &[u8], sig: &[u8]) -> bool {
        self.raw.verify_sig(document, sig).is_ok()
    }
}

/// Adds `key`, merging it into an existing entry with the same public key.
pub fn add_dedup(keys: &mut Vec<CloudAKey>, key: CloudAKey) {
    match keys.iter_mut().find(|k| k.spki == key.spki) {
        Some(k) => k.ids.extend(key.ids),
        None => keys.push(key),
    }
}

/// Certificates of one AIA answer, with the Unix time they expire from the cache.
type AiaEntry = (i64, Arc<Vec<Cert>>);

/// Intermediates fetched from AIA caIssuers URLs, by URL, for an hour.
#[derive(Default)]
pub struct AiaCache {
    entries: Mutex<HashMap<String, AiaEntry>>,
}

const AIA_TTL_SECS: i64 = 3600;
const AIA_MAX_ENTRIES: usize = 128;

impl AiaCache {
    pub fn get(&self, url: &str, now: i64) -> Option<Arc<Vec<Cert>>> {
        let map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        map.get(url).filter(|(exp, _)| *exp > now).map(|(_, c)| c.clone())
    }

    pub fn put(&self, url: &str, certs: Arc<Vec<Cert>>, now: i64) {
        let mut map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, (exp, _)| *exp > now);
        if map.len() >= AIA_MAX_ENTRIES {
            map.clear();
        }
        map.insert(url.to_string(), (now + AIA_TTL_SECS, certs));
    }
}

/// Everything the cloud kinds trust by configuration.
pub struct PlatformTrust {
    pub clouda_keys: Vec<CloudAKey>,
    pub cloudb_roots: Vec<Cert>,
    pub aia: AiaCache,
}

impl PlatformTrust {
    /// Parses the configured bundles (or the compiled-in defaults); an unusable bundle is an error
    /// naming its key.
    pub fn load(cfg: &Config) -> Result<PlatformTrust, String> {
        Self::load_each(cfg).map_err(|errors| errors.join("; "))
    }

    /// As [`PlatformTrust::load`], with one error per unusable bundle (both are checked).
    pub fn load_each(cfg: &Config) -> Result<PlatformTrust, Vec<String>> {
        let clouda = clouda_keys(cfg);
        let cloudb = cloudb_roots(cfg);
        match (clouda, cloudb) {
            (Ok(clouda_keys), Ok(cloudb_roots)) => Ok(PlatformTrust {
                clouda_keys,
                cloudb_roots,
                aia: AiaCache::default(),
            }),
            (a, b) => Err([a.err(), b.err()].into_iter().flatten().collect()),
        }
    }
}

fn clouda_keys(cfg: &Config) -> Result<Vec<CloudAKey>, String> {
    let key = "SVC_CLOUDA_IID_CERTS";
    let mut keys = Vec::new();
    for (i, der) in bundle(
        key,
        cfg.clouda_iid_certs.as_deref(),
        crate::platform::CLOUDA_IID_CERTS_PEM,
    )?
    .iter()
    .enumerate()
    {
        let k = CloudAKey::from_cert(der).map_err(|e| format!("{key}: certificate {}: {e}", i + 1))?;
        add_dedup(&mut keys, k);
    }
    Ok(keys)
}

fn cloudb_roots(cfg: &Config) -> Result<Vec<Cert>, String> {
    let key = "SVC_CLOUDB_ROOTS";
    bundle(key, cfg.cloudb_roots.as_deref(), crate::platform::CLOUDB_ROOTS_PEM)?
        .iter()
        .enumerate()
        .map(|(i, der)| Cert::parse(der).map_err(|e| format!("{key}: certificate {}: {e}", i + 1)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiled_defaults_load_and_dedupe_keys() {
        let cfg = Config::from_map(&Default::default()).unwrap();
        let p = PlatformTrust::load(&cfg).unwrap();
        // 77 certificates, 60 distinct keys (assets/platform/README.md).
        assert_eq!(p.clouda_keys.len(), 60);
        assert_eq!(p.clouda_keys.iter().map(|k| k.ids.len()).sum::<usize>(), 77);
        assert_eq!(p.cloudb_roots.len(), 5);
    }

    #[test]
    fn a_bad_bundle_names_its_key() {
        let dir = std::env::temp_dir().join(format!("svc-anchors-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("bad.pem");
        std::fs::write(&f, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").unwrap();
        let mut m = std::collections::BTreeMap::new();
        m.insert("SVC_CLOUDB_ROOTS".to_string(), f.display().to_string());
        let cfg = Config::from_map(&m).unwrap();
        let e = PlatformTrust::load(&cfg).err().unwrap();
        assert!(e.starts_with("SVC_CLOUDB_ROOTS"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
