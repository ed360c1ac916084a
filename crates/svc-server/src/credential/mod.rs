//! Credential provider types: one module per type behind the credential-backend trait.

pub mod access_token;
