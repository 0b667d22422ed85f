//! Project and system hook writes. The hook's fields are checked as input (`api::hook_input`:
//! the URL against the instance's outbound policy); deleting a project hook also drops what
//! the delivery queue still holds for it.

use super::Refusal;
use crate::model::hooks::{HookRow, SystemHookRow};
use crate::store::TenantDb;

pub async fn create_project_hook(db: &TenantDb, hook: &HookRow) -> Result<HookRow, Refusal> {
    Ok(db.insert_hook(hook).await?)
}

pub async fn update_project_hook(db: &TenantDb, hook: &HookRow) -> Result<HookRow, Refusal> {
    db.update_hook(hook).await?.ok_or(Refusal::NotFound("Hook"))
}

/// Deletes the hook if it is there (GitLab's delete is idempotent).
pub async fn delete_project_hook(db: &TenantDb, project_id: i64, id: i64) -> Result<(), Refusal> {
    if db.delete_hook(project_id, id).await? {
        db.forget_project_hook(id).await?;
    }
    Ok(())
}

pub async fn create_system_hook(
    db: &TenantDb,
    hook: &SystemHookRow,
) -> Result<SystemHookRow, Refusal> {
    Ok(db.insert_system_hook(hook).await?)
}

pub async fn update_system_hook(
    db: &TenantDb,
    hook: &SystemHookRow,
) -> Result<SystemHookRow, Refusal> {
    db.update_system_hook(hook)
        .await?
        .ok_or(Refusal::NotFound("Hook"))
}

pub async fn delete_system_hook(db: &TenantDb, hook: &SystemHookRow) -> Result<(), Refusal> {
    db.delete_system_hook(hook.id).await?;
    Ok(())
}
