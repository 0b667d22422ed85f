//! Stars: `POST /projects/:id/star` and `/unstar` (304 when already in that state),
//! `GET /projects/:id/starrers`.

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::reload;
use crate::api::access;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{Page, PageRequest};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::services::projects;
use crate::views::project_answers::StarrerView;
use crate::views::timestamp;

async fn set_star(id: &str, api: &Api, star: bool) -> ApiResult<Response> {
    let caller = api.user()?;
    let ctx = access::project(api, id).await?;
    if !projects::star(api.db(), ctx.project.id, caller.user.id, star).await? {
        return Err(ApiError::NotModified);
    }
    Ok((
        StatusCode::CREATED,
        Json(reload(api, ctx.project.id).await?),
    )
        .into_response())
}

pub async fn star(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    set_star(&id, &api, true).await
}

pub async fn unstar(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    set_star(&id, &api, false).await
}

/// `GET /projects/:id/starrers`.
pub(super) struct StarrerQuery {
    /// Part of a name or username.
    search: Option<String>,
}

impl FromParams for StarrerQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(StarrerQuery {
            search: p
                .string("search")?
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty()),
        })
    }
}

pub async fn starrers(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let StarrerQuery { search } = api.input()?;
    let ctx = access::project(&api, &id).await?;
    let request = PageRequest::from_params(&api.params)?;
    let rows = api
        .db()
        .starrers(
            ctx.project.id,
            search.as_deref(),
            request.per_page + 1,
            request.offset(),
        )
        .await?;
    let total = search.is_none().then_some(ctx.project.star_count);
    let views = api.user_views();
    Ok(Page { rows, total }.respond(
        &request,
        &api.origin,
        |s| s.user.id,
        |s| StarrerView {
            starred_since: timestamp(s.starred_at),
            user: views.summary(&s.user),
        },
    ))
}
