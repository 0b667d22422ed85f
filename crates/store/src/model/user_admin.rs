//! Users' external identities.

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct IdentityRow {
    pub user_id: i64,
    pub provider: String,
    pub extern_uid: String,
}
