//! Notes on issues, and award emoji and to-do items on issues and merge requests.

use super::Flag;

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct AwardRow {
    pub id: i64,
    /// The issue or merge request it is on.
    pub awardable_id: i64,
    /// The awarded note of the issue or merge request, or 0 for itself.
    pub note_id: i64,
    pub user_id: i64,
    pub name: String,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct NoteRow {
    pub id: i64,
    pub issue_id: i64,
    pub author_id: i64,
    pub body: String,
    #[sqlx(try_from = "Flag")]
    pub system: bool,
    #[sqlx(try_from = "Flag")]
    pub internal: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct TodoRow {
    pub id: i64,
    pub user_id: i64,
    pub author_id: i64,
    pub project_id: i64,
    /// The issue or merge request it is about.
    pub target_id: i64,
    pub action_name: String,
    pub body: String,
    pub state: String,
    pub created_at: i64,
}
