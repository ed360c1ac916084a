//! Real public defaults of the upstream platforms (contract §5.5 "platform default").
//! Sources are cited in `assets/platform/README.md` and docs/platform-defaults.md; every value
//! is overridable by its `SVC_*` key, and tests point all of them at loopback peers.

pub const CLOUDA_STS_URL_TEMPLATE: &str = "https://sts.{region}.amazonaws.com/";
pub const CLOUDA_STS_FEDERATION_URL: &str = "https://sts.amazonaws.com/";
pub const CLOUDA_STS_AUDIENCE: &str = "sts.amazonaws.com";
/// The commercial partition's regions (botocore endpoints.json; docs/platform-defaults.md).
pub const CLOUDA_REGIONS: &[&str] = &[
    "af-south-1",
    "ap-east-1",
    "ap-east-2",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-northeast-3",
    "ap-south-1",
    "ap-south-2",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-southeast-3",
    "ap-southeast-4",
    "ap-southeast-5",
    "ap-southeast-6",
    "ap-southeast-7",
    "ca-central-1",
    "ca-west-1",
    "eu-central-1",
    "eu-central-2",
    "eu-north-1",
    "eu-south-1",
    "eu-south-2",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "il-central-1",
    "me-central-1",
    "me-south-1",
    "mx-central-1",
    "sa-east-1",
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
];
pub const CLOUDB_METADATA_DOMAINS: &[&str] = &[
    "metadata.azure.com",
    "metadata.azure.us",
    "metadata.azure.cn",
    "metadata.microsoftazure.de",
];
pub const CLOUDB_AIA_HOSTS: &[&str] = &[
    "www.microsoft.com",
    "caissuers.microsoft.com",
    "cacerts.digicert.com",
    "cacerts.digicert.cn",
];
pub const CLOUDC_JWKS_URL: &str = "https://www.googleapis.com/oauth2/v3/certs";
pub const CLOUDC_ISSUERS: &[&str] = &["https://accounts.google.com", "accounts.google.com"];
pub const CLOUDC_STS_URL: &str = "https://sts.googleapis.com/v1/token";
pub const CLOUDC_IAMCREDENTIALS_URL: &str = "https://iamcredentials.googleapis.com";
pub const CLOUDC_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
pub const CIA_ISSUER: &str = "https://token.actions.githubusercontent.com";
pub const CIB_ISSUER: &str = "https://gitlab.com";
pub const CIC_ISSUER: &str = "https://app.terraform.io";
pub const CLOUDB_LOGIN_URL: &str = "https://login.microsoftonline.com";
pub const CLOUDB_KEYVAULT_URL_TEMPLATE: &str = "https://{vault}.vault.azure.net";
pub const CLOUDB_KEYVAULT_SCOPE: &str = "https://vault.azure.net/.default";
pub const AIA_TOKEN_URL: &str = "https://api.anthropic.com/v1/oauth/token";
pub const AIB_TOKEN_URL: &str = "https://auth.openai.com/oauth/token";
pub const OBJECTSTORAGEA_URL_TEMPLATE: &str = "https://{bucket}.s3.{region}.amazonaws.com";
/// The host credential chain of objectStorageA log streams (the platform SDK's defaults, each
/// overridable as the SDK allows: `AWS_EC2_METADATA_SERVICE_ENDPOINT`,
/// `AWS_CONTAINER_CREDENTIALS_FULL_URI`): instance metadata (IPv4 and IPv6 endpoint modes) and
/// the container credentials host that `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` is relative to.
pub const CLOUDA_IMDS_ENDPOINT: &str = "http://169.254.169.254";
pub const CLOUDA_IMDS_ENDPOINT_IPV6: &str = "http://[fd00:ec2::254]";
pub const CLOUDA_CONTAINER_CREDENTIALS_HOST: &str = "http://169.254.170.2";
pub const OBJECTSTORAGEC_UPLOAD_URL: &str = "https://storage.googleapis.com/upload/storage/v1";
pub const HEC_AUTH_SCHEME: &str = "Splunk";

/// cloudA instance-identity-document certificates (`/signature` and `/rsa2048` forms), compiled in.
pub const CLOUDA_IID_CERTS_PEM: &str = include_str!("../assets/platform/clouda-iid-certs.pem");
/// Roots of cloudB's attested-document signers, compiled in.
pub const CLOUDB_ROOTS_PEM: &str = include_str!("../assets/platform/cloudb-roots.pem");
