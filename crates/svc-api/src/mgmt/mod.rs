//! The management API's DTOs (contract §1.3, §3), one module per resource family, with the
//! contract's JSON names and schema names. Every POST/PUT body is read as its DTO and every answer
//! rendered from it (`svc_api::schema::read`); the OpenAPI document shows their schemas.
//!
//! Conventions (docs/STYLE.md, "DTOs"): `#[serde(rename_all = "camelCase")]`; the schema named as
//! the contract names the DTO (`#[schemars(rename = "ClientWorkloadDTO")]`); a read-only field is
//! `#[serde(default)] #[schemars(extend("readOnly" = true))]` (accepted and dropped on input); a
//! write-only secret is an `Option<String>` with `#[schemars(extend("writeOnly" = true))]`,
//! always `None` in answers; lengths, ranges and formats as `schemars` attributes; rules across
//! fields stay with the resource that reads the DTO.

pub mod base;
pub mod evaluate;

pub use base::{Base, EntityPatch};
