//! Compliance settings (contract §3.22): four named levels that govern later writes.

use axum::extract::State;
use axum::response::Response;
use svc_api::mgmt::{ComplianceLevel as Level, ComplianceSetting, SettingDto};

use crate::app::App;
use crate::domain::records::ComplianceLevel;
use crate::domain::{DEFAULT_RESOURCE_SET, Perm};
use crate::error::Result;
use crate::events::audit::Activity;
use crate::http::api::{Api, Op};
use crate::http::extract::JsonBody;
use crate::http::guard::{Ctx, Scope};
use crate::http::ok;
use crate::http::resources::crud::to_json;
use crate::service::write::Write;

pub fn register(api: &mut Api<'_>) {
    api.guarded(
        "/api/v1/compliance-settings",
        Perm::GlobalPolicyCompliance,
        Scope::Global,
    )
    .get(read, Op::new("Compliance settings (§3.22)").ok::<Vec<SettingDto>>(200))
    .put(
        update,
        Op::new("Change a compliance setting (§3.22)")
            .body::<SettingDto>()
            .ok::<SettingDto>(200),
    );
}

fn level_dto(l: ComplianceLevel) -> Level {
    match l {
        ComplianceLevel::Required => Level::Required,
        ComplianceLevel::Recommended => Level::Recommended,
        ComplianceLevel::Optional => Level::Optional,
    }
}

fn level(l: Level) -> ComplianceLevel {
    match l {
        Level::Required => ComplianceLevel::Required,
        Level::Recommended => ComplianceLevel::Recommended,
        Level::Optional => ComplianceLevel::Optional,
    }
}

/// `SettingDTO[]`: all four, in their documented order.
async fn read(State(app): State<App>) -> Result<Response> {
    let s = app.state().settings();
    let items: Vec<SettingDto> = ComplianceSetting::ALL
        .iter()
        .map(|n| SettingDto {
            name: *n,
            value: level_dto(s.compliance(n.as_str())),
        })
        .collect();
    Ok(ok(to_json(&items)))
}

async fn update(State(app): State<App>, ctx: Ctx, JsonBody(body): JsonBody) -> Result<Response> {
    let dto: SettingDto = svc_api::schema::read(body)?;
    let name = dto.name.as_str().to_string();
    let level = level(dto.value);
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
    let dto = SettingDto {
        name: dto.name,
        value: level_dto(level),
    };
    Ok(ok(to_json(&dto)))
}
