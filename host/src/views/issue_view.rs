//! The spec's Issue and Todo shapes, as `IssueViews` (`issue.rs`) fills them.

use serde::Serialize;
use utoipa::ToSchema;

use super::issue::{LabelDetail, MilestoneView, TimeStats};
use super::user::UserSummary;

#[derive(Clone, Serialize, ToSchema)]
pub struct IssueView {
    pub id: i64,
    pub iid: i64,
    pub project_id: i64,
    pub title: String,
    pub description: Option<String>,
    pub state: String,
    pub created_at: String,
    pub updated_at: String,
    pub closed_at: Option<String>,
    pub closed_by: Option<UserSummary>,
    pub labels: Vec<IssueLabel>,
    pub milestone: Option<MilestoneView>,
    pub assignees: Vec<UserSummary>,
    pub author: Option<UserSummary>,
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The first assignee, GitLab's deprecated single-assignee field.
    pub assignee: Option<UserSummary>,
    pub user_notes_count: i64,
    /// Always 0: Trellis has no merge requests.
    pub merge_requests_count: i64,
    pub upvotes: i64,
    pub downvotes: i64,
    pub due_date: Option<String>,
    pub confidential: bool,
    pub discussion_locked: bool,
    pub issue_type: &'static str,
    pub web_url: String,
    pub time_stats: TimeStats,
    pub task_completion_status: TaskCompletionStatus,
    pub has_tasks: bool,
    /// Only when the description has a task list, as GitLab shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_status: Option<String>,
    #[serde(rename = "_links")]
    pub links: IssueLinks,
    pub references: IssueReferences,
    pub severity: &'static str,
    pub moved_to_id: Option<i64>,
    pub imported: bool,
    pub imported_from: &'static str,
    pub service_desk_reply_to: Option<String>,
    /// Only in single issues, as GitLab shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscribed: Option<bool>,
}

/// A label of an issue: its name, or its details with `with_labels_details`.
#[derive(Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum IssueLabel {
    Name(String),
    Detail(LabelDetail),
}

#[derive(Clone, Serialize, ToSchema)]
pub struct TaskCompletionStatus {
    pub count: i64,
    pub completed_count: i64,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct IssueLinks {
    #[serde(rename = "self")]
    pub this: String,
    pub notes: String,
    pub award_emoji: String,
    pub project: String,
    /// Always null: Trellis does not close issues as duplicates.
    pub closed_as_duplicate_of: Option<String>,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct IssueReferences {
    pub short: String,
    pub relative: String,
    pub full: String,
}

#[derive(Serialize, ToSchema)]
pub struct TodoView {
    pub id: i64,
    pub project: TodoProject,
    pub author: Option<UserSummary>,
    pub action_name: String,
    pub target_type: &'static str,
    pub target: IssueView,
    pub target_url: String,
    pub body: String,
    pub state: String,
    pub created_at: String,
}

/// The project a todo is in, as GitLab's todos show it.
#[derive(Serialize, ToSchema)]
pub struct TodoProject {
    pub id: i64,
    pub name: String,
    pub name_with_namespace: String,
    pub path: String,
    pub path_with_namespace: String,
}

/// The client an issue was created from (administrators only).
#[derive(Serialize, ToSchema)]
pub struct UserAgentDetailView {
    pub user_agent: String,
    pub ip_address: String,
    /// Whether a spam check passed the issue's text.
    pub spam_filter_submitted: bool,
}
