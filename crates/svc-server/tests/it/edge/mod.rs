//! The Edge API (`/edge/v1/auth`, `/edge/v1/credentials`): trust-provider kinds and their
//! evidence, the credentials procedure, and the contract's worked example end to end.

mod cloud;
mod credentials;
mod example;
mod trust;
