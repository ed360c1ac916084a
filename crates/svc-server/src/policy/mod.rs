//! The access-policy engine: the `/edge/v1/credentials` decision as pure steps over the state
//! (`decide`). Nothing here does I/O or issues a credential.

pub mod conditions;
pub mod decide;
