//! The spam check as a write applies it (issue create and update...): runs the tenant's bound
//! spam-check plugin (nothing when none is bound), records spam in the spam log, blocks the
//! author on `block_user`, and refuses the write with a [`Refusal::Spam`].

use std::net::IpAddr;

use super::Refusal;
use crate::events::EventKind;
use crate::model::states::UserState;
use crate::model::users::UserRow;
use crate::plugins::spam::{
    self, SpamAction, SpamAuthor, SpamOutcome, SpamProject, SpamSubject, SpammableKind,
};
use crate::policy::Scope;
use crate::settings::keys;
use crate::store::plugins::SpamLogEntry;

/// What is written, by whom, from this request.
pub struct Spammable<'a> {
    pub kind: SpammableKind,
    /// GitLab's class name for the spam log (`Issue`) and the noun of the error (`issue`).
    pub noteable_type: &'static str,
    pub title: &'a str,
    pub description: &'a str,
    pub is_update: bool,
    pub confidential: bool,
    pub project: Option<SpamProject>,
}

/// Where a write comes from, as the spam check and the spam log see it.
pub struct Origin<'a> {
    pub ip: IpAddr,
    pub user_agent: Option<&'a str>,
}

/// Why the spam check refused a write, as GitLab's API tells it.
#[derive(Debug)]
pub struct SpamRefusal {
    /// The noun of the written object (`issue`).
    pub entity: String,
    /// Its class (`Issue`, `MergeRequest`): the APIs answer a refusal differently.
    pub noteable_type: &'static str,
    /// A CAPTCHA would let the write through: the spam log entry and the site key to solve it
    /// with. `None`: refused outright.
    pub captcha: Option<Captcha>,
}

#[derive(Debug)]
pub struct Captcha {
    pub spam_log_id: Option<i64>,
    pub site_key: Option<String>,
}

/// A class name as GitLab's `model_name.human.downcase` words it: `MergeRequest` is
/// `merge request`.
fn human_name(class: &str) -> String {
    let mut words = String::new();
    for (n, c) in class.chars().enumerate() {
        if c.is_ascii_uppercase() && n > 0 {
            words.push(' ');
        }
        words.push(c.to_ascii_lowercase());
    }
    words
}

pub fn subject(origin: &Origin<'_>, author: &UserRow, s: &Spammable<'_>) -> SpamSubject {
    SpamSubject {
        kind: s.kind,
        title: s.title.to_string(),
        description: s.description.to_string(),
        is_update: s.is_update,
        confidential: s.confidential,
        author: SpamAuthor {
            id: author.id,
            username: author.username.clone(),
            created_at_ms: author.created_at,
            is_admin: author.is_admin,
            external: author.external,
        },
        ip: Some(origin.ip.to_string()),
        user_agent: origin.user_agent.map(str::to_string),
        project: s.project.clone(),
    }
}

/// Checks a write. `Ok(None)`: no plugin bound; `Ok(Some(_))`: checked and allowed (the
/// caller records `spam_filter_submitted` on the object's user agent detail); `Err`: the
/// write is refused (spam, or a CAPTCHA to solve first).
pub async fn check(
    scope: &Scope<'_>,
    origin: &Origin<'_>,
    author: &UserRow,
    spammable: &Spammable<'_>,
) -> Result<Option<SpamOutcome>, Refusal> {
    let Some(binding) = scope
        .ctx
        .plugins
        .binding(scope.tenant.id, crate::plugins::Hook::SpamCheck)
    else {
        return Ok(None);
    };
    let subject = subject(origin, author, spammable);
    let captcha = scope.settings.get(keys::CAPTCHA_ENABLED);
    let (outcome, _) = spam::check_with(&scope.ctx.plugins, &binding, &subject, captcha).await;
    // As GitLab's SpamActionService: spam verdicts go to the spam log, allowed writes do not
    // (nor does the write path pay for a log row). A failure that refuses the write
    // (fail-closed) is logged too, so an administrator can see why.
    let log_id = if outcome.action == SpamAction::Proceed {
        None
    } else {
        let id = scope
            .db()
            .insert_spam_log(&SpamLogEntry {
                user_id: author.id,
                source_ip: subject.ip.as_deref(),
                user_agent: subject.user_agent.as_deref(),
                noteable_type: spammable.noteable_type,
                title: spammable.title,
                description: spammable.description,
                verdict: outcome.verdict.map(|v| v.name()),
                reason: &outcome.reason,
                plugin: &outcome.plugin,
            })
            .await?;
        Some(id)
    };
    if outcome.action == SpamAction::RefuseAndBlock && !author.is_admin {
        // The store tells the token cache after the commit, so the block takes effect at once.
        scope
            .db()
            .set_user_state(author.id, UserState::Blocked, EventKind::UserBlocked, None)
            .await?;
    }
    let entity = human_name(spammable.noteable_type);
    let captcha = || Captcha {
        spam_log_id: log_id,
        site_key: scope.settings.get(keys::CAPTCHA_SITE_KEY),
    };
    // As GitLab's `SpammableActions::CaptchaCheck::RestApiActionsSupport`.
    let captcha = match outcome.action {
        SpamAction::Proceed => return Ok(Some(outcome)),
        SpamAction::NeedsCaptcha => Some(captcha()),
        SpamAction::Refuse | SpamAction::RefuseAndBlock => None,
    };
    Err(Refusal::Spam(SpamRefusal {
        entity,
        noteable_type: spammable.noteable_type,
        captcha,
    }))
}
