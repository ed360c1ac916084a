//! The management API's DTOs (contract §1.3, §3), one module per resource family, with the
//! contract's JSON names and schema names. Every POST/PUT body is read as its DTO and every answer
//! rendered from it (`svc_api::schema::read`); the OpenAPI document shows their schemas.
//!
//! Conventions (docs/STYLE.md, "DTOs"): `#[serde(rename_all = "camelCase")]`; the schema named as
//! the contract names the DTO (`#[schemars(rename = "ClientWorkloadDTO")]`); a read-only field is
//! `#[serde(default)] #[schemars(extend("readOnly" = true))]` (accepted and dropped on input); a
//! write-only secret is an `Option<String>` with `#[schemars(extend("writeOnly" = true))]`,
//! always `None` in answers; lengths, ranges and formats as `schemars` attributes; rules across
//! fields stay with the resource that reads the DTO.

pub mod access_policies;
pub mod agent_controllers;
pub mod auth;
pub mod base;
pub mod conditions;
pub mod content_security;
pub mod credential_integrations;
pub mod credential_providers;
pub mod discovery;
pub mod evaluate;
pub mod events;
pub mod integrations;
pub mod issuer;
pub mod log_streams;
pub mod resource_sets;
pub mod roles;
pub mod routings;
pub mod settings;
pub mod sso_idps;
pub mod trust_providers;
pub mod users;
pub mod workloads;

pub use access_policies::{
    CreatePolicyDto, EntityRefDto, GetPolicyDto, MappingType, PatchPolicyV2Dto, PolicyCredentialMappingDto, PolicyDto,
    PolicyExternalDto, PolicyNoteDto, PolicyPatchDto, PolicyReadOnly, Readable, WorkloadExternalDto,
};
pub use agent_controllers::{
    AgentControllerDeviceCodeDto, AgentControllerDto, AgentControllerPatchDto, AgentControllerTlsCertificateDto,
};
pub use auth::{
    HealthDto, HealthStatus, LoginRequestDto, LoginResponseDto, SsoExchangeDto, SsoProviderDto, SsoProviderListDto,
    SsoTotpRequiredDto, TokenType, TotpEnrolmentDto, TotpVerificationDto,
};
pub use base::{Base, EntityPatch};
pub use conditions::{
    AccessConditionCommon, AccessConditionDto, AccessConditionPatchDto, AccessConditionV2Dto,
    CloudSecurityAAccessConditionDto, CloudSecurityAConditionFields, GeoIpAccessConditionDto, GeoIpConditionFields,
    GeoIpLocationDto, GeoIpSubdivisionDto, ScheduleDto, SensorAAccessConditionDto, SensorAConditionFields,
    TimeAccessConditionDto, TimeConditionFields, TimezoneDto, WeekDay, WeekDayDto,
};
pub use content_security::{
    ContentSecurityDto, ContentSecurityPatchDto, ContentSecurityType, SensorAAidrContentSecurityDto,
};
pub use credential_integrations::{
    CiBCredentialProviderIntegrationDto, CloudBDirectoryFederationCredentialProviderIntegrationDto,
    CredentialProviderIntegrationCommon, CredentialProviderIntegrationDto, CredentialProviderIntegrationPatchDto,
};
pub use credential_providers::{
    AiAWifFields, AiBWifFields, ApiKeyFields, CiBAccountStatus, CiBManagedAccountFields, CloudAStsFields,
    CloudBDirectoryFederationFields, CloudBKeyVaultValueFields, CloudCIdentityFederationFields, CpCiBManagedAccountDto,
    CpCloudAStsV2Dto, CpTypeAiAWifV2Dto, CpTypeAiBWifV2Dto, CpTypeApiKeyUiV2Dto, CpTypeCloudBDirectoryFederationV2Dto,
    CpTypeCloudBKeyVaultValueDto, CpTypeCloudCIdentityFederationV2Dto, CpTypeJwtSvidTokenV2Dto, CpTypeJwtTokenV2Dto,
    CpTypeOAuth2AuthorizationCodeUiV2Dto, CpTypeOAuth2ClientCredentialsUiV2Dto, CpTypeOidcIdTokenV2Dto,
    CpTypeSvcAccessTokenV2Dto, CpTypeUsernamePasswordUiV2Dto, CpTypeVaultClientTokenV2Dto, CpTypeX509SvidV2Dto,
    CredentialProviderCommon, CredentialProviderDto, CredentialProviderFields, CredentialProviderPatchDto,
    CredentialProviderType, CredentialProviderUiDto, CredentialProviderV1PatchDto, CredentialProviderV2Dto,
    CredentialStyle, CustomParameterDto, ForwardingConfig, IssuedJwtFields, JwtAlgorithm, JwtClaimDto,
    LiteralValueType, OAuthAuthorizationCodeFields, OAuthClientCredentialFields, SignedJwtAlgorithm, SignedJwtFields,
    SvcAccessTokenFields, TokenConfiguration, UsernamePasswordFields, ValueType, VaultClientTokenFields,
    X509SvidFields,
};
pub use discovery::{
    DiscoveryIntegrationDto, DiscoveryIntegrationJson, DiscoveryIntegrationPatchDto, DiscoveryType,
    ServerWorkloadDraftDto, ServerWorkloadDraftEndpointDto,
};
pub use events::{
    AttestationResultDto, AuditActorDto, AuditClientDto, AuditLogDto, AuditOutcomeDto, AuditUserAgentDto,
    AuthorizationEventDto, AuthorizationEventMetaDto, AuthorizationEventOutcomeDto, ClientRequestDto,
    ClientRequestNetworkDto, CredentialProviderResultDto, EntityResultDto, EnvironmentDto, EventDto, EventMetaDto,
    EventNetworkDto, EventOutcomeDto, EventResultDto,
};
pub use integrations::{
    CloudSecurityAIntegrationDto, GeoIpIntegrationDto, IntegrationCommon, IntegrationDto, IntegrationJson,
    IntegrationPatchDto, IntegrationType, IntegrationV2Dto, SensorAIntegrationDto, TimeIntegrationDto,
};
pub use issuer::{EcJwkDto, JwkDto, JwksDto, OpenIdConfigurationDto, RsaJwkDto};
pub use log_streams::{
    LogStreamCommon, LogStreamDataType, LogStreamDto, LogStreamLogAnalyticsADestinationDto,
    LogStreamObjectStorageADestinationDto, LogStreamObjectStorageCDestinationDto, LogStreamSensorADestinationDto,
    TlsVerification,
};
pub use resource_sets::{ResourceSetCounts, ResourceSetDto};
pub use roles::{AccessLevel, PermissionDto, RoleDto, RoleResourceSetDto};
pub use routings::RoutingDto;
pub use settings::{
    ComplianceLevel, ComplianceSetting, GetSignInPolicyDto, MfaSignInPolicyDto, SettingDto, SsoSignInPolicyDto,
};
pub use sso_idps::{
    OidcAuthType, OidcIdentityProviderDto, SamlIdentityProviderDto, SsoIdentityProviderCommon, SsoIdentityProviderDto,
    SsoStatementRoleMappingDto,
};
pub use trust_providers::{
    CiTrustProviderDto, CloudAMetadataServiceTrustProviderDto, KeyMaterial, PemType, PlatformTrustProviderDto,
    PublicKeyValidationDto, TokenIssuerTrustProviderDto, TrustProviderCommon, TrustProviderDto, TrustProviderKind,
    TrustProviderMatchRuleDto, TrustProviderPatchDto, TrustProviderSecretDto, TrustProviderSecretSlimDto,
    TrustProviderSecretType,
};
pub use users::{UserDto, UserPatchDto, UserSsoIdentityDto, UserTokensDto};
pub use workloads::{
    AppProtocol, AuthMethod, ClientIdentifierDto, ClientWorkloadDto, ClientWorkloadIdentityDto, ClientWorkloadPatchDto,
    ServerWorkloadDto, ServerWorkloadPatchDto, TransportProtocol, WorkloadServiceAuthenticationDto,
    WorkloadServiceEndpointDto,
};
