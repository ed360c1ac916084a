//! A node's in-memory caches, which `App` holds: the verified edge access tokens with their claims
//! (`edge_tokens.rs`) and step 9's vendor tokens and lookups (`vendor.rs`). Plain data, below
//! `app` and `edge`, which fill and read them.

pub mod edge_tokens;
pub mod vendor;
