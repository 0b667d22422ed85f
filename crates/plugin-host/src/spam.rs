//! The spam-check hook with GitLab's semantics (SpamActionService): `disallow` refuses the
//! write with the spam error, `conditional_allow` asks for a CAPTCHA when the instance has
//! CAPTCHA enabled and otherwise refuses, `block_user` refuses and blocks the author,
//! `allow`/`noop` let it through. A failed plugin answers per the binding's failure policy.

use std::sync::Arc;

use wasmtime::Store;

use crate::call::{CallState, CallStats, PluginError};
use crate::hooks::FailurePolicy;
use crate::limits::{MAX_INPUT_BYTES, MAX_OUTPUT_BYTES};
use crate::registry::{Binding, Plugins};
use crate::runtime::Compiled;
use crate::wit::since_v0_1::{self as v0_1, VerdictKind};

pub use v0_1::{SpamInput, SpammableKind};

/// What is checked: the spammable and who wrote it from where.
#[derive(Debug, Clone)]
pub struct SpamSubject {
    pub kind: SpammableKind,
    pub title: String,
    pub description: String,
    pub is_update: bool,
    pub confidential: bool,
    pub author: SpamAuthor,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    pub project: Option<SpamProject>,
}

#[derive(Debug, Clone)]
pub struct SpamAuthor {
    pub id: i64,
    pub username: String,
    pub created_at_ms: i64,
    pub is_admin: bool,
    pub external: bool,
}

#[derive(Debug, Clone)]
pub struct SpamProject {
    pub id: i64,
    pub path: String,
    /// `private`, `internal` or `public`.
    pub visibility: String,
}

/// GitLab's verdicts, as stored in the spam log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    ConditionalAllow,
    Disallow,
    BlockUser,
    Noop,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::ConditionalAllow => "conditional_allow",
            Verdict::Disallow => "disallow",
            Verdict::BlockUser => "block_user",
            Verdict::Noop => "noop",
        }
    }
}

/// What the API does with the write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpamAction {
    Proceed,
    NeedsCaptcha,
    Refuse,
    RefuseAndBlock,
}

/// The result of one check.
#[derive(Debug, Clone)]
pub struct SpamOutcome {
    /// The plugin's verdict, or `None` when the plugin failed.
    pub verdict: Option<Verdict>,
    pub reason: String,
    pub action: SpamAction,
    pub error: Option<PluginError>,
    /// The plugin (`name@version`) that judged.
    pub plugin: Arc<str>,
}

/// One check through the tenant's binding (the local runner makes its own), with its cost.
/// Callers look the binding up first: no binding, no check, at the cost of a map lookup.
pub async fn check_with(
    plugins: &Plugins,
    binding: &Arc<Binding>,
    subject: &SpamSubject,
    captcha_enabled: bool,
) -> (SpamOutcome, CallStats) {
    let input = wit_input(subject);
    let (answer, stats) = plugins
        .call(binding, None, move |store, compiled| {
            call(store, compiled, &input)
        })
        .await;
    let answer = answer.and_then(|verdict| {
        if verdict.reason.len() > MAX_OUTPUT_BYTES {
            Err(PluginError::Oversize(format!(
                "the verdict's reason is larger than {MAX_OUTPUT_BYTES} bytes"
            )))
        } else {
            Ok(verdict)
        }
    });
    let plugin = binding.label.clone();
    let outcome = match answer {
        Ok(v) => {
            let verdict = match v.kind {
                VerdictKind::Allow => Verdict::Allow,
                VerdictKind::ConditionalAllow => Verdict::ConditionalAllow,
                VerdictKind::Disallow => Verdict::Disallow,
                VerdictKind::BlockUser => Verdict::BlockUser,
                VerdictKind::Noop => Verdict::Noop,
            };
            SpamOutcome {
                verdict: Some(verdict),
                reason: v.reason,
                action: action(verdict, captcha_enabled),
                error: None,
                plugin,
            }
        }
        Err(error) => SpamOutcome {
            verdict: None,
            reason: error.to_string(),
            action: match (&error, binding.failure_policy) {
                // Slots taken until the deadline say nothing about the plugin, only that
                // others keep it busy: letting the write through would let a flood of writes
                // switch the filter off for everyone, so it is refused whatever the policy.
                (PluginError::Busy, _) | (_, FailurePolicy::FailClosed) => SpamAction::Refuse,
                (_, FailurePolicy::FailOpen) => SpamAction::Proceed,
            },
            error: Some(error),
            plugin,
        },
    };
    (outcome, stats)
}

/// Instantiates a spam-check plugin in `store` and calls its `check`.
pub fn call(
    store: &mut Store<CallState>,
    compiled: &Compiled,
    input: &SpamInput,
) -> wasmtime::Result<Result<v0_1::Verdict, String>> {
    let pre = compiled
        .spam_check
        .as_ref()
        .ok_or_else(|| wasmtime::Error::msg("not a spam-check plugin"))?;
    let plugin = pre.instantiate(&mut *store)?;
    plugin
        .trellis_policy_spam_check()
        .call_check(&mut *store, input)
}

/// GitLab's SpamActionService: what each verdict does to the request.
pub(crate) fn action(verdict: Verdict, captcha_enabled: bool) -> SpamAction {
    match verdict {
        Verdict::Allow | Verdict::Noop => SpamAction::Proceed,
        Verdict::ConditionalAllow if captcha_enabled => SpamAction::NeedsCaptcha,
        Verdict::ConditionalAllow | Verdict::Disallow => SpamAction::Refuse,
        Verdict::BlockUser => SpamAction::RefuseAndBlock,
    }
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn prefix(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The WIT input of a check: title and description together within [`MAX_INPUT_BYTES`] (all
/// the API accepts fits; anything longer is cut, so a check is never skipped for size).
pub fn wit_input(subject: &SpamSubject) -> SpamInput {
    let title = prefix(&subject.title, MAX_INPUT_BYTES);
    let description = prefix(&subject.description, MAX_INPUT_BYTES - title.len());
    SpamInput {
        kind: subject.kind,
        title: title.to_string(),
        description: description.to_string(),
        is_update: subject.is_update,
        confidential: subject.confidential,
        author: v0_1::User {
            id: subject.author.id.max(0) as u64,
            username: subject.author.username.clone(),
            created_at: subject.author.created_at_ms,
            is_admin: subject.author.is_admin,
            external: subject.author.external,
        },
        ip: subject.ip.clone(),
        user_agent: subject.user_agent.clone(),
        project: subject.project.as_ref().map(|p| v0_1::Project {
            id: p.id.max(0) as u64,
            path: p.path.clone(),
            visibility: match p.visibility.as_str() {
                "public" => v0_1::Visibility::Public,
                "internal" => v0_1::Visibility::Internal,
                _ => v0_1::Visibility::Private,
            },
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(title: &str, description: &str) -> SpamSubject {
        SpamSubject {
            kind: SpammableKind::Issue,
            title: title.into(),
            description: description.into(),
            is_update: false,
            confidential: false,
            author: SpamAuthor {
                id: 1,
                username: "u".into(),
                created_at_ms: 0,
                is_admin: false,
                external: false,
            },
            ip: None,
            user_agent: None,
            project: None,
        }
    }

    #[test]
    fn whatever_the_api_accepts_is_passed_whole() {
        let title = "\u{1F600}".repeat(255);
        let description = "\u{1F600}".repeat(1_000_000);
        let input = wit_input(&subject(&title, &description));
        assert_eq!((input.title, input.description), (title, description));
    }

    #[test]
    fn longer_input_is_cut_at_a_character_boundary() {
        let description = "é".repeat(MAX_INPUT_BYTES);
        let input = wit_input(&subject("spam", &description));
        assert_eq!(input.title, "spam");
        assert!(input.title.len() + input.description.len() <= MAX_INPUT_BYTES);
        assert!(input.description.len() >= MAX_INPUT_BYTES - 5);
        assert!(input.description.chars().all(|c| c == 'é'));
    }
}
