//! Namespace, group and member representations; the namespace and group shapes are in
//! `namespace_view.rs`.

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::namespace_view::{GroupSettingsView, GroupView, NamespaceEmbedded, NamespaceView};
use super::timestamp;
use super::user::{UserSummary, UserViews};
use crate::model::members::MemberRow;
use crate::model::namespaces::NamespaceRow;
use crate::model::users::UserRow;

/// Group settings kept in the namespace's JSON column, with GitLab's defaults.
pub const GROUP_SETTINGS: &[(&str, &str)] = &[
    ("share_with_group_lock", "false"),
    ("require_two_factor_authentication", "false"),
    ("two_factor_grace_period", "48"),
    ("project_creation_level", "\"developer\""),
    ("auto_devops_enabled", "null"),
    ("subgroup_creation_level", "\"owner\""),
    ("emails_disabled", "false"),
    ("emails_enabled", "true"),
    ("mentions_disabled", "null"),
    ("lfs_enabled", "true"),
    ("default_branch_protection", "2"),
    ("request_access_enabled", "true"),
    ("membership_lock", "false"),
    ("shared_runners_setting", "\"enabled\""),
    ("wiki_access_level", "\"enabled\""),
];

/// Group settings that GitLab shows only in EE (`EE::API::Entities::Group` and
/// `GroupDetail`): kept for writes, left out of CE's answer.
pub const EE_GROUP_SETTINGS: &[&str] = &["membership_lock", "wiki_access_level"];

pub fn setting(settings: &serde_json::Map<String, Value>, key: &str) -> Value {
    settings.get(key).cloned().unwrap_or_else(|| {
        GROUP_SETTINGS
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| serde_json::from_str(v).ok())
            .unwrap_or(Value::Null)
    })
}

pub struct NamespaceViews<'a> {
    pub base_url: &'a str,
}

impl NamespaceViews<'_> {
    pub fn web_url(&self, ns: &NamespaceRow) -> String {
        if ns.is_group() {
            format!("{}/groups/{}", self.base_url, ns.full_path)
        } else {
            format!("{}/{}", self.base_url, ns.full_path)
        }
    }

    pub fn avatar_url(
        &self,
        ns: &NamespaceRow,
        owner: Option<&UserRow>,
        users: &UserViews,
    ) -> Option<String> {
        if ns.is_group() {
            return ns.avatar_path.as_ref().map(|file| {
                format!(
                    "{}/uploads/-/system/group/avatar/{}/{file}",
                    self.base_url, ns.id
                )
            });
        }
        owner.and_then(|u| users.summary(u).avatar_url)
    }

    /// The namespace embedded in a project.
    pub fn embedded(&self, ns: &NamespaceRow, avatar_url: Option<String>) -> NamespaceEmbedded {
        NamespaceEmbedded {
            id: ns.id,
            name: ns.name.clone(),
            path: ns.path.clone(),
            kind: ns.kind.clone(),
            full_path: ns.full_path.clone(),
            parent_id: ns.parent_id,
            avatar_url,
            web_url: self.web_url(ns),
        }
    }

    /// `GET /namespaces` entries.
    pub fn namespace(&self, ns: &NamespaceRow, avatar_url: Option<String>) -> NamespaceView {
        NamespaceView(self.embedded(ns, avatar_url))
    }

    pub fn group(&self, ns: &NamespaceRow) -> GroupView {
        let settings = ns.settings_json();
        let users = UserViews {
            base_url: self.base_url,
            avatar_service: false,
        };
        GroupView {
            id: ns.id,
            web_url: self.web_url(ns),
            name: ns.name.clone(),
            path: ns.path.clone(),
            description: ns.description.clone(),
            visibility: ns.visibility.to_string(),
            avatar_url: self.avatar_url(ns, None, &users),
            full_name: ns.full_name.clone(),
            full_path: ns.full_path.clone(),
            created_at: timestamp(ns.created_at),
            parent_id: ns.parent_id,
            organization_id: 1,
            show_diff_preview_in_email: true,
            archived: false,
            math_rendering_limits_enabled: true,
            lock_math_rendering_limits_enabled: false,
            max_artifacts_size: None,
            marked_for_deletion_on: None,
            default_branch: settings
                .get("default_branch")
                .cloned()
                .unwrap_or(Value::Null),
            settings: GroupSettingsView(
                GROUP_SETTINGS
                    .iter()
                    .filter(|(key, _)| !EE_GROUP_SETTINGS.contains(key))
                    .map(|(key, _)| (key.to_string(), setting(&settings, key)))
                    .collect(),
            ),
            default_branch_protection_defaults: Map::new(),
        }
    }
}

/// A member: CE's `API::Entities::Member`, the user summary with the membership's level and
/// dates. GitLab leaves `created_by` out when nobody is recorded, as Trellis never records
/// one; `email`, `membership_state`, `group_saml_identity` and `member_role` are EE's (clients
/// crash on a `null` `member_role`).
#[derive(Clone, Serialize, ToSchema)]
pub struct MemberView {
    #[serde(flatten)]
    pub user: UserSummary,
    pub access_level: i64,
    pub created_at: String,
    pub expires_at: Option<String>,
}

pub fn member(users: &UserViews, user: &UserRow, member: &MemberRow) -> MemberView {
    MemberView {
        user: users.summary(user),
        access_level: member.access_level,
        created_at: timestamp(member.created_at),
        expires_at: member.expires_at.clone(),
    }
}
