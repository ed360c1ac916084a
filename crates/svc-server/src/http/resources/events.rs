//! Access authorization events (contract §3.24) and workload events (§3.25): read-only lists and
//! single records, queried in SQL with the semantics of §3.26.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;

use super::event_query::{EventParams, Span, body_value, page_response};
use crate::app::App;
use crate::domain::Perm;
use crate::error::{Error, Result};
use crate::events::shape::{AUTHORIZATION_EVENT, WORKLOAD_EVENT};
use crate::http::extract::{Ids, QueryPairs};
use crate::http::guard::{Ctx, Scope, guarded};
use crate::http::{no_content, ok};
use crate::store::{EventQuery, EventTable};

pub fn routes(app: &App) -> Router<App> {
    Router::new()
        .route(
            "/api/v1/authorization-events",
            guarded(app, Perm::AccessAuthorizationEvents, Scope::Rs, get(list_authorization)),
        )
        .route(
            "/api/v1/authorization-events/{id}",
            guarded(app, Perm::AccessAuthorizationEvents, Scope::Rs, get(read_authorization)),
        )
        .route(
            "/api/v1/workload-events",
            guarded(app, Perm::WorkloadEvents, Scope::Rs, get(list_workload)),
        )
        .route(
            "/api/v1/workload-events/{id}",
            guarded(app, Perm::WorkloadEvents, Scope::Rs, get(read_workload)),
        )
}

const AUTHZ_ORDER: &[(&str, &str)] = &[
    ("timestamp", "ts"),
    ("eventType", "event_type"),
    ("severity", "severity"),
    ("eventId", "id"),
    ("clientIP", "client_ip"),
    ("resourceSetId", "rs"),
    ("outcome.result", "result"),
];

const WORKLOAD_ORDER: &[(&str, &str)] = &[
    ("timestamp", "ts"),
    ("eventType", "event_type"),
    ("severity", "severity"),
    ("eventId", "id"),
    ("action", "action"),
    ("resourceSetId", "rs"),
    ("applicationProtocol", "app_protocol"),
    ("clientWorkloadId", "client_workload"),
    ("serverWorkloadId", "server_workload"),
];

/// Event reads see the events of every edge request this node has already answered: the writer
/// lingers for a fuller batch (up to 5 ms), so a list right after a `/credentials` answer would
/// otherwise miss its events. Waits until the writer has handled what was queued before the
/// read (normally that linger and one batch), at most `READ_WAIT`: a writer far behind (edge
/// overload, a locked database) delays a read by that much and no more, and the read then shows
/// what is stored.
async fn written(app: &App) {
    const READ_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
    if !app.events.caught_up(READ_WAIT).await {
        tracing::debug!("event read did not wait for the writer to catch up");
    }
}

async fn list_authorization(State(app): State<App>, ctx: Ctx, q: QueryPairs) -> Result<Response> {
    let p = EventParams::parse(
        &q,
        AUTHZ_ORDER,
        AUTHORIZATION_EVENT,
        "timestamp",
        Span {
            minutes_key: "span-last-minutes",
            minutes_max: i64::MAX,
            unit_key: "span-last-hours",
            unit_ms: 3_600_000,
            default_units: 24,
        },
    )?;
    let mut eq = vec![];
    if let Some(s) = q.get("severity") {
        eq.push(("severity", s.to_string()));
    }
    if let Some(t) = q.get("event-type") {
        eq.push(("event_type", t.to_string()));
    }
    let query = EventQuery {
        rs: vec![ctx.rs.to_string()],
        eq,
        ..p.query()
    };
    written(&app).await;
    let page = app.store.query_events(EventTable::Authorization, &query).await?;
    page_response("authorizationEvents", page, &p, Some(AUTHORIZATION_EVENT))
}

async fn read_authorization(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    read(&app, &ctx, EventTable::Authorization, ids).await
}

/// Repeatable or comma-separated UUID lists.
fn id_list(q: &QueryPairs, key: &str) -> Result<Option<Vec<String>>> {
    // An empty value (`source-workload=`) is absent, as for every other parameter.
    let raw = q.all(key);
    let mut out = Vec::new();
    for part in raw
        .iter()
        .flat_map(|r| r.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let id = svc_api::reader::parse_uuid(part).ok_or_else(|| Error::field(key, "must be UUIDs"))?;
        out.push(id.to_string());
    }
    // Only separators (`source-workload=,`) is no value either.
    Ok((!out.is_empty()).then_some(out))
}

async fn list_workload(State(app): State<App>, ctx: Ctx, q: QueryPairs) -> Result<Response> {
    let p = EventParams::parse(
        &q,
        WORKLOAD_ORDER,
        WORKLOAD_EVENT,
        "timestamp",
        Span {
            minutes_key: "span-last-minutes",
            minutes_max: i32::MAX as i64,
            unit_key: "span-last-hours",
            unit_ms: 3_600_000,
            default_units: 24,
        },
    )?;
    let mut eq = vec![];
    if let Some(s) = q.get("severity") {
        eq.push(("severity", s.to_string()));
    }
    if let Some(a) = q.get("application-protocol") {
        eq.push(("app_protocol", a.to_string()));
    }
    let mut any_of = vec![];
    if let Some(ids) = id_list(&q, "source-workload")? {
        any_of.push(("client_workload", ids));
    }
    if let Some(ids) = id_list(&q, "target-workload")? {
        any_of.push(("server_workload", ids));
    }
    if let Some(u) = q.get("user-id") {
        any_of.push(("user_id", vec![u.to_string()]));
    }
    let query = EventQuery {
        rs: vec![ctx.rs.to_string()],
        eq,
        any_of,
        ..p.query()
    };
    written(&app).await;
    let page = app.store.query_events(EventTable::Workload, &query).await?;
    page_response("workloadEvents", page, &p, Some(WORKLOAD_EVENT))
}

async fn read_workload(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    read(&app, &ctx, EventTable::Workload, ids).await
}

async fn read(app: &App, ctx: &Ctx, table: EventTable, ids: Ids) -> Result<Response> {
    written(app).await;
    match app
        .store
        .get_event_row(table, &ids.one().to_string(), &[ctx.rs.to_string()])
        .await?
    {
        Some((body, columns)) => {
            let shape = match table {
                EventTable::Workload => WORKLOAD_EVENT,
                _ => AUTHORIZATION_EVENT,
            };
            Ok(ok(body_value(&body, Some(shape), &columns)?))
        }
        None => Ok(no_content()),
    }
}
