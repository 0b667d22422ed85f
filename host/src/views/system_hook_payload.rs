//! GitLab's system hook bodies of projects, users, SSH keys, groups and memberships ("System
//! hooks" in GitLab's documentation), field by field; `crate::webhooks::payload` builds them
//! from the objects the outbox recorded and the rows they name. A push's `repository_update`
//! is beside the project hook bodies, in `views::webhook_payload`. Timestamps are
//! `2013-12-03T17:15:43Z`, except a key's `created_at` (`2015-05-17 17:06:40 UTC`, as GitLab's
//! example writes it).

use serde::Serialize;

use crate::model::visibility::Visibility;

/// What every system hook body carries: when its object was created and last updated, and
/// the event's name.
#[derive(Debug, Serialize)]
pub struct SystemStamp {
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    pub event_name: &'static str,
}

/// `project_create`, `project_destroy`, `project_update`, `project_rename` and
/// `project_transfer`.
#[derive(Debug, Serialize)]
pub struct ProjectEvent {
    #[serde(flatten)]
    pub stamp: SystemStamp,
    pub name: String,
    pub owner_email: String,
    pub owner_name: String,
    pub owners: Vec<Owner>,
    pub path: String,
    pub path_with_namespace: String,
    pub project_id: i64,
    pub project_namespace_id: i64,
    pub project_visibility: Option<Visibility>,
    /// Renames and transfers only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path_with_namespace: Option<String>,
}

/// A project's owner: the user of a personal namespace, else the group (no email).
#[derive(Debug, Serialize)]
pub struct Owner {
    pub name: String,
    pub email: String,
}

/// `user_create`, `user_destroy` and `user_rename`.
#[derive(Debug, Serialize)]
pub struct UserEvent {
    #[serde(flatten)]
    pub stamp: SystemStamp,
    pub email: String,
    pub name: String,
    pub username: String,
    pub user_id: i64,
    /// Renames only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_username: Option<String>,
}

/// `key_create` and `key_destroy`.
#[derive(Debug, Serialize)]
pub struct KeyEvent {
    #[serde(flatten)]
    pub stamp: SystemStamp,
    /// Null once the key's user is gone.
    pub username: Option<String>,
    pub key: String,
    pub id: i64,
}

/// `group_create`, `group_destroy` and `group_rename`.
#[derive(Debug, Serialize)]
pub struct GroupEvent {
    #[serde(flatten)]
    pub stamp: SystemStamp,
    pub name: String,
    pub path: String,
    pub group_id: i64,
    /// Renames only, as the three below.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_full_path: Option<String>,
}

/// `user_add_to_team`, `user_update_for_team` and `user_remove_from_team`.
#[derive(Debug, Serialize)]
pub struct ProjectMemberEvent {
    #[serde(flatten)]
    pub stamp: SystemStamp,
    pub access_level: &'static str,
    pub project_id: i64,
    pub project_name: String,
    pub project_path: String,
    pub project_path_with_namespace: String,
    pub project_visibility: Visibility,
    #[serde(flatten)]
    pub user: MemberUser,
}

/// `user_add_to_group`, `user_update_for_group` and `user_remove_from_group`.
#[derive(Debug, Serialize)]
pub struct GroupMemberEvent {
    #[serde(flatten)]
    pub stamp: SystemStamp,
    pub group_access: &'static str,
    pub group_id: i64,
    pub group_name: String,
    pub group_path: String,
    #[serde(flatten)]
    pub user: MemberUser,
}

/// The member of a membership event.
#[derive(Debug, Serialize)]
pub struct MemberUser {
    pub user_email: String,
    pub user_name: String,
    pub user_username: String,
    pub user_id: i64,
}
