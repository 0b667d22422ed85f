//! Merge request rows, and the states GitLab reports of them.

use super::Flag;

stored_names! {
    /// A merge request's state.
    pub enum MergeRequestState {
        Opened = "opened",
        Closed = "closed",
        Merged = "merged",
        /// Being merged: GitLab's transient state, never left behind by a finished merge.
        Locked = "locked",
    }
}

stored_names! {
    /// Whether git can merge the source into the target (GitLab's `merge_status`), as last
    /// checked for `checked_heads`.
    pub enum MergeStatus {
        Unchecked = "unchecked",
        Checking = "checking",
        CanBeMerged = "can_be_merged",
        CannotBeMerged = "cannot_be_merged",
    }
}

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct MergeRequestRow {
    pub id: i64,
    pub project_id: i64,
    pub iid: i64,
    pub source_project_id: i64,
    pub source_branch: String,
    pub target_branch: String,
    pub author_id: i64,
    pub title: String,
    pub description: Option<String>,
    pub state: MergeRequestState,
    #[sqlx(try_from = "Flag")]
    pub draft: bool,
    pub milestone_id: Option<i64>,
    #[sqlx(try_from = "Flag")]
    pub discussion_locked: bool,
    #[sqlx(try_from = "Flag")]
    pub squash: bool,
    #[sqlx(try_from = "Flag")]
    pub force_remove_source_branch: bool,
    pub should_remove_source_branch: Option<i64>,
    pub head_sha: Option<String>,
    pub start_sha: Option<String>,
    pub base_sha: Option<String>,
    pub merge_status: MergeStatus,
    pub checked_heads: Option<String>,
    #[sqlx(try_from = "Flag")]
    pub target_diverged: bool,
    pub merge_commit_sha: Option<String>,
    pub squash_commit_sha: Option<String>,
    pub merged_by_id: Option<i64>,
    pub merged_at: Option<i64>,
    pub closed_by_id: Option<i64>,
    pub closed_at: Option<i64>,
    #[sqlx(try_from = "Flag")]
    pub rebase_in_progress: bool,
    pub merge_error: Option<String>,
    pub time_estimate: i64,
    pub total_time_spent: i64,
    pub upvotes: i64,
    pub downvotes: i64,
    pub user_notes_count: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

/// The stored columns of [`MergeRequestRow`], in its order.
pub const MERGE_REQUEST_COLUMNS: &str = "id, project_id, iid, source_project_id, source_branch, \
    target_branch, author_id, title, description, state, draft, milestone_id, discussion_locked, \
    squash, force_remove_source_branch, should_remove_source_branch, head_sha, start_sha, base_sha, merge_status, checked_heads, target_diverged, \
    merge_commit_sha, squash_commit_sha, merged_by_id, merged_at, closed_by_id, closed_at, \
    rebase_in_progress, merge_error, time_estimate, total_time_spent, upvotes, downvotes, \
    user_notes_count, created_at, updated_at";

/// What GitLab's `detailed_merge_status` is read from: the MR's state and last check, and
/// what its project requires.
pub struct Mergeability<'a> {
    pub state: MergeRequestState,
    pub draft: bool,
    pub merge_status: MergeStatus,
    pub target_diverged: bool,
    /// The project's `merge_method`.
    pub merge_method: &'a str,
    /// Unresolved threads block the merge (the project requires them resolved).
    pub discussions_block: bool,
}

impl Mergeability<'_> {
    /// The first check that fails, or `mergeable`.
    pub fn detailed_status(&self) -> &'static str {
        if self.state != MergeRequestState::Opened {
            return "not_open";
        }
        if self.draft {
            return "draft_status";
        }
        if self.discussions_block {
            return "discussions_not_resolved";
        }
        match self.merge_status {
            MergeStatus::Unchecked => "unchecked",
            MergeStatus::Checking => "checking",
            MergeStatus::CannotBeMerged => "conflict",
            MergeStatus::CanBeMerged if self.target_diverged && self.merge_method != "merge" => {
                "need_rebase"
            }
            MergeStatus::CanBeMerged => "mergeable",
        }
    }
}

impl MergeRequestRow {
    pub fn mergeability<'a>(
        &self,
        merge_method: &'a str,
        discussions_block: bool,
    ) -> Mergeability<'a> {
        Mergeability {
            state: self.state,
            draft: self.draft,
            merge_status: self.merge_status,
            target_diverged: self.target_diverged,
            merge_method,
            discussions_block,
        }
    }
}

/// [`MERGE_REQUEST_COLUMNS`] of the table aliased `alias`.
pub fn merge_request_columns(alias: &str) -> String {
    MERGE_REQUEST_COLUMNS
        .split(", ")
        .map(|c| format!("{alias}.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether a title marks its MR as a draft, as GitLab reads it (`MergeRequest#draft?`):
/// `Draft:`, `[Draft]` or `(Draft)` at the start, in any case.
pub fn draft_title(title: &str) -> bool {
    let lower = title.trim_start().to_lowercase();
    ["draft:", "[draft]", "(draft)", "draft -"]
        .iter()
        .any(|prefix| lower.starts_with(prefix))
}

/// `title` without its draft prefix (`PUT ... title` keeps a prefix the caller writes).
pub fn without_draft_prefix(title: &str) -> &str {
    let trimmed = title.trim_start();
    let lower = trimmed.to_lowercase();
    for prefix in ["draft:", "[draft]", "(draft)", "draft -"] {
        if lower.starts_with(prefix) {
            return trimmed[prefix.len()..].trim_start();
        }
    }
    title
}

/// One version of an MR's diff (GitLab's `merge_request_diffs`).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MergeRequestVersionRow {
    pub id: i64,
    pub merge_request_id: i64,
    pub head_sha: String,
    pub start_sha: String,
    pub base_sha: String,
    pub created_at: i64,
}

/// A note on a merge request, with the discussion it belongs to.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct MergeRequestNoteRow {
    pub id: i64,
    pub merge_request_id: i64,
    pub author_id: i64,
    pub body: String,
    #[sqlx(try_from = "Flag")]
    pub system: bool,
    #[sqlx(try_from = "Flag")]
    pub internal: bool,
    pub discussion_id: String,
    #[sqlx(try_from = "Flag")]
    pub individual_note: bool,
    pub note_type: Option<String>,
    /// GitLab's position object, as JSON text.
    pub position: Option<String>,
    #[sqlx(try_from = "Flag")]
    pub resolvable: bool,
    pub resolved_by_id: Option<i64>,
    pub resolved_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

pub const MERGE_REQUEST_NOTE_COLUMNS: &str = "id, merge_request_id, author_id, body, system, \
    internal, discussion_id, individual_note, note_type, position, resolvable, resolved_by_id, \
    resolved_at, created_at, updated_at";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drafts_are_read_from_the_title_prefix() {
        for title in ["Draft: x", "draft:x", "[Draft] x", "(DRAFT) x", "Draft - x"] {
            assert!(draft_title(title), "{title}");
            assert_eq!(without_draft_prefix(title), "x");
        }
        for title in ["Drafted x", "x Draft:", "WIP: x"] {
            assert!(!draft_title(title), "{title}");
            assert_eq!(without_draft_prefix(title), title);
        }
    }
}
