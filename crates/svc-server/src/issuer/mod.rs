//! The service's own OIDC issuer (contract §5.1): signing keys and their rotation, the discovery
//! and JWKS documents, and the internal HS256 token key used for edge and management tokens.

pub mod ca;
pub mod keys;
pub mod mgmt_token;

pub use keys::KeyRing;
