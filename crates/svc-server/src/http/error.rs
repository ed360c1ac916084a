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

pub fn generic(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(GenericResponse::error(message))).into_response()
}

/// The status and message of an error's answer (§1.8); an internal error's detail is logged,
/// never answered.
fn parts(e: &Error) -> (StatusCode, std::borrow::Cow<'_, str>) {
    match e {
        Error::BadRequest(m) => (StatusCode::BAD_REQUEST, m.as_str().into()),
        Error::Unauthenticated => (StatusCode::UNAUTHORIZED, NOT_AUTHENTICATED.into()),
        Error::LoginRejected(m) => (StatusCode::UNAUTHORIZED, (*m).into()),
        Error::Forbidden => (StatusCode::FORBIDDEN, FORBIDDEN.into()),
        Error::ForbiddenMsg(m) => (StatusCode::FORBIDDEN, m.as_str().into()),
        Error::NotFound => (StatusCode::NOT_FOUND, NOT_FOUND.into()),
        Error::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, METHOD_NOT_ALLOWED.into()),
        Error::TooManyRequests(_) => (StatusCode::TOO_MANY_REQUESTS, crate::http::edge::TOO_MANY.into()),
        Error::Internal(detail) => {
            tracing::error!(error = %detail, "internal error");
            (StatusCode::INTERNAL_SERVER_ERROR, INTERNAL.into())
        }
        // Issue 32: the database is unreachable or cannot be written; the edge's message.
        Error::Unavailable(detail) => {
            tracing::warn!(error = %detail, "answering 503: the database cannot serve this request now");
            (StatusCode::SERVICE_UNAVAILABLE, crate::http::edge::UNAVAILABLE.into())
        }
    }
}

/// The message an error's answer carries, for an answer that is not a GenericResponseDTO (the
/// console's SSO redirect).
pub fn public_message(e: &Error) -> String {
    parts(e).1.into_owned()
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let (status, message) = parts(&self);
        let mut r = generic(status, &message);
        let retry_after = match self {
            Error::TooManyRequests(wait) => Some(wait.max(1)),
            Error::Unavailable(_) => Some(1),
            _ => None,
        };
        if let Some(wait) = retry_after {
            r.headers_mut()
                .insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(wait));
        }
        r
    }
}
