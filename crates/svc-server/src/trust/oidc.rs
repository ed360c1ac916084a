//! `OidcIdToken`: a generic OIDC ID token (contract §4.5). Algorithms RS/PS/ES; keys from exactly
//! the configured source; `iss` = discovery issuer when `oidcUrl` is used (otherwise only through
//! `OidcIssuer` rules); `aud` must equal an `OidcAudience` rule value when the provider has such
//! rules, else contain the edge audience. Facts: `OidcIssuer`, `OidcSubject`, `OidcAudience`
//! (always a list); custom claims stay available for `OidcCustom`.

use super::jwt::{self, ASYMMETRIC, Audience, Issuer, Profile};
use super::{CompiledTrust, Fact, KeySource, TrustError, Verified};
use crate::domain::trust::TrustKind;
use crate::trust::VerifyCx;
use crate::trust::kinds::{Evidence, KindSpec, non_blank};

pub const KIND: KindSpec = KindSpec {
    kind: TrustKind::OidcIdToken,
    name: "OidcIdToken",
    client_id_type: "oidc_idtoken",
    match_attributes: &["OidcIssuer", "OidcSubject", "OidcAudience", "OidcCustom"],
    key_fields: &["oidcUrl", "jwks", "certificate", "isSvcTenantOidcToken"],
    one_key_source: true,
    accepts_secrets: true,
    jwt: true,
    payload_prefixes: &["oidc.identityToken.decode.payload."],
    evidence: Evidence::Token(|c| non_blank(c.oidc.as_ref()?.identity_token.as_ref())),
};

pub async fn verify(cx: &VerifyCx<'_>, tp: &CompiledTrust, token: &str) -> Result<Verified, TrustError> {
    let audience_rules: Vec<&str> = tp
        .rules
        .iter()
        .filter(|g| g.attribute == "OidcAudience")
        .flat_map(|g| g.values.iter().map(String::as_str))
        .collect();
    let profile = Profile {
        algs: ASYMMETRIC,
        issuer: match &tp.keys {
            KeySource::Discovery(_) => Issuer::Discovered,
            KeySource::OwnIssuer => Issuer::Exact(cx.cfg.issuer()),
            _ => Issuer::Unchecked,
        },
        audience: if audience_rules.is_empty() {
            Audience::Contains(&cx.cfg.edge_audience)
        } else {
            Audience::OneOf(audience_rules)
        },
    };
    let claims = jwt::verify(cx, token, jwt::keys_of(tp, cx.cfg.issuer()), &tp.extra_keys, &profile).await?;
    let mut v = Verified::default();
    jwt::facts_from(&claims, &[("OidcIssuer", "iss"), ("OidcSubject", "sub")], &mut v.facts);
    v.facts
        .insert("OidcAudience".into(), Fact::Many(jwt::audiences(&claims)));
    v.claims = Some(claims);
    Ok(v)
}
