//! Project hooks, push rules and upload results.

use serde_json::{Map, Value, json};

use super::timestamp;
use crate::model::hooks::{HookRow, PushRuleRow};

/// The spec's "Project hook": every toggle, never the token.
pub fn hook(row: &HookRow) -> Value {
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
        }
    }
    out.insert("created_at".into(), json!(timestamp(row.created_at)));
    Value::Object(out)
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
