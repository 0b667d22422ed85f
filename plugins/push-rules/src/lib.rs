//! Trellis's built-in push-rules plugin: every field of GitLab's push rules, from the
//! project's push rule the host passes in. A project without a push rule gets no checks.

mod rules;

use trellis_sdk::push_rules::{Commit, Decision, Push, PushRules, RefUpdate};

pub use rules::Config;

pub struct GitLabPushRules;

impl PushRules for GitLabPushRules {
    type Config = Config;

    fn validate(config: &Config) -> Result<(), String> {
        config.validate()
    }

    fn check_refs(config: &Config, push: &Push) -> Result<Decision, String> {
        Ok(rules::check_refs(config, push))
    }

    fn check_commits(
        config: &Config,
        push: &Push,
        _update: &RefUpdate,
        commits: &[Commit],
    ) -> Result<Decision, String> {
        Ok(rules::check_commits(config, push, commits))
    }
}

trellis_sdk::export_push_rules!(GitLabPushRules);
