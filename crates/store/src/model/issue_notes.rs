//! Notes, award emoji and to-do items on issues.

use super::Flag;

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct AwardRow {
    pub id: i64,
    pub issue_id: i64,
    /// The awarded note of the issue, or 0 for the issue itself.
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
    pub issue_id: i64,
    pub action_name: String,
    pub body: String,
    pub state: String,
    pub created_at: i64,
}
