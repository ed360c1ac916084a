//! Writes at the same moment, through one node or several sharing one database.

mod writes;
