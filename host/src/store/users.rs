//! User rows. The JSON forms of a user live in `views::user`; this is the stored shape.

use sqlx::AssertSqlSafe;

use super::{Flag, TenantDb, now_ms};

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct UserRow {
    pub id: i64,
    pub username: String,
    pub email: String,
    pub name: String,
    pub state: String,
    pub user_type: String,
    #[sqlx(try_from = "Flag")]
    pub is_admin: bool,
    /// Never part of an event's payload.
    #[serde(skip)]
    pub password_digest: Option<String>,
    pub password_expires_at: Option<i64>,
    pub bio: String,
    pub location: String,
    pub public_email: Option<String>,
    pub skype: String,
    pub linkedin: String,
    pub twitter: String,
    pub discord: String,
    pub website_url: String,
    pub organization: String,
    pub job_title: String,
    pub pronouns: Option<String>,
    pub note: Option<String>,
    pub theme_id: i64,
    pub color_scheme_id: i64,
    pub projects_limit: i64,
    #[sqlx(try_from = "Flag")]
    pub can_create_group: bool,
    #[sqlx(try_from = "Flag")]
    pub external: bool,
    #[sqlx(try_from = "Flag")]
    pub private_profile: bool,
    #[sqlx(try_from = "Flag")]
    pub two_factor_enabled: bool,
    pub avatar_path: Option<String>,
    pub shared_runners_minutes_limit: Option<i64>,
    pub extra_shared_runners_minutes_limit: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    pub confirmed_at: Option<i64>,
    pub last_sign_in_at: Option<i64>,
    pub current_sign_in_at: Option<i64>,
    pub last_sign_in_ip: Option<String>,
    pub current_sign_in_ip: Option<String>,
    pub last_activity_on: Option<String>,
    /// Set while too many failed sign-ins keep the account locked (see `store::sessions`).
    pub locked_until: Option<i64>,
}

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

impl UserRow {
    /// Blocked, deactivated and pending users cannot use the API.
    pub fn can_use_api(&self) -> bool {
        self.state == "active"
    }

    /// Locked by failed sign-ins until a moment still to come.
    pub fn is_locked(&self, now_ms: i64) -> bool {
        self.locked_until.is_some_and(|until| until > now_ms)
    }
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
    pub async fn user_by_id(&self, id: i64) -> sqlx::Result<Option<UserRow>> {
        sqlx::query_as(AssertSqlSafe(format!(
            "SELECT {USER_COLUMNS} FROM users WHERE tenant_id = $1 AND id = $2"
        )))
        .bind(self.tenant_id())
        .bind(id)
        .fetch_optional(self.reader())
        .await
    }

    pub async fn user_by_username(&self, username: &str) -> sqlx::Result<Option<UserRow>> {
        sqlx::query_as(AssertSqlSafe(format!(
            "SELECT {USER_COLUMNS} FROM users WHERE tenant_id = $1 AND username_lower = $2"
        )))
        .bind(self.tenant_id())
        .bind(username.to_lowercase())
        .fetch_optional(self.reader())
        .await
    }

    /// A user named by id (all digits) or username, as GitLab's `find_user` does.
    pub async fn user_by_id_or_username(&self, key: &str) -> sqlx::Result<Option<UserRow>> {
        match key.parse::<i64>() {
            Ok(id) if key.bytes().all(|b| b.is_ascii_digit()) => self.user_by_id(id).await,
            _ => self.user_by_username(key).await,
        }
    }

    /// Creates a confirmed user with nothing but the basics (the bootstrap's root).
    pub async fn insert_user(&self, user: NewUser<'_>) -> sqlx::Result<UserRow> {
        let mut changes = super::user_admin::UserChanges::default();
        changes.set("confirmed_at", now_ms());
        self.create_user(user, &changes, None, None).await
    }
}
