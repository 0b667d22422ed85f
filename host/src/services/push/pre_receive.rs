//! The pre-receive decision, and the hook's call into it.

use super::protected_refs::{protected_branch_checks, protected_tag_checks};
use super::sessions::{Allowed, PushSession, PushSessions};
use crate::git;
use crate::git::receive::{self, Quarantine, RefUpdate};
use crate::plugins::push_rules::PushVerdict;
use crate::services::ref_names;
use crate::services::{push_rules, quotas};

/// When the server cannot decide (git failed or timed out), the push is refused.
const UNDECIDED: &str = "The push could not be checked. Please try again later.";

/// **The pre-receive decision**: may `session`'s push make `updates`? `quarantine` is the
/// environment under which git sees the pushed objects (add it to any git command run on
/// `session.context.repo`). Checks run in order and the first refusal answers: ref names, the
/// storage quota, protected branches, protected tags, then push rules.
pub async fn pre_receive(
    session: &PushSession,
    updates: &[RefUpdate],
    quarantine: &[(String, String)],
) -> git::Result<PushVerdict> {
    if let Some(message) = ref_names::refusal(updates) {
        return Ok(PushVerdict::Refuse(message.into()));
    }
    match quotas::push_refusal(&session.context.db, updates).await {
        Ok(None) => {}
        Ok(Some(message)) => return Ok(PushVerdict::Refuse(message)),
        Err(error) => {
            tracing::warn!(%error, "could not read the storage quota");
            return Ok(PushVerdict::Refuse(UNDECIDED.into()));
        }
    }
    let verdict = protected_branch_checks(session, updates, quarantine).await?;
    if verdict != PushVerdict::Allow {
        return Ok(verdict);
    }
    let verdict = protected_tag_checks(session, updates).await?;
    if verdict != PushVerdict::Allow {
        return Ok(verdict);
    }
    let prescan = session
        .prescan
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let prescanned = match prescan {
        Some(prescan) => prescan.verdict(updates, quarantine).await,
        None => None,
    };
    let verdict = match prescanned {
        Some(verdict) => verdict,
        None => {
            let subject = session.push_rules_subject(updates, quarantine);
            push_rules::check_push(&session.plugins, &session.context.db, subject).await
        }
    };
    Ok(match verdict {
        PushVerdict::Allow => PushVerdict::Allow,
        PushVerdict::Refuse(message) => PushVerdict::Refuse(message),
    })
}

/// The hook callback's entry: finds the session, checks the quarantine environment, decides,
/// and remembers what it allowed for [`Push::finish`]. An unknown session is refused.
pub async fn check(
    sessions: &PushSessions,
    id: &str,
    updates: &[RefUpdate],
    quarantine: &Quarantine,
) -> PushVerdict {
    let Some(session) = sessions.get(id) else {
        return PushVerdict::Refuse(UNDECIDED.into());
    };
    let decided = async {
        let env = quarantine.env_for(&session.context.repo)?;
        let refs_before = receive::refs(&session.context.repo, session.timeouts.fast).await?;
        let verdict = pre_receive(&session, updates, &env).await?;
        Ok::<_, git::Error>((verdict, refs_before))
    };
    match decided.await {
        Ok((PushVerdict::Allow, refs_before)) => {
            *session.allowed.lock().unwrap_or_else(|e| e.into_inner()) = Some(Allowed {
                updates: updates.to_vec(),
                refs_before,
            });
            PushVerdict::Allow
        }
        Ok((refused, _)) => refused,
        Err(error) => {
            tracing::warn!(%error, "a push could not be checked");
            PushVerdict::Refuse(UNDECIDED.into())
        }
    }
}
