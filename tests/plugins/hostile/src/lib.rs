//! Test fixture for the plugin host's limits, spam-check world: `{"mode": ...}` chooses the
//! misbehaviour of `check` (see misbehave.rs); otherwise it answers `disallow`.

pub mod misbehave;

use misbehave::Config;
use trellis_sdk::spam_check::{Input, SpamCheck, Verdict};

pub struct Hostile;

impl SpamCheck for Hostile {
    type Config = Config;

    fn validate(config: &Config) -> Result<(), String> {
        misbehave::validate(config)
    }

    fn check(config: &Config, input: &Input) -> Result<Verdict, String> {
        match misbehave::misbehave(config, trellis_sdk::log::warn) {
            Some(text) => Ok(Verdict::allow(text)),
            None if config.mode == "log_flood" => Ok(Verdict::allow("logged a lot")),
            None => Ok(Verdict::disallow(format!(
                "hostile says no to {:?} ({} bytes of description)",
                input.title,
                input.description.len()
            ))),
        }
    }
}

trellis_sdk::export_spam_check!(Hostile);
