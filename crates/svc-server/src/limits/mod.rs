//! A node's in-memory limits, which `App` holds: the Edge API's token buckets (`ratelimit.rs`,
//! docs/edge-api.md, rate limiting) and the sign-in throttle per source address (`throttle.rs`).
//! Plain data over the configuration, below every module that consults them.

pub mod ratelimit;
pub mod throttle;
