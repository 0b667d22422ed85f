//! The spam check as the API applies it to a write (issue create and update...): runs the
//! tenant's bound spam-check plugin (nothing when none is bound), records spam in the spam
//! log, blocks the author on `block_user`, and turns a refusal into GitLab's error.

use crate::events::EventKind;
use crate::http::error::ApiResult;
use crate::http::request::Api;
use crate::model::users::UserRow;
use crate::plugins::spam::{
    self, SpamAction, SpamAuthor, SpamOutcome, SpamProject, SpamSubject, SpammableKind,
};
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

pub fn subject(api: &Api, author: &UserRow, s: &Spammable<'_>) -> SpamSubject {
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
        ip: Some(api.client_ip.to_string()),
        user_agent: api.user_agent.clone(),
        project: s.project.clone(),
    }
}

/// Checks a write. `Ok(None)`: no plugin bound; `Ok(Some(_))`: checked and allowed (the
/// caller records `spam_filter_submitted` on the object's user agent detail); `Err`: the
/// write is refused (400 spam, or 409 asking for a CAPTCHA).
pub async fn check(
    api: &Api,
    author: &UserRow,
    spammable: &Spammable<'_>,
) -> ApiResult<Option<SpamOutcome>> {
    let Some(binding) = api
        .ctx
        .plugins
        .binding(api.tenant.id, crate::plugins::Hook::SpamCheck)
    else {
        return Ok(None);
    };
    let subject = subject(api, author, spammable);
    let captcha = api.settings.get(keys::CAPTCHA_ENABLED);
    let (outcome, _) = spam::check_with(&api.ctx.plugins, &binding, &subject, captcha).await;
    // As GitLab's SpamActionService: spam verdicts go to the spam log, allowed writes do not
    // (nor does the write path pay for a log row). A failure that refuses the write
    // (fail-closed) is logged too, so an administrator can see why.
    let log_id = if outcome.action == SpamAction::Proceed {
        None
    } else {
        let id = api
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
        api.db()
            .set_user_state(author.id, "blocked", EventKind::UserBlocked, None)
            .await?;
    }
    let site_key = api.settings.get(keys::CAPTCHA_SITE_KEY);
    let entity = spammable.noteable_type.to_ascii_lowercase();
    match outcome.api_error(&entity, log_id, site_key.as_deref()) {
        Some(error) => Err(error),
        None => Ok(Some(outcome)),
    }
}
