//! Operating the service (issues 22, 32 and 33): the OpenAPI document against the router's
//! routes, with a schema that says what every body holds; the Prometheus metrics listener; and the
//! faults and procedures of docs/OPERATIONS.md.

mod backup;
mod disk;
mod files;
mod metrics;
mod nodes;
mod openapi;
mod outage;
mod rotation;
mod schemas;
mod upgrade;
