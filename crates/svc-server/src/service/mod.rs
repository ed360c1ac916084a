//! Use cases above the state and the store: loading and refreshing the state, the write unit that
//! commits changes with their audit entries, first-start bootstrap, management authentication and
//! RBAC, sign-in, the consent of authorization-code providers and the storage interface of
//! renewed upstream credentials.

pub mod admission;
pub mod auth;
pub mod backup;
pub mod bootstrap;
pub mod consent;
pub mod discovery;
pub mod escalation;
pub mod integrations;
pub mod jobs;
pub mod load;
pub mod login;
pub mod nodes;
pub mod pending;
pub mod policies;
pub mod refs;
pub mod rekey;
pub mod renewal;
pub mod sso;
pub mod startup;
pub mod streams;
pub mod write;
