//! The one integration-test binary: drives the real service over HTTP (see `harness`). Runs on
//! SQLite by default and on PostgreSQL with `SVC_TEST_DATABASE=postgres` (scripts/test.sh does both).

mod harness;

mod concurrent_writes;
mod config_policies;
mod config_resources;
mod cred_canaries;
mod cred_fakes;
mod cred_minted;
mod cred_rules;
mod cred_support;
mod cred_upstream;
mod edge_cloud;
mod edge_credentials;
mod edge_example;
mod edge_support;
mod edge_trust;
mod fake_issuer;
mod foundation_auth;
mod foundation_errors;
mod foundation_lists;
mod foundation_rbac;
mod foundation_secrets;
mod sso_agent_controllers;
mod sso_idps;
mod sso_routings;
mod sso_signin;
mod store_conformance;
