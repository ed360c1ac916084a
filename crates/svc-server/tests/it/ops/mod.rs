//! Operating the service (issue 22): the OpenAPI document against the router's routes, and the
//! Prometheus metrics listener; every body of the document has a schema that says what it holds.

mod metrics;
mod openapi;
mod schemas;
