//! Svc: a workload credential service. Workloads prove what they are with evidence their platform
//! signed (`POST /edge/v1/auth`) and receive the credentials their access policies allow
//! (`POST /edge/v1/credentials`); administrators configure it all through the management API under
//! `/api`. See docs/ARCHITECTURE.md for the code map and the invariants.

pub mod app;
pub mod caches;
pub mod clock;
pub mod config;
pub mod credential;
pub mod crypto;
pub mod domain;
pub mod edge;
pub mod error;
pub mod events;
pub mod geoip;
pub mod http;
pub mod issuer;
pub mod limits;
pub mod metrics;
pub mod net;
pub mod platform;
pub mod policy;
pub mod service;
pub mod state;
pub mod store;
pub mod trust;
pub mod upstream;
pub mod util;

pub use app::App;
pub use config::Config;
