//! The one integration-test binary: drives the real service over HTTP (see `support::harness`).
//! Runs on SQLite by default and on PostgreSQL with `SVC_TEST_DATABASE=postgres` (scripts/test.sh
//! does both). `support/` holds the helpers and fakes; every other folder is one area's tests.

mod support;

mod cli;
mod concurrency;
mod conditions;
mod config;
mod console;
mod cred;
mod edge;
mod edge_client;
mod events;
mod explain;
mod foundation;
mod hardening;
mod ops;
mod sso;
mod store;
mod streams;
mod streams_object;
mod tidy;
