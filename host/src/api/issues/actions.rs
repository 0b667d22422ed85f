//! One issue's actions and side lists: subscribe/unsubscribe (304 when already so), todo
//! (304 when pending), move, participants, closing/related merge requests (none: Trellis has
//! no merge requests), and the admin-only user agent detail.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::system_notes::project_reference;
use super::write::require_create;
use super::{IssueCtx, is_reporter, load, page_of, project_ref, render, views};
use crate::api::access;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::PageRequest;
use crate::http::request::Api;
use crate::model::users::UserRow;
use crate::store::issue_filter::AssignableCheck;
use crate::store::issues::{MoveReferences, NewIssue, RequestOrigin};
use crate::store::milestones::MilestoneFilter;

type IssuePath = Path<(String, String)>;

async fn is_subscribed(api: &Api, ctx: &IssueCtx, user_id: i64) -> ApiResult<bool> {
    Ok(!api
        .db()
        .subscribed_among(user_id, &[ctx.issue.id])
        .await?
        .is_empty())
}

async fn set_subscription(api: &Api, id: &str, iid: &str, subscribe: bool) -> ApiResult<Response> {
    let caller = api.user()?;
    let ctx = load(api, id, iid).await?;
    if is_subscribed(api, &ctx, caller.user.id).await? == subscribe {
        return Err(ApiError::NotModified);
    }
    api.db()
        .set_subscription(ctx.issue.id, caller.user.id, subscribe)
        .await?;
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
    if api
        .db()
        .pending_todo(caller.user.id, ctx.issue.id)
        .await?
        .is_some()
    {
        return Err(ApiError::NotModified);
    }
    let todo = api
        .db()
        .create_todo(
            caller.user.id,
            ctx.issue.project_id,
            ctx.issue.id,
            &ctx.issue.title,
        )
        .await?;
    let project = api
        .db()
        .project_refs(&[ctx.issue.project_id])
        .await?
        .pop()
        .ok_or(ApiError::NotFound("Project"))?;
    let target = render(&api, &ctx.issue).await?;
    let body = views(&api).todo(&todo, &project, Some(&caller.user), target);
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

fn move_error(message: &str) -> ApiError {
    ApiError::Custom(StatusCode::BAD_REQUEST, json!({ "message": message }))
}

/// `POST .../move`: a copy in the target project with a new iid, with the original's notes and
/// award emoji; labels and the milestone are matched there by name; the original is closed and
/// points at the copy; both get a "moved" system note.
pub async fn move_issue(Path((id, iid)): IssuePath, api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let ctx = load(&api, &id, &iid).await?;
    let target_id = api
        .params
        .int("to_project_id")?
        .ok_or_else(|| ApiError::Missing("to_project_id".into()))?;
    let target = access::project(&api, &target_id.to_string()).await?;
    if !is_reporter(&ctx.project) || !is_reporter(&target) || require_create(&api, &target).is_err()
    {
        return Err(move_error(
            "Cannot move issue due to insufficient permissions!",
        ));
    }
    if target.project.id == ctx.project.project.id {
        return Err(move_error(
            "Cannot move issue to project it originates from!",
        ));
    }
    let db = api.db();
    let target_labels = db.project_labels(target.project.id, None).await?;
    let labels = db
        .labels_of_issues(&[ctx.issue.id])
        .await?
        .into_iter()
        .filter_map(|l| {
            target_labels
                .iter()
                .find(|t| t.name.eq_ignore_ascii_case(&l.label.name))
                .map(|t| t.name.clone())
        })
        .collect();
    let milestone_id = match ctx.issue.milestone_id {
        Some(id) => match db.milestone_by_id(id).await? {
            Some(m) => db
                .list_milestones(&MilestoneFilter {
                    project_id: target.project.id,
                    title: Some(m.title),
                    ..MilestoneFilter::default()
                })
                .await?
                .first()
                .map(|m| m.id),
            None => None,
        },
        None => None,
    };
    let origin = db
        .issue_user_agent(ctx.issue.id)
        .await?
        .map(|u| RequestOrigin {
            user_agent: u.user_agent,
            ip_address: u.ip_address,
        })
        .unwrap_or_default();
    // The copy keeps the assignees who can read the target's issues (GitLab creates it
    // through the create service, which filters them).
    let today = access::today();
    let check = AssignableCheck {
        project_id: target.project.id,
        issue: None,
        today: &today,
    };
    let assignee_ids = db.assignable_among(&check, &ctx.assignees).await?;
    let issue = &ctx.issue;
    let new = NewIssue {
        project_id: target.project.id,
        author_id: issue.author_id,
        title: issue.title.clone(),
        description: issue.description.clone(),
        confidential: issue.confidential,
        discussion_locked: issue.discussion_locked,
        milestone_id,
        due_date: issue.due_date.clone(),
        time_estimate: issue.time_estimate,
        total_time_spent: issue.total_time_spent,
        assignee_ids,
        labels,
        origin,
        ..NewIssue::default()
    };
    let (source_ns, target_ns) = (
        ctx.project.project.namespace_id,
        target.project.namespace_id,
    );
    let references = MoveReferences {
        from: format!(
            "{}#{}",
            project_reference(&project_ref(&ctx.project), source_ns, target_ns),
            issue.iid
        ),
        to_project: project_reference(&project_ref(&target), target_ns, source_ns),
    };
    let moved = db
        .move_issue(issue, &new, caller.user.id, &references)
        .await?;
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
        .filter(|u| u.state != "blocked")
        .cloned()
        .collect();
    let request = PageRequest::from_params(&api.params)?;
    let views = api.user_views();
    Ok(page_of(list, &request).respond(&request, &api.origin, |u| u.id, |u| views.summary(u)))
}

/// `closed_by` and `related_merge_requests`: merge requests do not exist in Trellis, so the
/// (paginated) list is always empty.
pub async fn closed_by(Path((id, iid)): IssuePath, api: Api) -> ApiResult<Response> {
    load(&api, &id, &iid).await?;
    let request = PageRequest::from_params(&api.params)?;
    Ok(page_of(Vec::<i64>::new(), &request).respond(&request, &api.origin, |id| *id, |id| *id))
}

pub async fn user_agent_detail(Path((id, iid)): IssuePath, api: Api) -> ApiResult<Json<Value>> {
    api.admin()?;
    let ctx = load(&api, &id, &iid).await?;
    let detail = api
        .db()
        .issue_user_agent(ctx.issue.id)
        .await?
        .ok_or(ApiError::NotFound("UserAgentDetail"))?;
    Ok(Json(json!({
        "user_agent": detail.user_agent,
        "ip_address": detail.ip_address,
        "spam_filter_submitted": detail.submitted,
    })))
}
