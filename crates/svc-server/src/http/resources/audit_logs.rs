//! Audit logs (contract §3.23, §3.26): read-only, queried in SQL.

use axum::extract::State;
use axum::response::Response;

use super::event_query::{EventParams, Span, equal_to, page_response};
use crate::app::App;
use crate::domain::Perm;
use crate::error::{Error, Result};
use svc_api::mgmt::AuditLogDto;

use crate::http::api::{Api, Op, Query};
use crate::http::extract::{Ids, QueryPairs};
use crate::http::guard::{Ctx, Scope};
use crate::http::{no_content, ok};
use crate::store::{EventQuery, EventTable};

pub fn register(api: &mut Api<'_>) {
    let p = Perm::AuditLogs;
    api.guarded("/api/v1/audit-logs", p, Scope::Rs).get(
        list,
        Op::new("List audit log entries (§3.23)")
            .query(Query::Events)
            .list::<AuditLogDto>("auditLogs"),
    );
    api.guarded("/api/v1/audit-logs/{id}", p, Scope::Rs).get(
        read,
        Op::new("Read an audit log entry").ok::<AuditLogDto>(200).empty(204),
    );
}

/// Sortable fields → columns.
const ORDER: &[(&str, &str)] = &[
    ("createdAt", "created_at"),
    ("externalId", "id"),
    ("resourceSetId", "rs"),
    ("category", "category"),
    ("activity", "activity"),
    ("target", "target"),
    ("severity", "severity"),
    ("actor.type", "actor_type"),
    ("actor.email", "actor_email"),
    ("actor.displayName", "actor_name"),
    ("outcome.result", "result"),
    ("client.ipAddress", "ip"),
];

async fn list(State(app): State<App>, ctx: Ctx, q: QueryPairs) -> Result<Response> {
    let p = EventParams::parse(&q, ORDER, crate::events::audit::AUDIT_LOG, "createdAt", Span::DAYS)?;
    let query = EventQuery {
        rs: vec![ctx.rs.to_string()],
        eq: equal_to(&q, &[("category", "category"), ("severity", "severity")]),
        ..p.query()
    };
    let page = app.store.query_events(EventTable::Audit, &query).await?;
    page_response::<AuditLogDto>("auditLogs", page, &p, None)
}

async fn read(State(app): State<App>, ctx: Ctx, ids: Ids) -> Result<Response> {
    match app
        .store
        .get_event(EventTable::Audit, &ids.one().to_string(), &[ctx.rs.to_string()])
        .await?
    {
        Some(body) => {
            let entry: AuditLogDto = serde_json::from_str(&body).map_err(Error::internal)?;
            Ok(ok(super::crud::to_json(&entry)))
        }
        None => Ok(no_content()),
    }
}
