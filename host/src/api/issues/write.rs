//! `GET/POST/PUT/DELETE /projects/:id/issues[/:issue_iid]`.
//!
//! Create and update each run in one function: read and check the parameters into a
//! `NewIssue` / `IssueChanges`, then write. A policy check on the finished write (a spam
//! check) belongs between the two, where it sees the whole change and the request's origin.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::system_notes::{self, Named, named};
use super::{
    IssueCtx, Shown, is_owner, is_reporter, issues_readable, load, render, render_created,
};
use crate::api::access::{self, ProjectCtx, today};
use crate::api::spam::{self, Spammable};
use crate::http::error::{ApiError, ApiResult, OnConstraint};
use crate::http::params::Params;
use crate::http::request::Api;
use crate::model::milestones::MilestoneRow;
use crate::model::users::UserRow;
use crate::plugins::spam::{SpamProject, SpammableKind};
use crate::store::issue_filter::AssignableCheck;
use crate::store::issue_notes::SystemNotes;
use crate::store::issues::{IssueChanges, NewIssue, RequestOrigin};

pub const TITLE_MAX: usize = 255;
pub const DESCRIPTION_MAX: usize = 1_000_000;

/// GitLab's `update_params_at_least_one_of`.
const UPDATE_PARAMS: &[&str] = &[
    "assignee_id",
    "assignee_ids",
    "confidential",
    "created_at",
    "description",
    "discussion_locked",
    "due_date",
    "labels",
    "add_labels",
    "remove_labels",
    "milestone_id",
    "state_event",
    "title",
    "issue_type",
];

pub async fn show(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Json<Value>> {
    let ctx = load(&api, &id, &iid).await?;
    Ok(Json(render(&api, &ctx.issue).await?))
}

fn check_title(title: &str) -> ApiResult<()> {
    if title.trim().is_empty() {
        return Err(ApiError::field("title", "can't be blank"));
    }
    if title.chars().count() > TITLE_MAX {
        return Err(ApiError::field(
            "title",
            format!("is too long (maximum is {TITLE_MAX} characters)"),
        ));
    }
    Ok(())
}

fn check_description(description: &str) -> ApiResult<()> {
    if description.chars().count() > DESCRIPTION_MAX {
        return Err(ApiError::field(
            "description",
            format!("is too long (maximum is {DESCRIPTION_MAX} characters)"),
        ));
    }
    Ok(())
}

/// Whether the parameter is present and blank (`""`, `[]`, `0` or `[0]`): "unset it".
fn blank_or_zero(params: &Params, name: &str) -> bool {
    match params.raw(name) {
        Some(Value::String(s)) => s.trim().is_empty() || s.trim() == "0",
        Some(Value::Array(items)) => items
            .iter()
            .all(|i| i.as_i64() == Some(0) || i.as_str().is_some_and(|s| s.trim() == "0")),
        Some(Value::Number(n)) => n.as_i64() == Some(0),
        _ => false,
    }
}

/// What only reporters may set: assignees, milestone, labels, due date, locking.
#[derive(Default)]
struct Metadata {
    /// The known users among those named, in the given order.
    assignees: Option<Vec<UserRow>>,
    milestone: Option<Option<MilestoneRow>>,
    labels: Option<Vec<String>>,
    add_labels: Vec<String>,
    remove_labels: Vec<String>,
    due_date: Option<Option<String>>,
    discussion_locked: Option<bool>,
}

async fn read_metadata(
    api: &Api,
    project: &ProjectCtx,
    issue: Option<&IssueCtx>,
) -> ApiResult<Metadata> {
    let p = &api.params;
    let mut meta = Metadata::default();
    let assignees = if p.raw("assignee_ids").is_some() {
        Some(if blank_or_zero(p, "assignee_ids") {
            Vec::new()
        } else {
            p.int_list("assignee_ids")?.unwrap_or_default()
        })
    } else if p.raw("assignee_id").is_some() {
        Some(match p.int("assignee_id")? {
            Some(0) | None => Vec::new(),
            Some(id) => vec![id],
        })
    } else {
        None
    };
    if let Some(ids) = assignees {
        // Unknown users, and users who could not read the issue, are dropped, as GitLab drops
        // assignees it cannot assign.
        let known = api.db().users_by_ids(&ids).await?;
        let today = today();
        let check = AssignableCheck {
            project_id: project.project.id,
            issue: issue.map(|i| (i.issue.confidential, i.issue.author_id, &i.assignees[..])),
            today: &today,
        };
        let assignable = api.db().assignable_among(&check, &known).await?;
        let mut kept: Vec<UserRow> = Vec::new();
        for id in ids {
            if let Some(user) = known.iter().find(|u| u.id == id)
                && assignable.contains(&id)
                && !kept.iter().any(|k| k.id == id)
            {
                kept.push(user.clone());
            }
        }
        meta.assignees = Some(kept);
    }
    if p.raw("milestone_id").is_some() {
        meta.milestone = Some(if blank_or_zero(p, "milestone_id") {
            None
        } else {
            let id = p.int("milestone_id")?.unwrap_or(0);
            let milestone = api
                .db()
                .milestone_by_id(id)
                .await?
                .filter(|m| m.project_id == project.project.id)
                .ok_or_else(|| ApiError::field("milestone_id", "is invalid"))?;
            Some(milestone)
        });
    }
    meta.labels = p.string_list("labels")?;
    meta.add_labels = p.string_list("add_labels")?.unwrap_or_default();
    meta.remove_labels = p.string_list("remove_labels")?.unwrap_or_default();
    if p.raw("due_date").is_some() {
        meta.due_date = Some(p.date("due_date")?.map(|d| d.to_string()));
    }
    meta.discussion_locked = p.bool("discussion_locked")?;
    Ok(meta)
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

/// Label names as stored: the given names, in order, without case-insensitive repeats.
fn label_names(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        if !out.iter().any(|n| n.eq_ignore_ascii_case(name)) {
            out.push(name.clone());
        }
    }
    out
}

/// Runs the tenant's spam check (if one is bound) on the issue as it will be written.
/// `Ok(true)`: checked and allowed, which the user agent detail records.
async fn spam_check(
    api: &Api,
    project: &ProjectCtx,
    author: &UserRow,
    issue: (&str, &str, bool),
    is_update: bool,
) -> ApiResult<bool> {
    let (title, description, confidential) = issue;
    let spammable = Spammable {
        kind: SpammableKind::Issue,
        noteable_type: "Issue",
        title,
        description,
        is_update,
        confidential,
        project: Some(SpamProject {
            id: project.project.id,
            path: format!("{}/{}", project.namespace.full_path, project.project.path),
            visibility: project.project.visibility.clone(),
        }),
    };
    Ok(spam::check(api, author, &spammable).await?.is_some())
}

pub async fn create(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let project = access::project(&api, &id).await?;
    require_create(&api, &project)?;
    let caller = api.user()?;
    let p = &api.params;
    let title = p.required_string("title")?;
    check_title(&title)?;
    let description = p.string("description")?;
    if let Some(description) = &description {
        check_description(description)?;
    }
    if p.raw("merge_request_to_resolve_discussions_of").is_some() {
        p.int("merge_request_to_resolve_discussions_of")?;
        // Trellis has no merge requests, so every merge request named here is unknown.
        return Err(ApiError::NotFound("Merge Request"));
    }
    let mut issue = NewIssue {
        project_id: project.project.id,
        author_id: caller.user.id,
        title,
        description,
        confidential: p.bool("confidential")?.unwrap_or(false),
        origin: request_origin(&api),
        ..NewIssue::default()
    };
    let iid = p.int("iid")?;
    let created_at = p.datetime("created_at")?;
    if is_owner(&project) {
        issue.iid = iid.filter(|i| *i > 0);
        issue.created_at = created_at.map(|d| d.timestamp_millis());
    }
    let meta = read_metadata(&api, &project, None).await?;
    let mut shown = Shown::default();
    if is_reporter(&project) {
        shown.assignees = meta.assignees.unwrap_or_default();
        issue.assignee_ids = shown.assignees.iter().map(|u| u.id).collect();
        shown.milestone = meta.milestone.flatten();
        issue.milestone_id = shown.milestone.as_ref().map(|m| m.id);
        let mut labels = meta.labels.unwrap_or_default();
        labels.extend(meta.add_labels);
        issue.labels = label_names(&labels);
        issue.due_date = meta.due_date.flatten();
        issue.discussion_locked = meta.discussion_locked.unwrap_or(false);
    }
    // GitLab's create notes a due date (CommonSystemNotesService) and then the assignees.
    issue.notes = SystemNotes::by(caller.user.id);
    issue.notes.at = issue.created_at;
    issue
        .notes
        .extend(system_notes::due_date(None, issue.due_date.as_deref()));
    let assigned: Vec<Named> = shown.assignees.iter().map(named).collect();
    issue.notes.extend(system_notes::assignees(&[], &assigned));
    issue.spam_checked = spam_check(
        &api,
        &project,
        &caller.user,
        (
            &issue.title,
            issue.description.as_deref().unwrap_or(""),
            issue.confidential,
        ),
        false,
    )
    .await?;
    let created = api
        .db()
        .create_issue(&issue)
        .await
        .on_constraint("issues", "iid", "iid")?;
    let body = render_created(&api, &project, &caller.user, created, shown)?;
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// Applies the reporter-only fields of an update.
async fn metadata_changes(
    api: &Api,
    ctx: &IssueCtx,
    meta: Metadata,
    changes: &mut IssueChanges,
) -> ApiResult<()> {
    if let Some(users) = meta.assignees {
        changes.assignee_ids = Some(users.iter().map(|u| u.id).collect());
    }
    if let Some(milestone) = meta.milestone {
        changes.columns.set("milestone_id", milestone.map(|m| m.id));
    }
    if let Some(due_date) = meta.due_date {
        changes.columns.set("due_date", due_date);
    }
    if let Some(locked) = meta.discussion_locked {
        changes.columns.set("discussion_locked", locked);
    }
    if meta.labels.is_some() || !meta.add_labels.is_empty() || !meta.remove_labels.is_empty() {
        let mut labels = match meta.labels {
            Some(labels) => labels,
            None => api
                .db()
                .labels_of_issues(&[ctx.issue.id])
                .await?
                .into_iter()
                .map(|l| l.label.name)
                .collect(),
        };
        labels.extend(meta.add_labels);
        labels.retain(|l| !meta.remove_labels.iter().any(|r| r.eq_ignore_ascii_case(l)));
        changes.labels = Some(label_names(&labels));
    }
    Ok(())
}

pub async fn update(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Json<Value>> {
    let ctx = load(&api, &id, &iid).await?;
    ctx.require_update(&api)?;
    let caller = api.user()?;
    let p = &api.params;
    if !UPDATE_PARAMS.iter().any(|name| p.has(name)) {
        return Err(ApiError::InvalidParam(format!(
            "{} are missing, at least one parameter must be provided",
            UPDATE_PARAMS.join(", ")
        )));
    }
    let mut changes = IssueChanges::default();
    let title = p.string("title")?;
    if let Some(title) = &title {
        check_title(title)?;
        changes.columns.set("title", title.clone());
    }
    let description = p.string("description")?;
    if let Some(description) = &description {
        check_description(description)?;
        changes.columns.set("description", description.clone());
    }
    let confidential = p.bool("confidential")?;
    if let Some(confidential) = confidential {
        changes.columns.set("confidential", confidential);
    }
    let updated_at = p.datetime("updated_at")?;
    let created_at = p.datetime("created_at")?;
    if is_owner(&ctx.project) {
        if let Some(at) = updated_at {
            changes.columns.set("updated_at", at.timestamp_millis());
        }
        if let Some(at) = created_at {
            changes.columns.set("created_at", at.timestamp_millis());
        }
    }
    match p.one_of("state_event", &["close", "reopen"])?.as_deref() {
        Some("close") if ctx.issue.state == "opened" => {
            let now = crate::model::now_ms();
            changes.columns.set("state", "closed");
            changes.columns.set("closed_at", now);
            changes.columns.set("closed_by_id", caller.user.id);
            changes.open_delta = -1;
        }
        Some("reopen") if ctx.issue.state == "closed" => {
            changes.columns.set("state", "opened");
            changes.columns.set("closed_at", None::<i64>);
            changes.columns.set("closed_by_id", None::<i64>);
            changes.open_delta = 1;
        }
        _ => {}
    }
    let meta = read_metadata(&api, &ctx.project, Some(&ctx)).await?;
    let mut notes = SystemNotes::by(caller.user.id);
    // GitLab's `system_note_timestamp`: an explicit `created_at`, else `updated_at`.
    notes.at = created_at
        .or(updated_at)
        .filter(|_| is_owner(&ctx.project))
        .map(|d| d.timestamp_millis());
    if let Some(title) = title.as_deref().filter(|t| *t != ctx.issue.title) {
        notes.push(system_notes::title(&ctx.issue.title, title));
    }
    if let Some(description) = description
        .as_deref()
        .filter(|d| Some(*d) != ctx.issue.description.as_deref())
    {
        notes.extend(system_notes::description(
            ctx.issue.description.as_deref(),
            Some(description),
        ));
    }
    if is_reporter(&ctx.project) {
        if let Some(locked) = meta.discussion_locked
            && locked != ctx.issue.discussion_locked
        {
            notes.push(system_notes::discussion_lock(locked));
        }
        if let Some(due_date) = &meta.due_date {
            notes.extend(system_notes::due_date(
                ctx.issue.due_date.as_deref(),
                due_date.as_deref(),
            ));
        }
        if let Some(new) = &meta.assignees {
            let old: Vec<Named> = ctx.assignees.iter().map(named).collect();
            let new: Vec<Named> = new.iter().map(named).collect();
            notes.extend(system_notes::assignees(&old, &new));
        }
        metadata_changes(&api, &ctx, meta, &mut changes).await?;
    }
    if let Some(confidential) = confidential.filter(|c| *c != ctx.issue.confidential) {
        notes.push(system_notes::confidential(confidential));
    }
    changes.notes = notes;
    // GitLab checks an update for spam when its title or description changes.
    if title.is_some() || description.is_some() {
        let title = title.as_deref().unwrap_or(&ctx.issue.title);
        let description = description.as_deref().or(ctx.issue.description.as_deref());
        let confidential = confidential.unwrap_or(ctx.issue.confidential);
        changes.spam_checked = spam_check(
            &api,
            &ctx.project,
            &caller.user,
            (title, description.unwrap_or(""), confidential),
            true,
        )
        .await?;
    }
    let row = if changes.is_empty() {
        ctx.issue.clone()
    } else {
        api.db().update_issue(&ctx.issue, &changes).await?
    };
    Ok(Json(render(&api, &row).await?))
}

pub async fn remove(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<StatusCode> {
    let ctx = load(&api, &id, &iid).await?;
    let caller = api.user()?;
    if !is_owner(&ctx.project) {
        return Err(ApiError::forbidden());
    }
    api.db().delete_issue(&ctx.issue, caller.user.id).await?;
    Ok(StatusCode::NO_CONTENT)
}
