//! Signing in and the signed-in user (contract §2.2–§2.4, §3.27): password and SSO sign-in, the
//! token they answer, TOTP enrolment, and the health check that names the caller.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::Timestamp;

/// `LoginRequestDTO`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "LoginRequestDTO")]
pub struct LoginRequestDto {
    /// Case-insensitive.
    pub email: String,
    #[schemars(extend("writeOnly" = true))]
    pub password: String,
    /// Six digits; required when the MFA sign-in policy applies to the user.
    pub totp_code: Option<String>,
}

/// `LoginResponseDTO`: a management token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "LoginResponseDTO")]
pub struct LoginResponseDto {
    /// A JWT: `Authorization: Bearer <accessToken>`.
    pub access_token: String,
    pub token_type: TokenType,
    /// Seconds until it expires.
    pub expires_in: i32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum TokenType {
    Bearer,
}

/// The answer to `POST /api/v1/me/totp`: a new, unverified TOTP authenticator (RFC 6238, SHA-1,
/// 6 digits, 30 s).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TotpEnrolmentDTO")]
pub struct TotpEnrolmentDto {
    /// The authenticator, the `{id}` to verify.
    pub id: Uuid,
    /// Base32, 160 bits.
    pub secret: String,
    /// `otpauth://totp/…` for an authenticator app.
    pub otpauth_uri: String,
}

/// The body of `POST /api/v1/me/totp/{id}/verify`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "TotpVerificationDTO")]
pub struct TotpVerificationDto {
    /// The authenticator's current code.
    pub code: String,
}

/// `GET /api/v1/sso/providers`: the identity providers a sign-in page offers.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "SSOProviderListDTO")]
pub struct SsoProviderListDto {
    pub providers: Vec<SsoProviderDto>,
}

/// An identity provider users may sign in through: its name only, nothing of its configuration.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "SSOProviderDTO")]
pub struct SsoProviderDto {
    /// The `{idpId}` of `GET /api/v1/sso/login/{idpId}`.
    pub external_id: Uuid,
    pub name: String,
}

/// The body of `POST /api/v1/sso/exchange`: a completed SSO sign-in's one-time code and the
/// TOTP code it still owes, if any.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "SSOExchangeDTO")]
pub struct SsoExchangeDto {
    pub sso_code: String,
    /// Six digits.
    pub totp_code: Option<String>,
}

/// The callback's `401` when the sign-in owes a TOTP code: the GenericResponseDTO and the code
/// to exchange with it (`POST /api/v1/sso/exchange`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "SSOTotpRequiredDTO")]
pub struct SsoTotpRequiredDto {
    /// `false`.
    pub success: bool,
    pub message: Option<String>,
    /// `0`.
    pub id: i32,
    pub sso_code: String,
}

/// `HealthDTO`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "HealthDTO")]
pub struct HealthDto {
    pub status: HealthStatus,
    /// The service's version.
    pub version: String,
    #[serde(rename = "gitSHA")]
    pub git_sha: String,
    /// The request's `Host`.
    pub host: Option<String>,
    /// The e-mail of a valid bearer token's user.
    pub user: Option<String>,
    pub user_full_name: Option<String>,
    pub tenant: String,
    /// When a valid bearer token expires.
    pub session_expires_at: Option<Timestamp>,
    /// (ext) `null` when all is well, else what does not work while the database is unusable.
    pub degraded: Option<String>,
}

/// `Unhealthy` when the database cannot be reached or written (`degraded` says which).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum HealthStatus {
    Healthy,
    Unhealthy,
}
