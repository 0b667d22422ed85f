//! One issue's actions and side lists: subscribe/unsubscribe (304 when already so), todo
//! (304 when pending), move, participants, the merge requests that close the issue, and the
//! admin-only user agent detail.

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::input::MoveIssue;
use super::write::{current, require_create};
use super::{is_reporter, load, page_of, project_ref, render, views};
use crate::api::access;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::PageRequest;
use crate::http::request::Api;
use crate::model::issues::IssueRow;
use crate::model::noteables::Noteable;
use crate::model::states::UserState;
use crate::model::users::UserRow;
use crate::policy::merge_requests::merge_requests_readable;
use crate::services::issues::{self, MoveEnd};
use crate::services::noteable_actions::{self, Target};
use crate::views::issue::{TodoTarget, UserAgentDetailView};

type IssuePath = Path<(String, String)>;

fn noteable_target(issue: &IssueRow) -> Target<'_> {
    Target {
        on: Noteable::Issue(issue.id),
        project_id: issue.project_id,
        title: &issue.title,
    }
}

async fn set_subscription(api: &Api, id: &str, iid: &str, subscribe: bool) -> ApiResult<Response> {
    let caller = api.user()?;
    let ctx = load(api, id, iid).await?;
    let target = noteable_target(&ctx.issue);
    if !noteable_actions::set_subscription(api.db(), caller.user.id, target, subscribe).await? {
        return Err(ApiError::NotModified);
    }
    Ok((StatusCode::CREATED, Json(render(api, &ctx.issue).await?)).into_response())
}

pub async fn subscribe(Path((id, iid)): IssuePath, api: Api) -> ApiResult<Response> {
    set_subscription(&api, &id, &iid, true).await
}

pub async fn unsubscribe(Path((id, iid)): IssuePath, api: Api) -> ApiResult<Response> {
    set_subscription(&api, &id, &iid, false).await
}

pub async fn todo(Path((id, iid)): IssuePath, api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let ctx = load(&api, &id, &iid).await?;
    let target = noteable_target(&ctx.issue);
    let Some(todo) = noteable_actions::mark_todo(api.db(), caller.user.id, target).await? else {
        return Err(ApiError::NotModified);
    };
    let project = api
        .db()
        .project_refs(&[ctx.issue.project_id])
        .await?
        .pop()
        .ok_or(ApiError::NotFound("Project"))?;
    let target = TodoTarget::Issue(Box::new(render(&api, &ctx.issue).await?));
    let body = views(&api).todo(&todo, &project, Some(&caller.user), target);
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// `POST .../move` (`services::issues::move_issue`): the caller needs reporter access to
/// both projects and may open issues in the target.
pub async fn move_issue(Path((id, iid)): IssuePath, api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let ctx = load(&api, &id, &iid).await?;
    let input: MoveIssue = api.input()?;
    let target = access::project(&api, &input.to_project_id.to_string()).await?;
    let from = MoveEnd {
        project: project_ref(&ctx.project),
        namespace_id: ctx.project.project.namespace_id,
        allowed: is_reporter(&ctx.project),
    };
    let to = MoveEnd {
        project: project_ref(&target),
        namespace_id: target.project.namespace_id,
        allowed: is_reporter(&target) && require_create(&api, &target).is_ok(),
    };
    let moved = issues::move_issue(api.db(), &caller.user, &current(&ctx), &from, &to).await?;
    Ok((StatusCode::CREATED, Json(render(&api, &moved).await?)).into_response())
}

/// The author, the assignees and the note authors, each once (paginated like GitLab's).
pub async fn participants(Path((id, iid)): IssuePath, api: Api) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let mut ids = vec![ctx.issue.author_id];
    ids.extend(ctx.assignee_ids());
    ids.extend(api.db().note_author_ids(ctx.issue.id).await?);
    let mut unique: Vec<i64> = Vec::new();
    for id in ids {
        if !unique.contains(&id) {
            unique.push(id);
        }
    }
    let users = api.db().users_by_ids(&unique).await?;
    let list: Vec<UserRow> = unique
        .iter()
        .filter_map(|id| users.iter().find(|u| u.id == *id))
        .filter(|u| u.state != UserState::Blocked)
        .cloned()
        .collect();
    let request = PageRequest::from_params(&api.params)?;
    let views = api.user_views();
    Ok(page_of(list, &request).respond(&request, &api.origin, |u| u.id, |u| views.summary(u)))
}

/// `GET .../closed_by` and `.../related_merge_requests`: the open or merged MRs whose
/// description closes the issue (GitLab's related list also holds MRs that only mention it;
/// Trellis does not record mentions), for a caller who may read the project's MRs.
pub async fn closed_by(Path((id, iid)): IssuePath, api: Api) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let request = PageRequest::from_params(&api.params)?;
    let rows = match merge_requests_readable(&ctx.project) {
        true => api.db().merge_requests_closing(ctx.issue.id).await?,
        false => Vec::new(),
    };
    let views = crate::api::merge_requests::list_views(&api, &rows).await?;
    Ok(page_of(views, &request).respond(&request, &api.origin, |m| m.id, |m| m.clone()))
}

pub async fn user_agent_detail(
    Path((id, iid)): IssuePath,
    api: Api,
) -> ApiResult<Json<UserAgentDetailView>> {
    api.admin()?;
    let ctx = load(&api, &id, &iid).await?;
    let detail = api
        .db()
        .issue_user_agent(ctx.issue.id)
        .await?
        .ok_or(ApiError::NotFound("UserAgentDetail"))?;
    Ok(Json(UserAgentDetailView {
        user_agent: detail.user_agent,
        ip_address: detail.ip_address,
        spam_filter_submitted: detail.submitted,
    }))
}
