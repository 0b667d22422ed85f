//! Projects shared with groups.

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ShareRow {
    pub project_id: i64,
    pub group_id: i64,
    pub group_access: i64,
    pub expires_at: Option<String>,
    pub group_name: String,
    pub group_full_path: String,
}
