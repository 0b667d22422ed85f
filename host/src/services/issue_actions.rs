//! What a user does to an issue for themselves: subscribe or unsubscribe, mark a to-do, award
//! or revoke an emoji. Each is one store call that writes the change and its event; the rules
//! here decide whether there is anything to write.

use super::Refusal;
use crate::model::issue_notes::{AwardRow, TodoRow};
use crate::model::issues::IssueRow;
use crate::store::TenantDb;

/// GitLab's answer to a second award of the same emoji by the same user, as it words it.
const AWARD_TAKEN: &str = "Award Emoji User has already been taken";

/// Subscribes `user_id` to `issue` (or unsubscribes them). `Ok(false)` when they already are
/// (or are not): nothing is written and GitLab answers 304.
pub async fn set_subscription(
    db: &TenantDb,
    user_id: i64,
    issue: &IssueRow,
    subscribe: bool,
) -> Result<bool, Refusal> {
    let subscribed = !db.subscribed_among(user_id, &[issue.id]).await?.is_empty();
    if subscribed == subscribe {
        return Ok(false);
    }
    db.set_subscription(issue, user_id, subscribe).await?;
    Ok(true)
}

/// Marks a to-do for `user_id` on `issue`. `Ok(None)` when one is pending already (304).
pub async fn mark_todo(
    db: &TenantDb,
    user_id: i64,
    issue: &IssueRow,
) -> Result<Option<TodoRow>, Refusal> {
    if db.pending_todo(user_id, issue.id).await?.is_some() {
        return Ok(None);
    }
    let todo = db
        .create_todo(user_id, issue.project_id, issue.id, &issue.title)
        .await?;
    Ok(Some(todo))
}

/// Awards emoji `name` to `issue` (`note_id` 0) or one of its notes. A user awards each emoji
/// once (GitLab's 404 with its validation message).
pub async fn award(
    db: &TenantDb,
    user_id: i64,
    issue: &IssueRow,
    note_id: i64,
    name: &str,
) -> Result<AwardRow, Refusal> {
    db.create_award(issue, note_id, user_id, name)
        .await
        .map_err(|error| match error.is_conflict() {
            true => Refusal::NotFound(AWARD_TAKEN),
            false => Refusal::Store(error),
        })
}

/// Revokes `award` (of `issue`): its own user or an administrator (GitLab's 401 otherwise).
pub async fn revoke_award(
    db: &TenantDb,
    user_id: i64,
    admin: bool,
    issue: &IssueRow,
    award: &AwardRow,
) -> Result<(), Refusal> {
    if award.user_id != user_id && !admin {
        return Err(Refusal::Unauthorized);
    }
    Ok(db.delete_award(issue, award, user_id).await?)
}
