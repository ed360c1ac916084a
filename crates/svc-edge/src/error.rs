//! The client's errors and the exit status each maps to (edge-client.md "Exit status").

use svc_api::GenericResponse;

#[derive(Debug, Clone)]
pub enum Error {
    /// Usage or configuration; the message names the flag or variable. Exit 2.
    Config(String),
    /// The service answered with a non-success status. 401 → exit 3, 404 → exit 4, else 5.
    Service { status: u16, body: Vec<u8> },
    /// The service answered 200 with `credentialType: Unknown` (the provider had nothing). Exit 4.
    NoCredential { body: Vec<u8> },
    /// Network, timeout, platform endpoint or malformed answer. Exit 5.
    Failure(String),
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Config(_) => 2,
            Error::Service { status: 401, .. } => 3,
            Error::Service { status: 404, .. } | Error::NoCredential { .. } => 4,
            Error::Service { .. } | Error::Failure(_) => 5,
        }
    }

    /// The `message` of a GenericResponseDTO body (fixed texts of the service: no secrets).
    pub fn service_message(&self) -> Option<String> {
        match self {
            Error::Service { body, .. } => serde_json::from_slice::<GenericResponse>(body).ok()?.message,
            _ => None,
        }
    }

    /// One line for stderr and logs. Never carries a credential: only fixed texts, the
    /// service's `message`, and local causes.
    pub fn describe(&self) -> String {
        match self {
            Error::Config(m) => m.clone(),
            Error::Service { status: 401, .. } => format!(
                "the service refused authentication (401): {}",
                self.service_message().unwrap_or_else(|| "no message".into())
            ),
            Error::Service { status: 404, .. } => {
                "no credential: no access policy or provider matched (404 Unknown)".into()
            }
            Error::NoCredential { .. } => "no credential: the provider returned none (credentialType Unknown)".into(),
            Error::Service { status, .. } => match self.service_message() {
                Some(m) => format!("the service answered {status}: {m}"),
                None => format!("the service answered {status}"),
            },
            Error::Failure(m) => m.clone(),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        assert_eq!(Error::Config("--url".into()).exit_code(), 2);
        let body = br#"{"success":false,"message":"Unauthorized.","id":0}"#.to_vec();
        let e = Error::Service { status: 401, body };
        assert_eq!(e.exit_code(), 3);
        assert!(e.describe().ends_with("Unauthorized."));
        assert_eq!(
            Error::Service {
                status: 404,
                body: vec![]
            }
            .exit_code(),
            4
        );
        assert_eq!(Error::NoCredential { body: vec![] }.exit_code(), 4);
        assert_eq!(
            Error::Service {
                status: 500,
                body: vec![]
            }
            .exit_code(),
            5
        );
        assert_eq!(
            Error::Service {
                status: 403,
                body: vec![]
            }
            .exit_code(),
            5
        );
        assert_eq!(Error::Failure("x".into()).exit_code(), 5);
    }
}
