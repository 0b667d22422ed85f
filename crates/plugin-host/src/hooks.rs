//! The hooks a tenant can bind a plugin to, and what happens when the plugin fails.

use crate::wit::World;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hook {
    SpamCheck,
    ExternalAuthorization,
    PushRules,
    WebhookFormatter,
}

impl Hook {
    pub const ALL: [Hook; 4] = [
        Hook::SpamCheck,
        Hook::ExternalAuthorization,
        Hook::PushRules,
        Hook::WebhookFormatter,
    ];

    /// The name in the admin API (`/application/plugin_hooks/:hook`).
    pub fn name(self) -> &'static str {
        match self {
            Hook::SpamCheck => "spam_check",
            Hook::ExternalAuthorization => "external_authorization",
            Hook::PushRules => "push_rules",
            Hook::WebhookFormatter => "webhook_formatter",
        }
    }

    /// Accepts the API name and the WIT spelling (`spam-check`), as the CLI does.
    pub fn parse(name: &str) -> Option<Hook> {
        let name = name.replace('-', "_");
        Hook::ALL.into_iter().find(|h| h.name() == name)
    }

    pub fn world(self) -> World {
        match self {
            Hook::SpamCheck => World::SpamCheck,
            Hook::ExternalAuthorization => World::ExternalAuthorization,
            Hook::PushRules => World::PushRules,
            Hook::WebhookFormatter => World::WebhookFormatter,
        }
    }

    /// Spam checks fail open (a broken filter must not stop all issue creation); authorization
    /// and push rules fail closed.
    pub fn default_policy(self) -> FailurePolicy {
        match self {
            Hook::SpamCheck | Hook::WebhookFormatter => FailurePolicy::FailOpen,
            Hook::ExternalAuthorization | Hook::PushRules => FailurePolicy::FailClosed,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Go on as if the plugin had allowed the request.
    FailOpen,
    /// Refuse the request with the hook's error.
    FailClosed,
}

impl FailurePolicy {
    pub const NAMES: [&'static str; 2] = ["fail_open", "fail_closed"];

    pub fn name(self) -> &'static str {
        match self {
            FailurePolicy::FailOpen => "fail_open",
            FailurePolicy::FailClosed => "fail_closed",
        }
    }

    pub fn parse(name: &str) -> Option<FailurePolicy> {
        match name {
            "fail_open" => Some(FailurePolicy::FailOpen),
            "fail_closed" => Some(FailurePolicy::FailClosed),
            _ => None,
        }
    }
}
