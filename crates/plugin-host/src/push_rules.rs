//! The push-rules hook (`trellis:policy@0.2` world `push-rules-plugin`): one `check-refs` call
//! per push, then `check-commits` per batch of new commits, each a fresh instance with the
//! binding's limits. A refusal's message goes to the pusher's git client. A failed call
//! answers per the binding's failure policy; push rules fail closed by default, with
//! [`UNAVAILABLE`].

use std::sync::Arc;

use trellis_git::push_scan::PushObjects;
use wasmtime::Store;

use crate::call::{BlobSource, CallState, CallStats, PluginError};
use crate::hooks::FailurePolicy;
use crate::limits::MAX_OUTPUT_BYTES;
use crate::registry::{Binding, Plugins};
use crate::wit::since_v0_2::push_rules::exports::trellis::policy::push_rules::Guest;

/// The push's objects answer `read-blob` from the quarantined repository.
impl BlobSource for PushObjects {
    fn read_blob(&self, id: &str, max: usize) -> Result<Vec<u8>, String> {
        PushObjects::read_blob(self, id, max)
    }
}

pub use crate::wit::since_v0_2::{
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
    let (answer, _) = refs_answer(plugins, binding, push, objects.clone()).await;
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
    let (answer, _) =
        commits_answer(plugins, binding, push, update, commits, objects.clone()).await;
    verdict(binding, answer)
}

/// What `check-refs` answered, `read-blob` reading from `blobs`, and what the call cost.
pub(crate) async fn refs_answer(
    plugins: &Plugins,
    binding: &Arc<Binding>,
    push: &Push,
    blobs: Arc<dyn BlobSource>,
) -> (Result<Decision, PluginError>, CallStats) {
    call(plugins, binding, push, blobs, |store, rules, push| {
        rules.call_check_refs(store, push)
    })
    .await
}

/// What `check-commits` answered on one batch, `read-blob` reading from `blobs`, and what
/// the call cost.
pub async fn commits_answer(
    plugins: &Plugins,
    binding: &Arc<Binding>,
    push: &Push,
    update: u32,
    commits: Vec<Commit>,
    blobs: Arc<dyn BlobSource>,
) -> (Result<Decision, PluginError>, CallStats) {
    call(plugins, binding, push, blobs, move |store, rules, push| {
        rules.call_check_commits(store, push, update, &commits)
    })
    .await
}

/// One call of a fresh push-rules instance through `binding` about `push`, `read-blob`
/// reading `blobs`.
async fn call(
    plugins: &Plugins,
    binding: &Arc<Binding>,
    push: &Push,
    blobs: Arc<dyn BlobSource>,
    f: impl FnOnce(&mut Store<CallState>, &Guest, &Push) -> wasmtime::Result<Result<Decision, String>>
    + Send
    + 'static,
) -> (Result<Decision, PluginError>, CallStats) {
    let push = push.clone();
    plugins
        .call(binding, None, move |store, compiled| {
            let pre = compiled.push_rules.as_ref().ok_or_else(|| {
                wasmtime::Error::msg("not a push-rules plugin (trellis:policy@0.2)")
            })?;
            store.data_mut().set_push_objects(blobs);
            let plugin = pre.instantiate(&mut *store)?;
            f(store, plugin.trellis_policy_push_rules(), &push)
        })
        .await
}

/// A decision whose refusal message is larger than the host passes on is an oversize answer.
pub(crate) fn bounded(decision: Decision) -> Result<Decision, PluginError> {
    match decision {
        Decision::Refuse(message) if message.len() > MAX_OUTPUT_BYTES => {
            Err(PluginError::Oversize(format!(
                "the refusal message is larger than {MAX_OUTPUT_BYTES} bytes"
            )))
        }
        decision => Ok(decision),
    }
}

/// The plugin's decision, or what its failure means under the binding's policy.
pub(crate) fn verdict(binding: &Binding, answer: Result<Decision, PluginError>) -> PushVerdict {
    let answer = answer.and_then(bounded);
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
