//! What GitLab's top bar reads of the signed-in user: their status (`/user/status`, also
//! `/users/:id/status`) and their counts (`/user_counts`).

use serde::Serialize;
use utoipa::ToSchema;

/// A user's status. Without one (never set, cleared, or past its `clear_status_at`) every
/// field is null but `availability`, which is `not_set`, as GitLab answers.
#[derive(Serialize, ToSchema)]
pub struct UserStatusView {
    pub emoji: Option<String>,
    pub message: Option<String>,
    pub availability: String,
    /// The message as HTML, its `:emoji:` codes as GitLab's `gl-emoji` elements.
    pub message_html: Option<String>,
    pub clear_status_at: Option<String>,
}

impl UserStatusView {
    pub fn not_set() -> Self {
        UserStatusView {
            emoji: None,
            message: None,
            availability: "not_set".into(),
            message_html: None,
            clear_status_at: None,
        }
    }
}

/// Always zero: Trellis counts neither merge requests, assigned issues nor to-do items for
/// the top bar.
#[derive(Default, Serialize, ToSchema)]
pub struct UserCounts {
    pub merge_requests: i64,
    pub assigned_issues: i64,
    pub assigned_merge_requests: i64,
    pub review_requested_merge_requests: i64,
    pub todos: i64,
}
