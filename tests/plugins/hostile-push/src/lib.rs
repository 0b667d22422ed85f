//! Test fixture for the plugin host's limits, push-rules world: the misbehaviours of
//! tests/plugins/hostile (the same `{"mode": ...}`) in `check-refs`, the call every push
//! makes; `big_output` answers a refusal larger than the host takes. Any other mode allows
//! the push.
#![cfg(target_arch = "wasm32")]

#[path = "../../hostile/src/misbehave.rs"]
mod misbehave;

use misbehave::Config;
use trellis_sdk::push_rules::{Decision, LogLevel, Push, PushRules};

pub struct HostilePush;

impl PushRules for HostilePush {
    type Config = Config;

    fn validate(config: &Config) -> Result<(), String> {
        misbehave::validate(config)
    }

    fn check_refs(config: &Config, _push: &Push) -> Result<Decision, String> {
        let log = |line: &str| trellis_sdk::push_rules::log(LogLevel::Warn, line);
        Ok(match misbehave::misbehave(config, log) {
            Some(text) => Decision::refuse(text),
            None => Decision::Allow,
        })
    }
}

trellis_sdk::export_push_rules!(HostilePush);
