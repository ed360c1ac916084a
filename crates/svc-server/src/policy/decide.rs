//! The `/edge/v1/credentials` decision (contract §4.8 steps 3–11) as named steps over the
//! in-memory state: pure and synchronous, no I/O (architecture invariant 1: `policy` decides;
//! `trust` and `credential` never do). One driver runs them, `edge::pipeline::run`, for both the
//! Edge handler and the explain endpoint, and adds their I/O (the evidence step 8 verifies,
//! step 9's vendors, step 12's fetch). Each step records what it identified in the authorization
//! event's parts, and what it saw in the [`Run`].

use std::sync::Arc;

use svc_api::edge::{ApiCredentialsRequest, ClientWorkloadDetails, ConnectionMetadata, CredentialType};
use uuid::Uuid;

use super::conditions::{self, CloudResource, Device, Geo, Lookup};
use super::identity::Subject;
use super::outcome::{AttestationResult, CpResult, EntityResult, Parts};
use crate::credential::{CompiledCredential, Issued};
use crate::domain::Label;
use crate::domain::condition::{AccessCondition, ConditionSpec};
use crate::domain::policy::{Mapping, MappingType, Policy};
use crate::domain::workload::{ClientWorkload, ServerWorkload};
use crate::state::{HasMeta, State as Snapshot};
use crate::trust::{CompiledTrust, TrustError};

pub const INVALID: &str = "The credentials request is invalid.";
pub const NOT_APPLICABLE: &str = "Not applicable for this request.";
pub const SEVERAL_POLICIES: &str =
    "Several access policies match this request; set CLIENT_WORKLOAD_ID to select the client workload.";
pub const SELECTOR_REQUIRED: &str =
    "connectionMetadata is required: the access policy has several credential providers.";

/// A validated request body (step 3).
#[derive(Clone, Copy)]
pub struct Valid<'a> {
    pub req: &'a ApiCredentialsRequest,
    pub host: &'a str,
    pub port: i32,
    pub credential_type: CredentialType,
}

pub fn validate_body(parsed: &Option<ApiCredentialsRequest>) -> Result<Valid<'_>, String> {
    let invalid = |field: &str, reason: &str| format!("{INVALID} {field}: {reason}");
    let Some(req) = parsed else {
        return Err(INVALID.to_string());
    };
    if req.client.is_none() {
        return Err(invalid("client", "is required"));
    }
    let Some(server) = &req.server else {
        return Err(invalid("server", "is required"));
    };
    let Some(ct) = req.credential_type.as_deref() else {
        return Err(invalid("credentialType", "is required"));
    };
    let host = server
        .host
        .as_deref()
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .ok_or_else(|| invalid("server.host", "is required"))?;
    let port = server.port.ok_or_else(|| invalid("server.port", "is required"))?;
    if !(1..=65535).contains(&port) {
        return Err(invalid("server.port", "must be 1..65535"));
    }
    if server.transport_protocol.as_deref().is_some_and(|t| t != "TCP") {
        return Err(invalid("server.transportProtocol", "must be TCP"));
    }
    // §4.8 step 3 checks the server before the credential type's value.
    let credential_type = match CredentialType::parse(ct) {
        Some(CredentialType::Unknown) => {
            return Err(invalid("credentialType", "must not be Unknown"));
        }
        Some(t) => t,
        None => {
            let names: Vec<&str> = CredentialType::ALL[1..].iter().map(|t| t.as_str()).collect();
            return Err(invalid(
                "credentialType",
                &format!("must be one of {}", names.join(", ")),
            ));
        }
    };
    if let Some(cm) = &req.connection_metadata {
        if let Some(k) = &cm.access_key_id
            && (k.is_empty() || !k.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()))
        {
            return Err(invalid("connectionMetadata.accessKeyId", "must match ^[A-Z0-9]+$"));
        }
        if cm.header_name.is_some() != cm.header_value.is_some() {
            return Err(invalid(
                "connectionMetadata.headerName",
                "headerName and headerValue must be given together",
            ));
        }
        if cm.http_body_field_path.is_some() != cm.http_body_field_value.is_some() {
            return Err(invalid(
                "connectionMetadata.httpBodyFieldPath",
                "httpBodyFieldPath and httpBodyFieldValue must be given together",
            ));
        }
    }
    if credential_type == CredentialType::X509Svid {
        let csr = req
            .cert_signing_request
            .as_deref()
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| invalid("certSigningRequest", "is required for X509Svid"))?;
        if let Err(reason) = crate::credential::check_csr(csr) {
            return Err(invalid("certSigningRequest", &reason));
        }
    }
    Ok(Valid {
        req,
        host,
        port: port as i32,
        credential_type,
    })
}

pub fn entity(id: Uuid, name: &str) -> EntityResult {
    EntityResult {
        id,
        name: name.to_string(),
        result: "Identified",
        matches: None,
    }
}

/// How an authorization event names a step's candidates (§3.24): the chosen one, with `matches`
/// when several matched, and the list of all of them only then.
pub fn chosen_among<T: HasMeta>(all: &[Arc<T>], pick: Uuid) -> (Option<EntityResult>, Vec<EntityResult>) {
    let several = (all.len() > 1).then(|| all.iter().map(|c| c.meta().id).collect::<Vec<_>>());
    let listed = match several {
        Some(_) => all.iter().map(|c| entity(c.meta().id, &c.meta().name)).collect(),
        None => Vec::new(),
    };
    let chosen = all.iter().find(|c| c.meta().id == pick).map(|c| EntityResult {
        matches: several,
        ..entity(c.meta().id, &c.meta().name)
    });
    (chosen, listed)
}

/// What a workload event records once a server workload was identified.
pub struct Identified {
    pub server: Uuid,
    pub app_protocol: Label,
    pub port: i32,
    pub policy: Option<Uuid>,
    pub client: Option<Uuid>,
}

/// The decision of steps 4–11 (or its failure).
#[derive(Clone, Copy, Debug)]
pub struct Decision {
    pub status: u16,
    pub message: &'static str,
    pub reason: Option<&'static str>,
    pub body_unknown: bool,
}

impl Decision {
    /// Nothing refused: step 12 hands out what the provider gives.
    pub fn allowed() -> Decision {
        Decision {
            status: 200,
            message: "",
            reason: None,
            body_unknown: false,
        }
    }
    pub fn fail(status: u16, message: &'static str, reason: &'static str) -> Decision {
        Decision {
            status,
            message,
            reason: Some(reason),
            body_unknown: false,
        }
    }
    pub fn not_found(reason: &'static str) -> Decision {
        Decision {
            status: 404,
            message: "",
            reason: Some(reason),
            body_unknown: true,
        }
    }
}

/// One run of the decision (§4.8 steps 3–12), as `edge::pipeline::run` drives it for both its
/// callers: what each step saw, and the step that refused. The Edge handler answers and records
/// its events from it (with the authorization event's [`Parts`], which the steps fill); explain
/// turns the two into its trace (`policy::explain`). Filling it moves what the steps computed
/// anyway: nothing is allocated for it.
#[derive(Default)]
pub struct Run<'r> {
    /// Step 3: the body, once valid; else `invalid` holds the message of its 400.
    pub valid: Option<Valid<'r>>,
    pub invalid: Option<String>,
    /// Step 4: the request's resource set, once it is the token's.
    pub rs: Option<Uuid>,
    /// Steps 5 and 6: the candidates (empty when not reached or none matched).
    pub clients: Vec<Arc<ClientWorkload>>,
    pub servers: Vec<Arc<ServerWorkload>>,
    /// What a workload event records once a server workload was identified.
    pub identified: Option<Identified>,
    /// Step 7: the one policy.
    pub policy: Option<Arc<Policy>>,
    /// Step 8: how the policy's trust providers were satisfied.
    pub attestation: Attested,
    /// Steps 10–11: the chosen provider, and a dynamic value it cannot resolve.
    pub provider: Option<Arc<CompiledCredential>>,
    pub unresolvable: Option<String>,
    /// Step 12 (the Edge handler only): the credential, or the upstream's failure.
    pub issued: Option<Result<Issued, String>>,
    /// The step that refused and its decision; `None`: allowed.
    pub refusal: Option<(u8, Decision)>,
}

/// How step 8 went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Attested {
    #[default]
    NotReached,
    /// The policy lists no trust provider.
    NoneListed,
    /// The policy lists the edge token's own provider.
    TokenProvider,
    /// The request's evidence was verified against the policy's providers (its checks are the
    /// authorization event's `trustProviders`).
    Verified,
}

impl Run<'_> {
    /// Refused at `step`: the run ends here.
    pub fn refused(mut self, step: u8, d: Decision) -> Self {
        self.refusal = Some((step, d));
        self
    }

    /// The answer's decision (allowed when no step refused).
    pub fn decision(&self) -> Decision {
        self.refusal.map_or_else(Decision::allowed, |(_, d)| d)
    }
}

/// Step 6: exact host first, then the longest wildcard suffix (§4.8).
pub fn server_candidates(st: &Snapshot, rs: Uuid, host: &str, port: i32) -> Vec<Arc<ServerWorkload>> {
    let host = host.to_lowercase();
    let active = |ids: Option<&crate::state::index::IdSet>| -> Vec<Arc<ServerWorkload>> {
        ids.into_iter()
            .flatten()
            .filter_map(|id| st.server_workloads.get(id))
            .filter(|w| w.meta.active)
            .cloned()
            .collect()
    };
    static TCP: std::sync::LazyLock<Label> = std::sync::LazyLock::new(|| Label::new("TCP"));
    let exact = active(st.idx.servers_exact.get(&(rs, host.clone(), port, TCP.clone())));
    if !exact.is_empty() {
        return exact;
    }
    let labels: Vec<&str> = host.split('.').collect();
    for start in 1..labels.len().saturating_sub(1) {
        let suffix = labels[start..].join(".");
        let found = active(st.idx.servers_wildcard.get(&(rs, suffix, port, TCP.clone())));
        if !found.is_empty() {
            return found;
        }
    }
    vec![]
}

/// Step 5: active client workloads of the set whose identities all match.
pub fn client_candidates(st: &Snapshot, rs: Uuid, subject: &Subject<'_>) -> Vec<Arc<ClientWorkload>> {
    let mut ids: Vec<Uuid> = Vec::new();
    match subject.client_workload_id() {
        Some(cwid) => {
            ids.extend(
                st.idx
                    .clients_by_identity
                    .get(&(rs, "svcClientId", None, cwid.to_string()))
                    .into_iter()
                    .flatten(),
            );
        }
        None => {
            if let Some(groups) = st.idx.identity_groups.get(&rs) {
                for (ty_name, key) in groups.keys() {
                    let Some(ty) = crate::domain::identity::lookup(ty_name) else {
                        continue;
                    };
                    for v in subject.values(ty, key.as_deref()) {
                        let k = (rs, *ty_name, key.clone(), crate::state::index::normalise(ty, &v));
                        ids.extend(st.idx.clients_by_identity.get(&k).into_iter().flatten());
                    }
                }
            }
            ids.extend(st.idx.clients_scan.get(&rs).into_iter().flatten());
        }
    }
    ids.sort();
    ids.dedup();
    ids.iter()
        .filter_map(|id| st.client_workloads.get(id))
        .filter(|w| w.meta.active && subject.matches(w))
        .cloned()
        .collect()
}

/// Step 10's selector (§4.8): which mapping `connectionMetadata` names.
pub fn selected(m: &Mapping, cm: &ConnectionMetadata) -> bool {
    let s = m.selectors();
    match m.mapping_type {
        MappingType::AccessKeyId => cm.access_key_id.is_some() && cm.access_key_id == s.access_key_id,
        MappingType::AccountName => cm.account_name.is_some() && cm.account_name == s.account_name,
        MappingType::HttpHeader => {
            cm.header_name
                .as_deref()
                .zip(s.header_name.as_deref())
                .is_some_and(|(a, b)| a.eq_ignore_ascii_case(b))
                && cm.header_value.is_some()
                && cm.header_value == s.header_value
        }
        MappingType::HttpBody => {
            cm.http_body_field_path.is_some()
                && cm.http_body_field_path == s.body_field_path
                && cm.http_body_field_value.is_some()
                && cm.http_body_field_value == s.body_field_value
        }
        MappingType::None => false,
    }
}

/// What steps 4–7 chose: the request's resource set and its one access policy.
pub struct Matched {
    pub rs: Uuid,
    pub policy: Arc<Policy>,
}

/// Steps 4–7: the resource set, the client workloads the subject matches, the server workloads
/// of the target, and the one active policy between them. `identified` gets what a workload
/// event records once a server workload is known; `ev` the workloads and policies named.
pub fn match_policy(
    st: &Snapshot,
    selected_rs: Option<Uuid>,
    token_rs: Uuid,
    subject: &Subject<'_>,
    valid: &Valid<'_>,
    ev: &mut Parts,
    run: &mut Run<'_>,
) -> Result<Matched, (u8, Decision)> {
    // Step 4: resource set.
    let Some(rs) = selected_rs else {
        return Err((4, Decision::fail(400, INVALID, "InvalidRequest")));
    };
    if rs != token_rs {
        return Err((4, Decision::fail(403, NOT_APPLICABLE, "ResourceSetMismatch")));
    }
    run.rs = Some(rs);
    // Step 5: client workloads.
    let clients = client_candidates(st, rs, subject);
    if clients.is_empty() {
        return Err((5, Decision::not_found("NoClientWorkload")));
    }
    // Step 6: server workloads.
    let servers = server_candidates(st, rs, valid.host, valid.port);
    if servers.is_empty() {
        // As at step 7 with no policy chosen: the first candidate.
        (ev.client_workload, ev.client_workloads) = chosen_among(&clients, clients[0].meta.id);
        run.clients = clients;
        return Err((6, Decision::not_found("NoServerWorkload")));
    }
    let decided = step_7(st, rs, &clients, &servers, ev, &mut run.identified);
    run.clients = clients;
    run.servers = servers;
    decided
}

/// Step 7 over the candidates of steps 5 and 6.
fn step_7(
    st: &Snapshot,
    rs: Uuid,
    clients: &[Arc<ClientWorkload>],
    servers: &[Arc<ServerWorkload>],
    ev: &mut Parts,
    identified: &mut Option<Identified>,
) -> Result<Matched, (u8, Decision)> {
    // Step 7: the policy.
    let mut policies: Vec<Arc<Policy>> = Vec::new();
    for c in clients {
        for s in servers {
            if let Some(ids) = st.idx.policies_by_pair.get(&(c.meta.id, s.meta.id)) {
                policies.extend(
                    ids.iter()
                        .filter_map(|id| st.policies.get(id))
                        .filter(|p| p.meta.active && p.meta.rs == Some(rs))
                        .cloned(),
                );
            }
        }
    }
    let record_workloads = |ev: &mut Parts, p: Option<&Policy>| {
        let pick_c = p.map(|p| p.client_workload).unwrap_or(clients[0].meta.id);
        let pick_s = p.map(|p| p.server_workload).unwrap_or(servers[0].meta.id);
        (ev.client_workload, ev.client_workloads) = chosen_among(clients, pick_c);
        (ev.server_workload, ev.server_workloads) = chosen_among(servers, pick_s);
    };
    let server = if policies.len() == 1 {
        st.server_workloads
            .get(&policies[0].server_workload)
            .cloned()
            .unwrap_or_else(|| servers[0].clone())
    } else {
        servers[0].clone()
    };
    let client_id = if policies.len() == 1 {
        Some(policies[0].client_workload)
    } else if clients.len() == 1 {
        Some(clients[0].meta.id)
    } else {
        None
    };
    *identified = Some(Identified {
        server: server.meta.id,
        app_protocol: server.endpoint.app_protocol.clone(),
        port: server.endpoint.requested_port,
        policy: policies.first().filter(|_| policies.len() == 1).map(|p| p.meta.id),
        client: client_id,
    });
    let policy = match policies.len() {
        0 => {
            record_workloads(ev, None);
            return Err((7, Decision::not_found("NoAccessPolicy")));
        }
        1 => policies[0].clone(),
        _ => {
            record_workloads(ev, None);
            let ids: Vec<Uuid> = policies.iter().map(|p| p.meta.id).collect();
            ev.access_policies = policies.iter().map(|p| entity(p.meta.id, &p.meta.name)).collect();
            ev.access_policy = Some(EntityResult {
                matches: Some(ids),
                ..entity(policies[0].meta.id, &policies[0].meta.name)
            });
            return Err((7, Decision::fail(400, SEVERAL_POLICIES, "MultipleAccessPolicies")));
        }
    };
    record_workloads(ev, Some(&policy));
    ev.access_policy = Some(entity(policy.meta.id, &policy.meta.name));
    Ok(Matched { rs, policy })
}

/// Step 8: what attestation the policy asks for.
pub enum Attestation<'s> {
    /// The policy names no trust provider, or the token's own provider (recorded as attested).
    Done,
    /// Evidence to verify against these providers, in order, until one attests.
    Verify(Vec<&'s Arc<CompiledTrust>>),
}

pub fn attestation<'s>(st: &'s Snapshot, policy: &Policy, token_tp: Uuid, rs: Uuid, ev: &mut Parts) -> Attestation<'s> {
    if policy.trust_providers.is_empty() {
        return Attestation::Done;
    }
    if policy.trust_providers.contains(&token_tp) {
        if let Some(tp) = st.idx.trust.get(&token_tp) {
            ev.trust_providers.push(attested(tp));
        }
        return Attestation::Done;
    }
    Attestation::Verify(
        policy
            .trust_providers
            .iter()
            .filter_map(|id| st.idx.trust.get(id).filter(|t| t.active && t.rs == rs))
            .collect(),
    )
}

fn attested(tp: &CompiledTrust) -> AttestationResult {
    trust_result(tp, None)
}

/// The longest description of a failed check an event keeps (a row stays small).
const DETAIL_MAX: usize = 200;

/// A trust provider's entry in an authorization event (`/edge/v1/auth`'s and step 8's): `Attested`,
/// or refused with its reason and the failed check — the attribute it compared, the values it
/// expected and the one it found (a match rule, a claim such as `aud`, `iss` or `exp`), and its
/// one-line description (`detail`, e.g. "malformed token: not three parts"). Never the
/// evidence itself: only a compared value, as the log line says it.
pub fn trust_result(tp: &CompiledTrust, refused: Option<&TrustError>) -> AttestationResult {
    let mut a = AttestationResult {
        id: tp.id,
        name: tp.name.clone(),
        result: "Attested",
        ..Default::default()
    };
    if let Some(e) = refused {
        a.result = "Unauthorized";
        a.reason = Some(e.reason().into());
        if let Some((attribute, expected, actual)) = e.check() {
            a.attribute = Some(attribute.to_string());
            a.expected_values = Some(expected.to_vec());
            a.actual_value = actual.map(str::to_string);
        }
        let mut detail = e.detail();
        if detail.len() > DETAIL_MAX {
            let mut end = DETAIL_MAX;
            while !detail.is_char_boundary(end) {
                end -= 1;
            }
            detail.truncate(end);
            detail.push('…');
        }
        a.detail = Some(detail);
    }
    a
}

/// Step 8 for one provider the handler verified: recorded; `true` when it attested.
pub fn record_attestation(tp: &CompiledTrust, outcome: Result<(), TrustError>, ev: &mut Parts) -> bool {
    let passed = outcome.is_ok();
    ev.trust_providers.push(trust_result(tp, outcome.err().as_ref()));
    passed
}

/// Step 8's verdict when no verified provider attested.
pub fn attestation_failed() -> Decision {
    Decision::fail(403, NOT_APPLICABLE, "AttestationFailed")
}

/// Step 9: the policy's active access conditions, in the policy's order (inactive ones are
/// skipped, §4.8).
pub fn access_conditions_of<'s>(st: &'s Snapshot, policy: &Policy) -> Vec<&'s Arc<AccessCondition>> {
    policy
        .access_conditions
        .iter()
        .filter_map(|id| st.access_conditions.get(id))
        .filter(|c| c.meta.active)
        .collect()
}

/// The policy's active content-security entries, reported as `Identified` (§3.13, §4.11); they
/// change no decision.
pub fn content_security(st: &Snapshot, policy: &Policy, ev: &mut Parts) {
    for c in policy
        .content_security
        .iter()
        .filter_map(|id| st.content_security.get(id))
        .filter(|c| c.meta.active)
    {
        ev.content_security.push(AttestationResult {
            id: c.meta.id,
            name: c.meta.name.clone(),
            result: "Identified",
            ..Default::default()
        });
    }
}

/// What step 9 compares besides the conditions: the time, the GeoIP answer for the source IP,
/// what the handler looked up at the vendors (by condition id), and the request's client.
pub struct ConditionInputs<'a> {
    pub now: jiff::Timestamp,
    pub geo: Option<&'a Geo>,
    pub devices: &'a [(Uuid, Lookup<Device>)],
    pub resources: &'a [(Uuid, Lookup<CloudResource>)],
    pub client: &'a ClientWorkloadDetails,
}

/// Step 9: every condition is evaluated and recorded (`Passed` / `Failed` with the compared
/// attribute); one failure denies (403 `ConditionFailed`).
pub fn check_conditions(
    conds: &[&Arc<AccessCondition>],
    inputs: &ConditionInputs<'_>,
    ev: &mut Parts,
) -> Result<(), Decision> {
    let mut passed = true;
    for c in conds {
        let outcome = match &c.spec {
            ConditionSpec::GeoIp { locations } => conditions::geoip(locations, inputs.geo),
            ConditionSpec::Time { schedule, timezone } => conditions::time(schedule, &timezone.timezone, inputs.now),
            ConditionSpec::SensorA { .. } => {
                let found = inputs
                    .devices
                    .iter()
                    .find(|(id, _)| *id == c.meta.id)
                    .map(|(_, l)| l.clone());
                let device = found.unwrap_or_else(|| Lookup::Upstream("not looked up".into()));
                conditions::sensor_a(&c.spec, c.max_last_seen_seconds, &device, inputs.client, inputs.now)
            }
            ConditionSpec::CloudSecurityA { .. } => {
                let found = inputs
                    .resources
                    .iter()
                    .find(|(id, _)| *id == c.meta.id)
                    .map(|(_, l)| l.clone());
                let resource = found.unwrap_or_else(|| Lookup::Upstream("not looked up".into()));
                conditions::cloud_security_a(&c.spec, c.max_last_seen_seconds, &resource, inputs.now)
            }
        };
        let mut r = AttestationResult {
            id: c.meta.id,
            name: c.meta.name.clone(),
            result: "Passed",
            ..Default::default()
        };
        if let Err(f) = outcome {
            passed = false;
            r.result = "Failed";
            r.reason = Some("ConditionFailed".into());
            r.attribute = Some(f.attribute.into());
            r.expected_values = Some(f.expected);
            r.actual_value = f.actual;
        }
        ev.access_conditions.push(r);
    }
    if passed {
        Ok(())
    } else {
        Err(Decision::fail(403, NOT_APPLICABLE, "ConditionFailed"))
    }
}

/// Steps 10–11: the credential provider (by `connectionMetadata` when the policy maps several)
/// and its type against the requested one.
pub fn choose_provider(
    st: &Snapshot,
    policy: &Policy,
    valid: &Valid<'_>,
    ev: &mut Parts,
) -> Result<(Arc<CompiledCredential>, CpResult), (u8, Decision)> {
    let active: Vec<(&Mapping, Arc<CompiledCredential>)> = policy
        .mappings
        .iter()
        .filter_map(|m| {
            st.idx
                .credentials
                .get(&m.credential_provider)
                .filter(|c| c.active)
                .map(|c| (m, c.clone()))
        })
        .collect();
    let cp = match active.len() {
        0 => return Err((10, Decision::not_found("NoCredentialProvider"))),
        1 => active[0].1.clone(),
        _ => {
            let cm = valid.req.connection_metadata.as_ref().filter(|cm| !cm.is_empty());
            let Some(cm) = cm else {
                return Err((10, Decision::fail(400, SELECTOR_REQUIRED, "SelectorRequired")));
            };
            let hits: Vec<&(&Mapping, Arc<CompiledCredential>)> =
                active.iter().filter(|(m, _)| selected(m, cm)).collect();
            if hits.len() != 1 {
                return Err((10, Decision::not_found("SelectorMismatch")));
            }
            hits[0].1.clone()
        }
    };
    let mut cp_result = CpResult {
        id: cp.id,
        name: cp.name.clone(),
        result: "Identified",
        cp_type: cp.cp_type.clone(),
        ..Default::default()
    };
    // Step 11: the requested type.
    if cp.credential_type() != Some(valid.credential_type) {
        cp_result.reason = Some("CredentialTypeMismatch".into());
        ev.credential_provider = Some(cp_result);
        return Err((11, Decision::fail(403, NOT_APPLICABLE, "CredentialTypeMismatch")));
    }
    Ok((cp, cp_result))
}
