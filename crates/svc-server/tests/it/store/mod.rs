//! The storage API on its own, without HTTP: the conformance suite on SQLite and PostgreSQL.

mod conformance;
