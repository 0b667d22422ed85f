//! `GET/POST/PUT/DELETE /projects/:id/issues[/:issue_iid]`. Creates and updates parse their
//! typed input (`input.rs`), call `services::issues` (permissions, system notes, the spam
//! check, the write) and render.

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::input::CreateIssueRequest;
use super::{IssueCtx, is_owner, is_reporter, issues_readable, load, render, render_created};
use crate::api::access::{self, ProjectCtx};
use crate::api::spam_check::RequestSpamCheck;
use crate::http::error::{ApiError, ApiResult};
use crate::http::request::Api;
use crate::model::users::UserRow;
use crate::services::issues::{self, Current, Editor, UpdateIssue};
use crate::store::issues::RequestOrigin;
use crate::views::issue::IssueView;

pub async fn show(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Json<IssueView>> {
    let ctx = load(&api, &id, &iid).await?;
    Ok(Json(render(&api, &ctx.issue).await?))
}

/// `GET /issues/:id`: an issue by its global id, for administrators only (GitLab's
/// `authenticated_as_admin!`).
pub async fn show_by_id(Path(id): Path<String>, api: Api) -> ApiResult<Json<IssueView>> {
    api.admin()?;
    let id: i64 = id.parse().map_err(|_| ApiError::invalid("id"))?;
    let issue = api
        .db()
        .issue_by_id(id)
        .await?
        .ok_or(ApiError::NotFound("Issue"))?;
    Ok(Json(render(&api, &issue).await?))
}

/// The user agent and client address of the request, as the `Api` extractor read them.
fn request_origin(api: &Api) -> RequestOrigin {
    RequestOrigin {
        user_agent: api.user_agent.clone().unwrap_or_default(),
        ip_address: api.client_ip.to_string(),
    }
}

/// 403 unless the caller may open issues in the project (signed in, issues feature on for
/// them, project not archived; private projects need membership, which `access` checked).
pub fn require_create(api: &Api, project: &ProjectCtx) -> ApiResult<()> {
    api.user()?;
    if !issues_readable(project) || project.project.archived {
        return Err(ApiError::forbidden());
    }
    Ok(())
}

/// `user` as an editor of the project's issues, with the rights their access gives.
pub fn editor<'a>(user: &'a UserRow, project: &ProjectCtx) -> Editor<'a> {
    Editor {
        user,
        reporter: is_reporter(project),
        owner: is_owner(project),
    }
}

/// The issue as the services see it.
pub fn current(ctx: &IssueCtx) -> Current<'_> {
    Current {
        issue: &ctx.issue,
        assignees: &ctx.assignees,
    }
}

pub async fn create(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let project = access::project(&api, &id).await?;
    require_create(&api, &project)?;
    let caller = api.user()?;
    let input: CreateIssueRequest = api.input()?;
    if input.merge_request_to_resolve_discussions_of.is_some() {
        // Merge request discussions are not built yet, so none can be named here.
        return Err(ApiError::NotFound("Merge Request"));
    }
    let spam = RequestSpamCheck::issue(&api, &project, &caller.user);
    let created = issues::create(
        api.db(),
        &editor(&caller.user, &project),
        project.project.id,
        input.issue,
        request_origin(&api),
        &spam,
    )
    .await?;
    let body = render_created(&api, &project, &caller.user, created)?;
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

pub async fn update(
    Path((id, iid)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<IssueView>> {
    let ctx = load(&api, &id, &iid).await?;
    let caller = api.user()?;
    let editor = editor(&caller.user, &ctx.project);
    // Who may edit is decided before the parameters are read (403 before 400).
    issues::authorize_update(&editor, &current(&ctx))?;
    let input: UpdateIssue = api.input()?;
    let spam = RequestSpamCheck::issue(&api, &ctx.project, &caller.user);
    let row = issues::update(api.db(), &editor, &current(&ctx), input, &spam).await?;
    Ok(Json(render(&api, &row).await?))
}

pub async fn remove(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<StatusCode> {
    let ctx = load(&api, &id, &iid).await?;
    let caller = api.user()?;
    issues::delete(api.db(), &editor(&caller.user, &ctx.project), &ctx.issue).await?;
    Ok(StatusCode::NO_CONTENT)
}
