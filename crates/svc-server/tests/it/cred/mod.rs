//! Credential types: the ones the service mints, the ones fetched from real or fake upstreams,
//! the management rules across types, and the canary test that no secret leaks.

mod canaries;
mod fakes;
mod minted;
mod rules;
mod upstream;
