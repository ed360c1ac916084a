//! Sign-in through the company's identity provider and its neighbours (issue 20): SSO identity
//! providers, SSO sign-in against the real OIDC peer, sign-in policies, agent controllers and
//! routings.

mod agent_controllers;
mod idps;
mod routings;
mod signin;
mod takeover;
