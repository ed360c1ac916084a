//! The hardening of issue 22 part 4 and issue 31, one regression test per rule: a caller grants
//! only what it holds and acts only on users whose roles it holds, a TOTP code is accepted once,
//! sessions end with a password change, deactivation or role change and stay dead after
//! re-activation, a lock-out after failed sign-ins ends by itself and ends no session, sign-in
//! throttling per source address (the right-most untrusted `X-Forwarded-For` entry), stored
//! secrets that never follow a moved URL, upstream answers never echoed, no service-signed JWT for
//! another workload's subject, routings that carry plain calls only when a caller holding every
//! role wrote them, views that embed only what their reader may read, tamper-evident backups,
//! strict request bodies,
//! `Connection: close` on answers that close, and a bounded graceful stop.

mod bodies;
mod escalation;
mod exfiltration;
mod lockout;
mod minting;
mod routing;
mod server;
mod sessions;
mod throttle;
mod totp;
