//! Protected tags as stored: the tag (or wildcard pattern) and who may create it.

use serde::Serialize;

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ProtectedTagRow {
    pub id: i64,
    pub project_id: i64,
    pub name: String,
    /// GitLab's protected-ref level: 0, 30, 40 or 60.
    pub create_access_level: i64,
}
