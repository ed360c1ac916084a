//! CI platform job tokens: `CiAIdentityToken`, `CiBIdentityToken`, `CiCIdentityToken` (contract
//! §4.5, §4.6). RS256 only; keys by discovery at `oidcUrl` or the platform's default issuer
//! (`SVC_CIA_ISSUER` …); `iss` = the discovery issuer; `aud` contains the edge audience. Facts
//! include the immutable ids (`repository_id`, `project_id`, …) so rules need not trust names that
//! can be re-registered.

use super::jwt::{self, Audience, Issuer, Profile, RS256_ONLY};
use super::{CompiledTrust, TrustError, Verified};

use crate::domain::trust::TrustKind;
use crate::trust::VerifyCx;
use crate::trust::kinds::{Evidence, KindSpec, non_blank};

const CIA: &[(&str, &str)] = &[
    ("CiAActor", "actor"),
    ("CiARepository", "repository"),
    ("CiAWorkflow", "workflow"),
    ("CiASubject", "sub"),
    ("CiARef", "ref"),
    ("CiARepositoryId", "repository_id"),
    ("CiARepositoryOwnerId", "repository_owner_id"),
];
const CIB: &[(&str, &str)] = &[
    ("CiBSubject", "sub"),
    ("CiBProjectPath", "project_path"),
    ("CiBNamespacePath", "namespace_path"),
    ("CiBRefPath", "ref_path"),
    ("CiBProjectId", "project_id"),
    ("CiBNamespaceId", "namespace_id"),
];
const CIC: &[(&str, &str)] = &[
    ("CiCOrganizationId", "terraform_organization_id"),
    ("CiCProjectId", "terraform_project_id"),
    ("CiCWorkspaceId", "terraform_workspace_id"),
];

pub const CIA_KIND: KindSpec = KindSpec {
    kind: TrustKind::CiAIdentityToken,
    name: "CiAIdentityToken",
    client_id_type: "ciA_idtoken",
    match_attributes: &[
        "CiAActor",
        "CiARepository",
        "CiAWorkflow",
        "CiASubject",
        "CiARef",
        "CiARepositoryId",
        "CiARepositoryOwnerId",
    ],
    key_fields: &["oidcUrl"],
    one_key_source: false,
    accepts_secrets: false,
    jwt: true,
    payload_prefixes: &["ciA.identityToken.decode.payload."],
    evidence: Evidence::Token(|c| non_blank(c.ci_a.as_ref()?.identity_token.as_ref())),
};

pub const CIB_KIND: KindSpec = KindSpec {
    kind: TrustKind::CiBIdentityToken,
    name: "CiBIdentityToken",
    client_id_type: "ciB_idtoken",
    match_attributes: &[
        "CiBSubject",
        "CiBProjectPath",
        "CiBNamespacePath",
        "CiBRefPath",
        "CiBProjectId",
        "CiBNamespaceId",
    ],
    key_fields: &["oidcUrl"],
    one_key_source: false,
    accepts_secrets: false,
    jwt: true,
    payload_prefixes: &["ciB.identityToken.decode.payload."],
    evidence: Evidence::Token(|c| non_blank(c.ci_b.as_ref()?.identity_token.as_ref())),
};

pub const CIC_KIND: KindSpec = KindSpec {
    kind: TrustKind::CiCIdentityToken,
    name: "CiCIdentityToken",
    client_id_type: "ciC_idtoken",
    match_attributes: &["CiCOrganizationId", "CiCProjectId", "CiCWorkspaceId"],
    key_fields: &["oidcUrl"],
    one_key_source: false,
    accepts_secrets: false,
    jwt: true,
    payload_prefixes: &["ciC.identityToken.decode.payload."],
    evidence: Evidence::Token(|c| non_blank(c.ci_c.as_ref()?.identity_token.as_ref())),
};

pub async fn verify(cx: &VerifyCx<'_>, tp: &CompiledTrust, token: &str) -> Result<Verified, TrustError> {
    let (default_issuer, mapping) = match tp.kind {
        TrustKind::CiAIdentityToken => (cx.cfg.cia_issuer.as_str(), CIA),
        TrustKind::CiBIdentityToken => (cx.cfg.cib_issuer.as_str(), CIB),
        _ => (cx.cfg.cic_issuer.as_str(), CIC),
    };
    let profile = Profile {
        algs: RS256_ONLY,
        issuer: Issuer::Discovered,
        audience: Audience::Contains(&cx.cfg.edge_audience),
    };
    let claims = jwt::verify(cx, token, jwt::keys_of(tp, default_issuer), &tp.extra_keys, &profile).await?;
    let mut v = Verified::default();
    jwt::facts_from(&claims, mapping, &mut v.facts);
    v.claims = Some(claims);
    Ok(v)
}
