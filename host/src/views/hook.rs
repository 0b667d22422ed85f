//! Project hooks, system hooks, their delivery logs, push rules and upload results. A hook's
//! toggles and a push rule's settings are the lists of `model::hooks`: the views serialise the
//! rows' `(name, value)` pairs, and their schemas list the same names (`catalog_schema.rs`).

use serde::Serialize;
use serde_json::{Value, json};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{Schema, Type};
use utoipa::{PartialSchema, ToSchema};

use super::catalog_schema::{Property, as_object, object, typed};
use super::{timestamp, timestamp_opt};
use crate::model::hooks::{
    HOOK_FLAGS, HookRow, PUSH_RULE_FLAGS, PUSH_RULE_REGEXES, PushRuleRow, SYSTEM_HOOK_FLAGS,
    SystemHookRow,
};
use crate::model::webhooks::LogRow;

/// The spec's "Project hook": every toggle, never the token, with its `alert_status`
/// (GitLab's auto-disabling, decided by `webhooks::rules`) and Trellis's `formatter`.
#[derive(Serialize, ToSchema)]
pub struct HookView {
    pub id: i64,
    pub url: String,
    pub project_id: i64,
    #[serde(flatten)]
    pub flags: HookFlags,
    /// Always false: GitLab's `Hook` entity shows it on every hook, and only system hooks
    /// receive repository updates.
    pub repository_update_events: bool,
    pub push_events_branch_filter: Option<String>,
    pub branch_filter_strategy: String,
    pub alert_status: String,
    pub disabled_until: Option<String>,
    pub formatter: String,
    /// Always empty: Trellis has no URL variables nor custom headers.
    #[schema(value_type = Vec<Object>)]
    pub url_variables: Vec<Value>,
    #[schema(value_type = Vec<Object>)]
    pub custom_headers: Vec<Value>,
    pub created_at: String,
}

/// GitLab's "System hook": its toggles, never the token, and Trellis's `formatter`.
#[derive(Serialize, ToSchema)]
pub struct SystemHookView {
    pub id: i64,
    pub url: String,
    pub created_at: String,
    #[serde(flatten)]
    pub flags: SystemHookFlags,
    /// Always `executable`: system hooks are never disabled (GitLab's `WebHooks::Unstoppable`).
    pub alert_status: &'static str,
    /// Always null, as `alert_status`.
    pub disabled_until: Option<String>,
    pub formatter: String,
    /// Always empty: Trellis has no URL variables nor custom headers.
    #[schema(value_type = Vec<Object>)]
    pub url_variables: Vec<Value>,
    #[schema(value_type = Vec<Object>)]
    pub custom_headers: Vec<Value>,
}

/// A project hook's toggles, as [`HOOK_FLAGS`] lists them.
#[derive(Serialize)]
#[serde(transparent)]
pub struct HookFlags(#[serde(serialize_with = "as_object")] Vec<(&'static str, bool)>);

/// A system hook's toggles, as [`SYSTEM_HOOK_FLAGS`] lists them.
#[derive(Serialize)]
#[serde(transparent)]
pub struct SystemHookFlags(#[serde(serialize_with = "as_object")] Vec<(&'static str, bool)>);

/// A push rule's switches, as [`PUSH_RULE_FLAGS`] lists them.
#[derive(Serialize)]
#[serde(transparent)]
pub struct PushRuleFlags(#[serde(serialize_with = "as_object")] Vec<(&'static str, bool)>);

/// A push rule's patterns (null when unset), as [`PUSH_RULE_REGEXES`] lists them.
#[derive(Serialize)]
#[serde(transparent)]
pub struct PushRuleRegexes(
    #[serde(serialize_with = "as_object")] Vec<(&'static str, Option<String>)>,
);

fn booleans(names: impl Iterator<Item = &'static str>) -> RefOr<Schema> {
    object(names.map(|name| Property::always(name, typed(Type::Boolean, false))))
}

impl PartialSchema for HookFlags {
    fn schema() -> RefOr<Schema> {
        booleans(HOOK_FLAGS.iter().map(|(name, _)| *name))
    }
}

impl ToSchema for HookFlags {}

impl PartialSchema for SystemHookFlags {
    fn schema() -> RefOr<Schema> {
        booleans(SYSTEM_HOOK_FLAGS.iter().map(|(name, _)| *name))
    }
}

impl ToSchema for SystemHookFlags {}

impl PartialSchema for PushRuleFlags {
    fn schema() -> RefOr<Schema> {
        booleans(PUSH_RULE_FLAGS.iter().copied())
    }
}

impl ToSchema for PushRuleFlags {}

impl PartialSchema for PushRuleRegexes {
    fn schema() -> RefOr<Schema> {
        object(
            PUSH_RULE_REGEXES
                .iter()
                .map(|name| Property::always(name, typed(Type::String, true))),
        )
    }
}

impl ToSchema for PushRuleRegexes {}

pub fn hook(row: &HookRow, alert_status: &str) -> HookView {
    HookView {
        id: row.id,
        url: row.url.clone(),
        project_id: row.project_id,
        flags: HookFlags(row.flags.clone()),
        repository_update_events: false,
        push_events_branch_filter: row.push_events_branch_filter.clone(),
        branch_filter_strategy: row.branch_filter_strategy.clone(),
        alert_status: alert_status.to_string(),
        disabled_until: timestamp_opt(row.delivery.disabled_until),
        formatter: row.formatter.clone(),
        url_variables: Vec::new(),
        custom_headers: Vec::new(),
        created_at: timestamp(row.created_at),
    }
}

pub fn system_hook(row: &SystemHookRow) -> SystemHookView {
    SystemHookView {
        id: row.id,
        url: row.url.clone(),
        created_at: timestamp(row.created_at),
        flags: SystemHookFlags(row.flags.clone()),
        alert_status: "executable",
        disabled_until: None,
        formatter: row.formatter.clone(),
        url_variables: Vec::new(),
        custom_headers: Vec::new(),
    }
}

/// One entry of a hook's delivery log (GitLab's `WebHookLog`): request and response as
/// recorded (bodies capped), the duration in seconds, the status as text (`internal error`
/// when no answer came back).
#[derive(Serialize, ToSchema)]
pub struct HookLogView {
    pub id: i64,
    pub url: String,
    pub trigger: String,
    #[schema(value_type = Object)]
    pub request_headers: Value,
    /// The body sent: its JSON, or its text when it is not JSON (a capped body).
    pub request_data: Value,
    #[schema(value_type = Object)]
    pub response_headers: Value,
    pub response_body: String,
    pub execution_duration: f64,
    pub response_status: String,
    pub internal_error_message: Option<String>,
    pub created_at: String,
}

pub fn log(row: &LogRow) -> HookLogView {
    let object = |text: &str| serde_json::from_str::<Value>(text).unwrap_or_else(|_| json!({}));
    HookLogView {
        id: row.id,
        url: row.url.clone(),
        trigger: row.trigger_name.clone(),
        request_headers: object(&row.request_headers),
        request_data: serde_json::from_str::<Value>(&row.request_data)
            .unwrap_or_else(|_| json!(row.request_data)),
        response_headers: object(&row.response_headers),
        response_body: row.response_body.clone(),
        execution_duration: row.execution_duration_us as f64 / 1_000_000.0,
        response_status: row.response_status.clone(),
        internal_error_message: row.internal_error_message.clone(),
        created_at: timestamp(row.created_at),
    }
}

/// The spec's "Project push rule".
#[derive(Serialize, ToSchema)]
pub struct PushRuleView {
    pub id: i64,
    pub project_id: i64,
    #[serde(flatten)]
    pub regexes: PushRuleRegexes,
    #[serde(flatten)]
    pub flags: PushRuleFlags,
    pub max_file_size: i64,
    pub created_at: String,
}

pub fn push_rule(row: &PushRuleRow) -> PushRuleView {
    PushRuleView {
        id: row.id,
        project_id: row.project_id,
        regexes: PushRuleRegexes(row.regexes.clone()),
        flags: PushRuleFlags(row.flags.clone()),
        max_file_size: row.max_file_size,
        created_at: timestamp(row.created_at),
    }
}

/// GitLab's upload result (`ProjectUpload`).
#[derive(Serialize, ToSchema)]
pub struct UploadView {
    /// The upload's row id.
    pub id: i64,
    pub alt: String,
    pub url: String,
    pub full_path: String,
    pub markdown: String,
}

/// `alt` is the file name (without its extension for images and videos, underscores as
/// spaces), `markdown` an image or a plain link.
pub fn upload(id: i64, filename: &str, url: &str, full_path: &str, embeddable: bool) -> UploadView {
    let alt = if embeddable {
        filename.rsplit_once('.').map_or(filename, |(stem, _)| stem)
    } else {
        filename
    }
    .replace('_', " ");
    let bang = if embeddable { "!" } else { "" };
    UploadView {
        id,
        markdown: format!("{bang}[{alt}]({url})"),
        alt,
        url: url.to_string(),
        full_path: full_path.to_string(),
    }
}
