//! Trellis's built-in webhook formatter. Every webhook delivery goes through a formatter; a
//! hook's `formatter` attribute picks one of these formats (the host binds this plugin with
//! `{"format": ..., "event_uuid": ..., "time": ...}` for each call):
//!
//! - `gitlab`: GitLab's own request, the standard payload unchanged (the default);
//! - `chat`: the incoming-webhook message Slack and Mattermost accept, `{"text": ...}`, with a
//!   readable line such as "alice opened issue #12 *Crash on save* in group/app";
//! - `cloudevents`: a CloudEvents 1.0 event in structured mode
//!   (`application/cloudevents+json`), the standard payload as its `data`.
//!
//! The formatting is plain Rust, tested natively; the export exists on WebAssembly only.

use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Config {
    /// `gitlab` (default), `chat` or `cloudevents`.
    pub format: String,
    /// The delivery's `X-Gitlab-Event-UUID`, the CloudEvents `id`.
    pub event_uuid: String,
    /// When the event happened (RFC 3339), the CloudEvents `time`.
    pub time: String,
    /// The tenant's URL, the CloudEvents `source` of system events.
    pub instance_url: String,
}

pub const FORMATS: &[&str] = &["gitlab", "chat", "cloudevents"];

pub fn validate(config: &Config) -> Result<(), String> {
    if config.format.is_empty() || FORMATS.contains(&config.format.as_str()) {
        Ok(())
    } else {
        Err(format!("format must be one of {}", FORMATS.join(", ")))
    }
}

/// A formatted request: its extra headers, then its body.
pub type Formatted = (Vec<(String, String)>, String);

/// The request's extra headers and body for one event; `None` skips it.
pub fn format(
    config: &Config,
    event_name: &str,
    object_kind: &str,
    payload: &str,
) -> Result<Option<Formatted>, String> {
    let json_type = || vec![("Content-Type".to_string(), "application/json".to_string())];
    match config.format.as_str() {
        "" | "gitlab" => Ok(Some((json_type(), payload.to_string()))),
        "chat" => {
            let payload: Value = serde_json::from_str(payload)
                .map_err(|e| format!("the payload is not JSON: {e}"))?;
            let text = chat_line(event_name, object_kind, &payload);
            Ok(Some((json_type(), json!({ "text": text }).to_string())))
        }
        "cloudevents" => {
            let payload: Value = serde_json::from_str(payload)
                .map_err(|e| format!("the payload is not JSON: {e}"))?;
            let event = cloud_event(config, object_kind, &payload);
            Ok(Some((
                vec![(
                    "Content-Type".to_string(),
                    "application/cloudevents+json".to_string(),
                )],
                event.to_string(),
            )))
        }
        other => Err(format!("unknown format {other:?}")),
    }
}

fn text<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(v, |v, key| v.get(*key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// "alice opened issue #12 *Crash on save* in group/app", and the like for every event.
pub fn chat_line(event_name: &str, object_kind: &str, payload: &Value) -> String {
    let project = text(payload, &["project", "path_with_namespace"]);
    let user = text(payload, &["user", "username"]);
    match object_kind {
        "issue" => {
            let verb = match text(payload, &["object_attributes", "action"]) {
                "open" => "opened",
                "close" => "closed",
                "reopen" => "reopened",
                _ => "updated",
            };
            format!(
                "{user} {verb} issue #{} *{}* in {project}",
                payload["object_attributes"]["iid"],
                text(payload, &["object_attributes", "title"])
            )
        }
        "note" => {
            let note = text(payload, &["object_attributes", "note"]);
            let short: String = note.chars().take(200).collect();
            format!(
                "{user} commented on issue #{} *{}* in {project}: {short}",
                payload["issue"]["iid"],
                text(payload, &["issue", "title"])
            )
        }
        "push" => {
            let branch = text(payload, &["ref"]).trim_start_matches("refs/heads/");
            let count = payload["total_commits_count"].as_i64().unwrap_or(0);
            let noun = if count == 1 { "commit" } else { "commits" };
            format!(
                "{} pushed {count} {noun} to {branch} in {project}",
                text(payload, &["user_username"])
            )
        }
        "tag_push" => {
            let tag = text(payload, &["ref"]).trim_start_matches("refs/tags/");
            let verb = if text(payload, &["after"]).chars().all(|c| c == '0') {
                "deleted"
            } else {
                "pushed"
            };
            format!(
                "{} {verb} tag {tag} in {project}",
                text(payload, &["user_username"])
            )
        }
        _ => {
            let name = text(payload, &["event_name"]);
            let name = if name.is_empty() { event_name } else { name };
            format!("{name}: {}", subject(payload))
        }
    }
}

/// What a system event is about, for its chat line.
fn subject(payload: &Value) -> String {
    for field in [
        "path_with_namespace",
        "project_path_with_namespace",
        "full_path",
        "group_path",
        "username",
    ] {
        let found = text(payload, &[field]);
        if !found.is_empty() {
            return found.to_string();
        }
    }
    String::new()
}

/// A CloudEvents 1.0 structured-mode event around the standard payload.
pub fn cloud_event(config: &Config, object_kind: &str, payload: &Value) -> Value {
    let project_url = text(payload, &["project", "web_url"]);
    let source = if project_url.is_empty() {
        config.instance_url.as_str()
    } else {
        project_url
    };
    let kind = if object_kind.is_empty() {
        text(payload, &["event_name"])
    } else {
        object_kind
    };
    let mut event = json!({
        "specversion": "1.0",
        "id": config.event_uuid,
        "source": if source.is_empty() { "/" } else { source },
        "type": format!("com.gitlab.{kind}"),
        "datacontenttype": "application/json",
        "data": payload,
    });
    if !config.time.is_empty() {
        event["time"] = json!(config.time);
    }
    let subject = match kind {
        "issue" => format!("issues/{}", payload["object_attributes"]["iid"]),
        "note" => format!("notes/{}", payload["object_attributes"]["id"]),
        "push" | "tag_push" => text(payload, &["ref"]).to_string(),
        _ => String::new(),
    };
    if !subject.is_empty() {
        event["subject"] = json!(subject);
    }
    event
}

#[cfg(target_arch = "wasm32")]
mod export {
    use super::Config;
    use trellis_sdk::webhook_formatter::{Event, Request, WebhookFormatter};

    pub struct BuiltIn;

    impl WebhookFormatter for BuiltIn {
        type Config = Config;

        fn validate(config: &Config) -> Result<(), String> {
            super::validate(config)
        }

        fn format(config: &Config, event: &Event) -> Result<Option<Request>, String> {
            Ok(super::format(
                config,
                &event.event_name,
                &event.object_kind,
                &event.payload,
            )?
            .map(|(headers, body)| Request { headers, body }))
        }
    }

    trellis_sdk::export_webhook_formatter!(BuiltIn);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(format: &str) -> Config {
        Config {
            format: format.into(),
            event_uuid: "u-1".into(),
            time: "2024-01-01T00:00:00Z".into(),
            instance_url: "http://x".into(),
        }
    }

    fn issue() -> Value {
        json!({
            "object_kind": "issue",
            "user": {"username": "alice"},
            "project": {"path_with_namespace": "group/app", "web_url": "http://x/group/app"},
            "object_attributes": {"iid": 12, "title": "Crash on save", "action": "open"},
        })
    }

    #[test]
    fn gitlab_format_is_the_payload() {
        let (headers, body) = format(&config("gitlab"), "Issue Hook", "issue", "{\"a\":1}")
            .unwrap()
            .unwrap();
        assert_eq!(body, "{\"a\":1}");
        assert_eq!(headers[0].1, "application/json");
    }

    #[test]
    fn chat_says_who_did_what_where() {
        assert_eq!(
            chat_line("Issue Hook", "issue", &issue()),
            "alice opened issue #12 *Crash on save* in group/app"
        );
        let (_, body) = format(&config("chat"), "Issue Hook", "issue", &issue().to_string())
            .unwrap()
            .unwrap();
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            body["text"],
            "alice opened issue #12 *Crash on save* in group/app"
        );
        let push = json!({"user_username": "bob", "ref": "refs/heads/main",
            "total_commits_count": 1, "project": {"path_with_namespace": "g/p"}});
        assert_eq!(
            chat_line("Push Hook", "push", &push),
            "bob pushed 1 commit to main in g/p"
        );
        let system = json!({"event_name": "project_create", "path_with_namespace": "g/p"});
        assert_eq!(chat_line("System Hook", "", &system), "project_create: g/p");
    }

    #[test]
    fn cloudevents_are_structured() {
        let (headers, body) = format(
            &config("cloudevents"),
            "Issue Hook",
            "issue",
            &issue().to_string(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(headers[0].1, "application/cloudevents+json");
        let event: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(event["specversion"], "1.0");
        assert_eq!(event["id"], "u-1");
        assert_eq!(event["type"], "com.gitlab.issue");
        assert_eq!(event["source"], "http://x/group/app");
        assert_eq!(event["subject"], "issues/12");
        assert_eq!(event["data"], issue());
    }

    #[test]
    fn unknown_formats_are_refused() {
        assert!(validate(&config("xml")).is_err());
        assert!(validate(&config("chat")).is_ok());
    }
}
