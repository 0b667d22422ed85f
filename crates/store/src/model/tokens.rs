//! Personal access tokens.

use super::Flag;

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct TokenRow {
    pub id: i64,
    pub user_id: i64,
    pub name: String,
    pub scopes: String,
    #[sqlx(try_from = "Flag")]
    pub impersonation: bool,
    #[sqlx(try_from = "Flag")]
    pub revoked: bool,
    pub expires_at: Option<String>,
    pub last_used_at: Option<i64>,
    pub created_at: i64,
}
