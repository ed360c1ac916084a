//! The hardening of issue 22 part 4, one regression test per rule: a caller grants only what it
//! holds, a TOTP code is accepted once, sessions end with a password change, deactivation, lock
//! or role change and stay dead after re-activation, sign-in throttling per source address,
//! strict request bodies, `Connection: close` on answers that close, and a bounded graceful stop.

mod bodies;
mod escalation;
mod server;
mod sessions;
mod throttle;
mod totp;
