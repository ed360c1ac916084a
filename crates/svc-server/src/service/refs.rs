//! Referential integrity on deletion (contract §1.10 rules 2 and 3): an entity referenced by an
//! active policy cannot be deleted; references from inactive policies are removed (list fields) or
//! block the deletion (a policy's client or server workload).

use uuid::Uuid;

use crate::domain::DEFAULT_RESOURCE_SET;
use crate::domain::policy::Policy;
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::service::write::{Author, Write};

pub use crate::state::index::RefField;

impl RefField {
    pub fn name(self) -> &'static str {
        match self {
            RefField::ClientWorkload => "clientWorkload",
            RefField::ServerWorkload => "serverWorkload",
            RefField::TrustProvider => "trustProviders",
            RefField::CredentialProvider => "credentialProviders",
            RefField::AccessCondition => "accessConditions",
            RefField::ContentSecurity => "contentSecurity",
        }
    }
}

/// Prepares the deletion of `id` inside the unit: fails when a policy still needs it, otherwise
/// detaches it from inactive policies (one `Updated` audit entry per policy changed).
pub fn release(w: &mut Write<'_>, author: &Author, id: Uuid, field: RefField) -> Result<()> {
    let referencing: Vec<Uuid> = w.st.idx.policies_referencing(field, id).copied().collect();
    let mut detach = Vec::new();
    for pid in referencing {
        let Some(p) = w.st.policies.get(&pid).cloned() else {
            continue;
        };
        if p.meta.active || matches!(field, RefField::ClientWorkload | RefField::ServerWorkload) {
            return Err(Error::field(
                field.name(),
                format!("referenced by access policy '{}' ({})", p.meta.name, p.meta.id),
            ));
        }
        detach.push(p);
    }
    // Issue 31: a policy whose last trust provider goes accepts evidence of every provider of its
    // set; whoever widens it so must hold the roles its access tokens give.
    if field == RefField::TrustProvider {
        let widened = detach
            .iter()
            .map(|p| p.as_ref())
            .filter(|p| p.trust_providers.iter().all(|t| *t == id));
        crate::service::escalation::check_token_roles(w.app(), &w.st, widened)?;
    }
    for p in detach {
        let mut p: Policy = (*p).clone();
        match field {
            RefField::TrustProvider => p.trust_providers.retain(|t| *t != id),
            RefField::CredentialProvider => p.mappings.retain(|m| m.credential_provider != id),
            RefField::AccessCondition => p.access_conditions.retain(|c| *c != id),
            RefField::ContentSecurity => p.content_security.retain(|c| *c != id),
            RefField::ClientWorkload | RefField::ServerWorkload => {}
        }
        w.touch_meta(&mut p.meta, author);
        let (pid, rs) = (p.meta.id, p.meta.rs.unwrap_or(DEFAULT_RESOURCE_SET));
        w.put(p);
        w.audit(author, rs, "AccessPolicies", Activity::Updated, pid);
    }
    Ok(())
}
