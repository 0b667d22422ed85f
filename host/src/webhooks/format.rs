//! Every delivery goes through a formatter (the `webhook-formatter` world). A hook's
//! `formatter` attribute picks it:
//!
//! - `gitlab` (the default), `chat`, `cloudevents`: the built-in plugin
//!   (plugins/webhook-formatter) with that format;
//! - `plugin`: the tenant's `webhook_formatter` binding (`/application/plugin_hooks`), with its
//!   configuration, limits and failure policy.
//!
//! A formatter that fails (trap, timeout, error...) follows its binding's failure policy:
//! `fail_open` sends the standard payload as GitLab would, `fail_closed` sends nothing. Either
//! way the delivery log says why. A hook naming `plugin` when nothing is bound is sent in
//! GitLab's format (the hook's default policy, fail open), and logged so.

use std::sync::{Arc, OnceLock};

use serde::Serialize;

use crate::plugins::builtin::WEBHOOK_FORMATTER;
use crate::plugins::registry::{Binding, Plugins};
use crate::plugins::runtime::Compiled;
use crate::plugins::webhook_formatter::{WebhookEvent, format_with};
use crate::plugins::{FailurePolicy, Hook, PluginError};

/// The values of a hook's `formatter`.
pub const FORMATTERS: &[&str] = &["gitlab", "chat", "cloudevents", "plugin"];

/// What goes out.
#[derive(Debug)]
pub enum Formatted {
    /// Send this body with these headers (beside GitLab's); `note` says why it is not what
    /// the hook's formatter would have made (it failed open).
    Send {
        headers: Vec<(String, String)>,
        body: String,
        note: Option<String>,
    },
    /// The formatter chose not to send this event.
    Skip,
    /// The formatter failed closed: nothing is sent.
    Refused(String),
    /// Every plugin instance of the tenant was taken: try again shortly (a failure of the
    /// tenant's load, not of the formatter, so no failure policy applies).
    Busy,
}

/// What a formatter call is about.
pub struct Input<'a> {
    pub tenant_id: i64,
    pub formatter: &'a str,
    pub event_name: &'a str,
    pub payload: &'a str,
    pub event_uuid: &'a str,
    pub instance_url: &'a str,
}

/// `object_kind` of a standard payload (system events have `event_name` instead).
fn object_kind(payload: &str) -> String {
    serde_json::from_str::<serde_json::Value>(payload)
        .ok()
        .and_then(|v| {
            v.get("object_kind")
                .and_then(|k| k.as_str())
                .map(str::to_string)
        })
        .unwrap_or_default()
}

fn standard(payload: &str, note: Option<String>) -> Formatted {
    Formatted::Send {
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: payload.to_string(),
        note,
    }
}

pub async fn format(plugins: &Plugins, input: Input<'_>) -> Formatted {
    let binding = if input.formatter == "plugin" {
        match plugins.binding(input.tenant_id, Hook::WebhookFormatter) {
            Some(bound) => bound,
            None => {
                return standard(
                    input.payload,
                    Some("no plugin is bound to webhook_formatter: sent in GitLab's format".into()),
                );
            }
        }
    } else {
        match built_in(plugins, &input).await {
            Ok(binding) => binding,
            Err(error) => return standard(input.payload, Some(error)),
        }
    };
    let event = WebhookEvent {
        event_name: input.event_name.to_string(),
        object_kind: object_kind(input.payload),
        payload: input.payload.to_string(),
    };
    let (answer, _) = format_with(plugins, &binding, event).await;
    match answer {
        Ok(Some((headers, body))) => Formatted::Send {
            headers,
            body,
            note: None,
        },
        Ok(None) => Formatted::Skip,
        Err(PluginError::Busy) => Formatted::Busy,
        Err(error) => {
            let reason = format!("formatter {} failed: {error}", binding.label);
            match binding.failure_policy {
                FailurePolicy::FailOpen => standard(input.payload, Some(reason)),
                FailurePolicy::FailClosed => Formatted::Refused(reason),
            }
        }
    }
}

/// The built-in formatter's configuration for one delivery.
#[derive(Serialize)]
struct FormatterConfig<'a> {
    event_uuid: &'a str,
    /// `gitlab`, `chat` or `cloudevents`.
    format: &'a str,
    instance_url: &'a str,
    time: String,
}

/// The built-in formatter bound for one call, with the format and the delivery's details
/// as its configuration.
async fn built_in(plugins: &Plugins, input: &Input<'_>) -> Result<Arc<Binding>, String> {
    static COMPILED: OnceLock<Arc<Compiled>> = OnceLock::new();
    let compiled = match COMPILED.get() {
        Some(compiled) => compiled.clone(),
        None => {
            let compiled = plugins.compile(Arc::from(WEBHOOK_FORMATTER.bytes)).await?;
            COMPILED.get_or_init(|| compiled).clone()
        }
    };
    let config = FormatterConfig {
        event_uuid: input.event_uuid,
        format: input.formatter,
        instance_url: input.instance_url,
        time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    };
    Ok(Arc::new(Binding {
        tenant_id: input.tenant_id,
        hook: Hook::WebhookFormatter,
        plugin: Ok(compiled),
        label: Arc::from(format!(
            "{}@{}",
            WEBHOOK_FORMATTER.name, WEBHOOK_FORMATTER.version
        )),
        config: Arc::from(serde_json::to_string(&config).unwrap_or_default()),
        failure_policy: FailurePolicy::FailOpen,
        limits: plugins.maxima.defaults(),
        outbound: None,
    }))
}
