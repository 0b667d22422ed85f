//! Project hooks, push rules and upload results.

use serde_json::{Map, Value, json};

use super::{timestamp, timestamp_opt};
use crate::model::hooks::{HookRow, PushRuleRow, SystemHookRow};
use crate::model::webhooks::LogRow;

/// The spec's "Project hook": every toggle, never the token, with its `alert_status`
/// (GitLab's auto-disabling, decided by `webhooks::rules`) and Trellis's `formatter`.
pub fn hook(row: &HookRow, alert_status: &str) -> Value {
    let mut out = Map::new();
    out.insert("id".into(), json!(row.id));
    out.insert("url".into(), json!(row.url));
    out.insert("project_id".into(), json!(row.project_id));
    for (name, on) in &row.flags {
        out.insert((*name).into(), json!(on));
        if *name == "push_events" {
            out.insert(
                "push_events_branch_filter".into(),
                json!(row.push_events_branch_filter),
            );
            out.insert(
                "branch_filter_strategy".into(),
                json!(row.branch_filter_strategy),
            );
        }
    }
    out.insert("alert_status".into(), json!(alert_status));
    out.insert(
        "disabled_until".into(),
        json!(timestamp_opt(row.delivery.disabled_until)),
    );
    out.insert("formatter".into(), json!(row.formatter));
    out.insert("url_variables".into(), json!([]));
    out.insert("custom_headers".into(), json!([]));
    out.insert("created_at".into(), json!(timestamp(row.created_at)));
    Value::Object(out)
}

/// GitLab's "System hook": its toggles, never the token, and Trellis's `formatter`.
pub fn system_hook(row: &SystemHookRow) -> Value {
    let mut out = Map::new();
    out.insert("id".into(), json!(row.id));
    out.insert("url".into(), json!(row.url));
    out.insert("created_at".into(), json!(timestamp(row.created_at)));
    for (name, on) in &row.flags {
        out.insert((*name).into(), json!(on));
    }
    out.insert("formatter".into(), json!(row.formatter));
    out.insert("url_variables".into(), json!([]));
    Value::Object(out)
}

/// One entry of a hook's delivery log (GitLab's `WebHookLog`): request and response as
/// recorded (bodies capped), the duration in seconds, the status as text (`internal error`
/// when no answer came back).
pub fn log(row: &LogRow) -> Value {
    let object = |text: &str| serde_json::from_str::<Value>(text).unwrap_or_else(|_| json!({}));
    let request_data = serde_json::from_str::<Value>(&row.request_data)
        .unwrap_or_else(|_| json!(row.request_data));
    json!({
        "id": row.id,
        "url": row.url,
        "trigger": row.trigger_name,
        "request_headers": object(&row.request_headers),
        "request_data": request_data,
        "response_headers": object(&row.response_headers),
        "response_body": row.response_body,
        "execution_duration": row.execution_duration_us as f64 / 1_000_000.0,
        "response_status": row.response_status,
        "internal_error_message": row.internal_error_message,
        "created_at": timestamp(row.created_at),
    })
}

/// The spec's "Project push rule".
pub fn push_rule(row: &PushRuleRow) -> Value {
    let mut out = Map::new();
    out.insert("id".into(), json!(row.id));
    out.insert("project_id".into(), json!(row.project_id));
    for (name, regex) in &row.regexes {
        out.insert((*name).into(), json!(regex));
    }
    for (name, on) in &row.flags {
        out.insert((*name).into(), json!(on));
    }
    out.insert("max_file_size".into(), json!(row.max_file_size));
    out.insert("created_at".into(), json!(timestamp(row.created_at)));
    Value::Object(out)
}

/// GitLab's upload result: `alt` is the file name (without its extension for images and
/// videos, underscores as spaces), `markdown` an image or a plain link.
pub fn upload(filename: &str, url: &str, full_path: &str, embeddable: bool) -> Value {
    let alt = if embeddable {
        filename.rsplit_once('.').map_or(filename, |(stem, _)| stem)
    } else {
        filename
    }
    .replace('_', " ");
    let bang = if embeddable { "!" } else { "" };
    json!({
        "alt": alt,
        "url": url,
        "full_path": full_path,
        "markdown": format!("{bang}[{alt}]({url})"),
    })
}
