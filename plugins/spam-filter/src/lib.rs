//! Trellis's built-in spam filter: local heuristics, each configurable, giving GitLab's verdicts.
//! The strongest verdict of all rules wins; administrators are trusted unless configured otherwise.

mod rules;

use trellis_sdk::spam_check::{Input, SpamCheck, Verdict};

pub use rules::Config;

pub struct SpamFilter;

impl SpamCheck for SpamFilter {
    type Config = Config;

    fn validate(config: &Config) -> Result<(), String> {
        config.validate()
    }

    fn check(config: &Config, input: &Input) -> Result<Verdict, String> {
        Ok(rules::verdict(config, input, now_ms()))
    }
}

trellis_sdk::export_spam_check!(SpamFilter);

/// WASI's wall clock (the only clock plugins get) for the account-age rule.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
