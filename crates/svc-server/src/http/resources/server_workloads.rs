//! Server workloads (contract §3.4): the targets workloads ask credentials for.

use serde_json::{Value, json};
use svc_api::Obj;
use svc_api::common::KeyValue;
use uuid::Uuid;

use super::common::{BaseInput, Mode, base_json, parse_base};
use super::crud::{self, OnCreate, OnMissing, Resource};
use crate::app::App;
use crate::domain::workload::{Endpoint, ServerWorkload, ServiceAuth};
use crate::domain::{Label, Meta};
use crate::error::{Error, Result};
use crate::http::api::{Api, Untyped};
use crate::http::list::{Base, Filter, ListSpec, field_filter};
use crate::service::refs::{RefField, release};
use crate::service::write::{Author, Write};
use crate::state::State as Snapshot;

pub const APP_PROTOCOLS: &[&str] = &[
    "CloudA Warehouse",
    "HTTP",
    "MCP",
    "MySQL",
    "OAuth",
    "Oracle Database",
    "PostgreSQL",
    "Redis",
    "DataWarehouseA",
];

const AUTH_SCHEMES: &[(&str, &[&str])] = &[
    ("API Key", &["Header", "Query Parameter"]),
    (
        "HTTP Authentication",
        &["Basic", "Bearer", "Header", "CloudA Signature v4"],
    ),
    ("JWT Token Authentication", &["DataWarehouseA JWT"]),
    ("OAuth Client Authentication", &["POST Body"]),
    ("Password Authentication", &["Password"]),
    ("mTLS Authentication", &["x509 Certificate"]),
];

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

pub fn endpoint_json(e: &Endpoint) -> Value {
    json!({
        "externalId": e.id.to_string(),
        "id": e.seq,
        "host": e.host,
        "appProtocol": e.app_protocol,
        "transportProtocol": e.transport_protocol,
        "requestedPort": e.requested_port,
        "requestedTls": e.requested_tls,
        "port": e.port,
        "tls": e.tls,
        "tlsVerification": e.tls_verification,
        "workloadServiceAuthentication": e.auth.as_ref().map(|a| json!({"method": a.method, "scheme": a.scheme, "config": a.config})),
        "urlPath": e.url_path,
        "httpHeaders": e.http_headers,
    })
}

pub fn server_json(st: &Snapshot, w: &ServerWorkload) -> Value {
    let mut o = base_json(&w.meta, true);
    o.insert("serviceEndpoint".into(), endpoint_json(&w.endpoint));
    o.insert("type".into(), json!(w.label));
    o.insert(
        "accessPolicyCount".into(),
        json!(st.idx.policy_count(RefField::ServerWorkload, w.meta.id)),
    );
    Value::Object(o)
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

fn parse_endpoint(o: &mut Obj) -> std::result::Result<Endpoint, svc_api::FieldError> {
    o.ignore(&["externalId", "id"]);
    let host = o.req_str_len("host", 1, 253)?;
    check_host(&host).map_err(|r| svc_api::FieldError::new(o.path("host"), r))?;
    let app_protocol = o.req_enum("appProtocol", APP_PROTOCOLS)?;
    let transport_protocol = o.req_enum("transportProtocol", &["TCP"])?;
    let requested_port = o.req_i32_range("requestedPort", 1, 65535)?;
    let requested_tls = o.req_bool("requestedTls")?;
    let port = o.req_i32_range("port", 1, 65535)?;
    let tls = o.req_bool("tls")?;
    let tls_verification = o.req_enum("tlsVerification", &["full", "none"])?;
    let auth = match o.opt_obj("workloadServiceAuthentication")? {
        None => None,
        Some(mut a) => {
            let methods: Vec<&str> = AUTH_SCHEMES.iter().map(|(m, _)| *m).collect();
            let method = a.req_enum("method", &methods)?;
            let schemes = AUTH_SCHEMES
                .iter()
                .find(|(m, _)| *m == method)
                .map(|(_, s)| *s)
                .unwrap_or(&[]);
            let scheme = a.req_enum("scheme", schemes)?;
            let config = a.opt_str_len("config", 0, 256)?;
            if matches!(scheme.as_str(), "Header" | "Query Parameter") && config.as_deref().is_none_or(str::is_empty) {
                return Err(svc_api::FieldError::new(
                    a.path("config"),
                    "is required for schemes Header and Query Parameter",
                ));
            }
            a.finish()?;
            Some(Box::new(ServiceAuth { method, scheme, config }))
        }
    };
    let url_path = o.opt_str_len("urlPath", 0, 2048)?;
    if url_path.is_some() && app_protocol != "OAuth" {
        return Err(svc_api::FieldError::new(
            o.path("urlPath"),
            "is only allowed with appProtocol OAuth",
        ));
    }
    let http_headers = o
        .opt_obj_list("httpHeaders", |h| {
            Ok(KeyValue {
                key: h.opt_str("key")?,
                value: h.opt_str("value")?,
            })
        })?
        .unwrap_or_default();
    if app_protocol == "MCP" && (requested_port != port || requested_tls != tls) {
        let field = if requested_port != port { "port" } else { "tls" };
        return Err(svc_api::FieldError::new(
            o.path(field),
            "MCP requires port = requestedPort and tls = requestedTls",
        ));
    }
    Ok(Endpoint {
        id: Uuid::nil(),
        seq: 0,
        host,
        app_protocol: Label::new(&app_protocol),
        transport_protocol: Label::new(&transport_protocol),
        requested_port,
        requested_tls,
        port,
        tls,
        tls_verification: Label::new(&tls_verification),
        auth,
        url_path,
        http_headers,
    })
}

pub struct Input {
    endpoint: Option<Endpoint>,
    label: Option<String>,
}

fn parse(body: Value, mode: Mode) -> Result<(BaseInput, Input)> {
    let mut o = Obj::root(body)?;
    let base = parse_base(&mut o, mode, true)?;
    let (endpoint, label) = if mode == Mode::Patch {
        (None, None)
    } else {
        let mut ep = o.req_obj("serviceEndpoint")?;
        let e = parse_endpoint(&mut ep)?;
        ep.finish()?;
        (Some(e), o.opt_str_len("type", 0, 64)?)
    };
    o.ignore(&["accessPolicyCount"]);
    o.finish()?;
    Ok((base, Input { endpoint, label }))
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
    type Dto = Untyped;
    type Patch = Untyped;
    const NAME: &'static str = "server workloads";
    const LIST: ListSpec = SPEC;
    const ON_CREATE: OnCreate = OnCreate::Location;
    // The spec lists only 204 for this DELETE: a missing id is a no-op.
    const ON_MISSING_DELETE: OnMissing = OnMissing::NoContent;

    fn parse(_app: &App, body: Untyped, mode: Mode, _stored: Option<&ServerWorkload>) -> Result<(BaseInput, Input)> {
        parse(body.0, mode)
    }

    fn parse_patch(app: &App, body: Untyped, stored: Option<&ServerWorkload>) -> Result<(BaseInput, Input)> {
        Self::parse(app, body, Mode::Patch, stored)
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

    fn render(_: &App, st: &Snapshot, w: &ServerWorkload) -> Untyped {
        Untyped(server_json(st, w))
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
