//! Client workloads (contract §3.3) and the identity-type catalogue.

use axum::response::Response;
use serde_json::Value;
use svc_api::mgmt::{ClientIdentifierDto, ClientWorkloadDto, ClientWorkloadIdentityDto, ClientWorkloadPatchDto};
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_dto, base_input, patch_input};
use super::crud::{self, OnCreate, Resource};
use crate::app::App;
use crate::domain::identity::{IDENTITY_TYPES, lookup};
use crate::domain::workload::{ClientWorkload, Identity};
use crate::domain::{Label, Meta, Perm};
use crate::error::{Error, Result};
use crate::http::api::{Api, Op};
use crate::http::guard::Scope;
use crate::http::list::{Base, Filter, ListSpec, field_filter};
use crate::http::ok;
use crate::service::refs::{RefField, release};
use crate::service::write::{Author, Write};
use crate::state::State as Snapshot;

/// `/api/v1/client-workloads` on the shared CRUD layer.
pub struct ClientWorkloads;

pub fn register(api: &mut Api<'_>) {
    crud::register::<ClientWorkloads>(api, "/api/v1/client-workloads");
    api.guarded(
        "/api/v1/client-workloads/identifiers",
        Perm::ClientWorkloads,
        Scope::AnySet,
    )
    .get(
        identifiers,
        Op::new("The identity-type catalogue (§3.3)").ok::<Vec<ClientIdentifierDto>>(200),
    );
}

fn has_identity_type(item: &Value, v: &str) -> bool {
    item["identities"].as_array().is_some_and(|a| {
        a.iter()
            .any(|i| i["type"].as_str().is_some_and(|t| t.eq_ignore_ascii_case(v)))
    })
}

fn has_identity_value(item: &Value, v: &str) -> bool {
    item["identities"].as_array().is_some_and(|a| {
        a.iter()
            .any(|i| i["value"].as_str().is_some_and(|t| t.eq_ignore_ascii_case(v)))
    })
}

const SPEC: ListSpec = ListSpec::new("clientWorkloads", Base::Scoped)
    .fields(&["enforceSso", "type", "accessPolicyCount"])
    .filters(&[
        ("identityType", Filter::Func(has_identity_type)),
        ("identity", Filter::Func(has_identity_value)),
        field_filter("type"),
    ]);

/// `ClientWorkloadExternalDTO`.
pub fn client_dto(st: &Snapshot, w: &ClientWorkload) -> ClientWorkloadDto {
    ClientWorkloadDto {
        base: base_dto(&w.meta),
        resource_set: Some(w.meta.scope()),
        identities: Some(
            w.identities
                .iter()
                .map(|i| ClientWorkloadIdentityDto {
                    kind: i.kind.to_string(),
                    value: i.value.clone(),
                    key: i.key.clone(),
                })
                .collect(),
        ),
        enforce_sso: w.enforce_sso,
        sso_identity_providers: Some(w.sso_identity_providers.clone()),
        label: w.label.clone(),
        access_policy_count: crud::count(st.idx.policy_count(RefField::ClientWorkload, w.meta.id)),
    }
}

/// The identities of a body (their schema checked): a known type, `key` exactly for
/// `oidcIdToken`, an address or CIDR for `sourceIPAddress`; at most 50.
fn parse_identities(ids: Option<Vec<ClientWorkloadIdentityDto>>) -> Result<Option<Vec<Identity>>> {
    let Some(ids) = ids else { return Ok(None) };
    let mut out = Vec::with_capacity(ids.len());
    for (n, i) in ids.into_iter().enumerate() {
        let at = |f: &str| format!("identities[{n}].{f}");
        let Some(ty) = lookup(&i.kind) else {
            return Err(Error::field(
                at("type"),
                "unknown identity type (see /api/v1/client-workloads/identifiers)",
            ));
        };
        match (ty.name == "oidcIdToken", &i.key) {
            (true, None) => return Err(Error::field(at("key"), "is required for oidcIdToken")),
            (true, Some(k)) if k.is_empty() => return Err(Error::field(at("key"), "is required for oidcIdToken")),
            (false, Some(_)) => return Err(Error::field(at("key"), "is only allowed for oidcIdToken")),
            _ => {}
        }
        if ty.name == "sourceIPAddress" && crate::net::IpNet::parse(&i.value).is_none() {
            return Err(Error::field(at("value"), "must be an IP address or CIDR"));
        }
        out.push(Identity {
            kind: Label::new(&i.kind),
            value: i.value,
            key: i.key,
        });
    }
    if out.len() > 50 {
        return Err(Error::field("identities", "at most 50 identities"));
    }
    Ok(Some(out))
}

pub struct Input {
    identities: Option<Vec<Identity>>,
    enforce_sso: Option<bool>,
    sso: Option<Vec<Uuid>>,
    label: Option<String>,
}

impl Resource for ClientWorkloads {
    type Record = ClientWorkload;
    type Input = Input;
    type Dto = ClientWorkloadDto;
    type Patch = ClientWorkloadPatchDto;
    const NAME: &'static str = "client workloads";
    const LIST: ListSpec = SPEC;
    const ON_CREATE: OnCreate = OnCreate::Location;

    fn parse(_: &App, dto: ClientWorkloadDto, _: Mode, _: Option<&ClientWorkload>) -> Result<(BaseInput, Input)> {
        let base = base_input(dto.base, dto.resource_set)?;
        let input = Input {
            identities: parse_identities(dto.identities)?,
            enforce_sso: Some(dto.enforce_sso),
            sso: dto.sso_identity_providers,
            label: dto.label,
        };
        Ok((base, input))
    }

    /// ClientWorkloadPatchDTO: the base fields and `identities`.
    fn parse_patch(_: &App, p: ClientWorkloadPatchDto, _: Option<&ClientWorkload>) -> Result<(BaseInput, Input)> {
        let mut base = patch_input(svc_api::mgmt::EntityPatch {
            external_id: p.external_id,
            name: p.name,
            description: p.description,
            is_active: p.is_active,
            tags: p.tags,
        })?;
        base.resource_set = p.resource_set;
        let input = Input {
            identities: parse_identities(p.identities)?,
            enforce_sso: None,
            sso: None,
            label: None,
        };
        Ok((base, input))
    }

    fn create(_: &mut Write<'_>, input: Input, meta: Meta) -> Result<ClientWorkload> {
        Ok(ClientWorkload {
            meta,
            identities: input.identities.unwrap_or_default(),
            enforce_sso: input.enforce_sso.unwrap_or(false),
            sso_identity_providers: input.sso.unwrap_or_default(),
            label: input.label,
        })
    }

    fn replace(_: &mut Write<'_>, input: Input, cw: &mut ClientWorkload) -> Result<()> {
        cw.identities = input.identities.unwrap_or_default();
        cw.enforce_sso = input.enforce_sso.unwrap_or(false);
        cw.sso_identity_providers = input.sso.unwrap_or_default();
        cw.label = input.label;
        Ok(())
    }

    fn patch(_: &mut Write<'_>, input: Input, cw: &mut ClientWorkload) -> Result<()> {
        if let Some(ids) = input.identities {
            cw.identities = ids;
        }
        Ok(())
    }

    /// `ssoIdentityProviders` must name existing SSO identity providers (§3.3, §1.10 rule 1).
    fn check(w: &Write<'_>, cw: &ClientWorkload) -> Result<()> {
        // Identities say whose evidence is this workload's: changing them gives the roles its
        // policies' `svc-access-token` providers hand out (issue 31).
        if w.st
            .client_workloads
            .get(&cw.meta.id)
            .is_some_and(|old| old.identities != cw.identities)
        {
            let policies = crate::service::escalation::policies_of_client(&w.st, cw.meta.id);
            crate::service::escalation::check_token_roles(w.app(), &w.st, policies)?;
        }
        match cw
            .sso_identity_providers
            .iter()
            .position(|id| !w.st.sso_idps.contains_key(id))
        {
            Some(i) => Err(Error::field(
                format!("ssoIdentityProviders[{i}]"),
                "unknown SSO identity provider",
            )),
            None => Ok(()),
        }
    }

    fn before_delete(w: &mut Write<'_>, author: &Author, _: Uuid, id: Uuid) -> Result<()> {
        release(w, author, id, RefField::ClientWorkload)
    }

    fn render(_: &App, st: &Snapshot, w: &ClientWorkload) -> ClientWorkloadDto {
        client_dto(st, w)
    }
}

/// `GET /api/v1/client-workloads/identifiers`: the identity-type catalogue. It belongs to no
/// resource set: `Client Workloads` read in any resource set may read it.
async fn identifiers() -> Result<Response> {
    let items: Vec<ClientIdentifierDto> = IDENTITY_TYPES
        .iter()
        .map(|t| ClientIdentifierDto {
            name: t.name.to_string(),
            display_name: t.display_name.to_string(),
            environment_path: t.environment_path.to_string(),
            is_supported: true,
        })
        .collect();
    Ok(ok(crud::to_json(&items)))
}
