//! Users' lifecycle: the state transitions an administrator may make (block, unblock,
//! deactivate, activate) and deleting a user with what hangs off it.

use chrono::{Duration, NaiveDate};

use super::Refusal;
use crate::events::EventKind;
use crate::model::users::UserRow;
use crate::store::TenantDb;
use crate::store::user_admin::{Contributions, UserDeletion};

/// Users active within this many days cannot be deactivated.
pub const DEACTIVATION_INACTIVE_DAYS: i64 = 180;
const LDAP_BLOCKED: &str = "LDAP blocked users cannot be modified by the API";
const LDAP_UNBLOCK: &str = "LDAP blocked users cannot be unblocked by the API";

/// `POST /users/:id/<action>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateAction {
    Block,
    Unblock,
    Deactivate,
    Activate,
}

/// What an allowed state action does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The user moves to `state`, recorded as `event`; GitLab answers `true`.
    Changed {
        state: &'static str,
        event: EventKind,
    },
    /// Nothing changes; GitLab answers this body (`null`, `true` or `false`).
    Unchanged(Option<bool>),
}

/// The user a state action is about, as far as the rules look at it.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub state: &'a str,
    /// The administrator acting on their own account.
    pub is_actor: bool,
    /// `YYYY-MM-DD`.
    pub last_activity_on: Option<&'a str>,
}

/// GitLab's rules between the states: directory-sync (`ldap_blocked`) users are never
/// changed, an administrator cannot block themselves, blocked users are neither deactivated
/// nor activated, deactivated ones are not unblocked, and recently active users are not
/// deactivated. Repeating an action changes nothing.
pub fn transition(
    action: StateAction,
    subject: Subject<'_>,
    today: NaiveDate,
) -> Result<Outcome, Refusal> {
    use Outcome::{Changed, Unchanged};
    let state = subject.state;
    match action {
        StateAction::Block if subject.is_actor => Err(Refusal::forbidden_because(
            "The API initiating user cannot be blocked by the API",
        )),
        StateAction::Block => match state {
            "ldap_blocked" => Err(Refusal::forbidden_because(LDAP_BLOCKED)),
            "blocked" => Ok(Unchanged(None)),
            _ => Ok(Changed {
                state: "blocked",
                event: EventKind::UserBlocked,
            }),
        },
        StateAction::Unblock => match state {
            "ldap_blocked" => Err(Refusal::forbidden_because(LDAP_UNBLOCK)),
            "deactivated" => Err(Refusal::forbidden_because(
                "Deactivated users cannot be unblocked by the API",
            )),
            "blocked" => Ok(Changed {
                state: "active",
                event: EventKind::UserUnblocked,
            }),
            _ => Ok(Unchanged(Some(false))),
        },
        StateAction::Deactivate => match state {
            "blocked" | "ldap_blocked" => Err(Refusal::forbidden_because(
                "A blocked user cannot be deactivated by the API",
            )),
            "deactivated" => Ok(Unchanged(Some(true))),
            _ if recently_active(subject.last_activity_on, today) => {
                Err(Refusal::forbidden_because(format!(
                    "The user you are trying to deactivate has been active in the past {DEACTIVATION_INACTIVE_DAYS} days and cannot be deactivated"
                )))
            }
            _ => Ok(Changed {
                state: "deactivated",
                event: EventKind::UserDeactivated,
            }),
        },
        StateAction::Activate => match state {
            "blocked" | "ldap_blocked" => Err(Refusal::forbidden_because(
                "A blocked user must be unblocked to be activated",
            )),
            "deactivated" => Ok(Changed {
                state: "active",
                event: EventKind::UserActivated,
            }),
            _ => Ok(Unchanged(Some(true))),
        },
    }
}

/// Whether the last activity lies within the deactivation window before `today`.
fn recently_active(last_activity_on: Option<&str>, today: NaiveDate) -> bool {
    let threshold = (today - Duration::days(DEACTIVATION_INACTIVE_DAYS))
        .format("%Y-%m-%d")
        .to_string();
    last_activity_on.is_some_and(|day| day > threshold.as_str())
}

/// Applies `action` to `user` as administrator `actor`, when the rules allow it.
pub async fn change_state(
    db: &TenantDb,
    user: &UserRow,
    action: StateAction,
    actor: i64,
    today: NaiveDate,
) -> Result<Outcome, Refusal> {
    let subject = Subject {
        state: &user.state,
        is_actor: user.id == actor,
        last_activity_on: user.last_activity_on.as_deref(),
    };
    let outcome = transition(action, subject, today)?;
    if let Outcome::Changed { state, event } = outcome {
        db.set_user_state(user.id, state, event, Some(actor))
            .await?;
    }
    Ok(outcome)
}

/// Deletes `user` as `actor` in one transaction. A user who is the only owner of a group is
/// kept (409) unless `hard`, which deletes those groups and the user's issues too; otherwise
/// the issues and notes pass to the ghost user. Returns the ids of the deleted projects,
/// whose repositories and files the caller removes.
pub async fn delete(
    db: &TenantDb,
    user: &UserRow,
    hard: bool,
    actor: i64,
) -> Result<Vec<i64>, Refusal> {
    let sole_owner_of = db.solely_owned_groups(user.id).await?;
    if !sole_owner_of.is_empty() && !hard {
        return Err(Refusal::Conflict(
            "User cannot be removed while is the sole-owner of a group".into(),
        ));
    }
    let mut groups = Vec::new();
    for group_id in sole_owner_of {
        groups.extend(db.namespace_by_id(group_id).await?);
    }
    let deletion = UserDeletion {
        groups: &groups,
        contributions: if hard {
            Contributions::Delete
        } else {
            Contributions::Reassign
        },
    };
    let (_, projects) = db.delete_user(user.id, &deletion, actor).await?;
    Ok(projects)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 6, 30).unwrap()
    }

    fn subject(state: &str) -> Subject<'_> {
        Subject {
            state,
            is_actor: false,
            last_activity_on: None,
        }
    }

    fn changed(state: &'static str, event: EventKind) -> Outcome {
        Outcome::Changed { state, event }
    }

    fn refused(result: Result<Outcome, Refusal>) -> Option<String> {
        match result {
            Err(Refusal::Forbidden(reason)) => reason,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn block_and_unblock() {
        let t = today();
        assert_eq!(
            transition(StateAction::Block, subject("active"), t).unwrap(),
            changed("blocked", EventKind::UserBlocked)
        );
        assert_eq!(
            transition(StateAction::Block, subject("deactivated"), t).unwrap(),
            changed("blocked", EventKind::UserBlocked)
        );
        assert_eq!(
            transition(StateAction::Block, subject("blocked"), t).unwrap(),
            Outcome::Unchanged(None)
        );
        assert_eq!(
            transition(StateAction::Unblock, subject("blocked"), t).unwrap(),
            changed("active", EventKind::UserUnblocked)
        );
        assert_eq!(
            transition(StateAction::Unblock, subject("active"), t).unwrap(),
            Outcome::Unchanged(Some(false))
        );
        assert!(refused(transition(StateAction::Unblock, subject("deactivated"), t)).is_some());
    }

    #[test]
    fn ldap_blocked_users_are_never_changed() {
        for action in [
            StateAction::Block,
            StateAction::Unblock,
            StateAction::Deactivate,
            StateAction::Activate,
        ] {
            assert!(refused(transition(action, subject("ldap_blocked"), today())).is_some());
        }
    }

    #[test]
    fn an_administrator_cannot_block_themselves() {
        let me = Subject {
            is_actor: true,
            ..subject("active")
        };
        assert_eq!(
            refused(transition(StateAction::Block, me, today())).as_deref(),
            Some("The API initiating user cannot be blocked by the API")
        );
        // The other actions are not about oneself.
        assert!(transition(StateAction::Unblock, me, today()).is_ok());
    }

    #[test]
    fn deactivation_needs_180_days_without_activity() {
        let t = today();
        let recent = Subject {
            last_activity_on: Some("2026-06-01"),
            ..subject("active")
        };
        assert!(refused(transition(StateAction::Deactivate, recent, t)).is_some());
        let edge = Subject {
            last_activity_on: Some("2026-01-01"),
            ..subject("active")
        };
        // 2026-06-30 minus 180 days is 2026-01-01: not after it, so inactive long enough.
        assert_eq!(
            transition(StateAction::Deactivate, edge, t).unwrap(),
            changed("deactivated", EventKind::UserDeactivated)
        );
        assert_eq!(
            transition(StateAction::Deactivate, subject("active"), t).unwrap(),
            changed("deactivated", EventKind::UserDeactivated)
        );
        assert_eq!(
            transition(StateAction::Deactivate, subject("deactivated"), t).unwrap(),
            Outcome::Unchanged(Some(true))
        );
        assert!(refused(transition(StateAction::Deactivate, subject("blocked"), t)).is_some());
    }

    #[test]
    fn activation() {
        let t = today();
        assert_eq!(
            transition(StateAction::Activate, subject("deactivated"), t).unwrap(),
            changed("active", EventKind::UserActivated)
        );
        assert_eq!(
            transition(StateAction::Activate, subject("active"), t).unwrap(),
            Outcome::Unchanged(Some(true))
        );
        assert!(refused(transition(StateAction::Activate, subject("blocked"), t)).is_some());
    }
}
