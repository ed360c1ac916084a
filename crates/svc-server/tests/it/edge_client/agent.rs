//! The agent (placeholder).
