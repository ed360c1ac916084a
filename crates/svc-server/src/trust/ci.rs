//! CI platform job tokens: `CiAIdentityToken`, `CiBIdentityToken`, `CiCIdentityToken` (contract
//! §4.5, §4.6). RS256 only; keys by discovery at `oidcUrl` or the platform's default issuer
//! (`SVC_CIA_ISSUER` …); `iss` = the discovery issuer; `aud` contains the edge audience. Facts
//! include the immutable ids (`repository_id`, `project_id`, …) so rules need not trust names that
//! can be re-registered.

use super::jwt::{self, Audience, Issuer, Profile, RS256_ONLY};
use super::{CompiledTrust, TrustError, Verified};

use crate::domain::trust::TrustKind;
use crate::trust::VerifyCx;

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
