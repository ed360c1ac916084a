//! A trust provider compiled for the edge: key material parsed, rules grouped. Built when the
//! provider is written or loaded (never on the request path).

use std::sync::Arc;

use uuid::Uuid;

use super::rules::{RuleGroup, group};
use crate::crypto::jose::VerifyingKey;
use crate::crypto::x509::{CertInfo, cert_info, pem_blocks, pem_text};
use crate::domain::trust::{TrustKind, TrustProvider};

/// Where a JWT kind's verification keys come from.
#[derive(Debug)]
pub enum KeySource {
    /// The kind's default issuer from configuration (CI kinds without `oidcUrl`).
    KindDefault,
    /// OIDC discovery at this issuer URL.
    Discovery(String),
    /// Keys given inline (`jwks`, `certificate`).
    Static(Vec<Arc<VerifyingKey>>),
    /// This service's own JWKS (`isSvcTenantOidcToken`).
    OwnIssuer,
    /// Kinds that are not JWTs.
    None,
}

#[derive(Debug)]
pub struct CompiledTrust {
    pub id: Uuid,
    pub rs: Uuid,
    pub name: String,
    pub kind: TrustKind,
    pub active: bool,
    /// Edge tokens issued before this (Unix seconds) are revoked (deactivation, creation).
    pub tokens_valid_after: i64,
    pub rules: Vec<RuleGroup>,
    pub keys: KeySource,
    /// Certificate secrets (and for cloudA, the provider's certificate): additional signers.
    pub extra_keys: Vec<Arc<VerifyingKey>>,
    pub extra_certs: Vec<CertInfo>,
    /// Set when stored key material could not be used (verification then always fails).
    pub broken: Option<String>,
}

/// A key from PEM text (or base64 of PEM): `CERTIFICATE` or `PUBLIC KEY`.
pub fn key_from_pem(input: &str) -> Result<(VerifyingKey, Option<CertInfo>), String> {
    let text = pem_text(input)?;
    let blocks = pem_blocks(&text)?;
    let (label, der) = &blocks[0];
    match label.as_str() {
        "CERTIFICATE" => {
            let info = cert_info(der)?;
            let key = VerifyingKey::from_spki_der(None, &info.spki_der)?;
            Ok((key, Some(info)))
        }
        "PUBLIC KEY" => Ok((VerifyingKey::from_spki_der(None, der)?, None)),
        other => Err(format!("unsupported PEM block {other} (CERTIFICATE or PUBLIC KEY)")),
    }
}

pub fn compile(tp: &TrustProvider) -> CompiledTrust {
    let mut broken = None;
    let keys = if !tp.kind.is_jwt() {
        KeySource::None
    } else if tp.svc_tenant {
        KeySource::OwnIssuer
    } else if let Some(url) = &tp.oidc_url {
        KeySource::Discovery(url.clone())
    } else if let Some(jwks) = &tp.jwks {
        match crate::crypto::jose::parse_jwks(jwks) {
            Ok(k) => KeySource::Static(k.into_iter().map(Arc::new).collect()),
            Err(e) => {
                broken = Some(format!("jwks: {e}"));
                KeySource::Static(vec![])
            }
        }
    } else if let (Some(cert), true) = (&tp.certificate, tp.kind.accepts_key_material()) {
        match key_from_pem(cert) {
            Ok((k, _)) => KeySource::Static(vec![Arc::new(k)]),
            Err(e) => {
                broken = Some(format!("certificate: {e}"));
                KeySource::Static(vec![])
            }
        }
    } else {
        KeySource::KindDefault
    };
    let mut extra_keys = Vec::new();
    let mut extra_certs = Vec::new();
    let mut pems: Vec<&str> = tp
        .secrets
        .certificates
        .iter()
        .map(|c| c.pem.expose().as_str())
        .collect();
    if tp.kind == TrustKind::CloudAMetadataService
        && let Some(c) = &tp.certificate
    {
        pems.push(c);
    }
    for pem in pems {
        if tp.kind == TrustKind::CloudAMetadataService {
            // Used as raw keys by the cloudA verifier, which also accepts the platform's RSA-1024.
            match crate::trust::clouda_iid::certificate_info(pem) {
                Ok(info) => extra_certs.push(info),
                Err(e) => broken = Some(format!("certificate: {e}")),
            }
            continue;
        }
        match key_from_pem(pem) {
            Ok((k, info)) => {
                extra_keys.push(Arc::new(k));
                extra_certs.extend(info);
            }
            Err(e) => broken = Some(format!("certificate secret: {e}")),
        }
    }
    CompiledTrust {
        id: tp.meta.id,
        rs: tp.meta.scope(),
        name: tp.meta.name.clone(),
        kind: tp.kind,
        active: tp.meta.active,
        // Revoked: tokens of the second of a deactivation and before (rounded up), and tokens
        // from before this provider was created (a deleted provider's, whose id a new one took:
        // §1.2 lets a POST choose its id; the creation second itself still counts as valid).
        tokens_valid_after: tp
            .tokens_valid_after
            .map(|t| (t.millis() + 999).div_euclid(1000))
            .unwrap_or(0)
            .max(tp.meta.created_at.millis().div_euclid(1000)),
        rules: group(&tp.match_rules),
        keys,
        extra_keys,
        extra_certs,
        broken,
    }
}
