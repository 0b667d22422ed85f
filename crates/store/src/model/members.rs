//! Memberships of projects and groups.

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct MemberRow {
    pub source_type: String,
    pub source_id: i64,
    pub user_id: i64,
    pub access_level: i64,
    pub created_by_id: Option<i64>,
    pub expires_at: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}
