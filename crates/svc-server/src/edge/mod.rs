//! The Edge API's decision and what it needs besides HTTP (docs/edge-api.md): the one driver of
//! the `/edge/v1/credentials` decision (`pipeline.rs`), step 9's vendor calls (`conditions.rs`),
//! the edge access token (`token.rs`), the events' bodies and environment. The handlers, which
//! know axum, are `http::edge`.

pub mod conditions;
pub mod environment;
pub mod events;
pub mod pipeline;
pub mod token;
