//! Wire types of the Svc API: the DTOs with their exact JSON names, the error body, timestamps,
//! and the strict JSON reader that turns request bodies into validated values.
//!
//! Nothing here performs I/O. The server, the CLI and the tests share these types.

pub mod common;
pub mod edge;
pub mod mgmt;
pub mod reader;
pub mod schema;
pub mod strict;
pub mod time;

pub use common::{GenericResponse, Tag};
pub use reader::{FieldError, Obj};
pub use time::Timestamp;

/// The default resource set (contract §0.2).
pub const DEFAULT_RESOURCE_SET: uuid::Uuid = uuid::Uuid::from_u128(u128::MAX);
