//! SSH keys, GPG keys and secondary emails.

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct SshKeyRow {
    pub id: i64,
    pub user_id: i64,
    pub title: String,
    pub public_key: String,
    pub key_type: String,
    pub bits: i64,
    pub fingerprint: String,
    pub fingerprint_sha256: String,
    pub usage_type: String,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
    pub created_at: i64,
}

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct GpgKeyRow {
    pub id: i64,
    pub user_id: i64,
    pub public_key: String,
    pub fingerprint: String,
    pub primary_keyid: String,
    pub emails: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct EmailRow {
    pub id: i64,
    pub user_id: i64,
    pub email: String,
    pub confirmed_at: Option<i64>,
    pub created_at: i64,
}
