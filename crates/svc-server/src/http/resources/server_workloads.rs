//! Server workloads (contract §3.4): the targets workloads ask credentials for.

use svc_api::mgmt::{
    AppProtocol, AuthMethod, ServerWorkloadDto, ServerWorkloadPatchDto, TlsVerification,
    WorkloadServiceAuthenticationDto, WorkloadServiceEndpointDto,
};
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_dto, base_input, patch_input};
use super::crud::{self, OnCreate, OnMissing, Resource};
use crate::app::App;
use crate::domain::workload::{Endpoint, ServerWorkload, ServiceAuth};
use crate::domain::{Label, Meta};
use crate::error::{Error, Result};
use crate::http::api::Api;
use crate::http::list::{Base, Filter, ListSpec, field_filter};
use crate::service::refs::{RefField, release};
use crate::service::write::{Author, Write};
use crate::state::State as Snapshot;

/// `/api/v1/server-workloads` on the shared CRUD layer.
pub struct ServerWorkloads;

pub fn register(api: &mut Api<'_>) {
    crud::register::<ServerWorkloads>(api, "/api/v1/server-workloads");
}

const SPEC: ListSpec = ListSpec::new("serverWorkloads", Base::Scoped)
    .fields(&[
        "type",
        "accessPolicyCount",
        "serviceEndpoint.host",
        "serviceEndpoint.appProtocol",
        "serviceEndpoint.requestedPort",
        "serviceEndpoint.port",
    ])
    .filters(&[
        ("host", Filter::Field("serviceEndpoint.host")),
        ("port", Filter::Field("serviceEndpoint.requestedPort")),
        ("appProtocol", Filter::Field("serviceEndpoint.appProtocol")),
        field_filter("type"),
    ]);

/// `WorkloadServiceEndpointDTO`.
pub fn endpoint_dto(e: &Endpoint) -> WorkloadServiceEndpointDto {
    let auth = e.auth.as_ref().and_then(|a| {
        Some(WorkloadServiceAuthenticationDto {
            method: AuthMethod::parse(&a.method)?,
            scheme: a.scheme.clone(),
            config: a.config.clone(),
        })
    });
    WorkloadServiceEndpointDto {
        external_id: Some(e.id),
        id: e.seq,
        host: e.host.clone(),
        app_protocol: AppProtocol::parse(&e.app_protocol).unwrap_or(AppProtocol::Http),
        transport_protocol: svc_api::mgmt::TransportProtocol::Tcp,
        requested_port: e.requested_port,
        requested_tls: e.requested_tls,
        port: e.port,
        tls: e.tls,
        tls_verification: if &*e.tls_verification == "none" {
            TlsVerification::None
        } else {
            TlsVerification::Full
        },
        workload_service_authentication: auth,
        url_path: e.url_path.clone(),
        http_headers: Some(e.http_headers.clone()),
    }
}

/// `ServerWorkloadExternalDTO`.
pub fn server_dto(st: &Snapshot, w: &ServerWorkload) -> ServerWorkloadDto {
    ServerWorkloadDto {
        base: base_dto(&w.meta),
        resource_set: Some(w.meta.scope()),
        service_endpoint: endpoint_dto(&w.endpoint),
        label: w.label.clone(),
        access_policy_count: crud::count(st.idx.policy_count(RefField::ServerWorkload, w.meta.id)),
    }
}

fn valid_label(l: &str) -> bool {
    !l.is_empty()
        && l.len() <= 63
        && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !l.starts_with('-')
        && !l.ends_with('-')
}

/// Hostname, FQDN, IP literal, or `*.<suffix>` with at least two labels in the suffix.
pub fn check_host(host: &str) -> std::result::Result<(), &'static str> {
    if host.parse::<std::net::IpAddr>().is_ok() || host.trim_matches(['[', ']']).parse::<std::net::Ipv6Addr>().is_ok() {
        return Ok(());
    }
    if host.len() > 253 {
        return Err("must be at most 253 characters");
    }
    let (wild, rest) = match host.strip_prefix("*.") {
        Some(r) => (true, r),
        None => (false, host),
    };
    let labels: Vec<&str> = rest.trim_end_matches('.').split('.').collect();
    if labels.iter().any(|l| !valid_label(l)) {
        return Err("must be a host name, an IP address, or *.<domain>");
    }
    if wild && labels.len() < 2 {
        return Err("a wildcard needs a suffix of at least two labels (*.example.com)");
    }
    Ok(())
}

/// The endpoint of a body (its schema checked): the rules across its fields.
fn parse_endpoint(e: WorkloadServiceEndpointDto) -> Result<Endpoint> {
    let at = |f: &str| format!("serviceEndpoint.{f}");
    check_host(&e.host).map_err(|r| Error::field(at("host"), r))?;
    let auth = match e.workload_service_authentication {
        None => None,
        Some(a) => {
            let (method, schemes) = a.method.spec();
            if !schemes.contains(&a.scheme.as_str()) {
                return Err(Error::field(
                    at("workloadServiceAuthentication.scheme"),
                    format!("must be one of {}", schemes.join(", ")),
                ));
            }
            if matches!(a.scheme.as_str(), "Header" | "Query Parameter")
                && a.config.as_deref().is_none_or(str::is_empty)
            {
                return Err(Error::field(
                    at("workloadServiceAuthentication.config"),
                    "is required for schemes Header and Query Parameter",
                ));
            }
            Some(Box::new(ServiceAuth {
                method: method.to_string(),
                scheme: a.scheme,
                config: a.config,
            }))
        }
    };
    if e.url_path.is_some() && e.app_protocol != AppProtocol::OAuth {
        return Err(Error::field(at("urlPath"), "is only allowed with appProtocol OAuth"));
    }
    if e.app_protocol == AppProtocol::Mcp && (e.requested_port != e.port || e.requested_tls != e.tls) {
        let field = if e.requested_port != e.port { "port" } else { "tls" };
        return Err(Error::field(
            at(field),
            "MCP requires port = requestedPort and tls = requestedTls",
        ));
    }
    let verification = match e.tls_verification {
        TlsVerification::Full => "full",
        TlsVerification::None => "none",
    };
    Ok(Endpoint {
        id: Uuid::nil(),
        seq: 0,
        host: e.host,
        app_protocol: Label::new(e.app_protocol.as_str()),
        transport_protocol: Label::new("TCP"),
        requested_port: e.requested_port,
        requested_tls: e.requested_tls,
        port: e.port,
        tls: e.tls,
        tls_verification: Label::new(verification),
        auth,
        url_path: e.url_path,
        http_headers: e.http_headers.unwrap_or_default(),
    })
}

pub struct Input {
    endpoint: Option<Endpoint>,
    label: Option<String>,
}

/// Two active server workloads of a resource set must not share (host, requestedPort, transport).
fn check_unique(st: &Snapshot, w: &ServerWorkload) -> Result<()> {
    if !w.meta.active {
        return Ok(());
    }
    // Candidates from the endpoint index (same resource set, lower-cased host, port, transport): a
    // superset of the clashes, so loading n workloads no longer scans n workloads each time.
    let (wildcard, key) = crate::state::index::endpoint_key(w);
    let index = if wildcard {
        &st.idx.servers_wildcard
    } else {
        &st.idx.servers_exact
    };
    let mut candidates = index
        .get(&key)
        .into_iter()
        .flatten()
        .filter_map(|id| st.server_workloads.get(id));
    let clash = candidates.find(|o| {
        o.meta.id != w.meta.id
            && o.meta.rs == w.meta.rs
            && o.meta.active
            && o.endpoint.host.eq_ignore_ascii_case(&w.endpoint.host)
            && o.endpoint.requested_port == w.endpoint.requested_port
            && o.endpoint.transport_protocol == w.endpoint.transport_protocol
    });
    match clash {
        Some(o) => Err(Error::field(
            "serviceEndpoint.host",
            format!(
                "active server workload {} already serves {}:{}",
                o.meta.named(),
                w.endpoint.host,
                w.endpoint.requested_port
            ),
        )),
        None => Ok(()),
    }
}

impl Resource for ServerWorkloads {
    type Record = ServerWorkload;
    type Input = Input;
    type Dto = ServerWorkloadDto;
    type Patch = ServerWorkloadPatchDto;
    const NAME: &'static str = "server workloads";
    const LIST: ListSpec = SPEC;
    const ON_CREATE: OnCreate = OnCreate::Location;
    // The spec lists only 204 for this DELETE: a missing id is a no-op.
    const ON_MISSING_DELETE: OnMissing = OnMissing::NoContent;

    fn parse(_: &App, dto: ServerWorkloadDto, _: Mode, _: Option<&ServerWorkload>) -> Result<(BaseInput, Input)> {
        let base = base_input(dto.base, dto.resource_set)?;
        let input = Input {
            endpoint: Some(parse_endpoint(dto.service_endpoint)?),
            label: dto.label,
        };
        Ok((base, input))
    }

    /// The base fields only: the endpoint changes through PUT.
    fn parse_patch(_: &App, p: ServerWorkloadPatchDto, _: Option<&ServerWorkload>) -> Result<(BaseInput, Input)> {
        let mut base = patch_input(svc_api::mgmt::EntityPatch {
            external_id: p.external_id,
            name: p.name,
            description: p.description,
            is_active: p.is_active,
            tags: p.tags,
        })?;
        base.resource_set = p.resource_set;
        Ok((
            base,
            Input {
                endpoint: None,
                label: None,
            },
        ))
    }

    fn create(_: &mut Write<'_>, input: Input, meta: Meta) -> Result<ServerWorkload> {
        let mut endpoint = input.endpoint.expect("required");
        endpoint.id = Uuid::new_v4();
        endpoint.seq = meta.seq;
        Ok(ServerWorkload {
            meta,
            endpoint,
            label: input.label,
        })
    }

    fn replace(_: &mut Write<'_>, input: Input, sw: &mut ServerWorkload) -> Result<()> {
        let mut endpoint = input.endpoint.expect("required");
        endpoint.id = sw.endpoint.id;
        endpoint.seq = sw.endpoint.seq;
        sw.endpoint = endpoint;
        sw.label = input.label;
        Ok(())
    }

    fn check(w: &Write<'_>, sw: &ServerWorkload) -> Result<()> {
        check_unique(&w.st, sw)
    }

    fn before_delete(w: &mut Write<'_>, author: &Author, _: Uuid, id: Uuid) -> Result<()> {
        release(w, author, id, RefField::ServerWorkload)
    }

    fn render(_: &App, st: &Snapshot, w: &ServerWorkload) -> ServerWorkloadDto {
        server_dto(st, w)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hosts() {
        for ok in [
            "api.partner.example",
            "localhost",
            "10.0.0.1",
            "::1",
            "*.example.com",
            "db_1.internal",
        ] {
            assert!(super::check_host(ok).is_ok(), "{ok}");
        }
        for bad in ["*.com", "*.example", "bad host", "a..b", "-x.com", "*"] {
            assert!(super::check_host(bad).is_err(), "{bad}");
        }
    }
}
