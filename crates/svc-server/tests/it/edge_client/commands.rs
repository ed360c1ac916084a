//! The commands (placeholder).
