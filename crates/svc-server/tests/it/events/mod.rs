//! Events recorded before the answer (issue 19): a killed server has stored the events of every
//! request it answered; a database that refuses them turns edge answers into 503. The lists answer
//! the stored bodies through their DTOs, member for member.

mod dtos;
mod durable;
mod rows;
