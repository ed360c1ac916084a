//! Operating the service (issue 22): the OpenAPI document against the router's routes, and the
//! Prometheus metrics listener.

mod metrics;
mod openapi;
