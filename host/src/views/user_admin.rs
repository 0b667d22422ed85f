//! What the administration of users answers besides the users themselves: activities,
//! memberships, and the answers of state changes.

use serde::Serialize;
use utoipa::ToSchema;

/// A user's last activity (`GET /user/activities`).
#[derive(Serialize, ToSchema)]
pub struct ActivityView {
    pub username: String,
    /// `YYYY-MM-DD`.
    pub last_activity_on: String,
    /// The same date: GitLab's older name for it.
    pub last_activity_at: String,
}

/// A user's direct membership of a project (`Project`) or group (`Namespace`).
#[derive(Serialize, ToSchema)]
pub struct MembershipView {
    pub source_id: i64,
    pub source_name: String,
    pub source_type: String,
    pub access_level: i64,
}

/// What `POST /users/:id/block|unblock|deactivate|activate` answers, as GitLab does: `true`
/// when the state changed; when it did not, `null` (block a blocked user), `false` (unblock a
/// user who is not blocked) or `true` (activate an active user, deactivate a deactivated one).
#[derive(Serialize, ToSchema)]
#[serde(transparent)]
pub struct UserStateAnswer(pub Option<bool>);
