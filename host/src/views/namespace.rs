//! Namespaces, groups and members as the API shows them: the spec's Namespace and Group shapes,
//! how `NamespaceViews` fills them from rows, and what they need besides the rows, loaded at
//! once (the owners of a page of namespaces, the projects a single group embeds). A group's
//! settings are the list `GROUP_SETTINGS`: serialised from it, and documented from it with the
//! type of each setting's default (as `api::groups` reads them).

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{Schema, Type};
use utoipa::{PartialSchema, ToSchema};

use super::catalog_schema::{Property, object, typed};
use super::project::{ProjectReader, ProjectShape, ProjectView, ProjectViews};
use super::timestamp;
use super::unique;
use super::user::{UserSummary, UserViews};
use crate::links::UserLinks;
use crate::model::members::MemberRow;
use crate::model::namespaces::NamespaceRow;
use crate::model::today;
use crate::model::users::UserRow;
use crate::policy::{self, Scope};
use crate::services::Refusal;
use crate::store::TenantDb;
use crate::store::projects::{GroupScope, ProjectFilter};
use crate::store::window::Window;

/// A namespace as projects embed it.
#[derive(Clone, Serialize, ToSchema)]
pub struct NamespaceEmbedded {
    pub id: i64,
    pub name: String,
    pub path: String,
    /// `user` or `group`.
    pub kind: String,
    pub full_path: String,
    pub parent_id: Option<i64>,
    pub avatar_url: Option<String>,
    pub web_url: String,
}

/// A namespace of `GET /namespaces`: CE's `Namespace` entity, the embedded form. EE's
/// subscription keys (`billable_members_count`, `plan`, `trial`, `trial_ends_on`...) are not
/// shown, nor CE's `members_count_with_descendants`, which GitLab shows only to a group's
/// administrators.
#[derive(Serialize, ToSchema)]
#[serde(transparent)]
pub struct NamespaceView(pub NamespaceEmbedded);

#[derive(Serialize, ToSchema)]
pub struct GroupView {
    pub id: i64,
    pub web_url: String,
    pub name: String,
    pub path: String,
    pub description: String,
    pub visibility: String,
    pub avatar_url: Option<String>,
    pub full_name: String,
    pub full_path: String,
    pub created_at: String,
    pub parent_id: Option<i64>,
    pub organization_id: i64,
    /// CE defaults of settings Trellis does not have: diff previews in email, math
    /// rendering limits, archived groups and a per-group artifact size.
    pub show_diff_preview_in_email: bool,
    pub archived: bool,
    pub math_rendering_limits_enabled: bool,
    pub lock_math_rendering_limits_enabled: bool,
    pub max_artifacts_size: Option<i64>,
    /// Always null: groups are deleted at once. (EE's `ldap_cn`, `ldap_access` and
    /// `file_template_project_id` are not shown.)
    pub marked_for_deletion_on: Option<String>,
    #[schema(value_type = Option<String>)]
    pub default_branch: Value,
    #[serde(flatten)]
    pub settings: GroupSettingsView,
    #[schema(value_type = Object)]
    pub default_branch_protection_defaults: Map<String, Value>,
}

/// A single group (`GET /groups/:id`, and what creates and updates answer): the group, the
/// projects it has and those shared with it (unless `with_projects=false`).
#[derive(Serialize, ToSchema)]
pub struct GroupDetail {
    #[serde(flatten)]
    pub group: GroupView,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projects: Option<Vec<ProjectView>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_projects: Option<Vec<ProjectView>>,
    /// Always empty: Trellis does not share groups with groups.
    #[schema(value_type = Vec<Object>)]
    pub shared_with_groups: Vec<Value>,
}

/// A group's settings ([`GROUP_SETTINGS`]), each its stored value or its default, but the
/// EE ones ([`EE_GROUP_SETTINGS`]), which are stored and not shown.
#[derive(Serialize)]
#[serde(transparent)]
pub struct GroupSettingsView(pub Map<String, Value>);

/// Booleans and integers as their defaults are; the rest are strings that may be null.
fn schema_of(default: &str) -> Schema {
    match serde_json::from_str::<Value>(default) {
        Ok(Value::Bool(_)) => typed(Type::Boolean, false),
        Ok(Value::Number(_)) => typed(Type::Integer, false),
        _ => typed(Type::String, true),
    }
}

impl PartialSchema for GroupSettingsView {
    fn schema() -> RefOr<Schema> {
        object(
            GROUP_SETTINGS
                .iter()
                .filter(|(key, _)| !EE_GROUP_SETTINGS.contains(key))
                .map(|(key, default)| Property::always(key, schema_of(default))),
        )
    }
}

impl ToSchema for GroupSettingsView {}

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
        let users = UserViews(UserLinks {
            base_url: self.base_url,
            avatar_service: false,
        });
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

impl NamespaceViews<'_> {
    /// The views of a page of namespaces, by id; the owners of the personal ones (whose
    /// avatars they show) are loaded in one statement.
    pub async fn load_page(
        &self,
        db: &TenantDb,
        users: &UserViews<'_>,
        rows: &[NamespaceRow],
    ) -> crate::store::Result<HashMap<i64, NamespaceView>> {
        let owners: HashMap<i64, UserRow> = db
            .users_by_ids(&unique(rows.iter().filter_map(|n| n.owner_id)))
            .await?
            .into_iter()
            .map(|u| (u.id, u))
            .collect();
        Ok(rows
            .iter()
            .map(|ns| {
                let owner = ns.owner_id.and_then(|id| owners.get(&id));
                (ns.id, self.namespace(ns, self.avatar_url(ns, owner, users)))
            })
            .collect())
    }

    /// One namespace's view, its owner loaded as for a page of one.
    pub async fn load_one(
        &self,
        db: &TenantDb,
        users: &UserViews<'_>,
        ns: &NamespaceRow,
    ) -> crate::store::Result<NamespaceView> {
        let owner_ids: Vec<i64> = ns.owner_id.into_iter().collect();
        let owners = db.users_by_ids(&owner_ids).await?;
        Ok(self.namespace(ns, self.avatar_url(ns, owners.first(), users)))
    }

    /// A single group as `GET /groups/:id` shows it; with `with_projects`, the group's own
    /// projects and those shared with it, up to 100 of each that the caller may see and
    /// external authorization allows, by id, each list loaded as one page.
    pub async fn load_group_detail(
        &self,
        scope: &Scope<'_>,
        group: &NamespaceRow,
        with_projects: bool,
    ) -> Result<GroupDetail, Refusal> {
        let mut detail = GroupDetail {
            group: self.group(group),
            projects: None,
            shared_projects: None,
            shared_with_groups: Vec::new(),
        };
        if with_projects {
            let refused = policy::refused_projects(scope).await?;
            let scope_of = |own: bool| GroupScope {
                group_id: group.id,
                own,
                subgroups_of: None,
                shared: !own,
            };
            detail.projects = Some(embedded_projects(scope, scope_of(true), &refused).await?);
            detail.shared_projects =
                Some(embedded_projects(scope, scope_of(false), &refused).await?);
        }
        Ok(detail)
    }
}

/// Up to 100 projects of `group` that the caller may see, but `refused`, by id, in the shape
/// a single group embeds them.
async fn embedded_projects(
    scope: &Scope<'_>,
    group: GroupScope,
    refused: &[i64],
) -> Result<Vec<ProjectView>, Refusal> {
    let filter = ProjectFilter {
        viewer: scope.viewer(),
        today: today(),
        group: Some(group),
        excluded: refused.to_vec(),
        ..ProjectFilter::default()
    };
    let rows = scope
        .db()
        .list_projects(&filter, &Window::first_by_id(100))
        .await?;
    let shape = ProjectShape {
        simple: scope.caller.is_none(),
        ..ProjectShape::default()
    };
    let mut views = ProjectViews::of(scope)
        .load_page(ProjectReader::of(scope), &rows, shape)
        .await?;
    Ok(rows.iter().filter_map(|p| views.remove(&p.id)).collect())
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
