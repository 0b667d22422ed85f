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

#[derive(Debug, Clone)]
pub struct HookRow {
    pub id: i64,
    pub project_id: i64,
    pub url: String,
    /// The encrypted secret token, never shown.
    pub token: Option<String>,
    pub push_events_branch_filter: Option<String>,
    pub flags: Vec<(&'static str, bool)>,
    pub created_at: i64,
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
            flags: HOOK_FLAGS.to_vec(),
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
