//! The service's one error type. It carries no axum, sqlx or reqwest types; `http::error` maps it
//! to a status and a GenericResponseDTO exactly once.

use svc_api::FieldError;

#[derive(Debug)]
pub enum Error {
    /// 400 with a message starting with the offending field's path.
    BadRequest(String),
    /// 401 `Not authenticated.`
    Unauthenticated,
    /// 401 with a specific message (login failures).
    LoginRejected(&'static str),
    /// 403 `Forbidden.`
    Forbidden,
    /// 403 with a specific message.
    ForbiddenMsg(String),
    /// 404 `Not found.`
    NotFound,
    /// 405
    MethodNotAllowed,
    /// 429 `Too many requests. Please try again later.` with `Retry-After` (seconds).
    TooManyRequests(u64),
    /// 500 `Internal server error.`; the detail goes only to the log.
    Internal(String),
    /// 503 `Service temporarily unavailable. Please try again later.` with `Retry-After`: the
    /// database is unreachable or cannot be written (issue 32); the detail goes only to the log.
    Unavailable(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn bad(msg: impl Into<String>) -> Error {
        Error::BadRequest(msg.into())
    }
    pub fn field(path: impl AsRef<str>, reason: impl AsRef<str>) -> Error {
        Error::BadRequest(format!("{}: {}", path.as_ref(), reason.as_ref()))
    }
    pub fn internal(detail: impl std::fmt::Display) -> Error {
        Error::Internal(detail.to_string())
    }
}

impl From<FieldError> for Error {
    fn from(e: FieldError) -> Self {
        Error::BadRequest(e.0)
    }
}

impl From<crate::store::StoreError> for Error {
    fn from(e: crate::store::StoreError) -> Self {
        if e.unavailable() {
            Error::Unavailable(format!("storage: {e}"))
        } else {
            Error::Internal(format!("storage: {e}"))
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::BadRequest(m) | Error::ForbiddenMsg(m) | Error::Internal(m) | Error::Unavailable(m) => {
                f.write_str(m)
            }
            Error::LoginRejected(m) => f.write_str(m),
            other => write!(f, "{other:?}"),
        }
    }
}
