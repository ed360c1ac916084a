//! The service's side of [`Renewals`]: how a credential backend keeps a renewed upstream
//! credential (a rotated refresh token, a minted ciB token) without seeing the application or
//! the database. Renewals of one provider are serialised on the node (the refresh lock) and
//! across nodes (a PostgreSQL advisory lock per provider), and written as the service's own
//! write units.

use std::sync::Arc;

use uuid::Uuid;

use crate::app::App;
use crate::credential::{BoxFuture, IssueError, RenewalGuard, Renewals, Services};
use crate::domain::credential::CredentialProvider;

impl App {
    /// What credential backends may use (narrower than the application: no storage but the
    /// [`Renewals`] interface).
    pub fn services(&self) -> Services<'_> {
        self.services_via(&self.upstream)
    }

    /// [`App::services`] with the upstream client of a routing ([`App::upstream_for`]).
    pub fn services_via<'a>(&'a self, upstream: &'a crate::upstream::Upstream) -> Services<'a> {
        Services {
            cfg: &self.cfg,
            upstream,
            keys: self.key_ring(),
            ca: &self.ca,
            cache: &self.credential_cache,
            renewals: self,
        }
    }
}

impl Renewals for App {
    fn current(&self) -> Arc<dyn crate::credential::Lookup> {
        self.state_full()
    }

    fn lock(&self, provider: Uuid) -> BoxFuture<'_, Result<RenewalGuard<'_>, IssueError>> {
        Box::pin(async move {
            let node = self.refresh_lock.lock().await;
            let cluster = self
                .store
                .cluster_lock(&format!("svc-renewal:{provider}"))
                .await
                .map_err(|e| IssueError::new(format!("renewal lock: {e}")))?;
            if cluster.is_some() {
                let _w = self.write_lock.lock().await;
                crate::service::load::sync_changes(self)
                    .await
                    .map_err(|e| IssueError::new(format!("catching up before renewal: {e}")))?;
            }
            Ok(RenewalGuard(Box::new((node, cluster))))
        })
    }

    fn update<'s>(
        &'s self,
        provider: Uuid,
        f: Box<dyn FnOnce(&mut CredentialProvider) + Send + 's>,
    ) -> BoxFuture<'s, Result<(), IssueError>> {
        Box::pin(async move {
            let fail = |e: crate::error::Error| IssueError::new(format!("storing the renewed credential failed: {e}"));
            let mut w = crate::service::write::Write::begin_system(self).await.map_err(fail)?;
            let Some(current) = w.st.credential_providers.get(&provider).cloned() else {
                return Err(IssueError::new("provider no longer exists"));
            };
            let mut p = (*current).clone();
            f(&mut p);
            w.put(p);
            w.commit().await.map_err(fail)?;
            Ok(())
        })
    }
}
