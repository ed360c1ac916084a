//! The service's OIDC issuer documents (contract §5.1): discovery and JWKS, public, cacheable,
//! CORS-open.

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use serde_json::json;

use crate::app::App;
use crate::http::api::{Api, Op, Untyped};
use crate::http::ok;

pub fn register(api: &mut Api<'_>) {
    api.public("/.well-known/openid-configuration").get(
        discovery,
        Op::new("The OIDC discovery document of the service's issuer (§5.1)").ok::<Untyped>(200),
    );
    api.public("/.well-known/jwks.json").get(
        jwks,
        Op::new("The service's published signing keys (§5.1)").ok::<Untyped>(200),
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
    public(ok(json!({
        "issuer": issuer,
        "jwks_uri": format!("{issuer}/.well-known/jwks.json"),
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["ES256", "RS256"],
        "scopes_supported": ["openid"],
        "claims_supported": ["iss", "sub", "aud", "exp", "iat", "nbf", "jti"],
    })))
}

async fn jwks(State(app): State<App>) -> Response {
    public(ok(app.keys().jwks(crate::clock::now_millis())))
}
