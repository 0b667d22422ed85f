//! Test fixture for the plugin host's limits, webhook-formatter world: the misbehaviours of
//! tests/plugins/hostile (the same `{"mode": ...}`); `skip` skips every delivery; otherwise it
//! sends `{"hostile": <event name>}`.
#![cfg(target_arch = "wasm32")]

#[path = "../../hostile/src/misbehave.rs"]
mod misbehave;

use misbehave::Config;
use trellis_sdk::webhook_formatter::{Event, Request, WebhookFormatter};

pub struct HostileFormatter;

impl WebhookFormatter for HostileFormatter {
    type Config = Config;

    fn validate(config: &Config) -> Result<(), String> {
        misbehave::validate(config)
    }

    fn format(config: &Config, event: &Event) -> Result<Option<Request>, String> {
        if config.mode == "skip" {
            return Ok(None);
        }
        let body = match misbehave::misbehave(config, trellis_sdk::log::warn) {
            Some(text) => text,
            None => format!("{{\"hostile\": {:?}}}", event.event_name),
        };
        Ok(Some(Request {
            headers: vec![("X-Hostile".into(), "yes".into())],
            body,
        }))
    }
}

trellis_sdk::export_webhook_formatter!(HostileFormatter);
