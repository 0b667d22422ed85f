//! Sharing a project with a group (`POST /projects/:id/share`, `DELETE
//! /projects/:id/share/:group_id`) and moving it to another namespace (`PUT
//! /projects/:id/transfer`). The repository is keyed by project id, so a transfer changes
//! only the project's path and URLs.

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::reload;
use super::write::creator;
use crate::access_level::AccessLevel;
use crate::api::access;
use crate::api::groups::setting_str;
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::services::project_placement as placement;
use crate::views::project::ProjectView;
use crate::views::project_answers::ProjectGroupLinkView;

/// `POST /projects/:id/share`.
pub(super) struct ShareProject {
    group_id: i64,
    group_access: AccessLevel,
    /// `YYYY-MM-DD`.
    expires_at: Option<String>,
}

impl FromParams for ShareProject {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let group_id = p
            .int("group_id")?
            .ok_or_else(|| ApiError::Missing("group_id".into()))?;
        let group_access = p
            .int("group_access")?
            .ok_or_else(|| ApiError::Missing("group_access".into()))?;
        let group_access = AccessLevel::grantable(group_access).ok_or_else(|| {
            ApiError::InvalidParam("group_access does not have a valid value".into())
        })?;
        Ok(ShareProject {
            group_id,
            group_access,
            expires_at: p
                .date("expires_at")?
                .map(|d| d.format("%Y-%m-%d").to_string()),
        })
    }
}

/// `POST /projects/:id/share`: maintainers share the project with a group they can see.
pub async fn create(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    api.user()?;
    let ShareProject {
        group_id,
        group_access,
        expires_at,
    } = api.input()?;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Maintainer)?;
    if ctx.namespace.is_group() && setting_str(&ctx.namespace, "share_with_group_lock") == "true" {
        return Err(ApiError::Rejected(
            "The project sharing with group is disabled".into(),
        ));
    }
    let group = access::group(&api, &group_id.to_string())
        .await
        .map_err(|_| ApiError::NotFoundMessage("Not Found".into()))?;
    let link_id = placement::share(
        api.db(),
        ctx.project.id,
        group.group.id,
        group_access,
        expires_at.as_deref(),
    )
    .await?;
    let body = ProjectGroupLinkView {
        id: link_id,
        project_id: ctx.project.id,
        group_id: group.group.id,
        group_access,
        expires_at,
    };
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// `DELETE /projects/:id/share/:group_id`: 204, or 404 Group Link Not Found.
pub async fn remove(Path((id, group_id)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    api.user()?;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Maintainer)?;
    let group_id: i64 = group_id
        .parse()
        .map_err(|_| ApiError::invalid("group_id"))?;
    placement::unshare(api.db(), ctx.project.id, group_id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `PUT /projects/:id/transfer`: `namespace`, an id or a full path.
pub(super) struct TransferProject {
    namespace: String,
}

impl FromParams for TransferProject {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(TransferProject {
            namespace: p.required_string("namespace")?,
        })
    }
}

/// `PUT /projects/:id/transfer`: owners and administrators move the project to `namespace`
/// (id or full path) where they may create projects; its visibility drops to the target
/// group's when that is lower.
pub async fn transfer(Path(id): Path<String>, api: Api) -> ApiResult<Json<ProjectView>> {
    let creator = creator(&api)?;
    let TransferProject { namespace } = api.input()?;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Owner)?;
    placement::transfer(api.db(), creator, &ctx.project, &ctx.namespace, &namespace).await?;
    Ok(Json(reload(&api, ctx.project.id).await?))
}
