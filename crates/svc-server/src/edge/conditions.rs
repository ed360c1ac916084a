//! Step 9's vendor calls (contract §4.8, §5.4): the `SensorA` device lookup and the
//! `CloudSecurityAIntegrationApi` resource lookup, each with the integration's OAuth2
//! client-credentials token (which the periodic integration sync, `service::integrations`, asks
//! for). Tokens are cached until 60 s before their expiry, lookups for 60 s; both caches are
//! bounded (`caches::vendor`). A vendor that fails, answers badly or not within the upstream timeout
//! fails its condition (`Lookup::Upstream`), never the request. The rules themselves are pure
//! (`policy::conditions`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use svc_api::edge::ClientWorkloadDetails;
use uuid::Uuid;

use crate::app::App;
use crate::caches::vendor::{get, put};
use crate::domain::Secret;
use crate::domain::condition::{AccessCondition, ConditionSpec, Integration};
use crate::policy::conditions::{CloudResource, Device, Lookup};
use crate::state::State;
use crate::trust::{Fact, Facts};

/// §5.4: device lookups (and, our choice, resource lookups) are reused for 60 s.
const LOOKUP_TTL: Duration = Duration::from_secs(60);
/// §5.4: a token is reused until 60 s before its expiry.
const TOKEN_MARGIN: u64 = 60;

/// The integration's version: a change (new secret, URL) must not reuse a token or an answer.
fn version(i: &Integration) -> i64 {
    i.meta.modified_at.millis()
}

/// The OAuth2 client-credentials token of an integration (§5.4), reused until 60 s before it
/// expires.
async fn token(app: &App, i: &Integration) -> Result<Arc<Secret<String>>, String> {
    let key = (i.meta.id, version(i));
    if let Some(t) = get(&app.vendor_cache.tokens, &key) {
        return Ok(t);
    }
    let (token, expires) = request_token(app, i).await?;
    if expires > TOKEN_MARGIN {
        let until = Instant::now() + Duration::from_secs(expires - TOKEN_MARGIN);
        put(&app.vendor_cache.tokens, key, token.clone(), until);
    }
    Ok(token)
}

/// Asks the integration's `tokenUrl` for a token: the token and its `expires_in`.
pub async fn request_token(app: &App, i: &Integration) -> Result<(Arc<Secret<String>>, u64), String> {
    client_credentials(
        app,
        i.config_str("tokenUrl").unwrap_or_default(),
        i.config_str("clientId").unwrap_or_default(),
        i.secrets.get("clientSecret").unwrap_or_default(),
        i.config_str("audience"),
    )
    .await
}

/// The OAuth2 client-credentials request of §5.4: the token and its `expires_in`.
pub async fn client_credentials(
    app: &App,
    token_url: &str,
    client_id: &str,
    secret: &str,
    audience: Option<&str>,
) -> Result<(Arc<Secret<String>>, u64), String> {
    let u = app.upstream.check_url(token_url).map_err(|e| e.to_string())?;
    let mut form = vec![
        ("grant_type", "client_credentials"),
        ("client_id", client_id),
        ("client_secret", secret),
    ];
    if let Some(a) = audience.filter(|a| !a.is_empty()) {
        form.push(("audience", a));
    }
    let req = app
        .upstream
        .client
        .post(u)
        .form(&form)
        .header("accept", "application/json");
    let f = app.upstream.send(req).await.map_err(|e| e.to_string())?;
    if !(200..300).contains(&f.status) {
        return Err(format!("token endpoint answered {}", f.status));
    }
    let v: Value = serde_json::from_slice(&f.body).map_err(|_| "token answer is not JSON".to_string())?;
    let Some(t) = v.get("access_token").and_then(Value::as_str).filter(|t| !t.is_empty()) else {
        return Err("token answer without access_token".into());
    };
    let expires = v.get("expires_in").and_then(Value::as_u64).unwrap_or(0);
    Ok((Arc::new(Secret::new(t.to_string())), expires))
}

fn text(v: &Value, k: &str) -> Option<String> {
    v.get(k)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn time(v: &Value, k: &str) -> Option<jiff::Timestamp> {
    v.get(k).and_then(Value::as_str).and_then(|s| s.parse().ok())
}

/// `GET {endpoint}/devices/entities/devices/v2?ids=<agentId>` (§5.4).
async fn device(app: &App, i: &Integration, agent: &str) -> Lookup<Device> {
    let key = (i.meta.id, version(i), agent.to_string());
    if let Some(d) = get(&app.vendor_cache.devices, &key) {
        return d;
    }
    let result = async {
        let token = token(app, i).await?;
        let mut u = app
            .upstream
            .check_joined(&i.endpoint, "/devices/entities/devices/v2")
            .map_err(|e| e.to_string())?;
        u.query_pairs_mut().append_pair("ids", agent);
        let req = app
            .upstream
            .client
            .get(u)
            .bearer_auth(token.expose())
            .header("accept", "application/json");
        let f = app.upstream.send(req).await.map_err(|e| e.to_string())?;
        if !(200..300).contains(&f.status) {
            return Err(format!("device lookup answered {}", f.status));
        }
        let v: Value = serde_json::from_slice(&f.body).map_err(|_| "device answer is not JSON".to_string())?;
        let first = v
            .get("resources")
            .and_then(Value::as_array)
            .and_then(|r| r.first())
            .cloned();
        Ok(match first {
            None => Lookup::NotFound(agent.to_string()),
            Some(d) => Lookup::Found(Device {
                hostname: text(&d, "hostname"),
                serial_number: text(&d, "serial_number"),
                mac_address: text(&d, "mac_address"),
                local_ip: text(&d, "local_ip"),
                last_seen: time(&d, "last_seen"),
                reduced_functionality_mode: text(&d, "reduced_functionality_mode").as_deref() == Some("yes"),
            }),
        })
    }
    .await;
    match result {
        Ok(l) => {
            put(&app.vendor_cache.devices, key, l.clone(), Instant::now() + LOOKUP_TTL);
            l
        }
        Err(e) => Lookup::Upstream(e),
    }
}

const RESOURCE_QUERY: &str = "query CloudResources($providerUniqueIds: [String!]) { cloudResources(filterBy: {providerUniqueId: $providerUniqueIds}) { nodes { providerUniqueId type lastSeen clusterConnected } } }";

/// `POST {endpoint}` with the GraphQL resource query (§5.4).
async fn resource(app: &App, i: &Integration, id: &str) -> Lookup<CloudResource> {
    let key = (i.meta.id, version(i), id.to_string());
    if let Some(r) = get(&app.vendor_cache.resources, &key) {
        return r;
    }
    let result = async {
        let token = token(app, i).await?;
        let u = app.upstream.check_url(&i.endpoint).map_err(|e| e.to_string())?;
        let body = json!({"query": RESOURCE_QUERY, "variables": {"providerUniqueIds": [id]}});
        let req = app
            .upstream
            .client
            .post(u)
            .json(&body)
            .bearer_auth(token.expose())
            .header("accept", "application/json");
        let f = app.upstream.send(req).await.map_err(|e| e.to_string())?;
        if !(200..300).contains(&f.status) {
            return Err(format!("inventory answered {}", f.status));
        }
        let v: Value = serde_json::from_slice(&f.body).map_err(|_| "inventory answer is not JSON".to_string())?;
        let nodes = v
            .pointer("/data/cloudResources/nodes")
            .and_then(Value::as_array)
            .ok_or_else(|| "inventory answer without data.cloudResources.nodes".to_string())?;
        let node = nodes
            .iter()
            .find(|n| n.get("providerUniqueId").and_then(Value::as_str) == Some(id));
        Ok(match node {
            None => Lookup::NotFound(id.to_string()),
            Some(n) => Lookup::Found(CloudResource {
                last_seen: time(n, "lastSeen"),
                cluster_connected: n.get("clusterConnected").and_then(Value::as_bool).unwrap_or(false),
            }),
        })
    }
    .await;
    match result {
        Ok(l) => {
            put(&app.vendor_cache.resources, key, l.clone(), Instant::now() + LOOKUP_TTL);
            l
        }
        Err(e) => Lookup::Upstream(e),
    }
}

fn fact<'f>(facts: &'f Facts, k: &str) -> Option<&'f str> {
    match facts.get(k) {
        Some(Fact::One(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

/// The cloud resource a request is: the verified cloudA instance or cloudB VM, or the reported
/// cloudA lambda ARN for a `serverless` condition (§3.10).
fn resource_id<'a>(serverless: bool, facts: &'a Facts, client: &'a ClientWorkloadDetails) -> Option<&'a str> {
    if serverless {
        let arn = client
            .cloud_a
            .as_ref()
            .and_then(|a| a.lambda.as_ref())
            .and_then(|l| l.arn.as_deref());
        if let Some(a) = arn.filter(|a| !a.is_empty()) {
            return Some(a);
        }
    }
    fact(facts, "CloudAInstanceId").or_else(|| fact(facts, "CloudBVmId"))
}

/// What step 9 needs from the vendors for `conds`, all asked at once, within the upstream
/// timeout.
pub async fn lookups(
    app: &App,
    st: &State,
    conds: &[&Arc<AccessCondition>],
    client: &ClientWorkloadDetails,
    facts: &Facts,
) -> (Vec<(Uuid, Lookup<Device>)>, Vec<(Uuid, Lookup<CloudResource>)>) {
    let mut devices = Vec::new();
    let mut resources = Vec::new();
    let agent = client
        .host
        .as_ref()
        .and_then(|h| h.sensors.as_ref())
        .and_then(|s| s.sensor_a.as_ref())
        .and_then(|a| a.agent_id.as_deref())
        .filter(|a| !a.is_empty());
    let timed_out = || "timed out".to_string();
    for c in conds {
        let integration = st.integrations.get(&c.integration).filter(|i| i.meta.active);
        match &c.spec {
            ConditionSpec::SensorA { .. } => {
                let l = match (integration, agent) {
                    (None, _) => Lookup::Upstream("integration inactive or missing".into()),
                    (_, None) => Lookup::NoSubject("client.host.sensors.sensorA.agentId"),
                    (Some(i), Some(a)) => tokio::time::timeout(crate::upstream::TIMEOUT, device(app, i, a))
                        .await
                        .unwrap_or_else(|_| Lookup::Upstream(timed_out())),
                };
                devices.push((c.meta.id, l));
            }
            ConditionSpec::CloudSecurityA { serverless, .. } => {
                let l = match (integration, resource_id(*serverless, facts, client)) {
                    (None, _) => Lookup::Upstream("integration inactive or missing".into()),
                    (_, None) => Lookup::NoSubject("a verified cloud instance or VM"),
                    (Some(i), Some(id)) => tokio::time::timeout(crate::upstream::TIMEOUT, resource(app, i, id))
                        .await
                        .unwrap_or_else(|_| Lookup::Upstream(timed_out())),
                };
                resources.push((c.meta.id, l));
            }
            _ => {}
        }
    }
    (devices, resources)
}

/// Step 9 for the matched policy's active conditions: the GeoIP answer for the effective source
/// IP (only when a GeoIP condition is listed) and the vendors' answers (upstream I/O, here), then
/// `policy::decide::check_conditions`, which records each condition in `ev`. Shared by
/// `/edge/v1/credentials` and the explain endpoint, so both decide alike.
pub async fn check(
    app: &App,
    st: &State,
    conds: &[&Arc<AccessCondition>],
    client: &ClientWorkloadDetails,
    facts: &Facts,
    source_ip: Option<std::net::IpAddr>,
    ev: &mut crate::policy::outcome::Parts,
) -> Result<(), crate::policy::decide::Decision> {
    let geo = conds
        .iter()
        .any(|c| matches!(c.spec, ConditionSpec::GeoIp { .. }))
        .then(|| source_ip.and_then(|ip| app.geoip.lookup(ip)))
        .flatten();
    let (devices, resources) = lookups(app, st, conds, client, facts).await;
    let inputs = crate::policy::decide::ConditionInputs {
        now: jiff::Timestamp::from_millisecond(crate::clock::now_millis()).unwrap_or(jiff::Timestamp::UNIX_EPOCH),
        geo: geo.as_ref(),
        devices: &devices,
        resources: &resources,
        client,
    };
    crate::policy::decide::check_conditions(conds, &inputs, ev)
}
