//! Edge API.
pub mod ratelimit;
