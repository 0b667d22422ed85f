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
    match db.quotas().await?.max_projects {
        Some(limit) => check_count(limit, db.project_count().await?, "project"),
        None => Ok(()),
    }
}

/// Refuses a new user when the tenant has as many human users as its quota allows.
pub async fn check_new_user(db: &TenantDb) -> Result<(), Refusal> {
    match db.quotas().await?.max_users {
        Some(limit) => check_count(limit, db.human_user_count().await?, "user"),
        None => Ok(()),
    }
}

fn check_count(limit: i64, held: i64, noun: &str) -> Result<(), Refusal> {
    if held < limit {
        return Ok(());
    }
    Err(Refusal::invalid(
        "limit_reached",
        format!(
            "This instance's {noun} limit of {limit} {noun}s has been reached. Please contact your GitLab administrator to increase it"
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
