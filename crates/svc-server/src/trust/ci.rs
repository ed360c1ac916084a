//! CI platform job tokens: `CiAIdentityToken`, `CiBIdentityToken`, `CiCIdentityToken` (contract
//! §4.5, §4.6). RS256 only; keys by discovery at `oidcUrl` or the platform's default issuer
//! (`SVC_CIA_ISSUER` …); `iss` = the discovery issuer; `aud` contains the edge audience. Facts
//! include the immutable ids (`repository_id`, `project_id`, …) so rules need not trust names that
//! can be re-registered.

use super::jwt::{self, Audience, Issuer, Profile, RS256_ONLY};
use super::{CompiledTrust, TrustError, Verified};
use crate::app::App;
use crate::domain::trust::TrustKind;

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

pub async fn verify(app: &App, tp: &CompiledTrust, token: &str) -> Result<Verified, TrustError> {
    let (default_issuer, mapping) = match tp.kind {
        TrustKind::CiAIdentityToken => (app.cfg.cia_issuer.as_str(), CIA),
        TrustKind::CiBIdentityToken => (app.cfg.cib_issuer.as_str(), CIB),
        _ => (app.cfg.cic_issuer.as_str(), CIC),
    };
    let profile = Profile {
        algs: RS256_ONLY,
        issuer: Issuer::Discovered,
        audience: Audience::Contains(&app.cfg.edge_audience),
    };
    let claims = jwt::verify(app, token, jwt::keys_of(tp, default_issuer), &tp.extra_keys, &profile).await?;
    let mut v = Verified::default();
    jwt::facts_from(&claims, mapping, &mut v.facts);
    v.claims = Some(claims);
    Ok(v)
}
