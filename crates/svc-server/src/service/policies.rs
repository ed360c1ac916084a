//! Access-policy rules and write units (contract §3.8), shared by the v2 view and the
//! deprecated v1 view in `http/resources/access_policies*.rs`: the rules every stored policy
//! satisfies (1–4, and the compliance warnings of rule 5), the policy of a workload pair, and the
//! create / update / delete / note units. No HTTP here: a caller hands in its [`Author`], a
//! re-admission check (the route's permission in the policy's resource set, against the state the
//! unit works on) and closures over its parsed request.

use std::sync::Arc;

use uuid::Uuid;

use crate::app::App;
use crate::domain::Kind;
use crate::domain::condition::{AccessCondition, ContentSecurity};
use crate::domain::credential::CredentialProvider;
use crate::domain::policy::{Mapping, MappingType, Note, Policy};
use crate::domain::trust::TrustProvider;
use crate::domain::workload::{ClientWorkload, ServerWorkload};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::service::write::{Author, Write, new_external_id};
use crate::state::{Record, State};

pub const CATEGORY: &str = "AccessPolicies";

fn exists_in<T: Record>(st: &State, id: &Uuid, rs: Uuid) -> bool {
    st.get::<T>(id).is_some_and(|v| v.rs() == Some(rs))
}

/// How an unknown trust provider is reported (the later reference lists say less).
const IN_SET: &str = " in the policy's resource set";

/// Rule 2 for one list of references: each names an entity of `T` in the policy's resource set
/// `rs`, and only once (`400 field[i]: unknown <what><unknown_suffix>` / `duplicate <what>`).
fn check_refs<T: Record>(
    st: &State,
    rs: Uuid,
    field: &str,
    ids: &[Uuid],
    what: &str,
    unknown_suffix: &str,
) -> Result<()> {
    for (i, id) in ids.iter().enumerate() {
        if !exists_in::<T>(st, id, rs) {
            return Err(Error::field(
                format!("{field}[{i}]"),
                format!("unknown {what}{unknown_suffix}"),
            ));
        }
        if ids[..i].contains(id) {
            return Err(Error::field(format!("{field}[{i}]"), format!("duplicate {what}")));
        }
    }
    Ok(())
}

/// Rules 1–4 of §3.8 (400 naming the field); returns the compliance warnings (rule 5).
pub fn validate(st: &State, p: &Policy) -> Result<Vec<&'static str>> {
    let rs = p.meta.scope();
    if !exists_in::<ClientWorkload>(st, &p.client_workload, rs) {
        return Err(Error::field(
            "clientWorkload",
            "unknown client workload in the policy's resource set",
        ));
    }
    if !exists_in::<ServerWorkload>(st, &p.server_workload, rs) {
        return Err(Error::field(
            "serverWorkload",
            "unknown server workload in the policy's resource set",
        ));
    }
    check_refs::<TrustProvider>(st, rs, "trustProviders", &p.trust_providers, "trust provider", IN_SET)?;
    check_refs::<AccessCondition>(st, rs, "accessConditions", &p.access_conditions, "access condition", "")?;
    check_refs::<ContentSecurity>(
        st,
        rs,
        "contentSecurity",
        &p.content_security,
        "content security entry",
        "",
    )?;
    let mut types = Vec::new();
    for (i, m) in p.mappings.iter().enumerate() {
        let path = format!("credentialProviders[{i}].credentialProviderId");
        let cp = st
            .get::<CredentialProvider>(&m.credential_provider)
            .filter(|c| c.meta.rs == Some(rs));
        let Some(cp) = cp else {
            return Err(Error::field(
                path,
                "unknown credential provider in the policy's resource set",
            ));
        };
        if p.mappings[..i]
            .iter()
            .any(|o| o.credential_provider == m.credential_provider)
        {
            return Err(Error::field(path, "duplicate credential provider"));
        }
        types.push(cp.cp_type.clone());
    }
    if p.mappings.len() > 1 {
        let t = &types[0];
        if types.iter().any(|x| x != t) {
            return Err(Error::field(
                "credentialProviders",
                "all providers of a policy with several providers must have the same type",
            ));
        }
        let allowed: &[MappingType] = match t.as_str() {
            "cloudA-sts-oidc" => &[MappingType::AccessKeyId],
            "signed-jwt" => &[MappingType::AccountName, MappingType::HttpHeader, MappingType::HttpBody],
            other => {
                return Err(Error::field(
                    "credentialProviders",
                    format!("providers of type {other} cannot be combined in one policy"),
                ));
            }
        };
        for (i, m) in p.mappings.iter().enumerate() {
            if !allowed.contains(&m.mapping_type) {
                return Err(Error::field(
                    format!("credentialProviders[{i}].mappingType"),
                    format!(
                        "must be one of {} when several {t} providers are combined",
                        allowed.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
            let key = |x: &Mapping| {
                let s = x.selectors();
                (
                    x.mapping_type,
                    s.access_key_id.clone(),
                    s.account_name.clone(),
                    s.header_name.as_ref().map(|h| h.to_lowercase()),
                    s.header_value.clone(),
                    s.body_field_path.clone(),
                    s.body_field_value.clone(),
                )
            };
            if p.mappings[..i].iter().any(|o| key(o) == key(m)) {
                return Err(Error::field(
                    format!("credentialProviders[{i}]"),
                    "selector values must be distinct",
                ));
            }
        }
    }
    if p.meta.active {
        let pair = st.idx.policies_by_pair.get(&(p.client_workload, p.server_workload));
        if let Some(other) = pair
            .into_iter()
            .flatten()
            .filter_map(|id| st.policies.get(id))
            .find(|o| o.meta.id != p.meta.id && o.meta.active)
        {
            return Err(Error::field(
                "clientWorkload",
                format!(
                    "active access policy {} already connects these workloads",
                    other.meta.named()
                ),
            ));
        }
    }
    st.settings().gate(&[
        (
            "ap_trust_prov_governance",
            "trustProviders",
            p.trust_providers.is_empty(),
        ),
        (
            "ap_access_cond_governance",
            "accessConditions",
            p.access_conditions.is_empty(),
        ),
    ])
}

/// The active policy for a pair, else the most recently modified inactive one.
pub fn for_pair(st: &State, client: Uuid, server: Uuid) -> Option<Arc<Policy>> {
    let ids = st.idx.policies_by_pair.get(&(client, server))?;
    let mut ps: Vec<&Arc<Policy>> = ids.iter().filter_map(|id| st.policies.get(id)).collect();
    ps.sort_by_key(|p| (p.meta.active, p.meta.modified_at));
    ps.last().map(|p| (*p).clone())
}

/// A new policy in `rs` (`external_id`: the one the request chose, §1.2), filled by `apply` and
/// held to the rules; returns the committed state, its id and the compliance warnings.
pub async fn create(
    app: &App,
    author: &Author,
    rs: Uuid,
    external_id: Option<Uuid>,
    readmit: impl Fn(&State, Uuid) -> Result<()>,
    apply: impl FnOnce(&mut Policy) -> Result<()>,
) -> Result<(Arc<State>, Uuid, Vec<&'static str>)> {
    let mut w = Write::begin(app).await?;
    // The route checks the policy's set against the state it was admitted with; the unit checks
    // it again against the state it writes on (a permission withdrawn meanwhile, on any node).
    readmit(&w.st, rs)?;
    let id = new_external_id(external_id, |id| w.st.get::<Policy>(id).is_some())?;
    let meta = w.new_meta(Kind::AccessPolicy, id, Some(rs), author).await?;
    let mut p = Policy {
        meta,
        client_workload: Uuid::nil(),
        server_workload: Uuid::nil(),
        mappings: vec![],
        trust_providers: vec![],
        access_conditions: vec![],
        content_security: vec![],
        notes: vec![],
    };
    apply(&mut p)?;
    let warnings = validate(&w.st, &p)?;
    crate::service::escalation::check_token_roles(app, &w.st, std::iter::once(&p))?;
    w.put(p);
    w.audit(author, rs, CATEGORY, Activity::Created, id);
    Ok((w.commit().await?, id, warnings))
}

/// The stored policy `id` for a change: 404 when missing, then the caller re-admitted in its
/// resource set.
fn for_change(w: &Write<'_>, id: Uuid, readmit: impl Fn(&State, Uuid) -> Result<()>) -> Result<Policy> {
    let p = (**w.st.policies.get(&id).ok_or(Error::NotFound)?).clone();
    readmit(&w.st, p.meta.scope())?;
    Ok(p)
}

/// Replaces (`replace`: a PUT, audited `Updated`) or patches (`Patched`) policy `id`: `change`
/// checks the stored policy and applies the request to it, the rules check the result.
pub async fn update(
    app: &App,
    author: &Author,
    id: Uuid,
    replace: bool,
    readmit: impl Fn(&State, Uuid) -> Result<()>,
    change: impl FnOnce(&mut Policy) -> Result<()>,
) -> Result<(Arc<State>, Vec<&'static str>)> {
    let mut w = Write::begin(app).await?;
    let mut p = for_change(&w, id, readmit)?;
    change(&mut p)?;
    let warnings = validate(&w.st, &p)?;
    crate::service::escalation::check_token_roles(app, &w.st, std::iter::once(&p))?;
    w.touch_meta(&mut p.meta, author);
    let rs = p.meta.scope();
    w.put(p);
    let activity = if replace { Activity::Updated } else { Activity::Patched };
    w.audit(author, rs, CATEGORY, activity, id);
    Ok((w.commit().await?, warnings))
}

/// Deletes policy `id` once `check` accepted it; `false` when there is none.
pub async fn delete(
    app: &App,
    author: &Author,
    id: Uuid,
    readmit: impl Fn(&State, Uuid) -> Result<()>,
    check: impl FnOnce(&Policy) -> Result<()>,
) -> Result<bool> {
    let mut w = Write::begin(app).await?;
    let Some(p) = w.st.policies.get(&id).cloned() else {
        return Ok(false);
    };
    readmit(&w.st, p.meta.scope())?;
    check(&p)?;
    w.remove::<Policy>(&id);
    w.audit(author, p.meta.scope(), CATEGORY, Activity::Deleted, id);
    w.commit().await?;
    Ok(true)
}

/// Adds a note to policy `id` once `check` accepted it. A note is part of the policy: a write
/// like any other (§1.3 `modifiedAt`).
pub async fn add_note(
    app: &App,
    author: &Author,
    id: Uuid,
    text: String,
    readmit: impl Fn(&State, Uuid) -> Result<()>,
    check: impl FnOnce(&Policy) -> Result<()>,
) -> Result<Note> {
    let mut w = Write::begin(app).await?;
    let mut p = for_change(&w, id, readmit)?;
    check(&p)?;
    let note = Note {
        note: text,
        created_at: w.now,
        created_by: author.actor.label(),
    };
    p.notes.push(note.clone());
    w.touch_meta(&mut p.meta, author);
    let rs = p.meta.scope();
    w.put(p);
    w.audit(author, rs, CATEGORY, Activity::NoteAdded, id);
    w.commit().await?;
    Ok(note)
}
