//! Compliance settings (contract §3.22): four named levels that govern later writes.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};
use svc_api::Obj;

use crate::app::App;
use crate::domain::records::{COMPLIANCE_SETTINGS, ComplianceLevel};
use crate::domain::{DEFAULT_RESOURCE_SET, Perm};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::extract::JsonBody;
use crate::http::guard::{Ctx, Scope, guarded};
use crate::http::ok;
use crate::service::write::Write;

pub fn routes(app: &App) -> Router<App> {
    Router::new().route(
        "/api/v1/compliance-settings",
        guarded(app, Perm::GlobalPolicyCompliance, Scope::Global, get(read).put(update)),
    )
}

async fn read(State(app): State<App>) -> Result<Response> {
    let s = app.state().settings();
    let items: Vec<Value> = COMPLIANCE_SETTINGS
        .iter()
        .map(|n| json!({"name": n, "value": s.compliance(n).as_str()}))
        .collect();
    Ok(ok(Value::Array(items)))
}

async fn update(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let mut o = Obj::root(body)?;
    let name = o.req_str("name")?;
    let value = o.req_str("value")?;
    o.finish()?;
    if !COMPLIANCE_SETTINGS.contains(&name.as_str()) {
        return Err(Error::field(
            "name",
            format!("must be one of {}", COMPLIANCE_SETTINGS.join(", ")),
        ));
    }
    let level = ComplianceLevel::parse(&value)
        .ok_or_else(|| Error::field("value", "must be one of Required, Recommended, Optional"))?;
    let author = ctx.author();
    let mut w = Write::begin(&app).await?;
    let mut s = (*w.st.settings()).clone();
    match s.compliance.iter_mut().find(|(n, _)| *n == name) {
        Some(entry) => entry.1 = level,
        None => s.compliance.push((name.clone(), level)),
    }
    s.modified_at = w.now;
    w.put(s);
    w.audit(
        &author,
        DEFAULT_RESOURCE_SET,
        "ComplianceSettings",
        Activity::Updated,
        &name,
    );
    w.commit().await?;
    Ok(ok(json!({"name": name, "value": level.as_str()})))
}
