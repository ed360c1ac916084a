//! Compliance settings (contract §3.22): four named levels that govern later writes.

use axum::extract::State;
use axum::response::Response;
use serde_json::{Value, json};
use svc_api::Obj;

use crate::app::App;
use crate::domain::records::{COMPLIANCE_SETTINGS, ComplianceLevel};
use crate::domain::{DEFAULT_RESOURCE_SET, Perm};
use crate::error::{Error, Result};
use crate::events::audit::Activity;
use crate::http::api::{Api, Op, Untyped};
use crate::http::extract::JsonBody;
use crate::http::guard::{Ctx, Scope};
use crate::http::ok;
use crate::service::write::Write;

pub fn register(api: &mut Api<'_>) {
    api.guarded(
        "/api/v1/compliance-settings",
        Perm::GlobalPolicyCompliance,
        Scope::Global,
    )
    .get(read, Op::new("Compliance settings (§3.22)").ok::<Vec<Untyped>>(200))
    .put(
        update,
        Op::new("Change a compliance setting (§3.22)")
            .body::<Untyped>()
            .ok::<Untyped>(200),
    );
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
