//! The operator's quotas on a tenant (`trellis tenant quota`), checked before every write
//! that would go past one. Counts answer as GitLab's own project limit does (400,
//! `limit_reached`); storage as GitLab's repository size limit does. The quotas are read
//! from the database at the check, so a change applies to the next write everywhere.

use crate::git::receive::RefUpdate;
use crate::services::Refusal;
use crate::store::TenantDb;
use crate::tenants::quotas::format_size;

/// Refuses a new project when the tenant holds as many as its quota allows.
pub async fn check_new_project(db: &TenantDb) -> Result<(), Refusal> {
    let Some(limit) = db.quotas().await?.max_projects else {
        return Ok(());
    };
    if db.project_count().await? < limit {
        return Ok(());
    }
    Err(Refusal::invalid(
        "limit_reached",
        format!(
            "This instance's project limit of {limit} projects has been reached. Please contact your GitLab administrator to increase it"
        ),
    ))
}

/// Refuses a new user when the tenant has as many human users as its quota allows.
pub async fn check_new_user(db: &TenantDb) -> Result<(), Refusal> {
    let Some(limit) = db.quotas().await?.max_users else {
        return Ok(());
    };
    if db.human_user_count().await? < limit {
        return Ok(());
    }
    Err(Refusal::invalid(
        "limit_reached",
        format!(
            "This instance's user limit of {limit} users has been reached. Please contact your GitLab administrator to increase it"
        ),
    ))
}

/// Why nothing more may be stored, when the tenant is at or over its storage quota.
async fn storage_full(db: &TenantDb) -> Result<Option<(i64, i64)>, Refusal> {
    let Some(limit) = db.quotas().await?.max_storage_bytes else {
        return Ok(None);
    };
    let used = db.storage_bytes().await?;
    Ok((used >= limit).then_some((used, limit)))
}

/// The refusal of a push while the tenant is at or over its storage quota; a push that only
/// deletes refs goes through, so that space can be freed.
pub async fn push_refusal(db: &TenantDb, updates: &[RefUpdate]) -> Result<Option<String>, Refusal> {
    if updates.iter().all(RefUpdate::is_deletion) {
        return Ok(None);
    }
    Ok(storage_full(db).await?.map(|(used, limit)| {
        format!(
            "Your push has been rejected, because this instance has exceeded its storage limit of {} by {}. Please contact your GitLab administrator for more information.",
            format_size(limit),
            format_size(used - limit)
        )
    }))
}

/// Refuses an upload while the tenant is at or over its storage quota.
pub async fn check_upload(db: &TenantDb) -> Result<(), Refusal> {
    match storage_full(db).await? {
        None => Ok(()),
        Some((_, limit)) => Err(Refusal::forbidden_because(format!(
            "This instance has reached its storage limit of {}",
            format_size(limit)
        ))),
    }
}
