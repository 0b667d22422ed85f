//! User queries. The row is `model::users::UserRow`; its JSON forms live in `views::user`.

use sqlx::AssertSqlSafe;

use super::{TenantDb, now_ms};
use crate::model::users::UserRow;

/// The column list matching [`UserRow`], for queries that select a user (optionally through
/// a table alias such as `u.`).
pub const USER_COLUMNS: &str = "id, username, email, name, state, user_type, is_admin, password_digest, \
    password_expires_at, bio, location, public_email, skype, linkedin, twitter, discord, website_url, \
    organization, job_title, pronouns, note, theme_id, color_scheme_id, projects_limit, can_create_group, \
    external, private_profile, two_factor_enabled, avatar_path, shared_runners_minutes_limit, \
    extra_shared_runners_minutes_limit, created_at, updated_at, confirmed_at, last_sign_in_at, \
    current_sign_in_at, last_sign_in_ip, current_sign_in_ip, last_activity_on, locked_until";

pub fn user_columns(alias: &str) -> String {
    USER_COLUMNS
        .split(", ")
        .map(|c| format!("{alias}.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What creating a user needs; everything else takes the column defaults.
pub struct NewUser<'a> {
    pub username: &'a str,
    pub email: &'a str,
    pub name: &'a str,
    pub is_admin: bool,
    pub password_digest: Option<String>,
    pub projects_limit: i64,
}

impl TenantDb {
    pub async fn user_by_id(&self, id: i64) -> crate::Result<Option<UserRow>> {
        self.find_by_id("users", USER_COLUMNS, id).await
    }

    pub async fn user_by_username(&self, username: &str) -> crate::Result<Option<UserRow>> {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {USER_COLUMNS} FROM users WHERE tenant_id = $1 AND username_lower = $2"
            )))
            .bind(username.to_lowercase())
            .fetch_optional(self.reader())
            .await?)
    }

    /// A user named by id (all digits) or username, as GitLab's `find_user` does.
    pub async fn user_by_id_or_username(&self, key: &str) -> crate::Result<Option<UserRow>> {
        match key.parse::<i64>() {
            Ok(id) if key.bytes().all(|b| b.is_ascii_digit()) => self.user_by_id(id).await,
            _ => self.user_by_username(key).await,
        }
    }

    /// Creates a confirmed user with nothing but the basics (the bootstrap's root).
    pub async fn insert_user(&self, user: NewUser<'_>) -> crate::Result<UserRow> {
        let mut changes = super::user_admin::UserChanges::default();
        changes.set("confirmed_at", now_ms());
        self.create_user(user, &changes, None, None).await
    }
}
