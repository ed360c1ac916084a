//! Users (contract §3.18): sign-in accounts, with their own shape (no base block).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::RoleDto;
use crate::{Tag, Timestamp};

fn yes() -> bool {
    true
}

/// `UserDTO`; `password` is write-only (always `null` in answers).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "UserDTO")]
pub struct UserDto {
    /// Generated on POST when absent; on PUT it must equal the path's id.
    pub external_id: Option<Uuid>,
    /// An e-mail address, unique case-insensitively.
    pub email: String,
    #[schemars(length(min = 2, max = 64))]
    pub first_name: String,
    #[schemars(length(min = 2, max = 64))]
    pub last_name: String,
    #[schemars(length(max = 32))]
    pub phone_number: Option<String>,
    /// Existing roles; giving a role needs the caller to hold what it grants.
    pub roles: Option<Vec<Uuid>>,
    /// The roles in full.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub roles_details: Vec<RoleDto>,
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub created_at: Timestamp,
    /// The last change through this API (ext).
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub modified_at: Option<Timestamp>,
    /// Default true.
    #[serde(default = "yes")]
    pub is_active: bool,
    /// Whether the user has a verified TOTP authenticator. On input `false` removes every
    /// authenticator; `true` is accepted only when it is already true (enrolment is the user's).
    pub two_factor_enabled: Option<bool>,
    /// Changed by failed sign-ins and `unlock`.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub is_locked: bool,
    /// At most 50, keys unique.
    pub tags: Option<Vec<Tag>>,
    /// The user's TOTP authenticators.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub user_tokens: Vec<UserTokensDto>,
    /// The identity-provider accounts that sign in as this user (ext): bound by an SSO sign-in,
    /// never set through this API.
    #[serde(default)]
    #[schemars(extend("readOnly" = true))]
    pub sso_identities: Vec<UserSsoIdentityDto>,
    /// 12..128 characters (ext); a user without one signs in only through SSO. A change ends the
    /// user's sessions.
    #[schemars(length(min = 12, max = 128), extend("writeOnly" = true))]
    pub password: Option<String>,
}

/// `UserTokensDTO`: a TOTP authenticator.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "UserTokensDTO")]
pub struct UserTokensDto {
    pub id: Uuid,
    /// `TOTP`.
    pub name: Option<String>,
    pub verified: bool,
    pub created_at: Timestamp,
}

/// `UserSsoIdentityDTO` (ext): an account at an SSO identity provider bound to the user.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "UserSsoIdentityDTO")]
pub struct UserSsoIdentityDto {
    pub identity_provider_id: Uuid,
    /// The ID token's `iss`.
    pub issuer: String,
    /// The ID token's `sub`.
    pub subject: String,
}

/// `UserPatchDTO`: the fields present change; roles change only through PUT.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "UserPatchDTO")]
pub struct UserPatchDto {
    /// May repeat the path's id, not change it.
    pub external_id: Option<Uuid>,
    pub email: Option<String>,
    #[schemars(length(min = 2, max = 64))]
    pub first_name: Option<String>,
    #[schemars(length(min = 2, max = 64))]
    pub last_name: Option<String>,
    #[schemars(length(max = 32))]
    pub phone_number: Option<String>,
    pub is_active: Option<bool>,
    /// 12..128 characters; ends the user's sessions.
    #[schemars(length(min = 12, max = 128), extend("writeOnly" = true))]
    pub password: Option<String>,
}
