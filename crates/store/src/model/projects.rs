//! Project rows.

use super::Flag;
use super::feature_access::FeatureAccess;
use super::states::ImportStatus;
use super::visibility::Visibility;

/// The branch a new repository starts on when neither the project nor the instance's
/// `default_branch_name` names one: GitLab's default since 14.0.
pub const DEFAULT_BRANCH: &str = "main";

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct ProjectRow {
    pub id: i64,
    pub namespace_id: i64,
    pub creator_id: Option<i64>,
    pub name: String,
    pub path: String,
    pub description: Option<String>,
    pub default_branch: Option<String>,
    pub visibility: Visibility,
    #[sqlx(try_from = "Flag")]
    pub archived: bool,
    pub star_count: i64,
    pub forks_count: i64,
    pub open_issues_count: i64,
    pub tag_list: String,
    pub avatar_path: Option<String>,
    /// Never part of an event's payload: it may carry credentials.
    #[serde(skip)]
    pub import_url: Option<String>,
    pub import_status: ImportStatus,
    pub import_error: Option<String>,
    pub issues_access_level: FeatureAccess,
    pub merge_requests_access_level: FeatureAccess,
    pub repository_size: i64,
    pub storage_size: i64,
    pub wiki_size: i64,
    pub packages_size: i64,
    /// Never part of an event's payload: it holds the runners token.
    #[serde(skip)]
    pub settings: String,
    pub marked_for_deletion_at: Option<i64>,
    pub forked_from_id: Option<i64>,
    pub commit_count: i64,
    pub repository_languages: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub last_activity_at: i64,
}

/// The `external_authorization_classification_label` in a project's settings (`""` if none).
pub fn classification_label(settings: &str) -> String {
    serde_json::from_str::<serde_json::Value>(settings)
        .ok()
        .and_then(|v| {
            v.get("external_authorization_classification_label")?
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_default()
}

impl ProjectRow {
    /// The default branch, or GitLab's default for a project that has none yet.
    pub fn head_branch(&self) -> String {
        self.default_branch
            .clone()
            .unwrap_or_else(|| DEFAULT_BRANCH.into())
    }

    pub fn classification_label(&self) -> String {
        classification_label(&self.settings)
    }

    pub fn settings_json(&self) -> serde_json::Map<String, serde_json::Value> {
        serde_json::from_str(&self.settings).unwrap_or_default()
    }

    /// A feature's access level, from its column (issues, merge requests) or from `settings`
    /// (this project's [`ProjectRow::settings_json`]).
    pub fn feature_access(
        &self,
        settings: &serde_json::Map<String, serde_json::Value>,
        key: &str,
    ) -> FeatureAccess {
        match key {
            "issues_access_level" => self.issues_access_level,
            "merge_requests_access_level" => self.merge_requests_access_level,
            _ => super::project_settings::feature_access(settings, key),
        }
    }

    pub fn tags(&self) -> Vec<String> {
        serde_json::from_str(&self.tag_list).unwrap_or_default()
    }
}
