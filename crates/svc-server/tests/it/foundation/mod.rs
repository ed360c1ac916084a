//! What every management request relies on: sign-in and tokens, the error body, lists and the
//! audit log, RBAC, and write-only secrets.

mod auth;
mod errors;
mod lists;
mod rbac;
mod secrets;
