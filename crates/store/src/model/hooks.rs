//! A project's webhook and push rule rows. Hooks and push rules have many boolean columns;
//! they are listed once ([`HOOK_FLAGS`], [`PUSH_RULE_FLAGS`]) and rows carry them as `(name,
//! value)` pairs, so the SQL, the parameters and the JSON all follow the same list.

/// A hook's event toggles with GitLab's defaults, in the order they are shown.
pub const HOOK_FLAGS: &[(&str, bool)] = &[
    ("push_events", true),
    ("issues_events", false),
    ("confidential_issues_events", false),
    ("merge_requests_events", false),
    ("tag_push_events", false),
    ("note_events", false),
    ("confidential_note_events", false),
    ("job_events", false),
    ("pipeline_events", false),
    ("wiki_page_events", false),
    ("deployment_events", false),
    ("releases_events", false),
    ("enable_ssl_verification", true),
];

/// A push rule's boolean settings (all off by default).
pub const PUSH_RULE_FLAGS: &[&str] = &[
    "deny_delete_tag",
    "member_check",
    "prevent_secrets",
    "commit_committer_check",
    "reject_unsigned_commits",
];

/// A push rule's regular expressions (unset by default).
pub const PUSH_RULE_REGEXES: &[&str] = &[
    "commit_message_regex",
    "commit_message_negative_regex",
    "branch_name_regex",
    "author_email_regex",
    "file_name_regex",
];

/// A system hook's toggles with GitLab's defaults.
pub const SYSTEM_HOOK_FLAGS: &[(&str, bool)] = &[
    ("push_events", false),
    ("tag_push_events", false),
    ("merge_requests_events", false),
    ("repository_update_events", true),
    ("enable_ssl_verification", true),
];

/// GitLab's `branch_filter_strategy` values; `wildcard` is the default.
pub const BRANCH_FILTER_STRATEGIES: &[&str] = &["wildcard", "regex", "all_branches"];

#[derive(Debug, Clone)]
pub struct HookRow {
    pub id: i64,
    pub project_id: i64,
    pub url: String,
    /// The encrypted secret token, never shown.
    pub token: Option<String>,
    pub push_events_branch_filter: Option<String>,
    pub branch_filter_strategy: String,
    pub flags: Vec<(&'static str, bool)>,
    /// The formatter deliveries go through (`webhooks::format`).
    pub formatter: String,
    /// The tenant's URL as the request that last saved the hook saw it.
    pub instance_url: String,
    /// `X-Gitlab-Webhook-UUID`.
    pub uuid: String,
    pub delivery: DeliveryState,
    pub created_at: i64,
}

impl HookRow {
    pub fn flag(&self, name: &str) -> bool {
        self.flags.iter().any(|(n, on)| *n == name && *on)
    }
}

/// GitLab's auto-disabling state of a project hook: consecutive failures, how many times in a
/// row it was disabled, and until when (ms).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryState {
    pub recent_failures: i64,
    pub backoff_count: i64,
    pub disabled_until: Option<i64>,
}

#[derive(Debug, Clone)]
pub struct SystemHookRow {
    pub id: i64,
    pub url: String,
    /// The encrypted secret token, never shown.
    pub token: Option<String>,
    pub flags: Vec<(&'static str, bool)>,
    pub formatter: String,
    pub instance_url: String,
    pub uuid: String,
    pub created_at: i64,
}

impl SystemHookRow {
    pub fn defaults() -> SystemHookRow {
        SystemHookRow {
            id: 0,
            url: String::new(),
            token: None,
            flags: SYSTEM_HOOK_FLAGS.to_vec(),
            formatter: "gitlab".into(),
            instance_url: String::new(),
            uuid: String::new(),
            created_at: 0,
        }
    }

    pub fn flag(&self, name: &str) -> bool {
        self.flags.iter().any(|(n, on)| *n == name && *on)
    }
}

impl HookRow {
    /// The values of a new hook: GitLab's defaults.
    pub fn defaults(project_id: i64) -> HookRow {
        HookRow {
            id: 0,
            project_id,
            url: String::new(),
            token: None,
            push_events_branch_filter: None,
            branch_filter_strategy: "wildcard".into(),
            flags: HOOK_FLAGS.to_vec(),
            formatter: "gitlab".into(),
            instance_url: String::new(),
            uuid: String::new(),
            delivery: DeliveryState::default(),
            created_at: 0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct PushRuleRow {
    pub id: i64,
    pub project_id: i64,
    pub regexes: Vec<(&'static str, Option<String>)>,
    pub flags: Vec<(&'static str, bool)>,
    pub max_file_size: i64,
    pub created_at: i64,
}

impl PushRuleRow {
    pub fn defaults(project_id: i64) -> PushRuleRow {
        PushRuleRow {
            id: 0,
            project_id,
            regexes: PUSH_RULE_REGEXES.iter().map(|n| (*n, None)).collect(),
            flags: PUSH_RULE_FLAGS.iter().map(|n| (*n, false)).collect(),
            max_file_size: 0,
            created_at: 0,
        }
    }
}
