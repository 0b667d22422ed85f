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
    pub fn namespace(
        &self,
        ns: &NamespaceRow,
        avatar_url: Option<String>,
        members_count_with_descendants: Option<i64>,
    ) -> NamespaceView {
        NamespaceView {
            namespace: self.embedded(ns, avatar_url),
            members_count_with_descendants,
            billable_members_count: members_count_with_descendants,
            plan: "default",
            trial_ends_on: None,
            trial: false,
        }
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
            visibility: ns.visibility.clone(),
            avatar_url: self.avatar_url(ns, None, &users),
            full_name: ns.full_name.clone(),
            full_path: ns.full_path.clone(),
            created_at: timestamp(ns.created_at),
            parent_id: ns.parent_id,
            organization_id: 1,
            ldap_cn: None,
            ldap_access: None,
            marked_for_deletion_on: None,
            file_template_project_id: None,
            default_branch: settings
                .get("default_branch")
                .cloned()
                .unwrap_or(Value::Null),
            settings: GroupSettingsView(
                GROUP_SETTINGS
                    .iter()
                    .map(|(key, _)| (key.to_string(), setting(&settings, key)))
                    .collect(),
            ),
            default_branch_protection_defaults: Map::new(),
        }
    }
}

/// A member: the user summary with the membership's level and dates; administrators also
/// see the email.
#[derive(Clone, Serialize, ToSchema)]
pub struct MemberView {
    #[serde(flatten)]
    pub user: UserSummary,
    pub access_level: i64,
    pub created_at: String,
    pub expires_at: Option<String>,
    /// Trellis does not record who added a member, nor SAML identities. (Custom roles,
    /// `member_role`, are GitLab EE's: CE leaves the key out, and clients crash on a `null`.)
    #[schema(value_type = Option<Object>)]
    pub created_by: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub group_saml_identity: Option<Value>,
    pub membership_state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

pub fn member(users: &UserViews, user: &UserRow, member: &MemberRow, admin: bool) -> MemberView {
    MemberView {
        user: users.summary(user),
        access_level: member.access_level,
        created_at: timestamp(member.created_at),
        expires_at: member.expires_at.clone(),
        created_by: None,
        group_saml_identity: None,
        membership_state: "active",
        email: admin.then(|| user.email.clone()),
    }
}
