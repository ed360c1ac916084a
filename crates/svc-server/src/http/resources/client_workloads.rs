//! Client workloads (contract §3.3) and the identity-type catalogue.

use axum::response::Response;
use serde_json::{Value, json};
use svc_api::Obj;
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_json, parse_base};
use super::crud::{self, OnCreate, Resource};
use crate::app::App;
use crate::domain::identity::{IDENTITY_TYPES, lookup};
use crate::domain::workload::{ClientWorkload, Identity};
use crate::domain::{Label, Meta, Perm};
use crate::error::{Error, Result};
use crate::http::api::{Api, Op, Untyped};
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
        Op::new("The identity-type catalogue (§3.3)").ok::<Vec<Untyped>>(200),
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

pub fn client_json(st: &Snapshot, w: &ClientWorkload) -> Value {
    let mut o = base_json(&w.meta, true);
    let ids: Vec<Value> = w
        .identities
        .iter()
        .map(|i| json!({"type": i.kind, "value": i.value, "key": i.key}))
        .collect();
    o.insert("identities".into(), Value::Array(ids));
    o.insert("enforceSso".into(), json!(w.enforce_sso));
    o.insert("ssoIdentityProviders".into(), json!(w.sso_identity_providers));
    o.insert("type".into(), json!(w.label));
    o.insert(
        "accessPolicyCount".into(),
        json!(st.idx.policy_count(RefField::ClientWorkload, w.meta.id)),
    );
    Value::Object(o)
}

fn parse_identities(o: &mut Obj) -> Result<Option<Vec<Identity>>> {
    let ids = o.opt_obj_list("identities", |i| {
        let kind = i.req_str_len("type", 1, 255)?;
        let value = i.req_str_len("value", 1, 1024)?;
        let key = i.opt_str_len("key", 0, 255)?;
        let Some(ty) = lookup(&kind) else {
            return Err(svc_api::FieldError::new(
                i.path("type"),
                "unknown identity type (see /api/v1/client-workloads/identifiers)",
            ));
        };
        match (ty.name == "oidcIdToken", &key) {
            (true, None) => {
                return Err(svc_api::FieldError::new(i.path("key"), "is required for oidcIdToken"));
            }
            (true, Some(k)) if k.is_empty() => {
                return Err(svc_api::FieldError::new(i.path("key"), "is required for oidcIdToken"));
            }
            (false, Some(_)) => {
                return Err(svc_api::FieldError::new(
                    i.path("key"),
                    "is only allowed for oidcIdToken",
                ));
            }
            _ => {}
        }
        if ty.name == "sourceIPAddress" && crate::net::IpNet::parse(&value).is_none() {
            return Err(svc_api::FieldError::new(
                i.path("value"),
                "must be an IP address or CIDR",
            ));
        }
        Ok(Identity {
            kind: Label::new(&kind),
            value,
            key,
        })
    })?;
    if ids.as_ref().is_some_and(|v| v.len() > 50) {
        return Err(Error::field("identities", "at most 50 identities"));
    }
    Ok(ids)
}

pub struct Input {
    identities: Option<Vec<Identity>>,
    enforce_sso: Option<bool>,
    sso: Option<Vec<uuid::Uuid>>,
    label: Option<String>,
}

fn parse(body: Value, mode: Mode) -> Result<(BaseInput, Input)> {
    let mut o = Obj::root(body)?;
    let base = parse_base(&mut o, mode, true)?;
    let identities = parse_identities(&mut o)?;
    let (enforce_sso, sso, label) = if mode == Mode::Patch {
        (None, None, None)
    } else {
        let e = o.opt_bool("enforceSso")?;
        let s = o.opt_uuid_list("ssoIdentityProviders")?;

        let l = o.opt_str_len("type", 0, 64)?;
        (e, s, l)
    };
    o.ignore(&["accessPolicyCount"]);
    o.finish()?;
    let input = Input {
        identities,
        enforce_sso,
        sso,
        label,
    };
    Ok((base, input))
}

impl Resource for ClientWorkloads {
    type Record = ClientWorkload;
    type Input = Input;
    type Dto = Untyped;
    type Patch = Untyped;
    const NAME: &'static str = "client workloads";
    const LIST: ListSpec = SPEC;
    const ON_CREATE: OnCreate = OnCreate::Location;

    fn parse(_app: &App, body: Untyped, mode: Mode, _stored: Option<&ClientWorkload>) -> Result<(BaseInput, Input)> {
        parse(body.0, mode)
    }

    fn parse_patch(app: &App, body: Untyped, stored: Option<&ClientWorkload>) -> Result<(BaseInput, Input)> {
        Self::parse(app, body, Mode::Patch, stored)
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

    fn render(_: &App, st: &Snapshot, w: &ClientWorkload) -> Untyped {
        Untyped(client_json(st, w))
    }
}

/// `GET /api/v1/client-workloads/identifiers`: the identity-type catalogue. It belongs to no
/// resource set: `Client Workloads` read in any resource set may read it.
async fn identifiers() -> Result<Response> {
    let items: Vec<Value> = IDENTITY_TYPES
        .iter()
        .map(|t| json!({"name": t.name, "displayName": t.display_name, "environmentPath": t.environment_path, "isSupported": true}))
        .collect();
    Ok(ok(Value::Array(items)))
}
