//! Routings (contract §3.17): an HTTP(S) proxy per resource set. No DELETE; a missing routing is
//! `404`; the permission is checked in the routing's own `resourceSetId`.

use serde_json::{Value, json};
use svc_api::Obj;
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_json, parse_base};
use super::crud::{self, OnMissing, Resource, RsFrom};
use crate::app::App;
use crate::domain::Meta;
use crate::domain::sso::Routing;
use crate::error::{Error, Result};
use crate::http::api::{Api, Untyped};
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

fn parse(st: &Snapshot, body: Value, mode: Mode) -> Result<(BaseInput, RoutingInput)> {
    let mut o = Obj::root(body)?;
    let base = parse_base(&mut o, mode, false)?;
    if mode == Mode::Patch {
        // RoutingPatchDTO is the EntityPatchDTO.
        o.finish()?;
        let input = RoutingInput {
            rs: None,
            proxy_url: None,
        };
        return Ok((base, input));
    }
    let rs = o.req_uuid("resourceSetId")?;
    if !st.resource_set_exists(&rs) {
        return Err(Error::field("resourceSetId", "unknown resource set"));
    }
    let proxy_url = o.req_str_len("proxyUrl", 1, 255)?;
    if !proxy_url_ok(&proxy_url) {
        return Err(Error::field("proxyUrl", "must be http(s)://host:port"));
    }
    o.finish()?;
    let input = RoutingInput {
        rs: Some(rs),
        proxy_url: Some(proxy_url),
    };
    Ok((base, input))
}

impl Resource for Routings {
    type Record = Routing;
    type Input = RoutingInput;
    type Dto = Untyped;
    type Patch = Untyped;
    const NAME: &'static str = "routings";
    const RS: RsFrom = RsFrom::Body("resourceSetId");
    const LIST: ListSpec = SPEC;
    const ON_MISSING_READ: OnMissing = OnMissing::NotFound;
    const DELETE: Option<axum::http::StatusCode> = None;
    const HIDDEN_ELSEWHERE: bool = false;

    fn parse(app: &App, body: Untyped, mode: Mode, _stored: Option<&Routing>) -> Result<(BaseInput, RoutingInput)> {
        parse(&app.state(), body.0, mode)
    }

    fn parse_patch(app: &App, body: Untyped, stored: Option<&Routing>) -> Result<(BaseInput, RoutingInput)> {
        Self::parse(app, body, Mode::Patch, stored)
    }

    fn own_rs(_: &BaseInput, input: &RoutingInput) -> Option<Uuid> {
        input.rs
    }

    fn create(_: &mut Write<'_>, input: RoutingInput, mut meta: Meta) -> Result<Routing> {
        meta.rs = input.rs;
        Ok(Routing {
            meta,
            proxy_url: input.proxy_url.unwrap_or_default(),
        })
    }

    fn replace(_: &mut Write<'_>, input: RoutingInput, r: &mut Routing) -> Result<()> {
        r.proxy_url = input.proxy_url.unwrap_or_default();
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

    fn render(_: &App, _: &Snapshot, r: &Routing) -> Untyped {
        Untyped({
            let mut o = base_json(&r.meta, false);
            o.insert("resourceSetId".into(), json!(r.meta.rs));
            o.insert("proxyUrl".into(), json!(r.proxy_url));
            Value::Object(o)
        })
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
