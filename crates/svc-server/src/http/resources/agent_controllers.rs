//! Agent controllers (contract §3.21): their own DTO shape (no `createdBy`, an int `id`), a trust
//! provider of any resource set, a unique `allowedTlsHostname`, the two `edge_*` compliance
//! settings (§3.22), DELETE answering `201`, and single-use device codes (six digits, 15 minutes,
//! a new one replaces the old, stored only as a hash).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use svc_api::mgmt::{AgentControllerDeviceCodeDto, AgentControllerDto, AgentControllerPatchDto};
use uuid::Uuid;

use super::common::{BaseInput, Mode};
use super::crud::{self, OnMissing, Resource, RsFrom};
use crate::app::App;
use crate::domain::sso::{AgentController, DEVICE_CODE_TTL_MS, DeviceCode};
use crate::domain::{DEFAULT_RESOURCE_SET, Meta, Perm, Timestamp};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::api::{Api, Op};
use crate::http::extract::{Ids, QueryPairs};
use crate::http::guard::Ctx;
use crate::http::list::{Base, ListSpec, field_filter};
use crate::service::write::{Author, Write};
use crate::state::State as Snapshot;

/// `/api/v1/agent-controllers` on the shared CRUD layer: global entities.
pub struct AgentControllers;

pub fn register(api: &mut Api<'_>) {
    crud::register::<AgentControllers>(api, "/api/v1/agent-controllers");
    api.guarded(
        "/api/v1/agent-controllers/{agentControllerExternalId}/device-code",
        Perm::AgentControllers,
        crud::scope::<AgentControllers>(),
    )
    .post(
        device_code,
        Op::new("A new device code for the controller (§3.21)").ok::<AgentControllerDeviceCodeDto>(201),
    );
}

const SPEC: ListSpec = ListSpec::new("agentControllers", Base::Unattributed)
    .fields(&[
        "id",
        "version",
        "trustProviderId",
        "isHealthy",
        "lastReportedUptime",
        "lastReportedHealthTime",
        "allowedTlsHostname",
    ])
    .filters(&[field_filter("trustProviderId"), field_filter("isHealthy")]);

pub struct ControllerInput {
    version: Option<String>,
    trust_provider: Option<Uuid>,
    hostname: Option<String>,
}

/// A DNS name (labels of letters, digits and inner hyphens, at least two labels), or one with a
/// leading `*.` wildcard label.
pub fn hostname_ok(s: &str) -> bool {
    let name = s.strip_prefix("*.").unwrap_or(s);
    let labels: Vec<&str> = name.split('.').collect();
    labels.len() >= 2
        && name.len() <= 253
        && labels.iter().all(|l| {
            (1..=63).contains(&l.len())
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
        && labels.last().is_some_and(|l| !l.bytes().all(|b| b.is_ascii_digit()))
}

/// A named trust provider must be one the caller may read, unless the controller already names
/// it (`stored`).
fn check_trust_provider(app: &App, tp: Option<Uuid>, stored: Option<&AgentController>) -> Result<()> {
    let kept = tp.is_some() && stored.and_then(|s| s.trust_provider) == tp;
    if let Some(tp) = tp
        && !kept
        && !may_read(app, &app.state(), tp)
    {
        return Err(Error::field("trustProviderId", "unknown trust provider"));
    }
    Ok(())
}

fn parse(app: &App, dto: AgentControllerDto, stored: Option<&AgentController>) -> Result<(BaseInput, ControllerInput)> {
    check_trust_provider(app, dto.trust_provider_id, stored)?;
    let hostname = dto.allowed_tls_hostname.filter(|h| !h.is_empty());
    if let Some(h) = &hostname {
        svc_api::reader::check_len("allowedTlsHostname", h, 1, 256)?;
        if !hostname_ok(h) {
            return Err(Error::field(
                "allowedTlsHostname",
                "must be a fully qualified domain name or a *. wildcard",
            ));
        }
    }
    let base = super::common::base_input(
        svc_api::mgmt::Base {
            external_id: dto.external_id,
            name: dto.name,
            description: dto.description,
            is_active: dto.is_active,
            tags: dto.tags,
            ..Default::default()
        },
        None,
    )?;
    let input = ControllerInput {
        version: dto.version,
        trust_provider: dto.trust_provider_id,
        hostname: hostname.map(|h| h.to_ascii_lowercase()),
    };
    Ok((base, input))
}

/// Whether the caller of this request may read the trust provider `tp` (`Trust Providers` read
/// in its resource set; the service's own reads may). A controller may name a provider of any
/// resource set, but naming one does not show it (issue 31): an `Agent Controllers` reader sees
/// `trustProvider` expanded only where it could read it anyway, and a writer may name only a
/// provider it can read.
fn may_read(app: &App, st: &Snapshot, tp: Uuid) -> bool {
    st.trust_providers
        .get(&tp)
        .is_some_and(|rec| super::common::reader(app, st)(Perm::TrustProviders, rec.meta.scope()))
}

/// `AgentControllerDTO`.
pub fn controller_dto(app: &App, st: &Snapshot, c: &AgentController) -> AgentControllerDto {
    let tp = c
        .trust_provider
        .filter(|id| may_read(app, st, *id))
        .and_then(|id| st.trust_providers.get(&id))
        .map(|tp| super::trust_providers::trust_dto(app, st, tp, None));
    AgentControllerDto {
        id: c.meta.seq,
        external_id: Some(c.meta.id),
        created_at: c.meta.created_at,
        modified_at: Some(c.meta.modified_at),
        version: c.version.clone(),
        is_active: c.meta.active,
        name: c.meta.name.clone(),
        description: c.meta.description.clone(),
        tags: Some(c.meta.tags.clone()),
        tls_certificates: Vec::new(),
        trust_provider_id: c.trust_provider,
        trust_provider: tp,
        is_healthy: false,
        last_reported_uptime: 0,
        last_reported_health_time: None,
        allowed_tls_hostname: c.allowed_tls_hostname.clone(),
    }
}

/// The agent controllers naming trust provider `tp`.
pub fn referring(st: &Snapshot, tp: Uuid) -> impl Iterator<Item = &AgentController> {
    st.agent_controllers
        .values()
        .filter(move |c| c.trust_provider == Some(tp))
        .map(|c| &**c)
}

/// §1.10 rule 4: a trust provider an agent controller names cannot be deleted.
pub fn check_trust_provider_unreferenced(st: &Snapshot, tp: Uuid) -> Result<()> {
    match referring(st, tp).next() {
        Some(c) => Err(Error::field(
            "trustProviderId",
            format!("referenced by agent controller {}", c.meta.named()),
        )),
        None => Ok(()),
    }
}

/// §1.10 rule 6: controllers naming a trust provider of the deleted resource set `rs` lose it
/// (`trustProviderId = null`, one `Updated` entry each). Call before the providers are removed.
pub fn release_resource_set(w: &mut Write<'_>, author: &Author, rs: Uuid) {
    let st = &w.st;
    let hit: Vec<AgentController> = st
        .agent_controllers
        .values()
        .filter(|c| {
            c.trust_provider
                .and_then(|t| st.trust_providers.get(&t))
                .is_some_and(|t| t.meta.rs == Some(rs))
        })
        .map(|c| (**c).clone())
        .collect();
    for mut c in hit {
        c.trust_provider = None;
        w.touch_meta(&mut c.meta, author);
        let id = c.meta.id;
        w.put(c);
        w.audit(
            author,
            DEFAULT_RESOURCE_SET,
            AgentControllers::CATEGORY,
            Activity::Updated,
            id,
        );
    }
}

impl Resource for AgentControllers {
    type Record = AgentController;
    type Input = ControllerInput;
    type Dto = AgentControllerDto;
    type Patch = AgentControllerPatchDto;
    const NAME: &'static str = "agent controllers";
    const RS: RsFrom = RsFrom::Global;
    const LIST: ListSpec = SPEC;
    /// §3.21 lists `201` as DELETE's only status; a missing id answers it too (§1.5).
    const DELETE: Option<StatusCode> = Some(StatusCode::CREATED);
    const ON_MISSING_DELETE: OnMissing = OnMissing::NoContent;

    fn parse(
        app: &App,
        dto: AgentControllerDto,
        _: Mode,
        stored: Option<&AgentController>,
    ) -> Result<(BaseInput, ControllerInput)> {
        parse(app, dto, stored)
    }

    fn parse_patch(
        app: &App,
        patch: AgentControllerPatchDto,
        stored: Option<&AgentController>,
    ) -> Result<(BaseInput, ControllerInput)> {
        check_trust_provider(app, patch.trust_provider_id, stored)?;
        let base = BaseInput {
            external_id: patch.external_id,
            is_active: patch.is_active,
            ..BaseInput::default()
        };
        let input = ControllerInput {
            version: patch.version,
            trust_provider: patch.trust_provider_id,
            hostname: None,
        };
        Ok((base, input))
    }

    fn create(_: &mut Write<'_>, input: ControllerInput, meta: Meta) -> Result<AgentController> {
        Ok(AgentController {
            meta,
            version: input.version,
            trust_provider: input.trust_provider,
            allowed_tls_hostname: input.hostname,
            device_code: None,
        })
    }

    fn replace(_: &mut Write<'_>, input: ControllerInput, c: &mut AgentController) -> Result<()> {
        c.version = input.version;
        c.trust_provider = input.trust_provider;
        c.allowed_tls_hostname = input.hostname;
        Ok(())
    }

    fn patch(_: &mut Write<'_>, input: ControllerInput, c: &mut AgentController) -> Result<()> {
        if input.version.is_some() {
            c.version = input.version;
        }
        if input.trust_provider.is_some() {
            c.trust_provider = input.trust_provider;
        }
        Ok(())
    }

    /// The trust provider still exists; `allowedTlsHostname` is unique among controllers.
    fn check(w: &Write<'_>, c: &AgentController) -> Result<()> {
        let st = &w.st;
        if let Some(tp) = c.trust_provider
            && !st.trust_providers.contains_key(&tp)
        {
            return Err(Error::field("trustProviderId", "unknown trust provider"));
        }
        if let Some(h) = &c.allowed_tls_hostname
            && let Some(other) = st
                .agent_controllers
                .values()
                .find(|o| o.meta.id != c.meta.id && o.allowed_tls_hostname.as_ref() == Some(h))
        {
            return Err(Error::field(
                "allowedTlsHostname",
                format!("already used by agent controller {}", other.meta.named()),
            ));
        }
        Ok(())
    }

    /// §3.22: `edge_trust_prov_governance` (a trust provider) and `edge_tls_hostname_governance`
    /// (an allowed TLS hostname).
    fn warnings(st: &Snapshot, c: &AgentController) -> Result<Vec<&'static str>> {
        st.settings().gate(&[
            (
                "edge_trust_prov_governance",
                "trustProviderId",
                c.trust_provider.is_none(),
            ),
            (
                "edge_tls_hostname_governance",
                "allowedTlsHostname",
                c.allowed_tls_hostname.is_none(),
            ),
        ])
    }

    /// `check-tls-type` (§3.21) is a boolean; `true` asks for `tlsCertificates`, which stay `[]`
    /// in this version (no agent registers a certificate with the service yet).
    fn refine_list(q: &QueryPairs, _: &mut Vec<Value>) -> Result<()> {
        match q.get("check-tls-type").map(str::to_ascii_lowercase).as_deref() {
            None | Some("true" | "false") => Ok(()),
            Some(_) => Err(Error::field("check-tls-type", "must be true or false")),
        }
    }

    fn render(app: &App, st: &Snapshot, c: &AgentController) -> AgentControllerDto {
        controller_dto(app, st, c)
    }
}

/// `POST …/{id}/device-code`: a new six-digit code (replacing any earlier one), valid 15 minutes;
/// only its hash is stored.
async fn device_code(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    let id = ids.one();
    let author: Author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let mut c =
        w.st.agent_controllers
            .get(&id)
            .map(|c| (**c).clone())
            .ok_or(Error::NotFound)?;
    let n = u32::from_be_bytes(crate::crypto::random_bytes::<4>()) % 1_000_000;
    let code = format!("{n:06}");
    c.device_code = Some(DeviceCode {
        hash: DeviceCode::hash_of(&code),
        expires_at: Timestamp::from_millis(w.now.millis() + DEVICE_CODE_TTL_MS),
    });
    w.touch_meta(&mut c.meta, &author);
    w.put(c);
    w.audit(
        &author,
        DEFAULT_RESOURCE_SET,
        AgentControllers::CATEGORY,
        Activity::DeviceCodeCreated,
        id,
    );
    w.commit().await?;
    let dto = AgentControllerDeviceCodeDto {
        device_code: Some(code),
    };
    Ok((StatusCode::CREATED, axum::Json(dto)).into_response())
}

#[cfg(test)]
mod tests {
    use super::hostname_ok;

    #[test]
    fn hostnames() {
        for ok in ["edge.acme.test", "*.edge.acme.test", "a-b.c1.example", "x.io"] {
            assert!(hostname_ok(ok), "{ok}");
        }
        for bad in [
            "localhost",
            "*.",
            "a..b",
            "-a.b",
            "a-.b",
            "a.b.*",
            "*.*.a.b",
            "10.0.0.1",
            "a b.c",
            "https://a.b",
            "a.b:443",
        ] {
            assert!(!hostname_ok(bad), "{bad}");
        }
    }
}
