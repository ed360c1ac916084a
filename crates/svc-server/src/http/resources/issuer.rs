//! The service's OIDC issuer documents (contract §5.1): discovery and JWKS, public, cacheable,
//! CORS-open.

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use svc_api::mgmt::{JwksDto, OpenIdConfigurationDto};

use crate::app::App;
use crate::http::api::{Api, Op};
use crate::http::ok;

pub fn register(api: &mut Api<'_>) {
    api.public("/.well-known/openid-configuration").get(
        discovery,
        Op::new("The OIDC discovery document of the service's issuer (§5.1)").ok::<OpenIdConfigurationDto>(200),
    );
    api.public("/.well-known/jwks.json").get(
        jwks,
        Op::new("The service's published signing keys (§5.1)").ok::<JwksDto>(200),
    );
}

fn public(mut r: Response) -> Response {
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"));
    r.headers_mut()
        .insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    r
}

async fn discovery(State(app): State<App>) -> Response {
    let issuer = app.cfg.issuer();
    let strings = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
    let doc = OpenIdConfigurationDto {
        issuer: issuer.to_string(),
        jwks_uri: format!("{issuer}/.well-known/jwks.json"),
        response_types_supported: strings(&["id_token"]),
        subject_types_supported: strings(&["public"]),
        id_token_signing_alg_values_supported: strings(&["ES256", "RS256"]),
        scopes_supported: strings(&["openid"]),
        claims_supported: strings(&["iss", "sub", "aud", "exp", "iat", "nbf", "jti"]),
    };
    public(ok(super::crud::to_json(&doc)))
}

async fn jwks(State(app): State<App>) -> Response {
    public(ok(super::crud::to_json(&app.keys().jwks(crate::clock::now_millis()))))
}
