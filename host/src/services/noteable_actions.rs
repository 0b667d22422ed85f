//! What a user does to an issue or a merge request for themselves: subscribe or unsubscribe,
//! mark a to-do, award or revoke an emoji. Each is one store call that writes the change and
//! its event; the rules here decide whether there is anything to write.

use super::Refusal;
use crate::model::issue_notes::{AwardRow, TodoRow};
use crate::model::noteables::Noteable;
use crate::store::TenantDb;

/// GitLab's answer to a second award of the same emoji by the same user, as it words it.
const AWARD_TAKEN: &str = "Award Emoji User has already been taken";

/// An issue or a merge request, with what these actions need of it.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub on: Noteable,
    pub project_id: i64,
    pub title: &'a str,
}

/// Subscribes `user_id` to `target` (or unsubscribes them). `Ok(false)` when they already
/// are (or are not): nothing is written and GitLab answers 304.
pub async fn set_subscription(
    db: &TenantDb,
    user_id: i64,
    target: Target<'_>,
    subscribe: bool,
) -> Result<bool, Refusal> {
    let kind = match target.on {
        Noteable::Issue(_) => Noteable::Issue,
        Noteable::MergeRequest(_) => Noteable::MergeRequest,
    };
    let subscribed = !db
        .subscribed_among(user_id, kind, &[target.on.id()])
        .await?
        .is_empty();
    if subscribed == subscribe {
        return Ok(false);
    }
    db.set_subscription(target.on, target.project_id, user_id, subscribe)
        .await?;
    Ok(true)
}

/// Marks a to-do for `user_id` on `target`. `Ok(None)` when one is pending already (304).
pub async fn mark_todo(
    db: &TenantDb,
    user_id: i64,
    target: Target<'_>,
) -> Result<Option<TodoRow>, Refusal> {
    if db.pending_todo(user_id, target.on).await?.is_some() {
        return Ok(None);
    }
    let todo = db
        .create_todo(user_id, target.project_id, target.on, target.title)
        .await?;
    Ok(Some(todo))
}

/// Awards emoji `name` to `target` (`note_id` 0) or one of its notes. A user awards each
/// emoji once (GitLab's 404 with its validation message).
pub async fn award(
    db: &TenantDb,
    user_id: i64,
    target: Target<'_>,
    note_id: i64,
    name: &str,
) -> Result<AwardRow, Refusal> {
    db.create_award(target.on, target.project_id, note_id, user_id, name)
        .await
        .map_err(|error| match error.is_conflict() {
            true => Refusal::NotFound(AWARD_TAKEN),
            false => Refusal::Store(error),
        })
}

/// Revokes `award` (of `target`): its own user or an administrator (GitLab's 401 otherwise).
pub async fn revoke_award(
    db: &TenantDb,
    user_id: i64,
    admin: bool,
    target: Target<'_>,
    award: &AwardRow,
) -> Result<(), Refusal> {
    if award.user_id != user_id && !admin {
        return Err(Refusal::Unauthorized);
    }
    Ok(db
        .delete_award(target.on, target.project_id, award, user_id)
        .await?)
}
