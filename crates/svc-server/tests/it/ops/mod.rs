//! Operating the service (issues 22 and 32): the OpenAPI document against the router's routes, the
//! Prometheus metrics listener, and the faults and procedures of docs/OPERATIONS.md (a database
//! outage).

mod backup;
mod disk;
mod files;
mod metrics;
mod nodes;
mod openapi;
mod outage;
mod rotation;
mod upgrade;
