//! Deleting projects: `DELETE /projects/:id` deletes at once, or, when delayed deletion is on
//! (`delayed_project_deletion` with a `deletion_adjourned_period` above 0), marks the project
//! for deletion (archived, path and name suffixed with `-deletion_scheduled-<id>` so they are
//! free again) and [`sweep_loop`] deletes it when the period has passed.
//! `permanently_remove=true` with the project's current `full_path` deletes a marked project
//! at once; `POST /projects/:id/restore` takes the mark back. Deleting removes the row, the
//! repositories and the uploaded files.

use std::path::Path as FsPath;
use std::time::Duration;

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::reload;
use crate::access_level::AccessLevel;
use crate::api::access::{self, ProjectCtx};
use crate::api::files;
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::model::now_ms;
use crate::services::projects;
use crate::settings::Settings;
use crate::settings::keys;
use crate::store::TenantDb;

const DAY_MS: i64 = 24 * 60 * 60 * 1000;
const SCHEDULED: &str = "-deletion_scheduled-";
const SWEEP_INTERVAL: Duration = Duration::from_secs(60);

/// Days a marked project waits; `None` when projects are deleted at once.
fn adjourned_days(settings: &Settings) -> Option<i64> {
    let days = settings.get(keys::DELETION_ADJOURNED_PERIOD).unwrap_or(7);
    (settings.get(keys::DELAYED_PROJECT_DELETION) && days > 0).then_some(days)
}

fn bad_request(message: &str) -> ApiError {
    ApiError::Custom(StatusCode::BAD_REQUEST, json!({ "message": message }))
}

fn accepted() -> Response {
    (
        StatusCode::ACCEPTED,
        Json(json!({ "message": "202 Accepted" })),
    )
        .into_response()
}

/// Deletes a project's row, then its repositories and uploaded files (the order and why:
/// [`projects::delete`]).
/// `actor` is who deletes it (none for the sweep).
pub async fn purge(
    db: &TenantDb,
    data_dir: &FsPath,
    project_id: i64,
    actor: Option<i64>,
) -> ApiResult<()> {
    projects::delete(db, data_dir, project_id, actor).await?;
    remove_uploads(data_dir, db.tenant_id(), project_id).await;
    Ok(())
}

/// Removes the repositories and files of projects whose rows a group or user deletion took.
pub async fn remove_files_of(api: &Api, projects: &[i64]) {
    let data_dir = &api.ctx.config.storage.data_dir;
    for project in projects {
        projects::remove_repositories(data_dir, api.tenant.id, *project).await;
        remove_uploads(data_dir, api.tenant.id, *project).await;
    }
}

/// Removes a deleted project's uploaded files and avatar, logging what cannot be removed.
async fn remove_uploads(data_dir: &FsPath, tenant: i64, project_id: i64) {
    for relative in [
        format!("project/{project_id}"),
        format!("project/avatar/{project_id}"),
    ] {
        let dir = files::directory_in(data_dir, tenant, &relative);
        if let Err(error) = tokio::fs::remove_dir_all(&dir).await
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %dir.display(), %error, "could not remove project files");
        }
    }
}

fn full_path(ctx: &ProjectCtx) -> String {
    format!("{}/{}", ctx.namespace.full_path, ctx.project.path)
}

/// `DELETE /projects/:id`: `permanently_remove` a project already marked for deletion,
/// confirmed by its `full_path`.
pub(super) struct DeleteProject {
    permanently: bool,
    full_path: Option<String>,
}

impl FromParams for DeleteProject {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(DeleteProject {
            permanently: p.bool("permanently_remove")?.unwrap_or(false),
            full_path: p.string("full_path")?,
        })
    }
}

/// `DELETE /projects/:id`: owners and administrators; 202 Accepted.
pub async fn remove(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    api.user()?;
    let DeleteProject {
        permanently,
        full_path: confirmed_path,
    } = api.input()?;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Owner)?;
    let marked = ctx.project.marked_for_deletion_at.is_some();
    let delayed = adjourned_days(&api.settings).is_some();
    let data_dir = &api.ctx.config.storage.data_dir;
    if permanently && (delayed || marked) {
        if !marked {
            return Err(bad_request("Project must be marked for deletion first."));
        }
        if confirmed_path.as_deref() != Some(full_path(&ctx).as_str()) {
            return Err(bad_request(
                "`full_path` is incorrect. You must enter the complete path for the project.",
            ));
        }
    } else if delayed {
        if marked {
            return Err(bad_request("Project has been already marked for deletion"));
        }
        let suffix = format!("{SCHEDULED}{}", ctx.project.id);
        api.db()
            .set_deletion_mark(
                ctx.project.id,
                Some(now_ms()),
                &format!("{}{suffix}", ctx.project.name),
                &format!("{}{suffix}", ctx.project.path),
                api.user()?.user.id,
            )
            .await?;
        return Ok(accepted());
    }
    purge(
        api.db(),
        data_dir,
        ctx.project.id,
        Some(api.user()?.user.id),
    )
    .await?;
    Ok(accepted())
}

/// `POST /projects/:id/restore`: owners and administrators take back a deletion mark; the
/// project gets its name and path back (the path with `-<id>` when it was taken meanwhile).
pub async fn restore(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    api.user()?;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Owner)?;
    if ctx.project.marked_for_deletion_at.is_none() {
        return Err(bad_request("Project has not been marked for deletion"));
    }
    let suffix = format!("{SCHEDULED}{}", ctx.project.id);
    let name = ctx
        .project
        .name
        .strip_suffix(&suffix)
        .unwrap_or(&ctx.project.name);
    let path = ctx
        .project
        .path
        .strip_suffix(&suffix)
        .unwrap_or(&ctx.project.path);
    let (name_taken, path_taken) = api
        .db()
        .project_taken(ctx.namespace.id, name, path, Some(ctx.project.id))
        .await?;
    let id_suffix = format!("-{}", ctx.project.id);
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
    api.db()
        .set_deletion_mark(ctx.project.id, None, &name, &path, api.user()?.user.id)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(reload(&api, ctx.project.id).await?),
    )
        .into_response())
}

/// Deletes, every minute, the projects of every tenant whose adjourned period has passed.
pub async fn sweep_loop(ctx: ApiContext) {
    let mut interval = tokio::time::interval(SWEEP_INTERVAL);
    loop {
        interval.tick().await;
        if let Err(error) = sweep(&ctx).await {
            tracing::warn!(
                error = format!("{error:#}"),
                "could not delete projects marked for deletion"
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
        for id in db.marked_before(now_ms() - days * DAY_MS).await? {
            if let Err(error) = purge(&db, &ctx.config.storage.data_dir, id, None).await {
                tracing::warn!(project = id, error = %error, "could not delete a marked project");
            }
        }
    }
    Ok(())
}
