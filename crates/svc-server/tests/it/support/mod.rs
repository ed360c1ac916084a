//! Helpers shared by the test areas, no tests: the harness that starts the real service, a fake
//! OIDC issuer, a fake of cloudC's APIs, a loopback HTTP event collector, a TCP proxy that cuts the database off, `svc serve` as a child process, a tmpfs of a test's own, and the rigs and calls of
//! the Edge API and credential-provider tests.

pub mod cloudc;
pub mod cred;
pub mod edge;
pub mod fake_issuer;
pub mod harness;
pub mod hec;
pub mod node;
pub mod proxy;
pub mod s3;
pub mod tmpfs;
