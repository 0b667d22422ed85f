//! The push-rules hook (`trellis:policy@0.2` world `push-rules-plugin`): one `check-refs` call
//! per push, then `check-commits` per batch of new commits, each a fresh instance with the
//! binding's limits. A refusal's message goes to the pusher's git client. A failed call
//! answers per the binding's failure policy; push rules fail closed by default, with
//! [`UNAVAILABLE`].

use std::sync::Arc;

use wasmtime::Store;

use super::call::{CallState, PluginError};
use super::hooks::FailurePolicy;
use super::limits::MAX_OUTPUT_BYTES;
use super::registry::{Binding, Plugins};
use super::runtime::Compiled;
use super::wit::since_v0_2::push_rules::PushRulesPlugin;
use crate::git::push_scan::PushObjects;

pub use super::wit::since_v0_2::{
    ChangedFile, Commit, Decision, Project, Push, Pusher, RefUpdate, Rule, Signature, User,
    Visibility,
};

/// What the pusher reads when the binding's plugin fails and the policy is fail-closed.
pub const UNAVAILABLE: &str = "push rules unavailable, try again";

/// Whether a push (so far) may go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushVerdict {
    Allow,
    /// Refused, with the message for the pusher.
    Refuse(String),
}

/// `check-refs` through `binding`.
pub async fn check_refs(
    plugins: &Plugins,
    binding: &Arc<Binding>,
    push: &Push,
    objects: &Arc<PushObjects>,
) -> PushVerdict {
    let (push, objects) = (push.clone(), objects.clone());
    let (answer, _) = plugins
        .call(binding, None, move |store, compiled| {
            let plugin = instantiate(store, compiled, objects)?;
            plugin
                .trellis_policy_push_rules()
                .call_check_refs(&mut *store, &push)
        })
        .await;
    verdict(binding, answer)
}

/// `check-commits` of one batch of `push.updates[update]`'s new commits through `binding`.
pub async fn check_commits(
    plugins: &Plugins,
    binding: &Arc<Binding>,
    push: &Push,
    update: u32,
    commits: Vec<Commit>,
    objects: &Arc<PushObjects>,
) -> PushVerdict {
    let (push, objects) = (push.clone(), objects.clone());
    let (answer, _) = plugins
        .call(binding, None, move |store, compiled| {
            let plugin = instantiate(store, compiled, objects)?;
            plugin.trellis_policy_push_rules().call_check_commits(
                &mut *store,
                &push,
                update,
                &commits,
            )
        })
        .await;
    verdict(binding, answer)
}

fn instantiate(
    store: &mut Store<CallState>,
    compiled: &Compiled,
    objects: Arc<PushObjects>,
) -> wasmtime::Result<PushRulesPlugin> {
    let pre = compiled
        .push_rules
        .as_ref()
        .ok_or_else(|| wasmtime::Error::msg("not a push-rules plugin (trellis:policy@0.2)"))?;
    store.data_mut().set_push_objects(objects);
    pre.instantiate(&mut *store)
}

/// The plugin's decision, or what its failure means under the binding's policy.
pub fn verdict(binding: &Binding, answer: Result<Decision, PluginError>) -> PushVerdict {
    let answer = answer.and_then(|decision| match decision {
        Decision::Refuse(message) if message.len() > MAX_OUTPUT_BYTES => {
            Err(PluginError::Oversize(format!(
                "the refusal message is larger than {MAX_OUTPUT_BYTES} bytes"
            )))
        }
        decision => Ok(decision),
    });
    match answer {
        Ok(Decision::Allow) => PushVerdict::Allow,
        Ok(Decision::Refuse(message)) => PushVerdict::Refuse(message),
        // Slots taken until the deadline say only that other calls keep the plugin busy;
        // letting the push through then would let a flood of pushes switch the rules off.
        Err(PluginError::Busy) => PushVerdict::Refuse(UNAVAILABLE.into()),
        Err(_) if binding.failure_policy == FailurePolicy::FailOpen => PushVerdict::Allow,
        Err(_) => PushVerdict::Refuse(UNAVAILABLE.into()),
    }
}
