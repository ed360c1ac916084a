//! Trust providers: the verification of evidence (contract §4.5) and the match rules on the
//! verified facts (§4.6). Each kind is one module behind the same narrow interface: it takes the
//! request's `client` evidence and returns [`Verified`] facts or a [`TrustError`] — never a
//! decision about access (architecture invariant 1: `edge` and the policy evaluation decide).

pub mod anchors;
pub mod ci;
pub mod clouda_iid;
pub mod clouda_role;
pub mod cloudb;
pub mod cloudc;
pub mod compile;
pub mod jwt;
pub mod keycache;
pub mod kinds;
pub mod oidc;
pub mod orchestrator;
pub mod rules;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use svc_api::edge::ClientWorkloadDetails;

pub use compile::{CompiledTrust, KeySource};

use crate::config::Config;
use crate::domain::trust::TrustKind;
use crate::issuer::KeyRing;
use crate::trust::anchors::PlatformTrust;
use crate::trust::keycache::KeyCache;
use crate::upstream::Upstream;

/// What a verifier may use: the configuration, the upstream client, the issuer-key cache, the
/// platforms' anchors and the service's own keys (for tokens it issued). Never the database
/// nor the application: verification reads evidence and answers facts (invariant 2).
#[derive(Clone, Copy)]
pub struct VerifyCx<'a> {
    pub cfg: &'a Config,
    pub upstream: &'a Upstream,
    pub key_cache: &'a KeyCache,
    pub platform: &'a PlatformTrust,
    pub keys: &'a arc_swap::ArcSwap<KeyRing>,
}

/// A verified fact: one value, or several (arrays such as `aud`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum Fact {
    One(String),
    Many(Vec<String>),
}

impl Fact {
    pub fn values(&self) -> &[String] {
        match self {
            Fact::One(s) => std::slice::from_ref(s),
            Fact::Many(v) => v,
        }
    }

    /// The fact as text for events (`actualValue`).
    pub fn display(&self) -> String {
        match self {
            Fact::One(s) => s.clone(),
            Fact::Many(v) => serde_json::to_string(v).unwrap_or_default(),
        }
    }
}

/// Match attribute → fact.
pub type Facts = BTreeMap<String, Fact>;

/// What a verifier proved.
#[derive(Clone, Debug, Default)]
pub struct Verified {
    pub facts: Facts,
    /// The verified JWT payload (JWT kinds only).
    pub claims: Option<serde_json::Map<String, serde_json::Value>>,
    /// An orchestrator token's service-account UID (for the `/auth` event's environment; not a
    /// fact, §4.6).
    pub service_account_uid: Option<String>,
}

/// Why evidence was not accepted; `reason()` is the event reason of §4.11.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrustError {
    NoDataFound,
    InvalidSignature(String),
    InvalidEvidence(String),
    StaleEvidence(String),
    /// The verifier's upstream failed (→ 500).
    Upstream(String),
    MatchRuleFailed {
        attribute: String,
        expected: Vec<String>,
        actual: Option<String>,
    },
    /// A claim of evidence whose signature verified failed its check (`iss`, `aud`, the time
    /// claims): `InvalidEvidence`, or `StaleEvidence` for a time claim, with what was expected
    /// and what the claim held (the event's `attribute`, `expectedValues`, `actualValue`).
    Claim(Box<ClaimCheck>),
}

/// A failed claim check ([`TrustError::Claim`]): never the evidence itself, only the compared
/// claim's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimCheck {
    /// A time claim (`exp`, `nbf`, `iat`): `StaleEvidence`.
    pub stale: bool,
    pub claim: &'static str,
    pub expected: Vec<String>,
    pub actual: Option<String>,
    /// The log line's description.
    pub message: &'static str,
}

impl TrustError {
    pub fn reason(&self) -> &'static str {
        match self {
            TrustError::NoDataFound => "NoDataFound",
            TrustError::InvalidSignature(_) => "InvalidSignature",
            TrustError::InvalidEvidence(_) => "InvalidEvidence",
            TrustError::StaleEvidence(_) => "StaleEvidence",
            TrustError::Upstream(_) => "UpstreamError",
            TrustError::MatchRuleFailed { .. } => "MatchRuleFailed",
            TrustError::Claim(c) if c.stale => "StaleEvidence",
            TrustError::Claim(_) => "InvalidEvidence",
        }
    }

    /// The compared value of a failed check, when it compares one: the attribute (a match
    /// attribute or a claim), the values it had to hold and the value it held.
    pub fn check(&self) -> Option<(&str, &[String], Option<&str>)> {
        match self {
            TrustError::MatchRuleFailed {
                attribute,
                expected,
                actual,
            } => Some((attribute, expected, actual.as_deref())),
            TrustError::Claim(c) => Some((c.claim, &c.expected, c.actual.as_deref())),
            _ => None,
        }
    }

    /// A log-safe description (never the evidence itself).
    pub fn detail(&self) -> String {
        match self {
            TrustError::NoDataFound => "no evidence of the provider's kind in the request".into(),
            TrustError::InvalidSignature(d)
            | TrustError::InvalidEvidence(d)
            | TrustError::StaleEvidence(d)
            | TrustError::Upstream(d) => d.clone(),
            TrustError::MatchRuleFailed { attribute, .. } => {
                format!("match rule on {attribute} failed")
            }
            TrustError::Claim(c) => c.message.into(),
        }
    }
}

pub(crate) fn non_empty(s: Option<&String>) -> Option<&str> {
    s.map(String::as_str).map(str::trim).filter(|s| !s.is_empty())
}

/// The evidence token of the provider's kind (§3.1), if present and non-blank.
pub fn evidence_token(kind: TrustKind, c: &ClientWorkloadDetails) -> Option<&str> {
    match kind.spec().evidence {
        kinds::Evidence::Token(f) => f(c).map(|s| s.trim()),
        kinds::Evidence::Document(_) => None,
    }
}

/// Whether the request carries evidence of the provider's kind (§4.4 step 4; absent → `NoDataFound`).
pub fn has_evidence(kind: TrustKind, c: &ClientWorkloadDetails) -> bool {
    match kind.spec().evidence {
        kinds::Evidence::Token(f) => f(c).is_some(),
        kinds::Evidence::Document(f) => f(c),
    }
}

/// Issue 31: a JWT this service signed is evidence only when it is an `oidc-id-token`
/// credential the service handed to a workload — its `svc` object names the workload and an
/// `oidc-id-token` provider (`is_id_token_provider`, the caller's lookup in the configuration).
/// Every JWT the service signs shares the issuer key: a vault login JWT, a federation assertion
/// or a token minted by a provider's verification, caught at an address a provider's writer
/// chose, would otherwise sign in as whatever workload its subject named. It holds for a
/// provider of the service's own issuer (`isSvcTenantOidcToken`) and for any other whose
/// verified token names the service (`own_issuer`) as its issuer: an `oidcUrl` or a static JWKS
/// may name the service's keys too.
pub fn check_own_issued(
    tp: &CompiledTrust,
    v: &Verified,
    own_issuer: &str,
    is_id_token_provider: impl Fn(uuid::Uuid) -> bool,
) -> Result<(), TrustError> {
    let iss = v
        .claims
        .as_ref()
        .and_then(|c| c.get("iss"))
        .and_then(serde_json::Value::as_str)
        .map(|i| i.trim_end_matches('/'));
    if !matches!(tp.keys, compile::KeySource::OwnIssuer) && iss != Some(own_issuer.trim_end_matches('/')) {
        return Ok(());
    }
    let svc = v.claims.as_ref().and_then(|c| c.get("svc"));
    let id = |k: &str| {
        svc.and_then(|s| s.get(k))
            .and_then(serde_json::Value::as_str)
            .and_then(|s| uuid::Uuid::parse_str(s).ok())
    };
    match (id("clientWorkloadId"), id("credentialProviderId")) {
        (Some(_), Some(cp)) if is_id_token_provider(cp) => Ok(()),
        _ => Err(TrustError::InvalidEvidence(
            "the token is no identity token this service issued to a workload".into(),
        )),
    }
}

/// Verifies the request's evidence against one provider, then its match rules.
pub async fn verify(
    cx: &VerifyCx<'_>,
    tp: &CompiledTrust,
    client: &ClientWorkloadDetails,
) -> Result<Verified, TrustError> {
    let verified = verify_evidence(cx, tp, client).await?;
    rules::check(&tp.rules, &verified)?;
    Ok(verified)
}

/// Verifies the request's evidence against one provider, without its match rules (§4.4 step 5;
/// `/auth` keeps the verified facts for its event when a rule then fails).
pub async fn verify_evidence(
    cx: &VerifyCx<'_>,
    tp: &CompiledTrust,
    client: &ClientWorkloadDetails,
) -> Result<Verified, TrustError> {
    let started = std::time::Instant::now();
    let r = verify_kind(cx, tp, client).await;
    crate::metrics::trust_verified(tp.kind.spec().name, r.is_ok(), started.elapsed());
    r
}

async fn verify_kind(
    cx: &VerifyCx<'_>,
    tp: &CompiledTrust,
    client: &ClientWorkloadDetails,
) -> Result<Verified, TrustError> {
    if let Some(e) = &tp.broken {
        return Err(TrustError::InvalidEvidence(format!(
            "provider configuration unusable: {e}"
        )));
    }
    let verified = match tp.kind {
        TrustKind::OidcIdToken => {
            oidc::verify(cx, tp, evidence_token(tp.kind, client).ok_or(TrustError::NoDataFound)?).await?
        }
        TrustKind::CiAIdentityToken | TrustKind::CiBIdentityToken | TrustKind::CiCIdentityToken => {
            ci::verify(cx, tp, evidence_token(tp.kind, client).ok_or(TrustError::NoDataFound)?).await?
        }
        TrustKind::OrchestratorServiceAccount => {
            orchestrator::verify(cx, tp, evidence_token(tp.kind, client).ok_or(TrustError::NoDataFound)?).await?
        }
        TrustKind::CloudCIdentityToken => {
            cloudc::verify(cx, tp, evidence_token(tp.kind, client).ok_or(TrustError::NoDataFound)?).await?
        }
        TrustKind::CloudAMetadataService => clouda_iid::verify(cx, tp, client).await?,
        TrustKind::CloudARole => clouda_role::verify(cx, tp, client).await?,
        TrustKind::CloudBMetadataService => cloudb::verify(cx, tp, client).await?,
    };
    Ok(verified)
}
