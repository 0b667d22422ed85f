//! The JSON representations of resources: the spec's field tables, built in one place.
//!
//! Views render the rows of `model` and never import `store`: they depend on the shape of
//! the data, not on how it is queried.

pub mod application;
pub mod catalog_schema;
pub mod hook;
pub mod hook_test;
pub mod issue;
pub mod issue_view;
pub mod keys;
pub mod meta;
pub mod namespace;
pub mod namespace_view;
pub mod plugin;
pub mod project;
pub mod project_answers;
pub mod project_settings;
pub mod project_view;
pub mod protected_branch;
pub mod repository;
pub mod repository_file;
pub mod settings;
pub mod system_hook_payload;
pub mod token;
pub mod user;
pub mod user_admin;
pub mod user_status;
pub mod webhook_payload;

use chrono::{DateTime, SecondsFormat, Utc};

/// GitLab's timestamp format: `2026-11-22T10:04:05.123Z`.
pub fn timestamp(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub fn timestamp_opt(ms: Option<i64>) -> Option<String> {
    ms.map(timestamp)
}
