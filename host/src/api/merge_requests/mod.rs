//! The Merge Requests API: lists (`GET /merge_requests`, `/groups/:id/merge_requests`,
//! `/projects/:id/merge_requests`), single MRs (create/read/update/delete), and what hangs off
//! one: commits, changes and diffs, versions, merge, merge ref and rebase, approvals, notes
//! and discussions, related issues, subscriptions, to-do items, award emoji and time tracking.
//!
//! Who may do what is `policy::merge_requests`: reading needs the feature (Reporters and up
//! when it is private), Developers open, edit, approve and merge (into a protected branch
//! only with its merge levels), authors edit their own, owners delete.

mod actions;
mod changes;
mod input;
mod list;
mod notes;
mod write;

use axum::http::Method;
use axum::routing::{get, post, put};

use crate::api::access;
use crate::api::award_emoji;
use crate::api::issues::input::NoteListQuery;
use crate::api::time_tracking;
use crate::context::ApiContext;
use crate::git::Repository;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::PageRequest;
use crate::http::request::Api;
use crate::http::routes::{Doc, Router};
use crate::model::merge_requests::MergeRequestRow;
use crate::model::noteables::Noteable;
use crate::policy;
use crate::policy::merge_requests::{MergeRequestCtx, is_developer};
use crate::services::merge_requests::MergeSettings;
use crate::services::notes::{CreateNote, UpdateNote};
use crate::services::protected_branches::{self as rules, Actor};
use crate::settings::keys;
use crate::views::issue::{IssueView, TodoView};
use crate::views::merge_request::{
    ApprovalStateView, ApprovalsView, DiffRefs, MergeRefView, MergeRequestBatch,
    MergeRequestListEntry, MergeRequestShape, MergeRequestUserAbilities, MergeRequestVersionView,
    MergeRequestView, MergeRequestViews, SingleMergeRequest,
};
use crate::views::merge_request::{DiscussionView, MergeRequestNoteView};
use crate::views::repository::{CommitView, DiffView};

pub fn router() -> Router<ApiContext> {
    let mr = "/api/v4/projects/{id}/merge_requests/{merge_request_iid}";
    let list = || {
        Doc::new()
            .input::<list::MergeRequestListQuery>()
            .answers_list::<MergeRequestListEntry>()
    };
    let answers_mr = || Doc::new().answers::<MergeRequestView>();
    let answers_approvals = || Doc::new().answers::<ApprovalsView>();
    let router = Router::new()
        .route("/api/v4/merge_requests", get(list::global))
        .doc(Method::GET, list())
        .route("/api/v4/groups/{id}/merge_requests", get(list::group))
        .doc(Method::GET, list())
        .route(
            "/api/v4/projects/{id}/merge_requests",
            get(list::project).post(write::create),
        )
        .doc(Method::GET, list())
        .doc(
            Method::POST,
            answers_mr().input::<input::CreateMergeRequestInput>(),
        )
        .route(
            mr,
            get(write::show).put(write::update).delete(write::remove),
        )
        .doc(Method::GET, answers_mr().input::<input::ShowQuery>())
        .doc(
            Method::PUT,
            answers_mr().input::<input::UpdateMergeRequestInput>(),
        )
        .route(&format!("{mr}/merge"), put(write::merge))
        .doc(Method::PUT, answers_mr().input::<input::MergeQuery>())
        .route(&format!("{mr}/rebase"), put(write::rebase))
        .doc(
            Method::PUT,
            Doc::new()
                .input::<input::RebaseQuery>()
                .answers_empty_list(),
        )
        .route(&format!("{mr}/commits"), get(changes::commits))
        .doc(
            Method::GET,
            Doc::new()
                .input::<PageRequest>()
                .answers_list::<CommitView>(),
        )
        .route(&format!("{mr}/changes"), get(changes::changes))
        .doc(Method::GET, answers_mr())
        .route(&format!("{mr}/diffs"), get(changes::diffs))
        .doc(
            Method::GET,
            Doc::new().input::<PageRequest>().answers_list::<DiffView>(),
        )
        .route(&format!("{mr}/raw_diffs"), get(changes::raw_diffs))
        .doc(Method::GET, Doc::new().answers::<String>())
        .route(&format!("{mr}/closes_issues"), get(changes::closes_issues))
        .doc(
            Method::GET,
            Doc::new()
                .input::<PageRequest>()
                .answers_list::<crate::views::issue::IssueView>(),
        )
        .route(&format!("{mr}/versions"), get(changes::versions))
        .doc(
            Method::GET,
            Doc::new()
                .input::<PageRequest>()
                .answers_list::<MergeRequestVersionView>(),
        )
        .route(&format!("{mr}/notes"), get(notes::list).post(notes::create))
        .doc(
            Method::GET,
            Doc::new()
                .input::<NoteListQuery>()
                .answers_list::<MergeRequestNoteView>(),
        )
        .doc(
            Method::POST,
            Doc::new()
                .input::<CreateNote>()
                .answers::<MergeRequestNoteView>(),
        )
        .route(
            &format!("{mr}/notes/{{note_id}}"),
            get(notes::show).put(notes::update).delete(notes::remove),
        )
        .doc(Method::GET, Doc::new().answers::<MergeRequestNoteView>())
        .doc(
            Method::PUT,
            Doc::new()
                .input::<UpdateNote>()
                .answers::<MergeRequestNoteView>(),
        )
        .route(
            &format!("{mr}/discussions"),
            get(notes::discussions).post(notes::start),
        )
        .doc(
            Method::GET,
            Doc::new()
                .input::<PageRequest>()
                .answers_list::<DiscussionView>(),
        )
        .doc(
            Method::POST,
            Doc::new()
                .input::<input::CreateDiscussionInput>()
                .answers::<DiscussionView>(),
        )
        .route(
            &format!("{mr}/discussions/{{discussion_id}}"),
            get(notes::discussion).put(notes::resolve),
        )
        .doc(Method::GET, Doc::new().answers::<DiscussionView>())
        .doc(
            Method::PUT,
            Doc::new()
                .input::<input::ResolveQuery>()
                .answers::<DiscussionView>(),
        )
        .route(
            &format!("{mr}/discussions/{{discussion_id}}/notes"),
            post(notes::reply),
        )
        .doc(
            Method::POST,
            Doc::new()
                .input::<CreateNote>()
                .answers::<MergeRequestNoteView>(),
        )
        .route(
            &format!("{mr}/discussions/{{discussion_id}}/notes/{{note_id}}"),
            put(notes::update_in_thread).delete(notes::remove_in_thread),
        )
        .doc(
            Method::PUT,
            Doc::new()
                .input::<input::DiscussionNoteUpdate>()
                .answers::<MergeRequestNoteView>(),
        )
        .route(&format!("{mr}/participants"), get(write::participants))
        .doc(
            Method::GET,
            Doc::new()
                .input::<PageRequest>()
                .answers_list::<crate::views::user::UserSummary>(),
        )
        .route(&format!("{mr}/reviewers"), get(write::reviewers))
        .doc(
            Method::GET,
            Doc::new()
                .input::<PageRequest>()
                .answers_list::<crate::views::merge_request::ReviewerView>(),
        )
        .route(&format!("{mr}/approve"), post(write::approve))
        .doc(
            Method::POST,
            answers_approvals().input::<input::ApproveQuery>(),
        )
        .route(&format!("{mr}/unapprove"), post(write::unapprove))
        .doc(Method::POST, answers_approvals())
        .route(&format!("{mr}/approvals"), get(write::approvals))
        .doc(Method::GET, answers_approvals())
        .route(&format!("{mr}/approval_state"), get(write::approval_state))
        .doc(Method::GET, Doc::new().answers::<ApprovalStateView>())
        .route(
            &format!("{mr}/related_issues"),
            get(changes::related_issues),
        )
        .doc(
            Method::GET,
            Doc::new()
                .input::<PageRequest>()
                .answers_list::<IssueView>(),
        )
        .route(&format!("{mr}/merge_ref"), get(changes::merge_ref))
        .doc(Method::GET, Doc::new().answers::<MergeRefView>())
        .route(&format!("{mr}/subscribe"), post(actions::subscribe))
        .doc(Method::POST, answers_mr())
        .route(&format!("{mr}/unsubscribe"), post(actions::unsubscribe))
        .doc(Method::POST, answers_mr())
        .route(&format!("{mr}/todo"), post(actions::todo))
        .doc(Method::POST, Doc::new().answers::<TodoView>());
    let router = time_tracking::routes::<actions::MergeRequests>(router, mr);
    award_emoji::routes::<actions::MergeRequests>(router, mr)
}

/// `:merge_request_iid` as Grape's Integer coercion reads it.
fn parse_iid(iid: &str) -> ApiResult<i64> {
    iid.trim()
        .parse()
        .map_err(|_| ApiError::invalid("merge_request_iid"))
}

/// The merge request `iid` of project `id` if the caller may read it: `404 Not found` for an
/// unknown MR, `404 Project Not Found` for an invisible project.
pub async fn load(api: &Api, id: &str, iid: &str) -> ApiResult<MergeRequestCtx> {
    let iid = parse_iid(iid)?;
    let project = access::project(api, id).await?;
    Ok(policy::merge_requests::merge_request(&api.scope(), project, iid).await?)
}

pub fn views(api: &Api) -> MergeRequestViews<'_> {
    MergeRequestViews {
        base_url: &api.tenant.base_url,
        users: api.user_views(),
    }
}

pub fn shape(api: &Api, with_labels_details: bool) -> MergeRequestShape {
    MergeRequestShape {
        with_labels_details,
        limit_to_hours: api.settings.get(keys::TIME_TRACKING_LIMIT_TO_HOURS),
    }
}

fn repository(api: &Api, project_id: i64) -> Repository {
    Repository::project(&api.ctx.config.storage.data_dir, api.tenant.id, project_id)
}

/// The project's settings that govern merging.
pub fn merge_settings(ctx: &MergeRequestCtx) -> MergeSettings {
    MergeSettings::of(&ctx.project.project.settings_json())
}

/// Whether the caller may merge `mr`: a Developer, and one of the target branch's merge
/// levels when it is protected (GitLab's `can_be_merged_by?`).
pub async fn may_merge(api: &Api, ctx: &MergeRequestCtx) -> ApiResult<bool> {
    if api.caller.is_none() || !is_developer(&ctx.project) {
        return Ok(false);
    }
    let protected = api.db().protected_branches(ctx.project.project.id).await?;
    let branch = &ctx.mr.target_branch;
    if rules::matching(&protected, branch).next().is_none() {
        return Ok(true);
    }
    let actor = Actor {
        level: ctx.project.level(),
        admin: ctx.project.admin,
    };
    Ok(rules::allowed(&protected, branch, "merge", actor))
}

/// What a single MR shows (GitLab's `MergeRequest` entity): the basic form, its diff
/// references and size, and what the caller may do.
pub async fn render(
    api: &Api,
    ctx: &MergeRequestCtx,
    mr: &MergeRequestRow,
    with_labels_details: bool,
    extra: SingleExtras,
) -> ApiResult<MergeRequestView> {
    let batch = MergeRequestBatch::load(api.db(), std::slice::from_ref(mr)).await?;
    let mut view = views(api).merge_request(mr, &batch, shape(api, with_labels_details));
    let diff_refs = match (&mr.base_sha, &mr.head_sha, &mr.start_sha) {
        (Some(base), Some(head), Some(start)) => Some(DiffRefs {
            base_sha: base.clone(),
            head_sha: head.clone(),
            start_sha: start.clone(),
        }),
        _ => None,
    };
    let changes_count = match &diff_refs {
        Some(refs) => {
            let repo = repository(api, mr.project_id);
            let count = repo
                .changed_paths_count(&refs.base_sha, &refs.head_sha)
                .await?;
            Some(changes_count_text(count))
        }
        None => None,
    };
    let subscribed = match &api.caller {
        Some(caller) => !api
            .db()
            .subscribed_among(caller.user.id, Noteable::MergeRequest, &[mr.id])
            .await?
            .is_empty(),
        None => false,
    };
    view.single = Some(SingleMergeRequest {
        subscribed,
        changes_count,
        latest_build_started_at: None,
        latest_build_finished_at: None,
        first_deployed_to_production_at: None,
        pipeline: None,
        head_pipeline: None,
        diff_refs,
        merge_error: mr.merge_error.clone(),
        first_contribution: false,
        user: MergeRequestUserAbilities {
            can_merge: may_merge(api, ctx).await?,
        },
        rebase_in_progress: extra.rebase_in_progress.then_some(mr.rebase_in_progress),
        diverged_commits_count: extra.diverged_commits_count,
    });
    Ok(view)
}

/// `rows` in the list form (what an issue's `closed_by` shows).
pub async fn list_views(api: &Api, rows: &[MergeRequestRow]) -> ApiResult<Vec<MergeRequestView>> {
    let batch = MergeRequestBatch::load(api.db(), rows).await?;
    let views = views(api);
    let shape = shape(api, false);
    Ok(rows
        .iter()
        .map(|m| views.merge_request(m, &batch, shape))
        .collect())
}

/// The optional fields of a single MR a request asked for.
#[derive(Debug, Default, Clone, Copy)]
pub struct SingleExtras {
    pub rebase_in_progress: bool,
    pub diverged_commits_count: Option<i64>,
}

/// GitLab's `changes_count`: the number of changed files, capped at its diff limit.
fn changes_count_text(count: usize) -> String {
    const LIMIT: usize = 1_000;
    match count > LIMIT {
        true => format!("{LIMIT}+"),
        false => count.to_string(),
    }
}
