//! `CloudCIdentityToken`: the cloudC metadata server's identity token (contract §4.5). RS256 only;
//! keys only from the platform's token-signing JWKS (`SVC_CLOUDC_JWKS_URL`), never a service
//! account's own keys (CVE-2020-16251); `iss` ∈ `SVC_CLOUDC_ISSUERS`; `aud` contains the edge
//! audience; `email` required. Fact: `Email`.

use super::jwt::{self, Audience, Issuer, Keys, Profile, RS256_ONLY};
use super::keycache::Kind;
use super::{CompiledTrust, Fact, TrustError, Verified};
use crate::domain::trust::TrustKind;
use crate::trust::VerifyCx;
use crate::trust::kinds::{Evidence, KindSpec, non_blank};

pub const KIND: KindSpec = KindSpec {
    kind: TrustKind::CloudCIdentityToken,
    name: "CloudCIdentityToken",
    client_id_type: "cloudC_idtoken",
    match_attributes: &["Email"],
    key_fields: &[],
    one_key_source: false,
    accepts_secrets: false,
    jwt: true,
    payload_prefixes: &["cloudC.identityToken.decode.payload."],
    evidence: Evidence::Token(|c| non_blank(c.cloud_c.as_ref()?.identity_token.as_ref())),
};

pub async fn verify(cx: &VerifyCx<'_>, _tp: &CompiledTrust, token: &str) -> Result<Verified, TrustError> {
    let profile = Profile {
        algs: RS256_ONLY,
        issuer: Issuer::OneOf(&cx.cfg.cloudc_issuers),
        audience: Audience::Contains(&cx.cfg.edge_audience),
    };
    // Only the platform JWKS: no provider key material and no certificate secrets for this kind.
    let claims = jwt::verify(
        cx,
        token,
        Keys::Fetched(&cx.cfg.cloudc_jwks_url, Kind::Jwks),
        &[],
        &profile,
    )
    .await?;
    let email = claims
        .get("email")
        .and_then(|e| e.as_str())
        .filter(|e| !e.is_empty())
        .ok_or_else(|| TrustError::InvalidEvidence("email claim is required".into()))?;
    let mut v = Verified::default();
    v.facts.insert("Email".into(), Fact::One(email.to_string()));
    v.claims = Some(claims);
    Ok(v)
}
