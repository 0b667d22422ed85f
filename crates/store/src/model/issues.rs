//! Issue rows, and the project path parts issue URLs and references are built from.

use super::Flag;
use super::states::IssueState;

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct IssueRow {
    pub id: i64,
    pub project_id: i64,
    pub iid: i64,
    pub author_id: i64,
    pub title: String,
    pub description: Option<String>,
    pub state: IssueState,
    #[sqlx(try_from = "Flag")]
    pub confidential: bool,
    #[sqlx(try_from = "Flag")]
    pub discussion_locked: bool,
    pub milestone_id: Option<i64>,
    pub due_date: Option<String>,
    pub time_estimate: i64,
    pub total_time_spent: i64,
    pub upvotes: i64,
    pub downvotes: i64,
    pub user_notes_count: i64,
    pub closed_at: Option<i64>,
    pub closed_by_id: Option<i64>,
    pub moved_to_id: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A project's path parts, for issue URLs and references.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ProjectRef {
    pub id: i64,
    pub name: String,
    pub path: String,
    pub namespace_full_path: String,
    pub namespace_full_name: String,
}

impl ProjectRef {
    pub fn full_path(&self) -> String {
        format!("{}/{}", self.namespace_full_path, self.path)
    }
}
