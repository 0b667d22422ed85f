//! Forks: `POST /projects/:id/fork` answers 201 at once with `import_status` `scheduled`
//! while a background task copies the repository (`git fetch` from the source's bare
//! repository) and then sets `finished`, or `failed` with `import_error`.
//! `GET /projects/:id/forks`, `POST /projects/:id/fork/:forked_from_id` (link an existing
//! project) and `DELETE /projects/:id/fork` (unlink).

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::reload;
use super::write::creator;
use crate::access_level::AccessLevel;
use crate::api::access::{self, ProjectCtx};
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::jobs::{self, Job};
use crate::model::visibility::Visibility;
use crate::services::project_forks::{self as forks, ForkRequest, Source};

/// `POST /projects/:id/fork`: what is not given comes from the source project.
impl FromParams for ForkRequest {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let namespace = match p.string("namespace_id")? {
            Some(key) => Some(key),
            None => match p.string("namespace_path")? {
                Some(path) => Some(path),
                None => p.string("namespace")?,
            },
        }
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty());
        let name = p.string("name")?;
        let path = p.string("path")?;
        let visibility = p.one_of_named("visibility", Visibility::ALL)?;
        let branches: Option<Vec<String>> = p.string("branches")?.map(|b| {
            b.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        });
        Ok(ForkRequest {
            namespace,
            name,
            name_given: p.has("name"),
            path,
            visibility,
            branches: branches.filter(|b| !b.is_empty()),
            description: p.string("description")?,
            mr_default_target_self: p.bool("mr_default_target_self")?,
        })
    }
}

/// GitLab answers a fork that fails validation with 409 and the field map.
fn conflict(error: ApiError) -> ApiError {
    match error {
        ApiError::Validation(map) => ApiError::ConflictFields(map),
        other => other,
    }
}

/// The project and the caller's standing in it, as the fork rules see them.
fn source(ctx: &ProjectCtx) -> Source<'_> {
    Source {
        project: &ctx.project,
        level: ctx.level(),
        admin: ctx.admin,
    }
}

/// `POST /projects/:id/fork`.
pub async fn create(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let creator = creator(&api)?;
    let request: ForkRequest = api.input()?;
    let ctx = access::project(&api, &id).await?;
    let branches = request.branches.clone();
    let data_dir = api.ctx.config.storage.data_dir.clone();
    let fork = forks::create(api.db(), &data_dir, creator, source(&ctx), request)
        .await
        .map_err(|refusal| conflict(refusal.into()))?;
    let body = reload(&api, fork.id).await?;
    let copy = Job::ForkCopy {
        source_id: ctx.project.id,
        fork_id: fork.id,
        branches,
    };
    jobs::enqueue(&api.ctx, api.db(), &copy).await?;
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// `GET /projects/:id/forks`: the direct forks the caller can see.
pub async fn list(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ctx = access::project(&api, &id).await?;
    super::read::forks_of(api, ctx.project.id).await
}

/// `POST /projects/:id/fork/:forked_from_id`: owners and administrators mark the project as a
/// fork of another one they can see (409 when it already is a fork).
pub async fn link(
    Path((id, forked_from_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Response> {
    api.user()?;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Owner)?;
    let from = access::project(&api, &forked_from_id).await?;
    forks::link(api.db(), &ctx.project, source(&from)).await?;
    Ok((
        StatusCode::CREATED,
        Json(reload(&api, ctx.project.id).await?),
    )
        .into_response())
}

/// `DELETE /projects/:id/fork`: owners and administrators; 204, or 304 when it is no fork.
pub async fn unlink(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    api.user()?;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Owner)?;
    if forks::unlink(api.db(), ctx.project.id).await? {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Err(ApiError::NotModified)
    }
}
