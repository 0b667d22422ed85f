//! The Issues API: lists (`GET /issues`, `/groups/:id/issues`, `/projects/:id/issues`), single
//! issues (create/read/update/delete), and what hangs off one issue: notes, award emoji,
//! subscriptions, todos, time tracking, participants, move, user agent detail.
//!
//! Who may do what (GitLab's issue policy): reading needs the project and its issues feature
//! (`private` = members only); confidential issues only for their author, assignees, reporters
//! and above and administrators, 404 for everyone else. Authors and assignees may edit their
//! issue; labels, milestone, assignees, due date and locking need reporter access.

mod actions;
pub(crate) mod input;
pub(crate) mod list;
mod notes;
mod time;
mod write;

use crate::http::routes::Doc;
use crate::services::notes::{CreateNote, UpdateNote};
use axum::http::Method;
use std::collections::HashMap;

use crate::http::routes::Router;
use axum::routing::{get, post};

use super::access::{self, ProjectCtx};
use super::award_emoji::{self, Awardable};
use super::time_tracking;
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{Page, PageRequest};
use crate::http::params::flag_input;
use crate::http::request::Api;
use crate::model::issues::{IssueRow, ProjectRef};
use crate::model::noteables::Noteable;
use crate::model::users::UserRow;
use crate::policy;
pub use crate::policy::issues::{IssueCtx, is_owner, is_reporter, issues_readable};
use crate::services::issues::Created;
use crate::settings::keys;
use crate::views::issue::{
    IssueBatch, IssueShape, IssueView, IssueViews, NoteView, TodoView, UserAgentDetailView,
};
use crate::views::unique;
use crate::views::user::UserSummary;

pub fn router() -> Router<ApiContext> {
    let issue = "/api/v4/projects/{id}/issues/{issue_iid}";
    // Every list of issues reads the same filters; actions on one issue answer it.
    let issue_list = || {
        Doc::new()
            .input::<list::IssueListQuery>()
            .answers_list::<IssueView>()
    };
    let answers_issue = || Doc::new().answers::<IssueView>();
    let merge_requests = || {
        Doc::new()
            .input::<PageRequest>()
            .answers_list::<crate::views::merge_request::MergeRequestView>()
    };
    let router = Router::new()
        .route("/api/v4/issues", get(list::global))
        .doc(
            Method::GET,
            Doc::new()
                .input::<list::AnonymousScope>()
                .input::<list::IssueListQuery>()
                .answers_list::<IssueView>(),
        )
        .route("/api/v4/issues/{id}", get(write::show_by_id))
        .doc(Method::GET, answers_issue())
        .route("/api/v4/groups/{id}/issues", get(list::group))
        .doc(Method::GET, issue_list())
        .route(
            "/api/v4/projects/{id}/issues",
            get(list::project).post(write::create),
        )
        .doc(Method::GET, issue_list())
        .doc(
            Method::POST,
            answers_issue().input::<input::CreateIssueRequest>(),
        )
        .route(
            issue,
            get(write::show).put(write::update).delete(write::remove),
        )
        .doc(Method::GET, answers_issue().input::<LabelsDetails>())
        .doc(
            Method::PUT,
            answers_issue().input::<crate::services::issues::UpdateIssue>(),
        )
        .route(
            &format!("{issue}/notes"),
            get(notes::list).post(notes::create),
        )
        .doc(
            Method::GET,
            Doc::new()
                .input::<input::NoteListQuery>()
                .answers_list::<NoteView>(),
        )
        .doc(
            Method::POST,
            Doc::new().input::<CreateNote>().answers::<NoteView>(),
        )
        .route(
            &format!("{issue}/notes/{{note_id}}"),
            get(notes::show).put(notes::update).delete(notes::remove),
        )
        .doc(Method::GET, Doc::new().answers::<NoteView>())
        .doc(
            Method::PUT,
            Doc::new().input::<UpdateNote>().answers::<NoteView>(),
        )
        .route(&format!("{issue}/subscribe"), post(actions::subscribe))
        .doc(Method::POST, answers_issue())
        .route(&format!("{issue}/unsubscribe"), post(actions::unsubscribe))
        .doc(Method::POST, answers_issue())
        .route(&format!("{issue}/todo"), post(actions::todo))
        .doc(Method::POST, Doc::new().answers::<TodoView>())
        .route(&format!("{issue}/move"), post(actions::move_issue))
        .doc(Method::POST, answers_issue().input::<input::MoveIssue>())
        .route(&format!("{issue}/participants"), get(actions::participants))
        .doc(
            Method::GET,
            Doc::new()
                .input::<PageRequest>()
                .answers_list::<UserSummary>(),
        )
        .route(&format!("{issue}/closed_by"), get(actions::closed_by))
        .doc(Method::GET, merge_requests())
        .route(
            &format!("{issue}/related_merge_requests"),
            get(actions::closed_by),
        )
        .doc(Method::GET, merge_requests())
        .route(
            &format!("{issue}/user_agent_detail"),
            get(actions::user_agent_detail),
        )
        .doc(Method::GET, Doc::new().answers::<UserAgentDetailView>());
    let router = time_tracking::routes::<Issues>(router, issue);
    award_emoji::routes::<Issues>(router, issue)
}

/// Issues and their notes take award emoji; issues track time.
struct Issues;

impl award_emoji::Awardables for Issues {
    async fn resolve(api: &Api, id: &str, iid: &str, note: Option<&str>) -> ApiResult<Awardable> {
        let ctx = load(api, id, iid).await?;
        let note_id = match note {
            Some(note) => notes::note_of(api, &ctx, note).await?.id,
            None => 0,
        };
        Ok(Awardable {
            on: Noteable::Issue(ctx.issue.id),
            project_id: ctx.issue.project_id,
            title: ctx.issue.title,
            note_id,
        })
    }
}

/// The path parts of a project the request already loaded, as issue views and references use.
pub fn project_ref(ctx: &ProjectCtx) -> ProjectRef {
    ProjectRef {
        id: ctx.project.id,
        name: ctx.project.name.clone(),
        path: ctx.project.path.clone(),
        namespace_full_path: ctx.namespace.full_path.clone(),
        namespace_full_name: ctx.namespace.full_name.clone(),
    }
}

/// `:issue_iid` as Grape's Integer coercion reads it.
fn parse_iid(iid: &str) -> ApiResult<i64> {
    iid.trim()
        .parse()
        .map_err(|_| ApiError::invalid("issue_iid"))
}

/// The issue `iid` of project `id` if the caller may read it, else `404 Issue Not Found`
/// (`404 Project Not Found` for an invisible project).
pub async fn load(api: &Api, id: &str, iid: &str) -> ApiResult<IssueCtx> {
    let iid = parse_iid(iid)?;
    let project = access::project(api, id).await?;
    Ok(policy::issues::issue(&api.scope(), project, iid).await?)
}

pub fn views(api: &Api) -> IssueViews<'_> {
    IssueViews {
        base_url: &api.tenant.base_url,
        users: api.user_views(),
    }
}

flag_input!(
    /// `with_labels_details`: an issue's labels as objects rather than names.
    LabelsDetails,
    "with_labels_details",
    false
);

pub fn shape(api: &Api, single: bool) -> ApiResult<IssueShape> {
    let LabelsDetails(with_labels_details) = api.input()?;
    Ok(IssueShape {
        single,
        with_labels_details,
        limit_to_hours: api.settings.get(keys::TIME_TRACKING_LIMIT_TO_HOURS),
    })
}

/// The users among `ids`, by id (one query).
pub async fn users_by_id(api: &Api, ids: Vec<i64>) -> ApiResult<HashMap<i64, UserRow>> {
    Ok(api
        .db()
        .users_by_ids(&unique(ids.into_iter()))
        .await?
        .into_iter()
        .map(|u| (u.id, u))
        .collect())
}

/// One page of a list that is loaded whole (labels, milestones, award emoji: short lists).
pub fn page_of<T>(all: Vec<T>, request: &PageRequest) -> Page<T> {
    let total = all.len() as i64;
    let rows = all
        .into_iter()
        .skip(request.offset() as usize)
        .take(request.per_page as usize + 1)
        .collect();
    Page {
        rows,
        total: Some(total),
    }
}

/// What `rows` show besides themselves (`IssueBatch::load`), for the caller.
pub async fn batch(api: &Api, rows: &[IssueRow], subscribed: bool) -> ApiResult<IssueBatch> {
    let scope = api.scope();
    Ok(IssueBatch::load(scope.db(), scope.viewer(), rows, subscribed).await?)
}

/// A new issue in its single form, from what the create read and wrote (no further reads):
/// the caller is its author and subscribed to it.
pub fn render_created(
    api: &Api,
    project: &ProjectCtx,
    author: &UserRow,
    created: Created,
) -> ApiResult<IssueView> {
    let issue = created.issue.row;
    let mut batch = IssueBatch::default();
    batch.labels.insert(issue.id, created.issue.labels);
    batch.assignees.insert(issue.id, created.assignees);
    batch.users.insert(author.id, author.clone());
    if let Some(milestone) = created.milestone {
        batch.milestones.insert(milestone.id, milestone);
    }
    batch
        .projects
        .insert(project.project.id, project_ref(project));
    batch.subscribed = Some(vec![issue.id]);
    Ok(views(api).issue(&issue, &batch, shape(api, true)?))
}

/// One issue in its single form (with `subscribed`).
pub async fn render(api: &Api, issue: &IssueRow) -> ApiResult<IssueView> {
    let batch = batch(api, std::slice::from_ref(issue), true).await?;
    Ok(views(api).issue(issue, &batch, shape(api, true)?))
}
