//! User rows. The JSON forms of a user live in `views::user`; this is the stored shape.

use super::Flag;
use super::states::UserState;

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct UserRow {
    pub id: i64,
    pub username: String,
    pub email: String,
    pub name: String,
    pub state: UserState,
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

impl UserRow {
    /// Blocked, deactivated and pending users cannot use the API.
    pub fn can_use_api(&self) -> bool {
        self.state == UserState::Active
    }

    /// Locked by failed sign-ins until a moment still to come.
    pub fn is_locked(&self, now_ms: i64) -> bool {
        self.locked_until.is_some_and(|until| until > now_ms)
    }
}
