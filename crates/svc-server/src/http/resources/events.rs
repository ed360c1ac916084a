//! Access authorization events (contract §3.24) and workload events (§3.25): read-only lists and
//! single records, queried in SQL with the semantics of §3.26.

use axum::extract::State;
use axum::response::Response;

use serde::Serialize;
use serde::de::DeserializeOwned;
use svc_api::mgmt::{AuthorizationEventDto, EventDto};

use super::event_query::{EventParams, Span, equal_to, event, page_response};
use crate::app::App;
use crate::domain::Perm;
use crate::error::{Error, Result};
use crate::events::shape::{AUTHORIZATION_EVENT, Shape, WORKLOAD_EVENT};
use crate::http::api::{Api, Op, Query};
use crate::http::extract::{Ids, QueryPairs};
use crate::http::guard::{Ctx, Scope};
use crate::http::{no_content, ok};
use crate::store::{EventQuery, EventTable};

pub fn register(api: &mut Api<'_>) {
    let (a, w) = (Perm::AccessAuthorizationEvents, Perm::WorkloadEvents);
    api.guarded("/api/v1/authorization-events", a, Scope::Rs).get(
        list_authorization,
        Op::new("List authorization events (§3.24)")
            .query(Query::Events)
            .list::<AuthorizationEventDto>("authorizationEvents"),
    );
    api.guarded("/api/v1/authorization-events/{id}", a, Scope::Rs).get(
        read_authorization,
        Op::new("Read an authorization event")
            .ok::<AuthorizationEventDto>(200)
            .empty(204),
    );
    api.guarded("/api/v1/workload-events", w, Scope::Rs).get(
        list_workload,
        Op::new("List workload events (§3.25)")
            .query(Query::Events)
            .list::<EventDto>("workloadEvents"),
    );
    api.guarded("/api/v1/workload-events/{id}", w, Scope::Rs).get(
        read_workload,
        Op::new("Read a workload event").ok::<EventDto>(200).empty(204),
    );
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
    let p = EventParams::parse(&q, AUTHZ_ORDER, AUTHORIZATION_EVENT, "timestamp", Span::hours(i64::MAX))?;
    let eq = equal_to(&q, &[("severity", "severity"), ("event-type", "event_type")]);
    list::<AuthorizationEventDto>(
        &app,
        &ctx,
        EventTable::Authorization,
        &p,
        EventQuery { eq, ..p.query() },
    )
    .await
}

async fn read_authorization(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    read::<AuthorizationEventDto>(&app, &ctx, EventTable::Authorization, ids).await
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
        Span::hours(i32::MAX as i64),
    )?;
    let eq = equal_to(
        &q,
        &[("severity", "severity"), ("application-protocol", "app_protocol")],
    );
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
    list::<EventDto>(
        &app,
        &ctx,
        EventTable::Workload,
        &p,
        EventQuery {
            eq,
            any_of,
            ..p.query()
        },
    )
    .await
}

async fn read_workload(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    read::<EventDto>(&app, &ctx, EventTable::Workload, ids).await
}

/// The items key and the body shape of an event table's API.
fn shape_of(table: EventTable) -> (&'static str, Shape) {
    match table {
        EventTable::Workload => ("workloadEvents", WORKLOAD_EVENT),
        _ => ("authorizationEvents", AUTHORIZATION_EVENT),
    }
}

/// One page of `table`'s events in the caller's resource set, each as its DTO `T`.
async fn list<T: DeserializeOwned + Serialize>(
    app: &App,
    ctx: &Ctx,
    table: EventTable,
    p: &EventParams,
    query: EventQuery,
) -> Result<Response> {
    let query = EventQuery {
        rs: vec![ctx.rs.to_string()],
        ..query
    };
    written(app).await;
    let page = app.store.query_events(table, &query).await?;
    let (items_key, shape) = shape_of(table);
    page_response::<T>(items_key, page, p, Some(shape))
}

async fn read<T: DeserializeOwned + Serialize>(app: &App, ctx: &Ctx, table: EventTable, ids: Ids) -> Result<Response> {
    written(app).await;
    match app
        .store
        .get_event_row(table, &ids.one().to_string(), &[ctx.rs.to_string()])
        .await?
    {
        Some((body, columns)) => {
            let e: T = event(&body, Some(shape_of(table).1), &columns)?;
            Ok(ok(super::crud::to_json(&e)))
        }
        None => Ok(no_content()),
    }
}
