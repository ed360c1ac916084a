//! The service's OIDC issuer documents (contract §5.1): the discovery document and the JWKS of
//! the keys others verify its tokens with.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `GET /.well-known/openid-configuration`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "OpenIdConfigurationDTO")]
pub struct OpenIdConfigurationDto {
    pub issuer: String,
    pub jwks_uri: String,
    pub response_types_supported: Vec<String>,
    pub subject_types_supported: Vec<String>,
    pub id_token_signing_alg_values_supported: Vec<String>,
    pub scopes_supported: Vec<String>,
    pub claims_supported: Vec<String>,
}

/// `GET /.well-known/jwks.json`: every published key (RFC 7517).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "JWKSDTO")]
pub struct JwksDto {
    pub keys: Vec<JwkDto>,
}

/// A published public key, by key type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kty")]
#[schemars(rename = "JWKDTO")]
pub enum JwkDto {
    /// ES256 (P-256).
    #[serde(rename = "EC")]
    Ec(EcJwkDto),
    /// RS256 (2048 bits).
    #[serde(rename = "RSA")]
    Rsa(RsaJwkDto),
}

/// An EC public key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "ECJWKDTO")]
pub struct EcJwkDto {
    /// The RFC 7638 thumbprint.
    pub kid: String,
    /// `sig`.
    #[serde(rename = "use")]
    pub key_use: String,
    pub alg: String,
    pub crv: String,
    pub x: String,
    pub y: String,
}

/// An RSA public key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "RSAJWKDTO")]
pub struct RsaJwkDto {
    /// The RFC 7638 thumbprint.
    pub kid: String,
    /// `sig`.
    #[serde(rename = "use")]
    pub key_use: String,
    pub alg: String,
    pub n: String,
    pub e: String,
}
