//! The access-policy engine: the `/edge/v1/credentials` decision as pure steps over the state
//! (`decide`), and the explain trace built from them (`explain`). Nothing here does I/O or issues
//! a credential.

pub mod conditions;
pub mod decide;
pub mod explain;
pub mod identity;
pub mod outcome;
