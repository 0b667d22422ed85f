//! `GET/POST/PUT/DELETE /projects/:id/merge_requests[/:iid]`, merge, rebase and approvals.
//! Writes parse their typed input (`input.rs`), call `services::merge_requests` and render.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::input::{
    ApproveQuery, CreateMergeRequestInput, MergeQuery, RebaseQuery, ShowQuery,
    UpdateMergeRequestInput,
};
use super::{SingleExtras, load, may_merge, merge_settings, render, repository, views};
use crate::api::access::{self, ProjectCtx};
use crate::api::repository::open;
use crate::api::repository::page;
use crate::api::spam_check::RequestSpamCheck;
use crate::http::error::{ApiError, ApiResult};
use crate::http::json::Json;
use crate::http::request::Api;
use crate::jobs::{self, Job};
use crate::model::merge_requests::{MergeRequestRow, MergeStatus};
use crate::model::states::UserState;
use crate::policy::merge_requests::{MergeRequestCtx, is_developer, merge_requests_readable};
use crate::services::merge_requests::{self, Editor, MergeContext};
use crate::services::push::PushOrigin;
use crate::store::merge_requests::MergeRequestUsers;
use crate::views::merge_request::{
    ApprovalStateView, ApprovalsView, MergeRequestView, ReviewerView,
};
use crate::views::timestamp;
use crate::views::user::UserSummary;

/// Queues the mergeability check of `mr` unless it is checked for its heads already.
async fn queue_check(api: &Api, mr: &MergeRequestRow) -> ApiResult<()> {
    if mr.merge_status != MergeStatus::Unchecked {
        return Ok(());
    }
    let job = Job::MergeabilityCheck {
        project_id: mr.project_id,
        merge_request_id: mr.id,
    };
    jobs::enqueue(&api.ctx, api.db(), &job).await?;
    Ok(())
}

/// `GET .../merge_requests/:iid`: an unchecked MR has its check queued, as GitLab's API
/// does on a read.
pub async fn show(
    Path((id, iid)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<MergeRequestView>> {
    let ctx = load(&api, &id, &iid).await?;
    let query: ShowQuery = api.input()?;
    queue_check(&api, &ctx.mr).await?;
    let diverged_commits_count = match query.include_diverged_commits_count {
        true => Some(diverged_commits(&api, &ctx.mr).await?),
        false => None,
    };
    let extras = SingleExtras {
        rebase_in_progress: query.include_rebase_in_progress,
        diverged_commits_count,
    };
    Ok(Json(
        render(&api, &ctx, &ctx.mr, query.with_labels_details, extras).await?,
    ))
}

/// The target's commits the source lacks.
async fn diverged_commits(api: &Api, mr: &MergeRequestRow) -> ApiResult<i64> {
    let repo = repository(api, mr.project_id);
    let source = format!("refs/heads/{}", mr.source_branch);
    let target = format!("refs/heads/{}", mr.target_branch);
    let (Some(source), Some(target)) = (
        repo.ref_target(&source).await?,
        repo.ref_target(&target).await?,
    ) else {
        return Ok(0);
    };
    Ok(repo.commits_to_replay(&source, &target).await?.len() as i64)
}

pub(super) fn editor<'a>(
    user: &'a crate::model::users::UserRow,
    ctx: &MergeRequestCtx,
) -> Editor<'a> {
    Editor {
        user,
        developer: is_developer(&ctx.project),
    }
}

/// `POST /projects/:id/merge_requests`: Developers of a project whose repository they may
/// push to (GitLab's `create_merge_request_from` and `_in`), 403 for others.
pub async fn create(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let project = access::project(&api, &id).await?;
    if !merge_requests_readable(&project) || !is_developer(&project) || project.project.archived {
        return Err(ApiError::forbidden());
    }
    let CreateMergeRequestInput(input) = api.input()?;
    if let Some(target_id) = input.target_project_id.filter(|t| *t != project.project.id) {
        refuse_other_target(&api, &project, target_id).await?;
    }
    let repo = open(&api, project).await?;
    let spam = RequestSpamCheck::merge_request(&api, &repo.ctx, &caller.user);
    let author = Editor {
        user: &caller.user,
        developer: true,
    };
    let mr = merge_requests::create(
        api.db(),
        &repo.repo,
        &author,
        repo.ctx.project.id,
        input,
        &spam,
    )
    .await?;
    queue_check(&api, &mr).await?;
    let ctx = MergeRequestCtx {
        project: repo.ctx,
        caller: Some(caller.user.id),
        mr,
    };
    let view = render(&api, &ctx, &ctx.mr, false, SingleExtras::default()).await?;
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

/// A target project other than the source, as GitLab's `set_projects!` and `validate_fork`
/// answer it: 404 for an unknown id, 403 for one the caller may not open merge requests in,
/// 422 when the source is not its fork. A fork's merge request into its upstream passes on
/// to the service, which does not make them.
async fn refuse_other_target(api: &Api, source: &ProjectCtx, target_id: i64) -> ApiResult<()> {
    if api.db().project_by_id(target_id).await?.is_none() {
        return Err(ApiError::NotFoundMessage("404 Not found".into()));
    }
    let target = access::project(api, &target_id.to_string())
        .await
        .map_err(|_| ApiError::forbidden())?;
    if !merge_requests_readable(&target) || target.project.archived {
        return Err(ApiError::forbidden());
    }
    if source.project.forked_from_id != Some(target_id) {
        return Err(ApiError::Unprocessable(serde_json::json!([
            "Source project is not a fork of the target project"
        ])));
    }
    Ok(())
}

/// `PUT .../merge_requests/:iid`: the author and Developers (403 for others, before the
/// parameters are read).
pub async fn update(
    Path((id, iid)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<MergeRequestView>> {
    let caller = api.user()?;
    let ctx = load(&api, &id, &iid).await?;
    if !ctx.may_update() || ctx.project.project.archived {
        return Err(ApiError::forbidden());
    }
    let UpdateMergeRequestInput(input) = api.input()?;
    let repo = repository(&api, ctx.project.project.id);
    let spam = RequestSpamCheck::merge_request(&api, &ctx.project, &caller.user);
    let mr = merge_requests::update(
        api.db(),
        &repo,
        &editor(&caller.user, &ctx),
        &ctx.mr,
        input,
        &spam,
    )
    .await?;
    queue_check(&api, &mr).await?;
    Ok(Json(
        render(&api, &ctx, &mr, false, SingleExtras::default()).await?,
    ))
}

/// `DELETE .../merge_requests/:iid`: owners and administrators.
pub async fn remove(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<StatusCode> {
    let caller = api.user()?;
    let ctx = load(&api, &id, &iid).await?;
    ctx.project
        .require(crate::access_level::AccessLevel::Owner)?;
    api.db()
        .delete_merge_request(&ctx.mr, caller.user.id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT .../merge_requests/:iid/merge`.
pub async fn merge(
    Path((id, iid)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<MergeRequestView>> {
    let caller = api.user()?;
    let ctx = load(&api, &id, &iid).await?;
    let MergeQuery(input) = api.input()?;
    let settings = merge_settings(&ctx);
    let may_merge = may_merge(&api, &ctx).await? && !ctx.project.project.archived;
    let full_path = format!(
        "{}/{}",
        ctx.project.namespace.full_path, ctx.project.project.path
    );
    let MergeRequestCtx {
        project,
        mr,
        caller: reader,
    } = ctx;
    let repo = open(&api, project).await?;
    let target = repo.target_from(&api, &caller.user, PushOrigin::Merge);
    let merge = MergeContext {
        target: &target,
        settings: &settings,
        project_full_path: &full_path,
        may_merge,
    };
    let merged = merge_requests::merge(api.db(), &mr, &merge, &input).await?;
    drop(target);
    let ctx = MergeRequestCtx {
        project: repo.ctx,
        mr: merged,
        caller: reader,
    };
    Ok(Json(
        render(&api, &ctx, &ctx.mr, false, SingleExtras::default()).await?,
    ))
}

/// `PUT .../merge_requests/:iid/rebase`: Developers; the source branch replayed on the
/// target's head as a push by the caller. Answers 202 as GitLab does; the outcome shows in
/// `rebase_in_progress` and `merge_error`.
pub async fn rebase(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let ctx = load(&api, &id, &iid).await?;
    let RebaseQuery = api.input()?;
    if !is_developer(&ctx.project) || ctx.project.project.archived {
        return Err(ApiError::forbidden());
    }
    if ctx.mr.state != crate::model::merge_requests::MergeRequestState::Opened {
        return Err(ApiError::forbidden());
    }
    if ctx.mr.rebase_in_progress {
        return Err(ApiError::Conflict("Rebase in progress".into()));
    }
    let MergeRequestCtx { project, mr, .. } = ctx;
    api.db().set_rebase_in_progress(mr.id, true, None).await?;
    let repo = open(&api, project).await?;
    let target = repo.target_from(&api, &caller.user, PushOrigin::Api);
    merge_requests::rebase(api.db(), &target, &mr)
        .await
        .map_err(ApiError::Internal)?;
    Ok((
        StatusCode::ACCEPTED,
        Json(serde_json::json!({ "rebase_in_progress": true })),
    )
        .into_response())
}

async fn approvals_view(
    api: &Api,
    ctx: &MergeRequestCtx,
    mr: &MergeRequestRow,
) -> ApiResult<ApprovalsView> {
    let approvers = api
        .db()
        .users_of_merge_requests(MergeRequestUsers::Approvers, &[mr.id])
        .await?;
    let approved_at = api.db().approval_times(mr.id).await?;
    let approvers: Vec<_> = approvers
        .into_iter()
        .map(|row| {
            let at = approved_at
                .iter()
                .find(|(user, _)| *user == row.user.id)
                .map_or(mr.created_at, |(_, at)| *at);
            (row.user, at)
        })
        .collect();
    Ok(views(api).approvals(mr, &approvers, ctx.caller, is_developer(&ctx.project)))
}

/// `GET .../approvals`.
pub async fn approvals(
    Path((id, iid)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<ApprovalsView>> {
    let ctx = load(&api, &id, &iid).await?;
    Ok(Json(approvals_view(&api, &ctx, &ctx.mr).await?))
}

/// `GET .../approval_state`: CE has no approval rules.
pub async fn approval_state(
    Path((id, iid)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<ApprovalStateView>> {
    load(&api, &id, &iid).await?;
    Ok(Json(ApprovalStateView {
        approval_rules_overwritten: false,
        rules: Vec::new(),
    }))
}

async fn set_approval(id: &str, iid: &str, api: &Api, approve: bool) -> ApiResult<Response> {
    let caller = api.user()?;
    let ctx = load(api, id, iid).await?;
    let ApproveQuery { sha } = api.input()?;
    if let Some(sha) = sha
        && ctx.mr.head_sha.as_deref() != Some(sha.as_str())
    {
        return Err(ApiError::Conflict(format!(
            "SHA does not match HEAD of source branch: {}",
            ctx.mr.head_sha.as_deref().unwrap_or_default()
        )));
    }
    merge_requests::approve(
        api.db(),
        &ctx.mr,
        &caller.user,
        is_developer(&ctx.project),
        approve,
    )
    .await?;
    let view = approvals_view(api, &ctx, &ctx.mr).await?;
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

/// `POST .../approve`.
pub async fn approve(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    set_approval(&id, &iid, &api, true).await
}

/// `POST .../unapprove`.
pub async fn unapprove(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    set_approval(&id, &iid, &api, false).await
}

/// `GET .../participants`: the author, assignees, reviewers and commenters, in that order,
/// without blocked users.
pub async fn participants(
    Path((id, iid)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let mr = &ctx.mr;
    let mut ids = vec![mr.author_id];
    for which in [MergeRequestUsers::Assignees, MergeRequestUsers::Reviewers] {
        let linked = api.db().users_of_merge_requests(which, &[mr.id]).await?;
        ids.extend(linked.iter().map(|row| row.user.id));
    }
    ids.extend(api.db().merge_request_note_author_ids(mr.id).await?);
    let mut ordered: Vec<i64> = Vec::new();
    for id in ids {
        if !ordered.contains(&id) {
            ordered.push(id);
        }
    }
    let ids = ordered;
    let users = api.db().users_by_ids(&ids).await?;
    let shown: Vec<UserSummary> = ids
        .iter()
        .filter_map(|id| users.iter().find(|u| u.id == *id))
        .filter(|u| u.state != UserState::Blocked)
        .map(|u| api.user_views().summary(u))
        .collect();
    page(&api, shown)
}

/// `GET .../reviewers`: each reviewer with GitLab's review state (`approved` once they
/// approved, else `unreviewed`).
pub async fn reviewers(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let reviewers = api
        .db()
        .users_of_merge_requests(MergeRequestUsers::Reviewers, &[ctx.mr.id])
        .await?;
    let approved = api.db().approval_times(ctx.mr.id).await?;
    let views = api.user_views();
    let shown: Vec<ReviewerView> = reviewers
        .iter()
        .map(|row| ReviewerView {
            user: views.summary(&row.user),
            state: match approved.iter().any(|(user, _)| *user == row.user.id) {
                true => "approved",
                false => "unreviewed",
            },
            created_at: timestamp(ctx.mr.created_at),
        })
        .collect();
    page(&api, shown)
}
