//! Use cases above the state and the store: loading and refreshing the state, the write unit that
//! commits changes with their audit entries, first-start bootstrap, management authentication and
//! RBAC, and sign-in.

pub mod auth;
pub mod bootstrap;
pub mod load;
pub mod login;
pub mod refs;
pub mod sso;
pub mod write;
