//! Every application setting of the spec's table, as data: its name, type, GitLab's default,
//! and whether it is a write-only secret or a deprecated alias of another setting.
//! Defaults are JSON literals, parsed once; the order is the order of the API response.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::Value;

use crate::model::visibility::Visibility;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Int,
    Float,
    /// A string; `null` allowed.
    Str,
    /// An array of strings; a comma-separated string is accepted on input.
    StrList,
    /// An array of integers; a comma-separated string is accepted on input.
    IntList,
    /// A hash of string to integer (`repository_storages_weighted`).
    IntMap,
}

#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub name: &'static str,
    pub kind: Kind,
    /// GitLab's default as a JSON literal.
    pub default: &'static str,
    /// Write-only: stored encrypted, never returned in clear (the API shows `null`).
    pub secret: bool,
    /// A deprecated name that reads and writes `alias_of`.
    pub alias_of: Option<&'static str>,
    /// Only on higher-tier editions in GitLab ([T]); Trellis stores it like any other.
    pub tier: bool,
}

impl Entry {
    const fn new(name: &'static str, kind: Kind, default: &'static str) -> Entry {
        Entry {
            name,
            kind,
            default,
            secret: false,
            alias_of: None,
            tier: false,
        }
    }
    const fn secret(mut self) -> Entry {
        self.secret = true;
        self
    }
    const fn tier(mut self) -> Entry {
        self.tier = true;
        self
    }
    const fn alias(mut self, of: &'static str) -> Entry {
        self.alias_of = Some(of);
        self
    }

    pub fn default_value(&self) -> Value {
        serde_json::from_str(self.default).expect("catalog default is JSON")
    }
}

use Kind::*;

const fn b(name: &'static str, default: &'static str) -> Entry {
    Entry::new(name, Bool, default)
}
const fn i(name: &'static str, default: &'static str) -> Entry {
    Entry::new(name, Int, default)
}
const fn s(name: &'static str, default: &'static str) -> Entry {
    Entry::new(name, Str, default)
}
const fn sl(name: &'static str, default: &'static str) -> Entry {
    Entry::new(name, StrList, default)
}

pub static CATALOG: &[Entry] = &[
    b("admin_mode", "false"),
    s("admin_notification_email", "null").alias("abuse_notification_email"),
    s("abuse_notification_email", "null"),
    s("after_sign_out_path", "null"),
    s("after_sign_up_text", "null"),
    b("spam_filter_enabled", "false"),
    s("spam_filter_api_key", "null").secret(),
    b("allow_group_owners_to_manage_ldap", "true").tier(),
    b("allow_local_requests_from_hooks_and_services", "false")
        .alias("allow_local_requests_from_web_hooks_and_services"),
    b("allow_local_requests_from_web_hooks_and_services", "false"),
    b("allow_local_requests_from_system_hooks", "true"),
    s("archive_builds_in_human_readable", "null"),
    b("asset_proxy_enabled", "false"),
    s("asset_proxy_secret_key", "null").secret(),
    s("asset_proxy_url", "null"),
    sl("asset_proxy_whitelist", "[]").alias("asset_proxy_allowlist"),
    sl("asset_proxy_allowlist", "[]"),
    b("authorized_keys_enabled", "true"),
    s("auto_devops_domain", "null"),
    b("auto_devops_enabled", "true"),
    b("automatic_purchased_storage_allocation", "false"),
    b("check_namespace_plan", "false").tier(),
    s("commit_email_hostname", "null"),
    b(
        "container_expiration_policies_enable_historic_entries",
        "false",
    ),
    i(
        "container_registry_cleanup_tags_service_max_list_size",
        "200",
    ),
    i("container_registry_delete_tags_service_timeout", "250"),
    b("container_registry_expiration_policies_caching", "true"),
    i(
        "container_registry_expiration_policies_worker_capacity",
        "4",
    ),
    i("container_registry_token_expire_delay", "5"),
    b("deactivate_dormant_users", "false"),
    s("default_artifacts_expire_in", "\"30 days\""),
    s("default_branch_name", "null"),
    i("default_branch_protection", "2"),
    s("default_ci_config_path", "null"),
    s("default_group_visibility", "\"private\""),
    i("default_project_creation", "2"),
    s("default_project_visibility", "\"private\""),
    i("default_projects_limit", "100000"),
    s("default_snippet_visibility", "\"private\""),
    b("delayed_project_deletion", "false").tier(),
    b("delayed_group_deletion", "true").tier(),
    b("delete_inactive_projects", "false"),
    i("deletion_adjourned_period", "7").tier(),
    i("diff_max_patch_bytes", "204800"),
    i("diff_max_files", "1000"),
    i("diff_max_lines", "50000"),
    b("disable_feed_token", "false"),
    sl("disabled_oauth_sign_in_sources", "[]"),
    b("dns_rebinding_protection_enabled", "true"),
    b("domain_denylist_enabled", "false"),
    sl("domain_denylist", "[]"),
    sl("domain_allowlist", "null"),
    i("dsa_key_restriction", "0"),
    i("rsa_key_restriction", "0"),
    i("ecdsa_key_restriction", "0"),
    i("ecdsa_sk_key_restriction", "0"),
    i("ed25519_key_restriction", "0"),
    i("ed25519_sk_key_restriction", "0"),
    s("cluster_integration_access_key_id", "null"),
    s("cluster_integration_account_id", "null"),
    s("cluster_integration_secret_access_key", "null").secret(),
    b("cluster_integration_enabled", "false"),
    s("search_engine_aws_access_key", "null").tier(),
    s("search_engine_aws_region", "\"us-east-1\"").tier(),
    s("search_engine_aws_secret_access_key", "null")
        .tier()
        .secret(),
    b("search_engine_aws", "false").tier(),
    i("search_engine_indexed_field_length_limit", "0").tier(),
    i("search_engine_indexed_file_size_limit_kb", "1024").tier(),
    b("search_engine_indexing", "false").tier(),
    b("search_engine_limit_indexing", "false").tier(),
    b("search_engine_search", "false").tier(),
    i("search_engine_max_bulk_concurrency", "10").tier(),
    i("search_engine_max_bulk_size_mb", "10").tier(),
    Entry::new("search_engine_namespace_ids", IntList, "[]").tier(),
    Entry::new("search_engine_project_ids", IntList, "[]").tier(),
    s("search_engine_url", "\"http://localhost:9200\"").tier(),
    s("search_engine_username", "null").tier(),
    s("search_engine_password", "null").tier().secret(),
    s("email_additional_text", "null").tier(),
    b("email_author_in_body", "false"),
    s("enabled_git_access_protocol", "null"),
    b("enforce_namespace_storage_limit", "false"),
    b("enforce_terms", "false"),
    s("terms", "null"),
    s("external_auth_client_cert", "null"),
    s("external_auth_client_key", "null").secret(),
    s("external_auth_client_key_pass", "null").secret(),
    b("external_authorization_service_enabled", "false"),
    s("external_authorization_service_default_label", "null"),
    Entry::new("external_authorization_service_timeout", Float, "0.5"),
    s("external_authorization_service_url", "null"),
    s("external_pipeline_validation_service_url", "null"),
    s("external_pipeline_validation_service_token", "null").secret(),
    i("external_pipeline_validation_service_timeout", "null"),
    i("file_template_project_id", "null").tier(),
    i("first_day_of_week", "0"),
    s("geo_node_allowed_ips", "\"0.0.0.0/0, ::/0\"").tier(),
    i("geo_status_timeout", "10").tier(),
    i("git_two_factor_session_expiry", "15").tier(),
    i("git_backend_timeout_default", "55"),
    i("git_backend_timeout_fast", "10"),
    i("git_backend_timeout_medium", "30"),
    b("dashboard_enabled", "false"),
    s("dashboard_url", "null"),
    b("avatar_service_enabled", "true"),
    b("hashed_storage_enabled", "true"),
    b("help_page_hide_commercial_content", "false"),
    s("help_page_support_url", "null"),
    s("help_page_text", "null"),
    s("help_text", "null").tier(),
    b("hide_third_party_offers", "false"),
    s("home_page_url", "null"),
    b("housekeeping_bitmaps_enabled", "true"),
    b("housekeeping_enabled", "true"),
    i("housekeeping_full_repack_period", "50"),
    i("housekeeping_gc_period", "200"),
    i("housekeeping_incremental_repack_period", "10"),
    b("html_emails_enabled", "true"),
    sl("import_sources", "[]"),
    b("in_product_marketing_emails_enabled", "true"),
    i("inactive_projects_delete_after_months", "2"),
    i("inactive_projects_min_size_mb", "0"),
    i("inactive_projects_send_warning_email_after_months", "1"),
    b("invisible_captcha_enabled", "false"),
    i("issues_create_limit", "0"),
    b("keep_latest_artifact", "true"),
    i("local_markdown_version", "0"),
    s("mail_provider_signing_key", "null").secret(),
    b("mail_provider_events_enabled", "false"),
    s("maintenance_mode_message", "null").tier(),
    b("maintenance_mode", "false").tier(),
    i("max_artifacts_size", "100"),
    i("max_attachment_size", "100"),
    i("max_pages_size", "100"),
    i("max_export_size", "0"),
    i("max_import_size", "0"),
    i("max_personal_access_token_lifetime", "null").tier(),
    i("max_ssh_key_lifetime", "null").tier(),
    i("metrics_method_call_threshold", "10"),
    b("mirror_available", "true"),
    i("mirror_capacity_threshold", "50").tier(),
    i("mirror_max_capacity", "100").tier(),
    i("mirror_max_delay", "300").tier(),
    b("js_package_requests_forwarding", "true").tier(),
    b("py_package_requests_forwarding", "true").tier(),
    sl("outbound_local_requests_whitelist", "[]"),
    b("pages_domain_verification_enabled", "true"),
    b("password_authentication_enabled_for_git", "true"),
    b("password_authentication_enabled_for_web", "true"),
    b("password_number_required", "false").tier(),
    b("password_symbol_required", "false").tier(),
    b("password_uppercase_required", "false").tier(),
    b("password_lowercase_required", "false").tier(),
    s("performance_bar_allowed_group_id", "null").alias("performance_bar_allowed_group_path"),
    s("performance_bar_allowed_group_path", "null"),
    b("performance_bar_enabled", "false"),
    s("personal_access_token_prefix", "\"glpat-\""),
    i("pipeline_limit_per_project_user_sha", "0"),
    b("diagram_renderer_enabled", "false"),
    s("diagram_renderer_url", "null"),
    Entry::new("polling_interval_multiplier", Float, "1.0"),
    b("project_export_enabled", "true"),
    b("prometheus_metrics_enabled", "true"),
    b("protected_ci_variables", "true"),
    i("push_event_activities_limit", "3"),
    i("push_event_hooks_limit", "3"),
    s("rate_limiting_response_text", "null"),
    i("raw_blob_request_limit", "300"),
    i("user_email_lookup_limit", "30").alias("search_rate_limit"),
    i("search_rate_limit", "30"),
    i("search_rate_limit_unauthenticated", "10"),
    b("captcha_enabled", "false"),
    s("captcha_private_key", "null").secret(),
    s("captcha_site_key", "null"),
    i("receive_max_input_size", "null"),
    b("repository_checks_enabled", "true"),
    i("repository_size_limit", "0").tier(),
    Entry::new("repository_storages_weighted", IntMap, "{\"default\":100}"),
    sl("repository_storages", "[\"default\"]"),
    b("require_admin_approval_after_user_signup", "true"),
    b("require_two_factor_authentication", "false"),
    sl("restricted_visibility_levels", "null"),
    b("send_user_confirmation_email", "false"),
    i("session_expire_delay", "10080"),
    b("shared_runners_enabled", "true"),
    i("shared_runners_minutes", "0").tier(),
    s("shared_runners_text", "null"),
    s("background_job_limiter_mode", "\"compress\""),
    i(
        "background_job_limiter_compression_threshold_bytes",
        "100000",
    ),
    i("background_job_limiter_limit_bytes", "0"),
    s("sign_in_text", "null"),
    b("signin_enabled", "true").alias("password_authentication_enabled_for_web"),
    b("signup_enabled", "true"),
    b("chat_app_enabled", "false").tier(),
    s("chat_app_id", "null").tier(),
    s("chat_app_secret", "null").tier().secret(),
    s("chat_app_verification_token", "null").tier().secret(),
    s("chat_app_signing_secret", "null").tier().secret(),
    i("snippet_size_limit", "52428800"),
    s("analytics_tracking_app_id", "null"),
    s("analytics_tracking_cookie_domain", "null"),
    s("analytics_tracking_collector_hostname", "null"),
    b("analytics_tracking_enabled", "false"),
    b("code_intel_enabled", "false"),
    b("code_intel_public_only", "true"),
    s("code_intel_url", "null"),
    b("spam_check_endpoint_enabled", "false"),
    s("spam_check_endpoint_url", "null"),
    s("spam_check_api_key", "null").secret(),
    b("suggest_pipeline_enabled", "true"),
    i("terminal_max_session_time", "0"),
    b("throttle_authenticated_api_enabled", "false"),
    i("throttle_authenticated_api_period_in_seconds", "3600"),
    i("throttle_authenticated_api_requests_per_period", "7200"),
    b("throttle_authenticated_web_enabled", "false"),
    i("throttle_authenticated_web_period_in_seconds", "3600"),
    i("throttle_authenticated_web_requests_per_period", "7200"),
    b("throttle_authenticated_packages_api_enabled", "false"),
    i(
        "throttle_authenticated_packages_api_period_in_seconds",
        "15",
    ),
    i(
        "throttle_authenticated_packages_api_requests_per_period",
        "1000",
    ),
    b("throttle_unauthenticated_api_enabled", "false"),
    i("throttle_unauthenticated_api_period_in_seconds", "3600"),
    i("throttle_unauthenticated_api_requests_per_period", "3600"),
    b("throttle_unauthenticated_web_enabled", "false"),
    i("throttle_unauthenticated_web_period_in_seconds", "3600"),
    i("throttle_unauthenticated_web_requests_per_period", "3600"),
    b("throttle_unauthenticated_packages_api_enabled", "false"),
    i(
        "throttle_unauthenticated_packages_api_period_in_seconds",
        "15",
    ),
    i(
        "throttle_unauthenticated_packages_api_requests_per_period",
        "800",
    ),
    // GitLab throttles sign-in, password resets and token requests by default.
    b("throttle_protected_paths_enabled", "true"),
    i("throttle_protected_paths_period_in_seconds", "60"),
    i("throttle_protected_paths_requests_per_period", "10"),
    sl(
        "protected_paths",
        r#"["/users/password","/users/sign_in","/api/v3/session.json","/api/v3/session","/api/v4/session.json","/api/v4/session","/users","/users/confirmation","/unsubscribes/","/import/github/personal_access_token","/admin/session"]"#,
    ),
    b("throttle_unauthenticated_enabled", "false").alias("throttle_unauthenticated_web_enabled"),
    i("throttle_unauthenticated_period_in_seconds", "3600")
        .alias("throttle_unauthenticated_web_period_in_seconds"),
    i("throttle_unauthenticated_requests_per_period", "3600")
        .alias("throttle_unauthenticated_web_requests_per_period"),
    b("time_tracking_limit_to_hours", "false"),
    i("two_factor_grace_period", "48"),
    b("unique_ips_limit_enabled", "false"),
    i("unique_ips_limit_per_user", "10"),
    i("unique_ips_limit_time_window", "3600"),
    b("usage_ping_enabled", "true"),
    b("version_check_enabled", "true"),
    b("user_deactivation_emails_enabled", "true"),
    b("user_default_external", "false"),
    s("user_default_internal_regex", "null"),
    b("user_oauth_applications", "true"),
    // Trellis: the OAuth implicit grant (`response_type=token`) can be turned off.
    b("oauth_implicit_grant_enabled", "true"),
    b("user_show_add_ssh_key_message", "true"),
    s("whats_new_variant", "\"all_tiers\""),
    b("web_ide_clientside_preview_enabled", "false"),
    i("wiki_page_max_content_bytes", "52428800"),
];

static BY_NAME: LazyLock<HashMap<&'static str, &'static Entry>> =
    LazyLock::new(|| CATALOG.iter().map(|entry| (entry.name, entry)).collect());

/// Each name's position in [`CATALOG`], an alias's being that of the setting it reads.
static POSITION: LazyLock<HashMap<&'static str, usize>> = LazyLock::new(|| {
    let own: HashMap<&str, usize> = CATALOG
        .iter()
        .enumerate()
        .map(|(at, entry)| (entry.name, at))
        .collect();
    CATALOG
        .iter()
        .map(|entry| (entry.name, own[entry.alias_of.unwrap_or(entry.name)]))
        .collect()
});

/// Where `name`'s value is in a list ordered as [`CATALOG`] (see `Settings`).
pub fn position(name: &str) -> Option<usize> {
    POSITION.get(name).copied()
}

static DEFAULTS: LazyLock<HashMap<&'static str, Value>> = LazyLock::new(|| {
    CATALOG
        .iter()
        .map(|entry| (entry.name, entry.default_value()))
        .collect()
});

pub fn entry(name: &str) -> Option<&'static Entry> {
    BY_NAME.get(name).copied()
}

/// The name a value is stored under: the replacement for a deprecated alias, else `name`.
pub fn canonical(name: &str) -> &str {
    match entry(name).and_then(|entry| entry.alias_of) {
        Some(target) => target,
        None => name,
    }
}

pub fn default_of(name: &str) -> Value {
    DEFAULTS
        .get(canonical(name))
        .cloned()
        .unwrap_or(Value::Null)
}

/// A setting that takes one of a fixed set of values: each value as the API reads it (text
/// of the integer for integer settings; `""` for none) and its label in GitLab's admin area.
/// The API refuses others (`settings::validate`); the console offers these in a select.
pub type Choices = &'static [(&'static str, &'static str)];

const VISIBILITY_CHOICES: Choices = &[
    (Visibility::Private.as_str(), "Private"),
    (Visibility::Internal.as_str(), "Internal"),
    (Visibility::Public.as_str(), "Public"),
];

pub static CHOICES: &[(&str, Choices)] = &[
    ("default_project_visibility", VISIBILITY_CHOICES),
    ("default_group_visibility", VISIBILITY_CHOICES),
    ("default_snippet_visibility", VISIBILITY_CHOICES),
    (
        "whats_new_variant",
        &[
            ("all_tiers", "Enable What's new: All tiers"),
            ("current_tier", "Enable What's new: Current tier only"),
            ("disabled", "Disable What's new"),
        ],
    ),
    (
        "background_job_limiter_mode",
        &[("track", "Track"), ("compress", "Compress")],
    ),
    (
        "enabled_git_access_protocol",
        &[
            ("", "Both SSH and HTTP(S)"),
            ("ssh", "Only SSH"),
            ("http", "Only HTTP(S)"),
        ],
    ),
    (
        "first_day_of_week",
        &[("0", "Sunday"), ("1", "Monday"), ("6", "Saturday")],
    ),
    (
        "default_branch_protection",
        &[
            ("0", "Not protected"),
            ("1", "Protected against force pushes"),
            ("2", "Fully protected"),
            ("3", "Protected against pushes"),
            ("4", "Fully protected after initial push"),
        ],
    ),
    (
        "default_project_creation",
        &[
            ("0", "No one"),
            ("1", "Maintainers"),
            ("2", "Developers + Maintainers"),
            ("3", "Administrators"),
        ],
    ),
];

/// The allowed values of `name` (canonical), when it is an enumeration.
pub fn choices(name: &str) -> Option<Choices> {
    CHOICES
        .iter()
        .find(|(setting, _)| *setting == name)
        .map(|(_, choices)| *choices)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_defaults_parse_to_their_kind() {
        assert_eq!(BY_NAME.len(), CATALOG.len(), "duplicate setting name");
        for entry in CATALOG {
            let value = entry.default_value();
            let fits = match entry.kind {
                Kind::Bool => value.is_boolean(),
                Kind::Int => value.is_i64() || value.is_null(),
                Kind::Float => value.is_number(),
                Kind::Str => value.is_string() || value.is_null(),
                Kind::StrList | Kind::IntList => value.is_array() || value.is_null(),
                Kind::IntMap => value.is_object(),
            };
            assert!(
                fits,
                "{}: default {value} does not fit {:?}",
                entry.name, entry.kind
            );
        }
    }

    #[test]
    fn aliases_point_at_real_settings_of_the_same_kind() {
        for entry in CATALOG.iter().filter(|e| e.alias_of.is_some()) {
            let target = super::entry(entry.alias_of.unwrap()).expect("alias target exists");
            assert!(target.alias_of.is_none());
            assert_eq!(target.kind, entry.kind, "{}", entry.name);
        }
        assert_eq!(
            canonical("signin_enabled"),
            "password_authentication_enabled_for_web"
        );
        assert_eq!(canonical("user_email_lookup_limit"), "search_rate_limit");
        assert_eq!(default_of("admin_notification_email"), Value::Null);
        assert_eq!(
            default_of("default_projects_limit"),
            serde_json::json!(100000)
        );
    }

    #[test]
    fn spec_defaults() {
        for (name, value) in [
            ("default_branch_protection", "2"),
            ("delayed_group_deletion", "true"),
            ("deletion_adjourned_period", "7"),
            ("raw_blob_request_limit", "300"),
            ("search_rate_limit_unauthenticated", "10"),
            ("wiki_page_max_content_bytes", "52428800"),
            ("background_job_limiter_mode", "\"compress\""),
            ("password_authentication_enabled_for_web", "true"),
        ] {
            assert_eq!(default_of(name).to_string(), value, "{name}");
        }
    }

    #[test]
    fn choices_name_settings_and_fit_their_kind() {
        for (name, choices) in CHOICES {
            let entry = entry(name).unwrap_or_else(|| panic!("{name} is not a setting"));
            assert!(entry.alias_of.is_none(), "{name} is an alias");
            for (value, _) in *choices {
                match entry.kind {
                    Kind::Int => assert!(value.parse::<i64>().is_ok(), "{name}: {value}"),
                    Kind::Str => {}
                    kind => panic!("{name}: choices for a {kind:?} setting"),
                }
            }
            let default = default_of(name);
            let shown = default
                .as_str()
                .map_or_else(|| default.to_string(), str::to_string);
            let shown = if default.is_null() {
                String::new()
            } else {
                shown
            };
            assert!(
                choices.iter().any(|(value, _)| *value == shown),
                "{name}: default {default} is not a choice"
            );
        }
    }
}
