//! `signed-jwt` (contract §3.5.2, §5.3): a dataWarehouseA key-pair JWT, RS256, signed with the
//! provider's own key pair (the warehouse pins one registered public key, so not the rotating
//! issuer key). The private key is write-only; when none is given the server generates RSA-2048.
//! `keyContent` shows the public key to register; `issuer` defaults to
//! `ACCOUNT.USER.SHA256:<base64 SHA-256 of the DER public key>`.

use aws_lc_rs::rsa::{KeyPair as RsaKeyPair, KeySize};
use serde_json::{Value, json};
use svc_api::edge::{CredentialType, EdgeCredentials};
use svc_api::mgmt::SignedJwtFields;
use svc_api::{FieldError, Timestamp};

use super::types::{self, TypeSpec, cfg_str};
use super::{Backend, IssueError, Issued};
use crate::crypto::jose;
use crate::domain::credential::CredentialProvider;
use crate::error::Error;

pub struct SignedJwt {
    key: RsaKeyPair,
    issuer: String,
    subject: String,
    lifetime: i64,
}

impl std::fmt::Debug for SignedJwt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SignedJwt({}, key ***)", self.subject)
    }
}

impl SignedJwt {
    pub fn issue(&self) -> Result<Issued, IssueError> {
        let now = crate::clock::now_secs();
        let exp = now + self.lifetime;
        let claims = json!({"iss": self.issuer, "sub": self.subject, "iat": now, "exp": exp});
        let token = jose::sign_rs256(&self.key, None, claims.to_string().as_bytes());
        Ok(Issued::Credential {
            credential_type: CredentialType::OAuthToken,
            data: EdgeCredentials(vec![("token", Some(token))]),
            expires_at: Some(Timestamp::from_secs(exp)),
        })
    }
}

/// Parses a PKCS#8 PEM RSA private key of at least 2048 bits.
fn parse_key(pem: &str) -> Result<RsaKeyPair, String> {
    let (label, der) =
        der::pem::decode_vec(pem.trim().as_bytes()).map_err(|_| "must be a PKCS#8 PEM RSA private key".to_string())?;
    if label != "PRIVATE KEY" {
        return Err("must be a PKCS#8 PEM RSA private key (-----BEGIN PRIVATE KEY-----)".into());
    }
    let key = RsaKeyPair::from_pkcs8(&der).map_err(|e| match e.description_() {
        "TooSmall" => "the RSA key must have at least 2048 bits".to_string(),
        _ => "must be a PKCS#8 PEM RSA private key".to_string(),
    })?;
    if key.public_modulus_len() < 256 {
        return Err("the RSA key must have at least 2048 bits".into());
    }
    Ok(key)
}

fn public_pem(key: &RsaKeyPair) -> (String, Vec<u8>) {
    let spki = jose::rsa_public_spki(key);
    let pem = der::pem::encode_string("PUBLIC KEY", der::pem::LineEnding::LF, &spki).expect("PEM encodes");
    (pem, spki)
}

fn derived_issuer(subject: &str, spki: &[u8]) -> String {
    format!(
        "{subject}.SHA256:{}",
        crate::crypto::b64std(&crate::crypto::sha256(spki))
    )
}

pub fn check_fields(f: &mut SignedJwtFields) -> Result<(), FieldError> {
    let s = &f.subject;
    let ok = s.contains('.')
        && !s.starts_with('.')
        && !s.ends_with('.')
        && !s.chars().any(|c| c.is_lowercase() || c.is_whitespace());
    if !ok {
        return Err(FieldError::new("subject", "must be ACCOUNT.USER in upper case"));
    }
    if let Some(k) = f.private_key.as_deref().filter(|k| !k.is_empty()) {
        parse_key(k).map_err(|e| FieldError::new("privateKey", e))?;
    }
    Ok(())
}

/// Generates the key pair when none is stored, and records the public key and issuer to show.
fn complete(p: &mut CredentialProvider) -> Result<(), Error> {
    let key = match p.secrets.get("privateKey") {
        Some(pem) => parse_key(pem).map_err(|e| Error::field("privateKey", e))?,
        None => {
            let key = RsaKeyPair::generate(KeySize::Rsa2048).map_err(Error::internal)?;
            let der =
                aws_lc_rs::encoding::AsDer::<aws_lc_rs::encoding::Pkcs8V1Der>::as_der(&key).map_err(Error::internal)?;
            let pem = der::pem::encode_string("PRIVATE KEY", der::pem::LineEnding::LF, der.as_ref())
                .map_err(Error::internal)?;
            p.secrets.set("privateKey", pem);
            key
        }
    };
    // An `issuer` equal to the derived value (a GET → PUT round trip) stays derived, so it follows
    // later changes of the subject or the key.
    if p.config.get("issuer").is_some() && p.config.get("issuer") == p.config.get("derivedIssuer") {
        p.config.remove("issuer");
    }
    let (pem, spki) = public_pem(&key);
    p.config.insert("keyContent".into(), json!(pem));
    p.config.insert(
        "derivedIssuer".into(),
        json!(derived_issuer(cfg_str(&p.config, "subject").unwrap_or_default(), &spki)),
    );
    Ok(())
}

/// `issuer` shows the effective value (given, or derived from subject and key).
pub fn present(f: &mut SignedJwtFields, p: &CredentialProvider) {
    if f.issuer.is_none() {
        f.issuer = cfg_str(&p.config, "derivedIssuer").map(str::to_string);
    }
}

fn compile(p: &CredentialProvider) -> Backend {
    let key = match p.secrets.get("privateKey").map(parse_key) {
        Some(Ok(k)) => k,
        _ => return Backend::Broken("private key missing or unreadable".into()),
    };
    let subject = cfg_str(&p.config, "subject").unwrap_or_default().to_string();
    let issuer = cfg_str(&p.config, "issuer")
        .or_else(|| cfg_str(&p.config, "derivedIssuer"))
        .unwrap_or_default()
        .to_string();
    let lifetime = p.config.get("lifetime").and_then(Value::as_i64).unwrap_or(60);
    Backend::SignedJwt(SignedJwt {
        key,
        issuer,
        subject,
        lifetime,
    })
}

pub const SPEC: TypeSpec = TypeSpec {
    name: "signed-jwt",
    credential_type: |_| CredentialType::OAuthToken,
    secret_fields: &["privateKey"],
    secret_destination: &[],
    required_secrets: &[],
    ro_fields: &["keyContent"],
    lifetime: None,
    check: types::no_check,
    complete,
    compile,
};
