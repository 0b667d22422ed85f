//! Issue writes, as GitLab's issue services make them: who may change what, the change itself,
//! the system notes that record it and the spam check, then one store call that writes the
//! change, its notes and its domain event in one transaction. Handlers parse a request into
//! the commands here ([`CreateIssue`], [`UpdateIssue`]...), call, and render the result.
//!
//! Refusals are [`Refusal`]s, as in the other services; the API renders them as GitLab's.

use std::future::Future;

use super::system_notes::{self, Named, named, project_reference};
use super::{Refusal, TakenOn};
use crate::model::issues::{IssueRow, ProjectRef};
use crate::model::milestones::MilestoneRow;
use crate::model::states::IssueState;
use crate::model::users::UserRow;
use crate::model::{now_ms, today};
use crate::store::TenantDb;
use crate::store::issue_filter::AssignableCheck;
use crate::store::issue_notes::SystemNotes;
use crate::store::issues::{
    CreatedIssue, IssueChanges, LabelChange, MoveReferences, NewIssue, RequestOrigin,
};
use crate::store::milestones::MilestoneFilter;

/// Who writes, and what their access to the issue's project allows.
pub struct Editor<'a> {
    pub user: &'a UserRow,
    /// Reporter access or above, or an administrator (GitLab's `admin_issue`): assignees,
    /// milestone, labels, due date, locking, time tracking.
    pub reporter: bool,
    /// Owner or administrator: may set `iid`, `created_at` and `updated_at`.
    pub owner: bool,
}

/// An issue as loaded for a change: its row and its assignees, in order.
pub struct Current<'a> {
    pub issue: &'a IssueRow,
    pub assignees: &'a [UserRow],
}

/// The text a write is about to store, for the spam check.
pub struct SpamText<'a> {
    pub title: &'a str,
    pub description: &'a str,
    pub confidential: bool,
    pub is_update: bool,
}

/// The spam check, as the request provides it (the API runs the tenant's bound plugin).
pub trait SpamCheck {
    /// `Ok(true)`: a check ran and allowed the write; `Ok(false)`: nothing checked it;
    /// `Err`: the write is refused (`Refusal::Spam` when the spam check refuses it).
    fn check(&self, text: SpamText<'_>) -> impl Future<Output = Result<bool, Refusal>> + Send;
}

/// `state_event` of an update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateEvent {
    Close,
    Reopen,
}

impl StateEvent {
    /// The state the event leads to from `state`; `None` when it changes nothing (closing a
    /// closed issue, reopening an open one).
    pub fn transition(self, state: IssueState) -> Option<IssueState> {
        match (self, state) {
            (StateEvent::Close, IssueState::Opened) => Some(IssueState::Closed),
            (StateEvent::Reopen, IssueState::Closed) => Some(IssueState::Opened),
            _ => None,
        }
    }
}

/// What only reporters may set (ignored for others): GitLab's issue metadata.
#[derive(Debug, Default)]
pub struct Metadata {
    /// `assignee_ids` (or `assignee_id`): `Some(empty)` unassigns everyone.
    pub assignee_ids: Option<Vec<i64>>,
    /// `milestone_id`: `Some(None)` removes the milestone.
    pub milestone_id: Option<Option<i64>>,
    /// `labels`, `add_labels`, `remove_labels`; `None` when none is given.
    pub labels: Option<LabelChange>,
    /// `due_date` (`YYYY-MM-DD`): `Some(None)` removes it.
    pub due_date: Option<Option<String>>,
    pub discussion_locked: Option<bool>,
}

/// A new issue (`POST /projects/:id/issues`).
#[derive(Debug, Default)]
pub struct CreateIssue {
    pub title: String,
    pub description: Option<String>,
    pub confidential: bool,
    /// Owners only: an explicit iid (positive) and creation time, in milliseconds.
    pub iid: Option<i64>,
    pub created_at: Option<i64>,
    pub metadata: Metadata,
}

/// A change of an issue (`PUT /projects/:id/issues/:issue_iid`).
#[derive(Debug, Default)]
pub struct UpdateIssue {
    pub title: Option<String>,
    pub description: Option<String>,
    pub confidential: Option<bool>,
    /// Owners only, in milliseconds.
    pub created_at: Option<i64>,
    pub updated_at: Option<i64>,
    pub state_event: Option<StateEvent>,
    pub metadata: Metadata,
}

/// The metadata with its users and milestone looked up.
#[derive(Default)]
struct Resolved {
    /// The known, assignable users among those named, in the given order.
    assignees: Option<Vec<UserRow>>,
    milestone: Option<Option<MilestoneRow>>,
}

/// Looks up the assignees and the milestone `metadata` names. Unknown users, and users who
/// could not read the issue, are dropped, as GitLab drops assignees it cannot assign; an
/// unknown milestone (or one of another project) is a validation error.
async fn resolve(
    db: &TenantDb,
    project_id: i64,
    current: Option<&Current<'_>>,
    metadata: &Metadata,
) -> Result<Resolved, Refusal> {
    let mut resolved = Resolved::default();
    if let Some(ids) = &metadata.assignee_ids {
        let known = db.users_by_ids(ids).await?;
        let today = today();
        let check = AssignableCheck {
            project_id,
            issue: current.map(|c| (c.issue.confidential, c.issue.author_id, c.assignees)),
            today: &today,
        };
        let assignable = db.assignable_among(&check, &known).await?;
        let mut kept: Vec<UserRow> = Vec::new();
        for id in ids {
            if let Some(user) = known.iter().find(|u| u.id == *id)
                && assignable.contains(id)
                && !kept.iter().any(|k| k.id == *id)
            {
                kept.push(user.clone());
            }
        }
        resolved.assignees = Some(kept);
    }
    if let Some(milestone) = metadata.milestone_id {
        resolved.milestone = Some(match milestone {
            None => None,
            Some(id) => Some(
                db.milestone_by_id(id)
                    .await?
                    .filter(|m| m.project_id == project_id)
                    .ok_or_else(|| Refusal::invalid("milestone_id", "is invalid"))?,
            ),
        });
    }
    Ok(resolved)
}

/// A new issue as created, with what its response shows besides the row and labels.
pub struct Created {
    pub issue: CreatedIssue,
    pub assignees: Vec<UserRow>,
    pub milestone: Option<MilestoneRow>,
}

/// Creates an issue in project `project_id` (which the editor may open issues in): the
/// reporter-only fields only for reporters, `iid` and `created_at` only for owners; system
/// notes for the due date and the assignees, as GitLab's create writes them; the spam check.
pub async fn create(
    db: &TenantDb,
    editor: &Editor<'_>,
    project_id: i64,
    input: CreateIssue,
    origin: RequestOrigin,
    spam: &impl SpamCheck,
) -> Result<Created, Refusal> {
    let resolved = resolve(db, project_id, None, &input.metadata).await?;
    let mut issue = NewIssue {
        project_id,
        author_id: editor.user.id,
        title: input.title,
        description: input.description,
        confidential: input.confidential,
        origin,
        ..NewIssue::default()
    };
    if editor.owner {
        issue.iid = input.iid.filter(|i| *i > 0);
        issue.created_at = input.created_at;
    }
    let mut assignees = Vec::new();
    let mut milestone = None;
    if editor.reporter {
        let metadata = input.metadata;
        assignees = resolved.assignees.unwrap_or_default();
        issue.assignee_ids = assignees.iter().map(|u| u.id).collect();
        milestone = resolved.milestone.flatten();
        issue.milestone_id = milestone.as_ref().map(|m| m.id);
        // A new issue has no labels to remove.
        issue.labels = metadata
            .labels
            .map(|change| {
                LabelChange {
                    remove: Vec::new(),
                    ..change
                }
                .apply(&[])
            })
            .unwrap_or_default();
        issue.due_date = metadata.due_date.flatten();
        issue.discussion_locked = metadata.discussion_locked.unwrap_or(false);
    }
    // GitLab's create notes a due date (CommonSystemNotesService) and then the assignees.
    issue.notes = SystemNotes::by(editor.user.id);
    issue.notes.at = issue.created_at;
    issue
        .notes
        .extend(system_notes::due_date(None, issue.due_date.as_deref()));
    let assigned: Vec<Named> = assignees.iter().map(named).collect();
    issue.notes.extend(system_notes::assignees(&[], &assigned));
    issue.spam_checked = spam
        .check(SpamText {
            title: &issue.title,
            description: issue.description.as_deref().unwrap_or(""),
            confidential: issue.confidential,
            is_update: false,
        })
        .await?;
    let created = db
        .create_issue(&issue)
        .await
        .taken_on(&[("issues", "iid", "iid")])?;
    Ok(Created {
        issue: created,
        assignees,
        milestone,
    })
}

/// Authors, assignees and reporters (and above) may edit an issue.
pub fn authorize_update(editor: &Editor<'_>, current: &Current<'_>) -> Result<(), Refusal> {
    let id = editor.user.id;
    if editor.reporter
        || current.issue.author_id == id
        || current.assignees.iter().any(|u| u.id == id)
    {
        Ok(())
    } else {
        Err(Refusal::forbidden())
    }
}

/// The system notes of an update, in GitLab's order: title, description, locking, due date,
/// assignees (these three for reporters only), confidentiality.
fn update_notes(
    editor: &Editor<'_>,
    current: &Current<'_>,
    input: &UpdateIssue,
    assignees: Option<&[UserRow]>,
) -> SystemNotes {
    let issue = current.issue;
    let mut notes = SystemNotes::by(editor.user.id);
    // GitLab's `system_note_timestamp`: an explicit `created_at`, else `updated_at`.
    notes.at = input
        .created_at
        .or(input.updated_at)
        .filter(|_| editor.owner);
    if let Some(title) = input.title.as_deref().filter(|t| *t != issue.title) {
        notes.push(system_notes::title(&issue.title, title));
    }
    if let Some(description) = input
        .description
        .as_deref()
        .filter(|d| Some(*d) != issue.description.as_deref())
    {
        notes.extend(system_notes::description(
            issue.description.as_deref(),
            Some(description),
        ));
    }
    if editor.reporter {
        let metadata = &input.metadata;
        if let Some(locked) = metadata.discussion_locked
            && locked != issue.discussion_locked
        {
            notes.push(system_notes::discussion_lock(locked, "issue"));
        }
        if let Some(due_date) = &metadata.due_date {
            notes.extend(system_notes::due_date(
                issue.due_date.as_deref(),
                due_date.as_deref(),
            ));
        }
        if let Some(new) = assignees {
            let old: Vec<Named> = current.assignees.iter().map(named).collect();
            let new: Vec<Named> = new.iter().map(named).collect();
            notes.extend(system_notes::assignees(&old, &new));
        }
    }
    if let Some(confidential) = input.confidential.filter(|c| *c != issue.confidential) {
        notes.push(system_notes::confidential(confidential));
    }
    notes
}

/// The column changes of an update (the reporter-only ones for reporters, the timestamps for
/// owners), and the state transition with its effect on the open issue count.
fn update_columns(
    editor: &Editor<'_>,
    issue: &IssueRow,
    input: UpdateIssue,
    resolved: Resolved,
) -> IssueChanges {
    let mut changes = IssueChanges::default();
    if let Some(title) = input.title {
        changes.columns.set("title", title);
    }
    if let Some(description) = input.description {
        changes.columns.set("description", description);
    }
    if let Some(confidential) = input.confidential {
        changes.columns.set("confidential", confidential);
    }
    if editor.owner {
        if let Some(at) = input.updated_at {
            changes.columns.set("updated_at", at);
        }
        if let Some(at) = input.created_at {
            changes.columns.set("created_at", at);
        }
    }
    match input.state_event.and_then(|e| e.transition(issue.state)) {
        Some(IssueState::Closed) => {
            changes.columns.set("state", IssueState::Closed.as_str());
            changes.columns.set("closed_at", now_ms());
            changes.columns.set("closed_by_id", editor.user.id);
            changes.open_delta = -1;
        }
        Some(IssueState::Opened) => {
            changes.columns.set("state", IssueState::Opened.as_str());
            changes.columns.set("closed_at", None::<i64>);
            changes.columns.set("closed_by_id", None::<i64>);
            changes.open_delta = 1;
        }
        None => {}
    }
    if editor.reporter {
        let metadata = input.metadata;
        if let Some(users) = resolved.assignees {
            changes.assignee_ids = Some(users.iter().map(|u| u.id).collect());
        }
        if let Some(milestone) = resolved.milestone {
            changes.columns.set("milestone_id", milestone.map(|m| m.id));
        }
        if let Some(due_date) = metadata.due_date {
            changes.columns.set("due_date", due_date);
        }
        if let Some(locked) = metadata.discussion_locked {
            changes.columns.set("discussion_locked", locked);
        }
        changes.labels = metadata.labels;
    }
    changes
}

/// Updates an issue the editor may update ([`authorize_update`]): the change, its system
/// notes, the spam check when the title or description changes (as GitLab's), one write.
/// Returns the issue as it is now.
pub async fn update(
    db: &TenantDb,
    editor: &Editor<'_>,
    current: &Current<'_>,
    input: UpdateIssue,
    spam: &impl SpamCheck,
) -> Result<IssueRow, Refusal> {
    authorize_update(editor, current)?;
    let issue = current.issue;
    let resolved = resolve(db, issue.project_id, Some(current), &input.metadata).await?;
    let notes = update_notes(editor, current, &input, resolved.assignees.as_deref());
    let spam_checked = if input.title.is_some() || input.description.is_some() {
        let description = input
            .description
            .as_deref()
            .or(issue.description.as_deref());
        spam.check(SpamText {
            title: input.title.as_deref().unwrap_or(&issue.title),
            description: description.unwrap_or(""),
            confidential: input.confidential.unwrap_or(issue.confidential),
            is_update: true,
        })
        .await?
    } else {
        false
    };
    let mut changes = update_columns(editor, issue, input, resolved);
    changes.notes = notes;
    changes.spam_checked = spam_checked;
    if changes.is_empty() {
        return Ok(issue.clone());
    }
    Ok(db.update_issue(issue, &changes).await?)
}

/// Sets (or, with 0, removes) an issue's time estimate, with its system note. Reporters only.
pub async fn set_time_estimate(
    db: &TenantDb,
    editor: &Editor<'_>,
    issue: &IssueRow,
    seconds: i64,
    limit_to_hours: bool,
) -> Result<IssueRow, Refusal> {
    require_reporter(editor)?;
    let mut changes = IssueChanges::default();
    changes.columns.set("time_estimate", seconds);
    changes.notes = SystemNotes::by(editor.user.id);
    changes.notes.extend(system_notes::time_estimate(
        issue.time_estimate,
        seconds,
        limit_to_hours,
    ));
    Ok(db.update_issue(issue, &changes).await?)
}

/// Logs spent time (`Some(seconds)`, negative subtracts; the total may not go below zero) or
/// resets it (`None`), with its system note. Reporters only. Returns the new total.
pub async fn log_spent_time(
    db: &TenantDb,
    editor: &Editor<'_>,
    issue: &IssueRow,
    seconds: Option<i64>,
    limit_to_hours: bool,
) -> Result<i64, Refusal> {
    require_reporter(editor)?;
    let notes = spent_time_notes(
        editor.user.id,
        issue.total_time_spent,
        seconds,
        limit_to_hours,
    )?;
    Ok(db
        .add_spent_time(issue.id, editor.user.id, seconds, &notes)
        .await?)
}

/// The system note of logging `seconds` (`None`: a reset) by `author_id` on an issue or merge
/// request whose total is `total`; the total may not go below zero.
pub fn spent_time_notes(
    author_id: i64,
    total: i64,
    seconds: Option<i64>,
    limit_to_hours: bool,
) -> Result<SystemNotes, Refusal> {
    let mut notes = SystemNotes::by(author_id);
    match seconds {
        Some(seconds) => {
            if total + seconds < 0 {
                return Err(Refusal::invalid(
                    "time_spent",
                    "Time to subtract exceeds the total time spent",
                ));
            }
            let now = now_ms();
            notes.at = Some(now);
            notes.extend(system_notes::time_spent(seconds, now, limit_to_hours));
        }
        None => notes.push(system_notes::TIME_SPENT_REMOVED),
    }
    Ok(notes)
}

/// Deletes an issue (soft: the store marks it). Owners and administrators only.
pub async fn delete(db: &TenantDb, editor: &Editor<'_>, issue: &IssueRow) -> Result<(), Refusal> {
    if !editor.owner {
        return Err(Refusal::forbidden());
    }
    Ok(db.delete_issue(issue, editor.user.id).await?)
}

/// Reporter access (GitLab's `admin_issue`): time tracking.
pub fn require_reporter(editor: &Editor<'_>) -> Result<(), Refusal> {
    if editor.reporter {
        Ok(())
    } else {
        Err(Refusal::forbidden())
    }
}

/// One end of a move: the project, as references name it, and what the mover may do there.
pub struct MoveEnd {
    pub project: ProjectRef,
    pub namespace_id: i64,
    /// Reporter access (or above) there; at the target also: may open issues there.
    pub allowed: bool,
}

fn move_error(message: &str) -> Refusal {
    Refusal::Rejected(message.to_string())
}

/// Moves an issue to another project (GitLab's `Issues::MoveService`): a copy there with a new
/// iid, the original's notes and award emoji, labels and the milestone matched by name, and
/// the assignees who can read the target's issues; the original is closed and points at the
/// copy; both get a "moved" system note. Returns the copy.
pub async fn move_issue(
    db: &TenantDb,
    mover: &UserRow,
    current: &Current<'_>,
    from: &MoveEnd,
    to: &MoveEnd,
) -> Result<IssueRow, Refusal> {
    if !from.allowed || !to.allowed {
        return Err(move_error(
            "Cannot move issue due to insufficient permissions!",
        ));
    }
    if to.project.id == from.project.id {
        return Err(move_error(
            "Cannot move issue to project it originates from!",
        ));
    }
    let issue = current.issue;
    let target_labels = db.project_labels(to.project.id, None).await?;
    let labels = db
        .labels_of_issues(&[issue.id])
        .await?
        .into_iter()
        .filter_map(|l| {
            target_labels
                .iter()
                .find(|t| t.name.eq_ignore_ascii_case(&l.label.name))
                .map(|t| t.name.clone())
        })
        .collect();
    let milestone_id = match issue.milestone_id {
        Some(id) => match db.milestone_by_id(id).await? {
            Some(m) => db
                .list_milestones(&MilestoneFilter {
                    project_id: to.project.id,
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
        .issue_user_agent(issue.id)
        .await?
        .map(|u| RequestOrigin {
            user_agent: u.user_agent,
            ip_address: u.ip_address,
        })
        .unwrap_or_default();
    // The copy keeps the assignees who can read the target's issues (GitLab creates it
    // through the create service, which filters them).
    let today = today();
    let check = AssignableCheck {
        project_id: to.project.id,
        issue: None,
        today: &today,
    };
    let assignee_ids = db.assignable_among(&check, current.assignees).await?;
    let new = NewIssue {
        project_id: to.project.id,
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
    let references = MoveReferences {
        from: format!(
            "{}#{}",
            project_reference(&from.project, from.namespace_id, to.namespace_id),
            issue.iid
        ),
        to_project: project_reference(&to.project, to.namespace_id, from.namespace_id),
    };
    Ok(db.move_issue(issue, &new, mover.id, &references).await?)
}

/// Closes `issue` as the merge of merge request `!mr_iid` (of its project) does: by
/// `closer`, with GitLab's system note; an issue closed already stays as it is.
pub async fn close_by_merge_request(
    db: &TenantDb,
    issue: &IssueRow,
    closer: i64,
    mr_iid: i64,
) -> Result<(), Refusal> {
    if issue.state != IssueState::Opened {
        return Ok(());
    }
    let mut changes = IssueChanges::default();
    changes.columns.set("state", IssueState::Closed.as_str());
    changes.columns.set("closed_at", now_ms());
    changes.columns.set("closed_by_id", closer);
    changes.open_delta = -1;
    changes.notes = SystemNotes::by(closer);
    changes
        .notes
        .push(format!("closed via merge request !{mr_iid}"));
    db.update_issue(issue, &changes).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_events_change_only_the_other_state() {
        assert_eq!(
            StateEvent::Close.transition(IssueState::Opened),
            Some(IssueState::Closed)
        );
        assert_eq!(StateEvent::Close.transition(IssueState::Closed), None);
        assert_eq!(
            StateEvent::Reopen.transition(IssueState::Closed),
            Some(IssueState::Opened)
        );
        assert_eq!(StateEvent::Reopen.transition(IssueState::Opened), None);
    }
}
