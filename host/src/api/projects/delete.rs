//! `DELETE /projects/:id` and `POST /projects/:id/restore`: the rules are
//! `services::project_deletion`'s.

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::reload;
use crate::access_level::AccessLevel;
use crate::api::access;
use crate::http::error::ApiResult;
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::services::project_deletion::{self, Deletion};

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
    let actor = api.user()?.user.id;
    let input: DeleteProject = api.input()?;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Owner)?;
    let request = Deletion {
        project: &ctx.project,
        namespace: &ctx.namespace,
        actor,
        permanently: input.permanently,
        confirmed_path: input.full_path.as_deref(),
    };
    project_deletion::delete(
        api.db(),
        &api.settings,
        &api.ctx.config.storage.data_dir,
        request,
    )
    .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "message": "202 Accepted" })),
    )
        .into_response())
}

/// `POST /projects/:id/restore`: owners and administrators take back a deletion mark.
pub async fn restore(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let actor = api.user()?.user.id;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Owner)?;
    project_deletion::restore(api.db(), &ctx.project, ctx.namespace.id, actor).await?;
    Ok((
        StatusCode::CREATED,
        Json(reload(&api, ctx.project.id).await?),
    )
        .into_response())
}
