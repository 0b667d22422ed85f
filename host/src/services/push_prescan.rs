//! Push rules started before git asks for them. `git receive-pack` indexes a pushed pack, then
//! walks every pushed object to check that the push is connected, and only then runs the
//! `pre-receive` hook. On a large push that walk is a quarter of the push, on one core. A
//! prescan runs the tenant's push rules on the pushed objects from the moment the pack is
//! indexed (`git::receive::indexed_quarantine`), beside that walk, and the hook then takes
//! its verdict instead of scanning again (`tests/bench/push-rules`, `docs/performance.md`).
//!
//! The verdict is only ever used for the very push it was computed on: the same reference
//! updates as the hook's, read from the same quarantine directory as the hook's. Otherwise
//! (a push small enough to be unpacked into loose objects, which never shows an index; a
//! prescan still waiting or that could not read the push; an unexpected directory), the
//! hook scans as it always did. A prescan that was not used is stopped.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::push::PushSession;
use super::push_rules;
use crate::git::receive::{self, Quarantine, RefUpdate};
use crate::plugins::push_rules::PushVerdict;

/// How often a prescan looks for its push's indexed pack: a hook comes tens of milliseconds
/// after the index at the soonest (git's connectivity walk, then the hook process's start).
const POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// A push rules check running on a push's indexed pack before its hook.
pub struct Prescan {
    updates: Vec<RefUpdate>,
    /// The quarantine directory scanned, once it was found (resolved).
    scanning: watch::Receiver<Option<PathBuf>>,
    /// The verdict; `None` when the push could not be read.
    task: JoinHandle<Option<PushVerdict>>,
}

impl Drop for Prescan {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Prescan {
    /// Watches for the quarantine directory of `session`'s push (one not among `before`, the
    /// directories of other pushes when this one started) to hold an indexed pack, then checks
    /// `updates` against it. The wait ends when the session does.
    pub fn start(
        session: &Arc<PushSession>,
        before: HashSet<PathBuf>,
        updates: Vec<RefUpdate>,
    ) -> Prescan {
        let (found, scanning) = watch::channel(None);
        let checked = updates.clone();
        let repo = session.context.repo.clone();
        // Only a weak hold while waiting: a push that ends without its hook (the client went
        // away, the pack was refused) stops the wait even if nobody stops the prescan.
        let waiting = Arc::downgrade(session);
        let task = tokio::spawn(async move {
            let dir = loop {
                if let Some(dir) = receive::indexed_quarantine(&repo, &before) {
                    break dir;
                }
                waiting.upgrade()?;
                tokio::time::sleep(POLL).await;
            };
            let session = waiting.upgrade()?;
            let dir = std::fs::canonicalize(dir).ok()?;
            found.send_replace(Some(dir.clone()));
            let env = Quarantine::of_dir(&repo, &dir).vars;
            let subject = session.push_rules_subject(&checked, &env);
            push_rules::try_check_push(&session.plugins, &session.context.db, subject)
                .await
                .inspect_err(|error| {
                    tracing::debug!(
                        error = format!("{error:#}"),
                        "a prescan could not read a push"
                    );
                })
                .ok()
        });
        Prescan {
            updates,
            scanning,
            task,
        }
    }

    /// The verdict on `updates` with the pushed objects in `quarantine`, when this prescan
    /// checked exactly those (waiting for it to finish); `None`: check them now.
    pub async fn verdict(
        mut self,
        updates: &[RefUpdate],
        quarantine: &[(String, String)],
    ) -> Option<PushVerdict> {
        let hook_dir = receive::quarantine_dir(quarantine);
        let scanned = self.scanning.borrow().clone();
        let same = self.updates == updates && scanned.is_some() && scanned == hook_dir;
        let verdict = match same {
            true => (&mut self.task).await.ok().flatten(),
            false => None,
        };
        let outcome = if verdict.is_some() {
            "used"
        } else {
            "not_used"
        };
        metrics::counter!("trellis_push_prescans_total", "outcome" => outcome).increment(1);
        verdict
    }
}
