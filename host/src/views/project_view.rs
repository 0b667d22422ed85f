//! The spec's Project shapes, as `ProjectViews` (`project.rs`) fills them: the simple form
//! (anonymous callers, `simple=true`, a fork's source) and the full form, which adds to it.

use serde::{Serialize, Serializer};
use serde_json::Value;
use utoipa::openapi::schema::{AnyOfBuilder, Schema};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use super::namespace_view::NamespaceEmbedded;
use super::project_settings::ProjectSettingsView;
use super::user::UserSummary;
use crate::access_level::AccessLevel;

#[derive(Clone, Serialize, ToSchema)]
pub struct ProjectSimple {
    pub id: i64,
    pub description: Option<String>,
    pub name: String,
    pub name_with_namespace: String,
    pub path: String,
    pub path_with_namespace: String,
    pub created_at: String,
    pub default_branch: Option<String>,
    pub tag_list: Vec<String>,
    pub topics: Vec<String>,
    pub ssh_url_to_repo: String,
    pub http_url_to_repo: String,
    pub web_url: String,
    /// Always null: Trellis does not look for a README.
    pub readme_url: Option<String>,
    pub forks_count: i64,
    pub avatar_url: Option<String>,
    pub star_count: i64,
    pub last_activity_at: String,
    pub namespace: NamespaceEmbedded,
}

/// The full form: the simple one, the catalog's settings (`project_settings.rs`) and the rest.
#[derive(Clone, Serialize, ToSchema)]
pub struct ProjectFull {
    #[serde(flatten)]
    pub simple: ProjectSimple,
    #[serde(flatten)]
    pub settings: ProjectSettingsView,
    #[serde(rename = "_links")]
    pub links: ProjectLinks,
    pub visibility: String,
    /// Only for personal projects, as GitLab shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<ProjectOwner>,
    pub creator_id: Option<i64>,
    pub empty_repo: bool,
    pub archived: bool,
    #[schema(value_type = Object)]
    pub container_expiration_policy: Value,
    pub repository_object_format: &'static str,
    pub service_desk_address: Option<String>,
    pub can_create_merge_request_in: bool,
    pub group_runners_enabled: bool,
    /// Maintainers only (as the other `Option<Option<_>>` keys: left out for others), without
    /// its credentials.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub import_url: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub import_type: Option<Option<String>>,
    pub import_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub import_error: Option<Option<String>>,
    /// Only for those who may read the project's issues.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_issues_count: Option<i64>,
    pub description_html: String,
    pub updated_at: String,
    pub ci_job_token_scope_enabled: bool,
    pub ci_separated_caches: bool,
    pub ci_allow_fork_pipelines_to_run_in_parent_project: bool,
    pub keep_latest_artifact: bool,
    pub restrict_user_defined_variables: bool,
    /// Maintainers only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runners_token: Option<String>,
    pub runner_token_expiration_interval: Option<i64>,
    pub shared_with_groups: Vec<SharedWithGroup>,
    pub squash_option: &'static str,
    pub enforce_auth_checks_on_uploads: bool,
    pub merge_commit_template: Option<String>,
    pub squash_commit_template: Option<String>,
    pub issue_branch_template: Option<String>,
    pub emails_enabled: bool,
    /// Always empty: Trellis has no compliance frameworks, but the API's project lists the key.
    pub compliance_frameworks: Vec<String>,
    pub warn_about_potentially_unwanted_characters: bool,
    pub marked_for_deletion_at: Option<String>,
    pub marked_for_deletion_on: Option<String>,
    pub permissions: ProjectPermissions,
    /// `license_url` and `license` only with `license=true`, and then null: Trellis does not
    /// detect licenses.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub license_url: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub license: Option<Option<Value>>,
    /// Only with `statistics=true`, for those who may see them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statistics: Option<ProjectStatistics>,
    /// Only for forks whose source the caller can see.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forked_from_project: Option<ProjectSimple>,
    /// Only with `with_custom_attributes=true`, for administrators.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_attributes: Option<Vec<CustomAttribute>>,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct ProjectLinks {
    #[serde(rename = "self")]
    pub this: String,
    pub issues: String,
    pub merge_requests: String,
    pub repo_branches: String,
    pub labels: String,
    pub events: String,
    pub members: String,
    pub cluster_agents: String,
}

/// The owner of a personal project: the user summary and when they signed up.
#[derive(Clone, Serialize, ToSchema)]
pub struct ProjectOwner {
    #[serde(flatten)]
    pub user: UserSummary,
    pub created_at: String,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct SharedWithGroup {
    pub group_id: i64,
    pub group_name: String,
    pub group_full_path: String,
    pub group_access_level: i64,
    pub expires_at: Option<String>,
}

/// The caller's own levels on the project and through its groups.
#[derive(Clone, Serialize, ToSchema)]
pub struct ProjectPermissions {
    pub project_access: Option<MemberAccess>,
    pub group_access: Option<MemberAccess>,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct MemberAccess {
    #[schema(value_type = i64)]
    pub access_level: AccessLevel,
    pub notification_level: i64,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct ProjectStatistics {
    pub commit_count: i64,
    pub storage_size: i64,
    pub repository_size: i64,
    pub wiki_size: i64,
    pub lfs_objects_size: i64,
    pub job_artifacts_size: i64,
    pub pipeline_artifacts_size: i64,
    pub packages_size: i64,
    pub snippets_size: i64,
    pub uploads_size: i64,
    pub container_registry_size: i64,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct CustomAttribute {
    pub key: String,
    pub value: String,
}

/// A project as one response shows it: simple or full, as the caller and `simple` decide.
#[derive(Clone)]
pub enum ProjectView {
    Simple(Box<ProjectSimple>),
    Full(Box<ProjectFull>),
}

impl Serialize for ProjectView {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ProjectView::Simple(simple) => simple.serialize(serializer),
            ProjectView::Full(full) => full.serialize(serializer),
        }
    }
}

/// Any of the two forms: not one of, since a full project is also a valid simple one.
impl PartialSchema for ProjectView {
    fn schema() -> RefOr<Schema> {
        AnyOfBuilder::new()
            .item(Ref::from_schema_name(ProjectFull::name()))
            .item(Ref::from_schema_name(ProjectSimple::name()))
            .into()
    }
}

impl ToSchema for ProjectView {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((ProjectFull::name().into(), ProjectFull::schema()));
        ProjectFull::schemas(schemas);
        schemas.push((ProjectSimple::name().into(), ProjectSimple::schema()));
        ProjectSimple::schemas(schemas);
    }
}
