//! SSH key, GPG key and email representations.

use serde::Serialize;

use super::{timestamp, timestamp_opt};
use crate::model::keys::{EmailRow, GpgKeyRow, SshKeyRow};

#[derive(Serialize, utoipa::ToSchema)]
pub struct SshKeyView {
    pub id: i64,
    pub title: String,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub last_used_at: Option<String>,
    pub key: String,
    pub usage_type: String,
}

impl SshKeyView {
    /// GitLab shows the "publishable" key: algorithm and key data, with the comment (which may
    /// hold an email address) replaced by `owner name (host)`.
    pub fn new(row: &SshKeyRow, owner_name: &str, host: &str) -> SshKeyView {
        let mut parts: Vec<&str> = row.public_key.split_whitespace().take(2).collect();
        let ident = format!("{owner_name} ({host})");
        parts.push(&ident);
        SshKeyView {
            id: row.id,
            title: row.title.clone(),
            created_at: timestamp(row.created_at),
            expires_at: timestamp_opt(row.expires_at),
            last_used_at: timestamp_opt(row.last_used_at),
            key: parts.join(" "),
            usage_type: row.usage_type.clone(),
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct GpgKeyView {
    pub id: i64,
    pub key: String,
    pub created_at: String,
}

impl GpgKeyView {
    pub fn new(row: &GpgKeyRow) -> GpgKeyView {
        GpgKeyView {
            id: row.id,
            key: row.public_key.clone(),
            created_at: timestamp(row.created_at),
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct EmailView {
    pub id: i64,
    pub email: String,
    pub confirmed_at: Option<String>,
}

impl EmailView {
    pub fn new(row: &EmailRow) -> EmailView {
        EmailView {
            id: row.id,
            email: row.email.clone(),
            confirmed_at: timestamp_opt(row.confirmed_at),
        }
    }
}
