//! What the merge request endpoints accept: one typed input per endpoint, read from the
//! merged parameters with Grape's coercion and messages. The writes' inputs carry the
//! commands of `services::merge_requests`.

use crate::api::issues::input::{assignee_ids, label_change, milestone_id, user_ids};
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params};
use crate::services::issues::StateEvent;
use crate::services::merge_request_notes::Position;
use crate::services::merge_requests::{
    CreateMergeRequest, MergeInput, Metadata, UpdateMergeRequest,
};
use crate::services::notes::CreateNote;

const TITLE_MAX: usize = 255;
const DESCRIPTION_MAX: usize = 1_048_576;

/// GitLab's `update_params_at_least_one_of` for merge requests.
const UPDATE_PARAMS: &[&str] = &[
    "add_labels",
    "allow_collaboration",
    "allow_maintainer_to_push",
    "assignee_id",
    "assignee_ids",
    "description",
    "discussion_locked",
    "labels",
    "milestone_id",
    "remove_labels",
    "remove_source_branch",
    "reviewer_ids",
    "squash",
    "state_event",
    "target_branch",
    "title",
];

fn check_title(title: &str) -> ApiResult<()> {
    if title.trim().is_empty() {
        return Err(ApiError::InvalidParam("title is empty".into()));
    }
    if title.chars().count() > TITLE_MAX {
        return Err(ApiError::field(
            "title",
            format!("is too long (maximum is {TITLE_MAX} characters)"),
        ));
    }
    Ok(())
}

fn description(p: &Params) -> ApiResult<Option<String>> {
    let description = p.string("description")?;
    if description
        .as_ref()
        .is_some_and(|d| d.chars().count() > DESCRIPTION_MAX)
    {
        return Err(ApiError::field(
            "description",
            format!("is too long (maximum is {DESCRIPTION_MAX} characters)"),
        ));
    }
    Ok(description)
}

fn metadata(p: &Params) -> ApiResult<Metadata> {
    let reviewer_ids = user_ids(p, "reviewer_ids");
    Ok(Metadata {
        assignee_ids: assignee_ids(p)?,
        reviewer_ids,
        milestone_id: milestone_id(p)?,
        labels: label_change(p)?,
        discussion_locked: p.bool("discussion_locked")?,
    })
}

/// `POST /projects/:id/merge_requests`.
pub struct CreateMergeRequestInput(pub CreateMergeRequest);

impl FromParams for CreateMergeRequestInput {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let source_branch = p.required_string("source_branch")?;
        let target_branch = p.required_string("target_branch")?;
        let title = p.required_string("title")?;
        check_title(&title)?;
        Ok(CreateMergeRequestInput(CreateMergeRequest {
            source_branch,
            target_branch,
            title,
            description: description(p)?,
            target_project_id: p.int("target_project_id")?,
            remove_source_branch: p.bool("remove_source_branch")?,
            squash: p.bool("squash")?,
            metadata: metadata(p)?,
        }))
    }
}

/// `PUT /projects/:id/merge_requests/:iid`.
pub struct UpdateMergeRequestInput(pub UpdateMergeRequest);

impl FromParams for UpdateMergeRequestInput {
    fn from_params(p: &Params) -> ApiResult<Self> {
        if !UPDATE_PARAMS.iter().any(|name| p.has(name)) {
            return Err(ApiError::InvalidParam(format!(
                "{} are missing, at least one parameter must be provided",
                UPDATE_PARAMS.join(", ")
            )));
        }
        let title = p.string("title")?;
        if let Some(title) = &title {
            check_title(title)?;
        }
        let state_event = match p.one_of("state_event", &["close", "reopen"])?.as_deref() {
            Some("close") => Some(StateEvent::Close),
            Some(_) => Some(StateEvent::Reopen),
            None => None,
        };
        Ok(UpdateMergeRequestInput(UpdateMergeRequest {
            title,
            description: description(p)?,
            target_branch: p.string("target_branch")?.filter(|b| !b.is_empty()),
            state_event,
            remove_source_branch: p.bool("remove_source_branch")?,
            squash: p.bool("squash")?,
            metadata: metadata(p)?,
        }))
    }
}

/// `PUT .../merge`.
pub struct MergeQuery(pub MergeInput);

impl FromParams for MergeQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(MergeQuery(MergeInput {
            merge_commit_message: p.string("merge_commit_message")?.filter(|m| !m.is_empty()),
            squash_commit_message: p.string("squash_commit_message")?.filter(|m| !m.is_empty()),
            squash: p.bool("squash")?,
            should_remove_source_branch: p.bool("should_remove_source_branch")?,
            sha: p.string("sha")?.filter(|s| !s.is_empty()),
        }))
    }
}

/// `PUT .../rebase`: `skip_ci` is accepted (Trellis runs no pipelines on a rebase).
pub struct RebaseQuery;

impl FromParams for RebaseQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        p.bool("skip_ci")?;
        Ok(RebaseQuery)
    }
}

/// `GET .../merge_requests/:iid`'s options.
#[derive(Debug, Default, Clone, Copy)]
pub struct ShowQuery {
    pub with_labels_details: bool,
    pub include_rebase_in_progress: bool,
    pub include_diverged_commits_count: bool,
}

impl FromParams for ShowQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(ShowQuery {
            with_labels_details: p.bool("with_labels_details")?.unwrap_or(false),
            include_rebase_in_progress: p.bool("include_rebase_in_progress")?.unwrap_or(false),
            include_diverged_commits_count: p
                .bool("include_diverged_commits_count")?
                .unwrap_or(false),
        })
    }
}

/// `POST .../approve`: `sha`, the source head the approver saw.
pub struct ApproveQuery {
    pub sha: Option<String>,
}

impl FromParams for ApproveQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(ApproveQuery {
            sha: p.string("sha")?.filter(|s| !s.is_empty()),
        })
    }
}

/// `POST .../discussions`: a note's fields and, for a thread on the diff, `position[...]`.
pub struct CreateDiscussionInput {
    pub note: CreateNote,
    pub position: Option<Position>,
}

impl FromParams for CreateDiscussionInput {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let note = CreateNote::from_params(p)?;
        let position = match p.object("position")? {
            Some(given) => Some(Position::from_params(given)?),
            None => None,
        };
        Ok(CreateDiscussionInput { note, position })
    }
}

/// `PUT .../discussions/:discussion_id`: `resolved`, required.
pub struct ResolveQuery(pub bool);

impl FromParams for ResolveQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        p.bool("resolved")?
            .map(ResolveQuery)
            .ok_or_else(|| ApiError::Missing("resolved".into()))
    }
}

/// `PUT .../discussions/:discussion_id/notes/:note_id`: a new `body`, or `resolved`.
pub struct DiscussionNoteUpdate {
    pub body: Option<String>,
    pub resolved: Option<bool>,
}

impl FromParams for DiscussionNoteUpdate {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let body = p.string("body")?;
        let resolved = p.bool("resolved")?;
        if body.is_none() && resolved.is_none() {
            return Err(ApiError::InvalidParam(
                "body, resolved are missing, exactly one parameter must be provided".into(),
            ));
        }
        if body.as_deref().is_some_and(|b| b.trim().is_empty()) {
            return Err(ApiError::InvalidParam("body is empty".into()));
        }
        Ok(DiscussionNoteUpdate { body, resolved })
    }
}
