//! Verification keys fetched from issuers: OIDC discovery (`<issuer>/.well-known/openid-configuration`
//! → `jwks_uri`) or a JWKS URL, cached 10 minutes, refreshed on an unknown `kid` at most once a
//! minute per source, with one fetch in flight per source. A failed refresh keeps the keys already
//! held; with nothing held it is an upstream error (contract §4.5).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwapOption;
use serde_json::Value;

use crate::crypto::jose::{VerifyingKey, parse_jwks_value};
use crate::upstream::{Upstream, UpstreamError};

pub const TTL_MS: i64 = 10 * 60 * 1000;
pub const FORCED_REFRESH_MS: i64 = 60 * 1000;

/// Keys of one source, as last fetched.
pub struct Loaded {
    /// The discovery document's `issuer` (discovery sources only).
    pub issuer: Option<String>,
    pub keys: Vec<Arc<VerifyingKey>>,
    pub fetched_at: i64,
}

struct Source {
    loaded: ArcSwapOption<Loaded>,
    fetching: tokio::sync::Mutex<()>,
    last_forced: AtomicI64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `url` is an issuer: fetch its discovery document, then `jwks_uri`.
    Discovery,
    /// `url` is a JWKS document.
    Jwks,
}

/// A source's URL, whether it is a discovery document, and the routing proxy it came through.
type SourceKey = (String, bool, Option<String>);

#[derive(Default)]
pub struct KeyCache {
    /// By URL, kind and the routing proxy that fetched it (a proxy could answer with keys of its
    /// own for an `http` URL: they serve only the calls routed through it).
    sources: Mutex<HashMap<SourceKey, Arc<Source>>>,
}

fn trim_slash(s: &str) -> &str {
    s.trim_end_matches('/')
}

impl KeyCache {
    fn source(&self, up: &Upstream, url: &str, kind: Kind) -> Arc<Source> {
        let mut m = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        m.entry((url.to_string(), kind == Kind::Discovery, up.proxy.clone()))
            .or_insert_with(|| {
                Arc::new(Source {
                    loaded: ArcSwapOption::empty(),
                    fetching: tokio::sync::Mutex::new(()),
                    last_forced: AtomicI64::new(i64::MIN / 2),
                })
            })
            .clone()
    }

    /// The keys of `url`, fetching when nothing fresh is held.
    pub async fn get(&self, up: &Upstream, url: &str, kind: Kind) -> Result<Arc<Loaded>, UpstreamError> {
        let src = self.source(up, url, kind);
        let now = crate::clock::now_millis();
        if let Some(l) = src.loaded.load_full()
            && now - l.fetched_at < TTL_MS
        {
            return Ok(l);
        }
        self.fetch(&src, up, url, kind, now).await
    }

    /// Re-fetches because a token named an unknown `kid`: at most once a minute per source.
    /// `None` when the minute has not passed (the caller keeps what it had).
    pub async fn refresh_for_unknown_kid(
        &self,
        up: &Upstream,
        url: &str,
        kind: Kind,
    ) -> Option<Result<Arc<Loaded>, UpstreamError>> {
        let src = self.source(up, url, kind);
        let now = crate::clock::now_millis();
        let last = src.last_forced.load(Ordering::Relaxed);
        if now - last < FORCED_REFRESH_MS
            || src
                .last_forced
                .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
        {
            return None;
        }
        Some(self.fetch(&src, up, url, kind, i64::MAX).await)
    }

    async fn fetch(
        &self,
        src: &Source,
        up: &Upstream,
        url: &str,
        kind: Kind,
        wanted_after: i64,
    ) -> Result<Arc<Loaded>, UpstreamError> {
        let _g = src.fetching.lock().await;
        let now = crate::clock::now_millis();
        // Another request may have fetched while this one waited.
        if let Some(l) = src.loaded.load_full()
            && wanted_after != i64::MAX
            && now - l.fetched_at < TTL_MS
        {
            return Ok(l);
        }
        match fetch_keys(up, url, kind).await {
            Ok(l) => {
                let l = Arc::new(Loaded { fetched_at: now, ..l });
                src.loaded.store(Some(l.clone()));
                Ok(l)
            }
            Err(e) => match src.loaded.load_full() {
                Some(stale) => {
                    tracing::warn!(source = %url, error = %e, "key refresh failed; keeping the keys already held");
                    Ok(stale)
                }
                None => Err(e),
            },
        }
    }
}

async fn fetch_keys(up: &Upstream, url: &str, kind: Kind) -> Result<Loaded, UpstreamError> {
    // A configured platform issuer or JWKS (`SVC_CIA_ISSUER`, `SVC_CLOUDC_JWKS_URL`, …) may be
    // `http`, and so may what its discovery document names at the same origin; an entity's URL
    // and what its document names follow `SVC_ALLOW_INSECURE_UPSTREAM`.
    let configured = up.is_configured_http(url);
    let check = |u: &str| match configured {
        true => up.check_configured(u),
        false => up.check_url(u),
    };
    let (issuer, jwks_url) = match kind {
        Kind::Jwks => (None, url.to_string()),
        Kind::Discovery => {
            let disc_url = crate::upstream::join(url, "/.well-known/openid-configuration")?;
            check(&disc_url)?;
            let doc = up.get_json(&disc_url).await?;
            let issuer = doc
                .get("issuer")
                .and_then(Value::as_str)
                .ok_or_else(|| UpstreamError::Malformed("discovery document has no issuer".into()))?;
            if trim_slash(issuer) != trim_slash(url) {
                // Not the document's value: it is what the URL answered (issue 31).
                return Err(UpstreamError::Malformed(
                    "the discovery document names another issuer".into(),
                ));
            }
            let jwks = doc
                .get("jwks_uri")
                .and_then(Value::as_str)
                .ok_or_else(|| UpstreamError::Malformed("discovery document has no jwks_uri".into()))?;
            (Some(issuer.to_string()), jwks.to_string())
        }
    };
    check(&jwks_url)?;
    let doc = up.get_json(&jwks_url).await?;
    let keys = parse_jwks_value(&doc, false).map_err(|e| UpstreamError::Malformed(format!("JWKS: {e}")))?;
    Ok(Loaded {
        issuer,
        keys: keys.into_iter().map(Arc::new).collect(),
        fetched_at: 0,
    })
}
