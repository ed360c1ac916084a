//! The admin console's server side (docs/console.md): the files at `/console/` with their
//! headers, `GET /` from a browser, and the two API endpoints the console uses that had no
//! equivalent: `POST /api/v1/me/sign-out` and the public `GET /api/v1/sso/providers`. The pages
//! themselves are tested in a real browser (tests/console, stage `console` of scripts/test.sh).

mod serving;
mod sign_out;
mod sso_providers;
