//! The project settings catalog: the long tail of project settings kept in the project's
//! `settings` JSON column, with their kinds and defaults. It is the schema of stored data, so
//! it lives beside the rows: `api::projects::fields` validates writes against it and
//! `views::project` renders each setting (or its default) from it.

use serde_json::{Map, Value, json};

use super::feature_access::FeatureAccess;

/// How a setting from the project's JSON column is given and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Int,
    /// An integer that may be null.
    OptInt,
    Str,
    /// An access level: disabled, private, enabled ([`FeatureAccess::NOT_PUBLIC`]).
    Access,
    /// An access level that may also be public (pages, requirements): [`FeatureAccess::ALL`].
    PublicAccess,
    Enum(&'static [&'static str]),
}

/// The long tail of project settings: name, kind, default (JSON text). Stored in the
/// project's `settings` column when given; the default applies otherwise.
pub const PROJECT_SETTINGS: &[(&str, Kind, &str)] = &[
    ("allow_merge_on_skipped_pipeline", Kind::Bool, "false"),
    ("autoclose_referenced_issues", Kind::Bool, "true"),
    ("auto_devops_enabled", Kind::Bool, "false"),
    ("emails_disabled", Kind::Bool, "false"),
    ("lfs_enabled", Kind::Bool, "true"),
    (
        "only_allow_merge_if_all_discussions_are_resolved",
        Kind::Bool,
        "false",
    ),
    ("only_allow_merge_if_pipeline_succeeds", Kind::Bool, "false"),
    ("packages_enabled", Kind::Bool, "true"),
    ("public_builds", Kind::Bool, "true"),
    ("remove_source_branch_after_merge", Kind::Bool, "true"),
    ("request_access_enabled", Kind::Bool, "true"),
    ("resolve_outdated_diff_discussions", Kind::Bool, "false"),
    ("shared_runners_enabled", Kind::Bool, "true"),
    ("show_default_award_emojis", Kind::Bool, "true"),
    ("printing_merge_request_link_enabled", Kind::Bool, "true"),
    ("mirror", Kind::Bool, "false"),
    ("mirror_trigger_builds", Kind::Bool, "false"),
    ("mirror_overwrites_diverged_branches", Kind::Bool, "false"),
    ("only_mirror_protected_branches", Kind::Bool, "false"),
    ("ci_forward_deployment_enabled", Kind::Bool, "true"),
    ("service_desk_enabled", Kind::Bool, "false"),
    ("use_custom_template", Kind::Bool, "false"),
    ("build_timeout", Kind::Int, "3600"),
    ("approvals_before_merge", Kind::Int, "0"),
    ("ci_default_git_depth", Kind::OptInt, "20"),
    ("mirror_user_id", Kind::OptInt, "null"),
    ("template_project_id", Kind::OptInt, "null"),
    ("group_with_project_templates_id", Kind::OptInt, "null"),
    ("build_coverage_regex", Kind::Str, "null"),
    ("ci_config_path", Kind::Str, "null"),
    (
        "external_authorization_classification_label",
        Kind::Str,
        "\"\"",
    ),
    ("suggestion_commit_message", Kind::Str, "null"),
    ("template_name", Kind::Str, "null"),
    ("repository_storage", Kind::Str, "\"default\""),
    (
        "merge_method",
        Kind::Enum(&["merge", "rebase_merge", "ff"]),
        "\"merge\"",
    ),
    (
        "build_git_strategy",
        Kind::Enum(&["fetch", "clone"]),
        "\"fetch\"",
    ),
    (
        "auto_cancel_pending_pipelines",
        Kind::Enum(&["enabled", "disabled"]),
        "\"enabled\"",
    ),
    (
        "auto_devops_deploy_strategy",
        Kind::Enum(&["continuous", "manual", "timed_incremental"]),
        "\"continuous\"",
    ),
    ("analytics_access_level", Kind::Access, "\"enabled\""),
    ("builds_access_level", Kind::Access, "\"enabled\""),
    ("forking_access_level", Kind::Access, "\"enabled\""),
    ("operations_access_level", Kind::Access, "\"enabled\""),
    ("repository_access_level", Kind::Access, "\"enabled\""),
    ("snippets_access_level", Kind::Access, "\"enabled\""),
    ("wiki_access_level", Kind::Access, "\"enabled\""),
    (
        "container_registry_access_level",
        Kind::Access,
        "\"enabled\"",
    ),
    (
        "security_and_compliance_access_level",
        Kind::Access,
        "\"private\"",
    ),
    ("environments_access_level", Kind::Access, "\"enabled\""),
    ("feature_flags_access_level", Kind::Access, "\"enabled\""),
    ("infrastructure_access_level", Kind::Access, "\"enabled\""),
    ("monitor_access_level", Kind::Access, "\"enabled\""),
    ("releases_access_level", Kind::Access, "\"enabled\""),
    ("pages_access_level", Kind::PublicAccess, "\"enabled\""),
    (
        "requirements_access_level",
        Kind::PublicAccess,
        "\"enabled\"",
    ),
];

/// The deprecated booleans and the access level each stands for.
pub const DEPRECATED_FLAGS: &[(&str, &str)] = &[
    ("issues_enabled", "issues_access_level"),
    ("jobs_enabled", "builds_access_level"),
    ("merge_requests_enabled", "merge_requests_access_level"),
    ("snippets_enabled", "snippets_access_level"),
    ("wiki_enabled", "wiki_access_level"),
    (
        "container_registry_enabled",
        "container_registry_access_level",
    ),
];

pub fn setting(settings: &Map<String, Value>, key: &str) -> Value {
    settings
        .get(key)
        .cloned()
        .unwrap_or_else(|| default_of(key))
}

/// An access level setting (`Kind::Access`, `Kind::PublicAccess`), or its default.
pub fn feature_access(settings: &Map<String, Value>, key: &str) -> FeatureAccess {
    let level = |v: &Value| v.as_str().and_then(FeatureAccess::parse);
    settings
        .get(key)
        .and_then(level)
        .or_else(|| level(&default_of(key)))
        .unwrap_or(FeatureAccess::Enabled)
}

pub fn default_of(key: &str) -> Value {
    PROJECT_SETTINGS
        .iter()
        .find(|(k, _, _)| *k == key)
        .and_then(|(_, _, v)| serde_json::from_str(v).ok())
        .unwrap_or(Value::Null)
}

/// The default container expiration policy.
pub fn default_expiration_policy() -> Value {
    json!({
        "cadence": "1d",
        "enabled": false,
        "keep_n": 10,
        "older_than": "90d",
        "name_regex": ".*",
        "name_regex_delete": ".*",
        "name_regex_keep": null,
        "next_run_at": null,
    })
}
