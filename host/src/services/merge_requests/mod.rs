//! Merge request writes, as GitLab's merge request services make them: open (the branches
//! checked, the first diff version taken), update, merge (made by the server with git
//! plumbing on the target's current head, moved through the one place for ref changes, so
//! protected branches and push rules decide it as a push), approvals, and the background
//! work a merge request needs: the mergeability check, once per pair of heads, and the
//! refresh after a push to either branch.

mod merging;
mod refresh;

pub use merging::{MergeContext, MergeInput, MergeSettings, merge, rebase, write_merge_ref};
pub use refresh::{check_mergeability, refresh_after_push};

use super::Refusal;
use super::issues::{SpamCheck, SpamText, StateEvent, spent_time_notes};
use super::system_notes::{self, named};
use crate::git::Repository;
use crate::git::refs::valid_ref_name;
use crate::model::merge_requests::{MergeRequestRow, MergeRequestState, MergeStatus};
use crate::model::today;
use crate::model::users::UserRow;
use crate::store::TenantDb;
use crate::store::issue_filter::AssignableCheck;
use crate::store::issue_notes::SystemNotes;
use crate::store::issues::LabelChange;
use crate::store::merge_requests::{
    DiffHeads, MergeRequestChanges, MergeRequestUsers, NewMergeRequest,
};

/// The most commits an `added N commits` note lists (a push of more says so in the count).
const NOTED_COMMITS: i64 = 1_000;

/// Who writes, and what their access to the project allows.
pub struct Editor<'a> {
    pub user: &'a UserRow,
    /// Developer access or above, or an administrator (GitLab's `admin_merge_request`):
    /// assignees, reviewers, milestone, labels, locking.
    pub developer: bool,
}

/// What only developers may set (ignored for others).
#[derive(Debug, Default)]
pub struct Metadata {
    /// `Some(empty)` unassigns everyone.
    pub assignee_ids: Option<Vec<i64>>,
    pub reviewer_ids: Option<Vec<i64>>,
    /// `Some(None)` removes the milestone.
    pub milestone_id: Option<Option<i64>>,
    pub labels: Option<LabelChange>,
    pub discussion_locked: Option<bool>,
}

/// A new merge request (`POST /projects/:id/merge_requests`).
#[derive(Debug, Default)]
pub struct CreateMergeRequest {
    pub source_branch: String,
    pub target_branch: String,
    pub title: String,
    pub description: Option<String>,
    /// Another project to merge into (a fork's upstream); the project itself when `None`.
    pub target_project_id: Option<i64>,
    pub remove_source_branch: Option<bool>,
    pub squash: Option<bool>,
    pub metadata: Metadata,
}

/// A change of a merge request (`PUT /projects/:id/merge_requests/:iid`).
#[derive(Debug, Default)]
pub struct UpdateMergeRequest {
    pub title: Option<String>,
    pub description: Option<String>,
    pub target_branch: Option<String>,
    pub state_event: Option<StateEvent>,
    pub remove_source_branch: Option<bool>,
    pub squash: Option<bool>,
    pub metadata: Metadata,
}

/// The issues of the MR's own project that `text` says it closes (GitLab's default
/// `issue_closing_pattern`: `Closes #4`, `fixes #4, #5 and #6`, `Resolves: issue #7`...), by
/// iid, in order, without repeats.
pub fn closing_references(text: &str) -> Vec<i64> {
    static PATTERN: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\b(?:clos(?:e[sd]?|ing)|fix(?:e[sd]|ing)?|resolv(?:e[sd]?|ing)|implement(?:s|ed|ing)?):? +(?:issues? +)?(#\d+(?:(?: *,? +and +| *, *| +)#\d+)*)",
        )
        .expect("a valid pattern")
    });
    static ISSUE: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"#(\d+)").expect("a valid pattern"));
    let mut iids = Vec::new();
    for list in PATTERN.captures_iter(text) {
        for issue in ISSUE.captures_iter(&list[1]) {
            if let Ok(iid) = issue[1].parse::<i64>()
                && !iids.contains(&iid)
            {
                iids.push(iid);
            }
        }
    }
    iids
}

/// The issues of the MR's own project that `text` refers to (`#4`, not `group/project#4`,
/// `!4` or `&4`), by iid, in order, without repeats.
pub fn issue_references(text: &str) -> Vec<i64> {
    static ISSUE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?:^|[^\w/&!#])#(\d+)\b").expect("a valid pattern")
    });
    let mut iids = Vec::new();
    for reference in ISSUE.captures_iter(text) {
        if let Ok(iid) = reference[1].parse::<i64>()
            && !iids.contains(&iid)
        {
            iids.push(iid);
        }
    }
    iids
}

fn branch_ref(branch: &str) -> String {
    format!("refs/heads/{branch}")
}

/// `refs/merge-requests/<iid>/head`, where GitLab keeps an MR's source head in the target
/// repository (so fetching `refs/merge-requests/*` gives every MR's commits).
fn head_ref(iid: i64) -> String {
    format!("refs/merge-requests/{iid}/head")
}

/// The head of `branch` in `repo`, if it exists.
async fn branch_head(repo: &Repository, branch: &str) -> Result<Option<String>, Refusal> {
    if !valid_ref_name(branch) {
        return Ok(None);
    }
    Ok(repo.ref_target(&branch_ref(branch)).await?)
}

/// The diff of `source` into `target` as it stands: heads and merge base (`None` when the
/// branches share no history).
async fn diff_heads(
    repo: &Repository,
    source_head: &str,
    target_head: &str,
) -> Result<Option<DiffHeads>, Refusal> {
    let base = repo.merge_base(&[target_head, source_head]).await?;
    Ok(base.map(|base_sha| DiffHeads {
        head_sha: source_head.to_string(),
        start_sha: target_head.to_string(),
        base_sha,
    }))
}

/// Looks up the users and the milestone `metadata` names: unknown users and users who may not
/// read the project are dropped, as GitLab drops them; an unknown milestone is invalid.
async fn resolve_people(
    db: &TenantDb,
    project_id: i64,
    ids: &Option<Vec<i64>>,
) -> Result<Option<Vec<i64>>, Refusal> {
    let Some(ids) = ids else {
        return Ok(None);
    };
    let known = db.users_by_ids(ids).await?;
    let today = today();
    let check = AssignableCheck {
        project_id,
        issue: None,
        today: &today,
    };
    let allowed = db.assignable_among(&check, &known).await?;
    let mut kept: Vec<i64> = Vec::new();
    for id in ids {
        if allowed.contains(id) && !kept.contains(id) {
            kept.push(*id);
        }
    }
    Ok(Some(kept))
}

async fn resolve_milestone(
    db: &TenantDb,
    project_id: i64,
    milestone: Option<Option<i64>>,
) -> Result<Option<Option<i64>>, Refusal> {
    match milestone {
        None => Ok(None),
        Some(None) | Some(Some(0)) => Ok(Some(None)),
        Some(Some(id)) => {
            let found = db
                .milestone_by_id(id)
                .await?
                .filter(|m| m.project_id == project_id)
                .ok_or(Refusal::NotFound("Milestone"))?;
            Ok(Some(Some(found.id)))
        }
    }
}

/// GitLab's rule of one open MR per pair of branches: 409 with the other's reference.
async fn refuse_duplicate(
    db: &TenantDb,
    project_id: i64,
    source_branch: &str,
    target_branch: &str,
    except: Option<i64>,
) -> Result<(), Refusal> {
    let other = db
        .open_merge_request_between(project_id, source_branch, project_id, target_branch, except)
        .await?;
    match other {
        Some(iid) => Err(Refusal::Conflicts(vec![format!(
            "Another open merge request already exists for this source branch: !{iid}"
        )])),
        None => Ok(()),
    }
}

/// Opens a merge request from `source_branch` into `target_branch` of `project_id`, whose
/// repository is `repo`; the caller may open merge requests there (a Developer).
pub async fn create(
    db: &TenantDb,
    repo: &Repository,
    editor: &Editor<'_>,
    project_id: i64,
    input: CreateMergeRequest,
    spam: &impl SpamCheck,
) -> Result<MergeRequestRow, Refusal> {
    if input.target_project_id.is_some_and(|id| id != project_id) {
        return Err(Refusal::Unusable(
            "merge requests between a fork and its upstream are not supported yet".into(),
        ));
    }
    if input.source_branch == input.target_branch {
        return Err(Refusal::ModelErrors(vec![
            "You can't use same project/branch for source and target".into(),
        ]));
    }
    let source_head = branch_head(repo, &input.source_branch).await?;
    let target_head = branch_head(repo, &input.target_branch).await?;
    // GitLab's answer as clients record it: `{"source_branch":["does not exist"]}`.
    let mut missing = Vec::new();
    if source_head.is_none() {
        missing.push(("source_branch", "does not exist".to_string()));
    }
    if target_head.is_none() {
        missing.push(("target_branch", "does not exist".to_string()));
    }
    let (Some(source_head), Some(target_head)) = (source_head, target_head) else {
        return Err(Refusal::Fields(missing));
    };
    refuse_duplicate(
        db,
        project_id,
        &input.source_branch,
        &input.target_branch,
        None,
    )
    .await?;
    let metadata = &input.metadata;
    let (assignees, reviewers, milestone) = match editor.developer {
        true => (
            resolve_people(db, project_id, &metadata.assignee_ids).await?,
            resolve_people(db, project_id, &metadata.reviewer_ids).await?,
            resolve_milestone(db, project_id, metadata.milestone_id).await?,
        ),
        false => (None, None, None),
    };
    spam.check(SpamText {
        title: &input.title,
        description: input.description.as_deref().unwrap_or_default(),
        confidential: false,
        is_update: false,
    })
    .await?;
    let diff = diff_heads(repo, &source_head, &target_head).await?;
    let labels = match (editor.developer, &metadata.labels) {
        (true, Some(change)) => change.apply(&[]),
        _ => Vec::new(),
    };
    let assignee_ids = assignees.unwrap_or_default();
    let reviewer_ids = reviewers.unwrap_or_default();
    let mut notes = SystemNotes::by(editor.user.id);
    notes.extend(people_notes(db, &[], &assignee_ids, &[], &reviewer_ids).await?);
    let new = NewMergeRequest {
        project_id,
        source_project_id: project_id,
        source_branch: input.source_branch,
        target_branch: input.target_branch,
        author_id: editor.user.id,
        title: input.title,
        description: input.description.clone(),
        milestone_id: milestone.flatten(),
        squash: input.squash.unwrap_or(false),
        force_remove_source_branch: input.remove_source_branch.unwrap_or(false),
        assignee_ids,
        reviewer_ids,
        labels,
        diff,
        closes_issue_iids: closing_references(input.description.as_deref().unwrap_or_default()),
        notes,
    };
    let mr = db.create_merge_request(&new).await?;
    keep_head(repo, &mr, &source_head).await;
    Ok(mr)
}

/// `assigned to ...` and `requested review from ...` for the changes of both sets (`None`: a
/// set that does not change).
async fn people_notes(
    db: &TenantDb,
    old_assignees: &[i64],
    new_assignees: &[i64],
    old_reviewers: &[i64],
    new_reviewers: &[i64],
) -> Result<Vec<String>, Refusal> {
    let mut ids: Vec<i64> = [old_assignees, new_assignees, old_reviewers, new_reviewers].concat();
    ids.sort_unstable();
    ids.dedup();
    let users = db.users_by_ids(&ids).await?;
    let named_all = |ids: &[i64]| -> Vec<system_notes::Named<'_>> {
        ids.iter()
            .filter_map(|id| users.iter().find(|u| u.id == *id).map(named))
            .collect()
    };
    let (old_a, new_a) = (named_all(old_assignees), named_all(new_assignees));
    let (old_r, new_r) = (named_all(old_reviewers), named_all(new_reviewers));
    Ok(system_notes::assignees(&old_a, &new_a)
        .into_iter()
        .chain(system_notes::reviewers(&old_r, &new_r))
        .collect())
}

/// The ids of `mr`'s assignees or reviewers, in their order.
async fn linked_user_ids(
    db: &TenantDb,
    mr: &MergeRequestRow,
    which: MergeRequestUsers,
) -> Result<Vec<i64>, Refusal> {
    Ok(db
        .users_of_merge_requests(which, &[mr.id])
        .await?
        .into_iter()
        .map(|u| u.user.id)
        .collect())
}

/// The system notes GitLab writes for an update's changes, in its order: title or draft
/// status, description, lock, target branch, assignees, reviewers.
async fn update_notes(
    db: &TenantDb,
    editor: &Editor<'_>,
    mr: &MergeRequestRow,
    changes: &MergeRequestChanges,
    input: &UpdateMergeRequest,
) -> Result<SystemNotes, Refusal> {
    use crate::model::merge_requests::{draft_title, without_draft_prefix};
    let mut notes = SystemNotes::by(editor.user.id);
    if let Some(title) = input.title.as_deref().filter(|t| *t != mr.title) {
        if draft_title(title) != mr.draft {
            notes.push(system_notes::draft(draft_title(title)));
        }
        if without_draft_prefix(title) != without_draft_prefix(&mr.title) {
            notes.push(system_notes::title(&mr.title, title));
        }
    }
    if let Some(description) = input.description.as_deref()
        && Some(description) != mr.description.as_deref()
    {
        notes.extend(system_notes::description(
            mr.description.as_deref(),
            Some(description),
        ));
    }
    if editor.developer
        && let Some(locked) = input.metadata.discussion_locked
        && locked != mr.discussion_locked
    {
        notes.push(system_notes::discussion_lock(locked, "merge request"));
    }
    if let Some(target) = input.target_branch.as_deref()
        && target != mr.target_branch
    {
        notes.push(system_notes::target_branch(&mr.target_branch, target));
    }
    // The current sets are read only for the sets the update replaces.
    let old_assignees = match &changes.assignee_ids {
        Some(_) => linked_user_ids(db, mr, MergeRequestUsers::Assignees).await?,
        None => Vec::new(),
    };
    let old_reviewers = match &changes.reviewer_ids {
        Some(_) => linked_user_ids(db, mr, MergeRequestUsers::Reviewers).await?,
        None => Vec::new(),
    };
    let new_assignees = changes.assignee_ids.as_ref().unwrap_or(&old_assignees);
    let new_reviewers = changes.reviewer_ids.as_ref().unwrap_or(&old_reviewers);
    notes.extend(
        people_notes(
            db,
            &old_assignees,
            new_assignees,
            &old_reviewers,
            new_reviewers,
        )
        .await?,
    );
    Ok(notes)
}

/// Points `refs/merge-requests/<iid>/head` at the MR's source head. A failure is logged: the
/// ref is a convenience for fetching, and the next refresh writes it again.
async fn keep_head(repo: &Repository, mr: &MergeRequestRow, head: &str) {
    if let Err(error) = repo.set_ref(&head_ref(mr.iid), head).await {
        tracing::warn!(%error, mr = mr.id, "could not keep a merge request's head ref");
    }
}

/// Changes `mr`: the author and Developers edit its text, target and state; only Developers
/// its metadata (ignored for others).
pub async fn update(
    db: &TenantDb,
    repo: &Repository,
    editor: &Editor<'_>,
    mr: &MergeRequestRow,
    input: UpdateMergeRequest,
    spam: &impl SpamCheck,
) -> Result<MergeRequestRow, Refusal> {
    let mut changes = MergeRequestChanges::default();
    if let Some(title) = &input.title {
        changes.columns.set("title", title.as_str());
        changes.columns.set(
            "draft",
            i64::from(crate::model::merge_requests::draft_title(title)),
        );
    }
    if let Some(description) = &input.description {
        changes.columns.set("description", description.as_str());
        changes.closes_issue_iids = Some(closing_references(description));
    }
    if let Some(remove) = input.remove_source_branch {
        changes
            .columns
            .set("force_remove_source_branch", i64::from(remove));
    }
    if let Some(squash) = input.squash {
        changes.columns.set("squash", i64::from(squash));
    }
    let mut new_diff = None;
    if let Some(target) = &input.target_branch
        && *target != mr.target_branch
    {
        if *target == mr.source_branch {
            return Err(Refusal::ModelErrors(vec![
                "You can't use same project/branch for source and target".into(),
            ]));
        }
        let Some(target_head) = branch_head(repo, target).await? else {
            return Err(Refusal::invalid("target_branch", "does not exist"));
        };
        if mr.state == MergeRequestState::Opened {
            refuse_duplicate(db, mr.project_id, &mr.source_branch, target, Some(mr.id)).await?;
        }
        changes.columns.set("target_branch", target.as_str());
        changes
            .columns
            .set("merge_status", MergeStatus::Unchecked.as_str());
        changes.columns.set("checked_heads", None::<String>);
        if let Some(source_head) = branch_head(repo, &mr.source_branch).await? {
            new_diff = diff_heads(repo, &source_head, &target_head).await?;
        }
    }
    changes.state = match input.state_event {
        Some(StateEvent::Close) => Some(MergeRequestState::Closed),
        Some(StateEvent::Reopen) => Some(MergeRequestState::Opened),
        None => None,
    };
    if changes.state == Some(MergeRequestState::Opened) && mr.state == MergeRequestState::Closed {
        refuse_duplicate(
            db,
            mr.project_id,
            &mr.source_branch,
            &mr.target_branch,
            Some(mr.id),
        )
        .await?;
    }
    if editor.developer {
        let metadata = &input.metadata;
        changes.assignee_ids = resolve_people(db, mr.project_id, &metadata.assignee_ids).await?;
        changes.reviewer_ids = resolve_people(db, mr.project_id, &metadata.reviewer_ids).await?;
        if let Some(milestone) = resolve_milestone(db, mr.project_id, metadata.milestone_id).await?
        {
            changes.columns.set("milestone_id", milestone);
        }
        changes.labels = metadata.labels.clone();
        if let Some(locked) = metadata.discussion_locked {
            changes.columns.set("discussion_locked", i64::from(locked));
        }
    }
    if input.title.is_some() || input.description.is_some() {
        spam.check(SpamText {
            title: input.title.as_deref().unwrap_or(&mr.title),
            description: input
                .description
                .as_deref()
                .or(mr.description.as_deref())
                .unwrap_or_default(),
            confidential: false,
            is_update: true,
        })
        .await?;
    }
    if changes.is_empty() && new_diff.is_none() {
        return Ok(mr.clone());
    }
    changes.notes = update_notes(db, editor, mr, &changes, &input).await?;
    let updated = db
        .update_merge_request(mr, &changes, editor.user.id)
        .await?;
    if let Some(diff) = new_diff {
        db.record_merge_request_version(mr.id, &diff, |_| SystemNotes::default())
            .await?;
        return Ok(db.merge_request_by_id(mr.id).await?.unwrap_or(updated));
    }
    Ok(updated)
}

/// Sets (or, with 0, removes) `mr`'s time estimate, with its system note. Developers only
/// (GitLab's `admin_merge_request`).
pub async fn set_time_estimate(
    db: &TenantDb,
    editor: &Editor<'_>,
    mr: &MergeRequestRow,
    seconds: i64,
    limit_to_hours: bool,
) -> Result<MergeRequestRow, Refusal> {
    require_developer(editor)?;
    let mut changes = MergeRequestChanges::default();
    changes.columns.set("time_estimate", seconds);
    changes.notes = SystemNotes::by(editor.user.id);
    changes.notes.extend(system_notes::time_estimate(
        mr.time_estimate,
        seconds,
        limit_to_hours,
    ));
    Ok(db
        .update_merge_request(mr, &changes, editor.user.id)
        .await?)
}

/// Logs spent time on `mr` (`Some(seconds)`, negative subtracts) or resets it (`None`), with
/// its system note. Developers only. Returns the new total.
pub async fn log_spent_time(
    db: &TenantDb,
    editor: &Editor<'_>,
    mr: &MergeRequestRow,
    seconds: Option<i64>,
    limit_to_hours: bool,
) -> Result<i64, Refusal> {
    require_developer(editor)?;
    let notes = spent_time_notes(editor.user.id, mr.total_time_spent, seconds, limit_to_hours)?;
    Ok(db
        .add_merge_request_spent_time(mr, editor.user.id, seconds, &notes)
        .await?)
}

fn require_developer(editor: &Editor<'_>) -> Result<(), Refusal> {
    match editor.developer {
        true => Ok(()),
        false => Err(Refusal::forbidden()),
    }
}

/// Approves (or with `approve: false`, unapproves) `mr` as `user`.
pub async fn approve(
    db: &TenantDb,
    mr: &MergeRequestRow,
    user: &UserRow,
    may_approve: bool,
    approve: bool,
) -> Result<(), Refusal> {
    if !may_approve || mr.state != MergeRequestState::Opened {
        return Err(Refusal::Unauthorized);
    }
    let mut notes = SystemNotes::by(user.id);
    notes.push(system_notes::approval(approve));
    match (
        db.set_approval(mr, user.id, approve, &notes).await?,
        approve,
    ) {
        (true, _) => Ok(()),
        // Approving twice is GitLab's 401; taking back an approval there is none of, its 404.
        (false, true) => Err(Refusal::Unauthorized),
        (false, false) => Err(Refusal::Absent),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closing_references_follow_gitlabs_pattern() {
        assert_eq!(closing_references("Closes #4"), vec![4]);
        assert_eq!(
            closing_references("This fixes #4, #5 and #6.\nResolves: issue #7; closes #4"),
            vec![4, 5, 6, 7]
        );
        assert_eq!(
            closing_references("Implemented #8 and closing #9"),
            vec![8, 9]
        );
        assert_eq!(
            closing_references("See #4, related to #5"),
            Vec::<i64>::new()
        );
        assert_eq!(closing_references("enclosed #4"), Vec::<i64>::new());
    }

    #[test]
    fn squash_options_override_the_request_only_when_fixed() {
        let settings = |option: &str| MergeSettings {
            merge_method: "merge".into(),
            squash_option: option.into(),
            merge_commit_template: None,
            squash_commit_template: None,
            only_allow_merge_if_all_discussions_are_resolved: false,
            autoclose_referenced_issues: true,
        };
        assert!(!settings("never").squashes(true));
        assert!(settings("always").squashes(false));
        assert!(settings("default_on").squashes(true));
        assert!(!settings("default_off").squashes(false));
    }
}
