//! Test fixture for the plugin host's limits, push-rules world: the misbehaviours of
//! tests/plugins/hostile (the same `{"mode": ...}`) at the stage `{"stage": ...}` names:
//! - `refs` (the default): in `check-refs`, the call every push makes;
//! - `commits`: in `check-commits`, with the push's commits in hand;
//! - `read_blob`: in `check-commits`, after reading the first changed file through the host's
//!   `read-blob`; with mode `loop`, it calls `read-blob` forever instead, so the plugin spends
//!   its time in host code rather than in its own loop.
//!
//! `big_output` answers a refusal larger than the host takes. Any other mode allows the push.
#![cfg(target_arch = "wasm32")]

#[path = "../../hostile/src/misbehave.rs"]
mod misbehave;

use serde::Deserialize;
use trellis_sdk::push_rules::{Commit, Decision, LogLevel, Push, PushRules, RefUpdate};

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Config {
    #[serde(flatten)]
    misbehaviour: misbehave::Config,
    stage: String,
}

pub struct HostilePush;

fn misbehave(config: &Config) -> Decision {
    let log = |line: &str| trellis_sdk::push_rules::log(LogLevel::Warn, line);
    match misbehave::misbehave(&config.misbehaviour, log) {
        Some(text) => Decision::refuse(text),
        None => Decision::Allow,
    }
}

impl PushRules for HostilePush {
    type Config = Config;

    fn validate(config: &Config) -> Result<(), String> {
        misbehave::validate(&config.misbehaviour)
    }

    fn check_refs(config: &Config, _push: &Push) -> Result<Decision, String> {
        Ok(match config.stage.as_str() {
            "" | "refs" => misbehave(config),
            _ => Decision::Allow,
        })
    }

    fn check_commits(
        config: &Config,
        _push: &Push,
        _update: &RefUpdate,
        commits: &[Commit],
    ) -> Result<Decision, String> {
        if config.stage != "refs" && !config.stage.is_empty() {
            // What the tests look for in the server's log: the push got this far.
            trellis_sdk::push_rules::log(LogLevel::Warn, "hostile-push reached check-commits");
        }
        match config.stage.as_str() {
            "commits" => Ok(misbehave(config)),
            "read_blob" => {
                let blob = commits
                    .iter()
                    .flat_map(|c| &c.files)
                    .find(|f| !f.deleted)
                    .map(|f| f.blob_id.clone())
                    .ok_or("no file to read")?;
                if config.misbehaviour.mode == "loop" {
                    loop {
                        std::hint::black_box(trellis_sdk::push_rules::read_blob(&blob, u32::MAX)?);
                    }
                }
                trellis_sdk::push_rules::read_blob(&blob, u32::MAX)?;
                Ok(misbehave(config))
            }
            _ => Ok(Decision::Allow),
        }
    }
}

trellis_sdk::export_push_rules!(HostilePush);
