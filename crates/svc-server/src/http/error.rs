//! The one mapping from [`Error`] to an HTTP response: a status and a GenericResponseDTO.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use svc_api::GenericResponse;

use crate::error::Error;

pub const NOT_AUTHENTICATED: &str = "Not authenticated.";
pub const FORBIDDEN: &str = "Forbidden.";
pub const NOT_FOUND: &str = "Not found.";
pub const METHOD_NOT_ALLOWED: &str = "Method not allowed.";
pub const INTERNAL: &str = "Internal server error.";

/// 503 with `Retry-After: 1` and the same message as the Edge API's (issue 32): the database is
/// unreachable or cannot be written; nothing was changed.
pub fn unavailable() -> Response {
    let mut r = generic(StatusCode::SERVICE_UNAVAILABLE, crate::edge::UNAVAILABLE);
    r.headers_mut()
        .insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(1u32));
    r
}

pub fn generic(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(GenericResponse::error(message))).into_response()
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        match self {
            Error::BadRequest(m) => generic(StatusCode::BAD_REQUEST, &m),
            Error::Unauthenticated => generic(StatusCode::UNAUTHORIZED, NOT_AUTHENTICATED),
            Error::LoginRejected(m) => generic(StatusCode::UNAUTHORIZED, m),
            Error::Forbidden => generic(StatusCode::FORBIDDEN, FORBIDDEN),
            Error::ForbiddenMsg(m) => generic(StatusCode::FORBIDDEN, &m),
            Error::NotFound => generic(StatusCode::NOT_FOUND, NOT_FOUND),
            Error::MethodNotAllowed => generic(StatusCode::METHOD_NOT_ALLOWED, METHOD_NOT_ALLOWED),
            Error::TooManyRequests(wait) => {
                let mut r = generic(StatusCode::TOO_MANY_REQUESTS, crate::edge::TOO_MANY);
                r.headers_mut().insert(
                    axum::http::header::RETRY_AFTER,
                    axum::http::HeaderValue::from(wait.max(1)),
                );
                r
            }
            Error::Internal(detail) => {
                tracing::error!(error = %detail, "internal error");
                generic(StatusCode::INTERNAL_SERVER_ERROR, INTERNAL)
            }
            Error::Unavailable(detail) => {
                tracing::warn!(error = %detail, "answering 503: the database cannot serve this request now");
                unavailable()
            }
        }
    }
}
