//! The management resources that make up the edge configuration: trust providers, workloads,
//! credential providers, access policies, and the rules that tie them together.

mod policies;
mod resources;
