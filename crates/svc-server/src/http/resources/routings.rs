//! Routings (contract §3.17): an HTTP(S) proxy per resource set. No DELETE; a missing routing is
//! `404`; the permission is checked in the routing's own `resourceSetId`.

use svc_api::mgmt::{EntityPatch, RoutingDto};
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_dto, base_input, patch_input};
use super::crud::{self, OnMissing, Resource, RsFrom};
use crate::app::App;
use crate::domain::Meta;
use crate::domain::sso::Routing;
use crate::error::{Error, Result};
use crate::http::api::Api;
use crate::http::list::{Base, ListSpec, field_filter};
use crate::service::write::Write;
use crate::state::State as Snapshot;

/// `/api/v1/routings` on the shared CRUD layer.
pub struct Routings;

pub fn register(api: &mut Api<'_>) {
    crud::register::<Routings>(api, "/api/v1/routings");
}

const SPEC: ListSpec = ListSpec::new("entities", Base::Global)
    .fields(&["resourceSetId", "proxyUrl"])
    .filters(&[field_filter("resourceSetId")]);

pub struct RoutingInput {
    rs: Option<Uuid>,
    proxy_url: Option<String>,
}

/// `http(s)://host:port`, nothing else: no user info, path, query or fragment, an explicit port.
pub fn proxy_url_ok(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("http://").or_else(|| s.strip_prefix("https://")) else {
        return false;
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let Some((host, port)) = rest.rsplit_once(':') else {
        return false;
    };
    let host_ok = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        v6.parse::<std::net::Ipv6Addr>().is_ok()
    } else {
        !host.is_empty()
            && host
                .split('.')
                .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    };
    host_ok && port.parse::<u16>().is_ok_and(|p| p > 0) && url::Url::parse(s).is_ok()
}

fn parse(app: &App, dto: RoutingDto) -> Result<(BaseInput, RoutingInput)> {
    let base = base_input(dto.base, None)?;
    if !app.state().resource_set_exists(&dto.resource_set_id) {
        return Err(Error::field("resourceSetId", "unknown resource set"));
    }
    if !proxy_url_ok(&dto.proxy_url) {
        return Err(Error::field("proxyUrl", "must be http(s)://host:port"));
    }
    if let Some(host) = url::Url::parse(&dto.proxy_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
    {
        crate::upstream::check_address_field("proxyUrl", &host, &app.cfg)?;
    }
    let input = RoutingInput {
        rs: Some(dto.resource_set_id),
        proxy_url: Some(dto.proxy_url),
    };
    Ok((base, input))
}

impl Resource for Routings {
    type Record = Routing;
    type Input = RoutingInput;
    type Dto = RoutingDto;
    type Patch = EntityPatch;
    const NAME: &'static str = "routings";
    const RS: RsFrom = RsFrom::Body("resourceSetId");
    const LIST: ListSpec = SPEC;
    const ON_MISSING_READ: OnMissing = OnMissing::NotFound;
    const DELETE: Option<axum::http::StatusCode> = None;
    const HIDDEN_ELSEWHERE: bool = false;

    fn parse(app: &App, dto: RoutingDto, _: Mode, _: Option<&Routing>) -> Result<(BaseInput, RoutingInput)> {
        parse(app, dto)
    }

    /// RoutingPatchDTO is the EntityPatchDTO.
    fn parse_patch(_: &App, patch: EntityPatch, _: Option<&Routing>) -> Result<(BaseInput, RoutingInput)> {
        let input = RoutingInput {
            rs: None,
            proxy_url: None,
        };
        Ok((patch_input(patch)?, input))
    }

    fn own_rs(_: &BaseInput, input: &RoutingInput) -> Option<Uuid> {
        input.rs
    }

    fn create(w: &mut Write<'_>, input: RoutingInput, mut meta: Meta) -> Result<Routing> {
        meta.rs = input.rs;
        Ok(Routing {
            meta,
            proxy_url: input.proxy_url.unwrap_or_default(),
            trusted: crate::service::escalation::holds_everything(w.app(), &w.st)?,
        })
    }

    /// A PUT decides anew whether the proxy may carry the set's plain-`http` calls; a PATCH
    /// (name, description, tags, `isActive`) keeps the proxy and that decision.
    fn replace(w: &mut Write<'_>, input: RoutingInput, r: &mut Routing) -> Result<()> {
        r.proxy_url = input.proxy_url.unwrap_or_default();
        r.trusted = crate::service::escalation::holds_everything(w.app(), &w.st)?;
        Ok(())
    }

    /// At most one active routing per resource set; the set must still exist.
    fn check(w: &Write<'_>, r: &Routing) -> Result<()> {
        let st = &w.st;
        let rs = r.meta.rs.unwrap_or_default();
        if !st.resource_set_exists(&rs) {
            return Err(Error::field("resourceSetId", "unknown resource set"));
        }
        if r.meta.active
            && let Some(other) = st
                .routings
                .values()
                .find(|o| o.meta.active && o.meta.rs == r.meta.rs && o.meta.id != r.meta.id)
        {
            return Err(Error::field(
                "resourceSetId",
                format!("already has an active routing {}", other.meta.named()),
            ));
        }
        Ok(())
    }

    fn render(_: &App, _: &Snapshot, r: &Routing) -> RoutingDto {
        RoutingDto {
            base: base_dto(&r.meta),
            resource_set_id: r.meta.scope(),
            proxy_url: r.proxy_url.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::proxy_url_ok;

    #[test]
    fn proxy_urls() {
        for ok in [
            "http://proxy.corp:3128",
            "https://10.0.0.1:8443",
            "http://[::1]:8080/",
            "http://proxy:80",
        ] {
            assert!(proxy_url_ok(ok), "{ok}");
        }
        for bad in [
            "proxy.corp:3128",
            "ftp://proxy:21",
            "http://proxy.corp",
            "http://user:pw@proxy:3128",
            "http://proxy:3128/path",
            "http://proxy:0",
            "http://proxy:70000",
            "http://:3128",
            "http://proxy:3128?x=1",
        ] {
            assert!(!proxy_url_ok(bad), "{bad}");
        }
    }
}
