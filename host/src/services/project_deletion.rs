//! Deleting projects: at once, or, when delayed deletion is on (`delayed_project_deletion`
//! with a `deletion_adjourned_period` above 0), marked for deletion (archived, path and name
//! suffixed with `-deletion_scheduled-<id>` so they are free again) and deleted by a job that
//! [`sweep_loop`] queues once the period has passed, so a deletion a process dies in is
//! finished by another. A marked project is deleted at once when the
//! request confirms its full path, and a mark can be taken back. Deleting removes the row,
//! the repositories and the uploaded files.

use std::path::Path;
use std::time::Duration;

use super::Refusal;
use super::projects;
use crate::context::ApiContext;
use crate::jobs::{self, Job};
use crate::model::namespaces::NamespaceRow;
use crate::model::now_ms;
use crate::model::projects::ProjectRow;
use crate::settings::{Settings, keys};
use crate::store::TenantDb;

const DAY_MS: i64 = 24 * 60 * 60 * 1000;
const SCHEDULED: &str = "-deletion_scheduled-";
const SWEEP_INTERVAL: Duration = Duration::from_secs(60);

/// Days a marked project waits; `None` when projects are deleted at once.
fn adjourned_days(settings: &Settings) -> Option<i64> {
    let days = settings.get(keys::DELETION_ADJOURNED_PERIOD).unwrap_or(7);
    (settings.get(keys::DELAYED_PROJECT_DELETION) && days > 0).then_some(days)
}

/// A request to delete `project` (in `namespace`) by `actor`: `permanently` with the
/// project's full path in `confirmed_path` deletes a marked project at once.
pub struct Deletion<'a> {
    pub project: &'a ProjectRow,
    pub namespace: &'a NamespaceRow,
    pub actor: i64,
    pub permanently: bool,
    pub confirmed_path: Option<&'a str>,
}

/// Deletes or marks the project, as the instance's settings and the request say, with
/// GitLab's refusals (400 with its message).
pub async fn delete(
    db: &TenantDb,
    settings: &Settings,
    data_dir: &Path,
    request: Deletion<'_>,
) -> Result<(), Refusal> {
    let project = request.project;
    let marked = project.marked_for_deletion_at.is_some();
    let delayed = adjourned_days(settings).is_some();
    if request.permanently && (delayed || marked) {
        if !marked {
            return Err(Refusal::Rejected(
                "Project must be marked for deletion first.".into(),
            ));
        }
        let full_path = format!("{}/{}", request.namespace.full_path, project.path);
        if request.confirmed_path != Some(full_path.as_str()) {
            return Err(Refusal::Rejected(
                "`full_path` is incorrect. You must enter the complete path for the project."
                    .into(),
            ));
        }
    } else if delayed {
        if marked {
            return Err(Refusal::Rejected(
                "Project has been already marked for deletion".into(),
            ));
        }
        let suffix = format!("{SCHEDULED}{}", project.id);
        db.set_deletion_mark(
            project.id,
            Some(now_ms()),
            &format!("{}{suffix}", project.name),
            &format!("{}{suffix}", project.path),
            request.actor,
        )
        .await?;
        return Ok(());
    }
    purge(db, data_dir, project.id, Some(request.actor)).await
}

/// Takes back the project's deletion mark: it gets its name and path back (with `-<id>` when
/// another project took one meanwhile).
pub async fn restore(
    db: &TenantDb,
    project: &ProjectRow,
    namespace_id: i64,
    actor: i64,
) -> Result<(), Refusal> {
    if project.marked_for_deletion_at.is_none() {
        return Err(Refusal::Rejected(
            "Project has not been marked for deletion".into(),
        ));
    }
    let suffix = format!("{SCHEDULED}{}", project.id);
    let name = project.name.strip_suffix(&suffix).unwrap_or(&project.name);
    let path = project.path.strip_suffix(&suffix).unwrap_or(&project.path);
    let (name_taken, path_taken) = db
        .project_taken(namespace_id, name, path, Some(project.id))
        .await?;
    let id_suffix = format!("-{}", project.id);
    let name = if name_taken {
        format!("{name}{id_suffix}")
    } else {
        name.to_string()
    };
    let path = if path_taken {
        format!("{path}{id_suffix}")
    } else {
        path.to_string()
    };
    db.set_deletion_mark(project.id, None, &name, &path, actor)
        .await?;
    Ok(())
}

/// Deletes a project's row, then its repositories and uploaded files (the order and why:
/// [`projects::delete`]). `actor` is who deletes it (none for the sweep).
pub async fn purge(
    db: &TenantDb,
    data_dir: &Path,
    project_id: i64,
    actor: Option<i64>,
) -> Result<(), Refusal> {
    projects::delete(db, data_dir, project_id, actor).await?;
    remove_uploads(data_dir, db.tenant_id(), project_id).await;
    Ok(())
}

/// Removes the repositories and files of projects whose rows a group or user deletion took.
pub async fn remove_files_of(data_dir: &Path, tenant: i64, projects: &[i64]) {
    for project in projects {
        projects::remove_repositories(data_dir, tenant, *project).await;
        remove_uploads(data_dir, tenant, *project).await;
    }
}

/// Removes a deleted project's uploaded files and avatar, logging what cannot be removed.
async fn remove_uploads(data_dir: &Path, tenant: i64, project_id: i64) {
    for relative in [
        format!("project/{project_id}"),
        format!("project/avatar/{project_id}"),
    ] {
        let dir = projects::uploads_dir(data_dir, tenant, &relative);
        if let Err(error) = tokio::fs::remove_dir_all(&dir).await
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %dir.display(), %error, "could not remove project files");
        }
    }
}

/// Deletes a project marked for deletion, unless its mark was taken back, and removes its
/// repositories and files whether or not the row was there: run again after a crash, it
/// finishes what the first run started.
pub async fn purge_marked(db: &TenantDb, data_dir: &Path, project_id: i64) -> anyhow::Result<()> {
    match db.project_by_id(project_id).await? {
        Some(project) if project.marked_for_deletion_at.is_none() => {}
        Some(_) => purge(db, data_dir, project_id, None).await?,
        None => remove_files_of(data_dir, db.tenant_id(), &[project_id]).await,
    }
    Ok(())
}

/// Queues, every minute, the deletion of every tenant's projects whose adjourned period has
/// passed (every process runs this; a deletion already queued is not queued twice).
pub async fn sweep_loop(ctx: ApiContext) {
    let mut interval = tokio::time::interval(SWEEP_INTERVAL);
    loop {
        interval.tick().await;
        if let Err(error) = sweep(&ctx).await {
            tracing::warn!(
                error = format!("{error:#}"),
                "could not queue the deletion of projects marked for deletion"
            );
        }
    }
}

async fn sweep(ctx: &ApiContext) -> anyhow::Result<()> {
    for tenant in ctx.db.list_tenants().await? {
        let db = ctx.db.tenant(tenant.id);
        let settings = ctx.settings.get(&db).await?;
        let days = settings
            .get(keys::DELETION_ADJOURNED_PERIOD)
            .unwrap_or(7)
            .max(0);
        for project_id in db.marked_before(now_ms() - days * DAY_MS).await? {
            jobs::enqueue(ctx, &db, &Job::PurgeMarkedProject { project_id }).await?;
        }
    }
    Ok(())
}
