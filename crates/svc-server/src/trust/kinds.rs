//! The trust-provider kinds in one table (as `credential/types.rs` is for credential types):
//! per kind its `provider` name, clientId segment, match attributes, the key-material fields a
//! provider may carry, whether it takes certificate secrets, whether its evidence is a JWT, the
//! dynamic-value prefixes of its verified payload, and where its evidence sits in a request.
//! Each row lives in its kind's module; adding a kind is its module, a [`TrustKind`] variant,
//! its row here and its arm in [`super::verify_evidence`] (the compiler lists the last two).

use svc_api::edge::ClientWorkloadDetails;

use crate::domain::trust::TrustKind;

/// Where a kind's evidence is in the request's `client` object.
#[derive(Clone, Copy)]
pub enum Evidence {
    /// A token (JWT) field: the non-blank value, if present.
    Token(for<'c> fn(&'c ClientWorkloadDetails) -> Option<&'c String>),
    /// A signed document or request: whether it is present.
    Document(fn(&ClientWorkloadDetails) -> bool),
}

pub struct KindSpec {
    pub kind: TrustKind,
    /// The `provider` value (§3.1).
    pub name: &'static str,
    /// The clientId `<type>` segment (§4.2).
    pub client_id_type: &'static str,
    /// Match-rule attributes allowed for this kind (§3.1).
    pub match_attributes: &'static [&'static str],
    /// Key-material fields a provider of this kind may carry (`oidcUrl`, `jwks`, …).
    pub key_fields: &'static [&'static str],
    /// Exactly one of `key_fields` is required (the configurable-key JWT kinds).
    pub one_key_source: bool,
    /// Accepts certificate secrets (§3.2).
    pub accepts_secrets: bool,
    /// The evidence is a JWT: its verified payload is carried in the edge token.
    pub jwt: bool,
    /// `${…}` prefixes that read this kind's verified payload (§3.5.3).
    pub payload_prefixes: &'static [&'static str],
    pub evidence: Evidence,
}

/// Every kind, in [`TrustKind`] declaration order (`KINDS[kind as usize]`).
pub const KINDS: [&KindSpec; 9] = [
    &super::clouda_iid::KIND,
    &super::clouda_role::KIND,
    &super::cloudb::KIND,
    &super::cloudc::KIND,
    &super::ci::CIA_KIND,
    &super::ci::CIB_KIND,
    &super::ci::CIC_KIND,
    &super::orchestrator::KIND,
    &super::oidc::KIND,
];

impl TrustKind {
    /// The kind's row of [`KINDS`].
    pub fn spec(self) -> &'static KindSpec {
        KINDS[self as usize]
    }

    pub fn all() -> impl Iterator<Item = TrustKind> {
        KINDS.iter().map(|k| k.kind)
    }

    pub fn as_str(self) -> &'static str {
        self.spec().name
    }

    pub fn parse(s: &str) -> Option<TrustKind> {
        KINDS.iter().find(|k| k.name == s).map(|k| k.kind)
    }

    /// The clientId `<type>` segment (§4.2).
    pub fn client_id_type(self) -> &'static str {
        self.spec().client_id_type
    }

    pub fn from_client_id_type(s: &str) -> Option<TrustKind> {
        KINDS.iter().find(|k| k.client_id_type == s).map(|k| k.kind)
    }

    /// Match-rule attributes allowed for this kind (§3.1).
    pub fn match_attributes(self) -> &'static [&'static str] {
        self.spec().match_attributes
    }

    /// Kinds whose evidence is a JWT verified with configurable key material.
    pub fn accepts_key_material(self) -> bool {
        self.spec().one_key_source
    }

    /// Kinds that accept certificate secrets (§3.2).
    pub fn accepts_secrets(self) -> bool {
        self.spec().accepts_secrets
    }

    /// Whether the kind's evidence is a JWT (its verified payload is carried in the edge token).
    pub fn is_jwt(self) -> bool {
        self.spec().jwt
    }
}

/// A string field's non-blank value.
pub fn non_blank(s: Option<&String>) -> Option<&String> {
    s.filter(|s| !s.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_row_at_its_index() {
        for (i, k) in KINDS.iter().enumerate() {
            assert_eq!(k.kind as usize, i, "{}", k.name);
        }
        let mut names: Vec<_> = KINDS.iter().map(|k| k.client_id_type).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KINDS.len(), "client id types are unique");
    }
}
