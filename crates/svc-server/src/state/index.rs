//! Secondary indexes over the [`super::State`], maintained incrementally by `Record::reindex`.

use uuid::Uuid;

use crate::domain::credential::{CredentialIntegration, CredentialProvider};
use crate::domain::policy::Policy;
use crate::domain::trust::TrustProvider;
use crate::domain::workload::{ClientWorkload, ServerWorkload};

#[derive(Clone, Default)]
pub struct Indexes {
    /// Lower-cased e-mail → user id.
    pub users_by_email: imbl::HashMap<String, Uuid>,
}

impl Indexes {
    pub fn user_changed(
        &mut self,
        old: Option<&crate::domain::records::User>,
        new: Option<&crate::domain::records::User>,
    ) {
        if let Some(o) = old {
            self.users_by_email.remove(&o.email.to_lowercase());
        }
        if let Some(n) = new {
            self.users_by_email.insert(n.email.to_lowercase(), n.id);
        }
    }

    pub fn trust_provider_changed(
        &mut self,
        _old: Option<&TrustProvider>,
        _new: Option<&TrustProvider>,
    ) {
    }
    pub fn credential_provider_changed(
        &mut self,
        _old: Option<&CredentialProvider>,
        _new: Option<&CredentialProvider>,
    ) {
    }
    pub fn credential_integration_changed(
        &mut self,
        _old: Option<&CredentialIntegration>,
        _new: Option<&CredentialIntegration>,
    ) {
    }
    pub fn client_workload_changed(
        &mut self,
        _old: Option<&ClientWorkload>,
        _new: Option<&ClientWorkload>,
    ) {
    }
    pub fn server_workload_changed(
        &mut self,
        _old: Option<&ServerWorkload>,
        _new: Option<&ServerWorkload>,
    ) {
    }
    pub fn policy_changed(&mut self, _old: Option<&Policy>, _new: Option<&Policy>) {}
}
