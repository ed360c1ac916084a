//! `svc-edge`: the workload side of Svc. The SDK collects the evidence of every trust-provider
//! kind from the platform's own endpoints ([`evidence`]), calls `/edge/v1/auth` and
//! `/edge/v1/credentials` ([`Client`]), keeps the edge token until shortly before expiry, and the
//! agent ([`agent`]) serves credentials from a bounded cache refreshed ahead of expiry.
//!
//! The contract is docs/edge-client.md (flags, variables, formats, exit statuses, cache rules).

pub mod agent;
pub mod cache;
pub mod client;
pub mod clock;
pub mod config;
pub mod disk;
pub mod error;
pub mod evidence;
pub mod format;
pub mod log;
pub mod sigv4;

pub use client::{Client, Credential, CredentialRequest, Session};
pub use config::Config;
pub use error::Error;
pub use evidence::Kind;
