//! The spec's Namespace and Group shapes, as `NamespaceViews` (`namespace.rs`) fills them. A
//! group's settings are the list `GROUP_SETTINGS`: serialised from it, and documented from it
//! with the type of each setting's default (as `api::groups` reads them).

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{Schema, Type};
use utoipa::{PartialSchema, ToSchema};

use super::catalog_schema::{Property, object, typed};
use super::namespace::{EE_GROUP_SETTINGS, GROUP_SETTINGS};
use super::project_view::ProjectView;

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
