//! Signing in and staying signed in: the password check with GitLab's lockout (10 failures
//! lock an account for 10 minutes, as its Devise configuration), who may sign in to the web
//! pages, web sessions, and admin mode on a session.

use super::Refusal;
use crate::auth::{password, secrets};
use crate::model::now_ms;
use crate::model::states::UserState;
use crate::model::users::UserRow;
use crate::store::TenantDb;

/// How long admin mode lasts once opened (GitLab: six hours).
pub const ADMIN_MODE_MINUTES: i64 = 6 * 60;
/// A web session's lifetime when the instance sets no `session_expire_delay` (GitLab's
/// default: a week).
const DEFAULT_SESSION_MINUTES: i64 = 10080;

/// The user `login` (username or email) names if `password` is theirs and the account is not
/// locked. A wrong password counts toward the lock. `None` for an unknown login, a wrong
/// password and a locked account alike, after the same bcrypt work for each: the answer must
/// not tell which accounts exist (as Devise's paranoid mode, which gives a locked account the
/// message of a wrong password). Account states (blocked, deactivated) are the caller's to
/// judge.
pub async fn check_password(
    db: &TenantDb,
    login: &str,
    password: &str,
) -> Result<Option<UserRow>, Refusal> {
    let Some(user) = db.sign_in_candidate(login).await? else {
        password::verify(password, None).await;
        return Ok(None);
    };
    let matches = password::verify(password, user.password_digest.clone()).await;
    if user.is_locked(now_ms()) {
        return Ok(None);
    }
    if matches {
        return Ok(Some(user));
    }
    db.record_failed_sign_in(user.id).await?;
    Ok(None)
}

/// Whether a user whose password matched may sign in to the web pages, with GitLab's message
/// when not. A deactivated user may: signing in makes them active again.
fn may_sign_in(state: UserState, two_factor_enabled: bool) -> Result<(), Refusal> {
    match state {
        UserState::Active | UserState::Deactivated => {}
        UserState::BlockedPendingApproval => {
            return Err(Refusal::forbidden_because(
                "Your account is pending approval from your administrator and hence blocked.",
            ));
        }
        _ => {
            return Err(Refusal::forbidden_because(
                "Your account has been blocked. Please contact your administrator if you think this is an error.",
            ));
        }
    }
    if two_factor_enabled {
        return Err(Refusal::forbidden_because(
            "Two-factor authentication is enabled for this account; sign-in with a one-time code is not supported by this server.",
        ));
    }
    Ok(())
}

/// The web session a sign-in opens.
pub struct NewSession<'a> {
    /// The session cookie's value; the store keeps only its digest.
    pub cookie_value: &'a str,
    /// The digest of the session the browser had before, which ends: a fresh session id at
    /// every sign-in (no session fixation).
    pub replaces: Option<&'a str>,
    pub peer_ip: Option<&'a str>,
    /// The instance's `session_expire_delay`, in minutes.
    pub expire_delay_minutes: Option<i64>,
}

/// Signs in a user whose password [`check_password`] accepted: records the sign-in and opens
/// the session, or refuses with the reason the user may not sign in (`Forbidden`).
pub async fn sign_in(
    db: &TenantDb,
    user: &UserRow,
    session: NewSession<'_>,
) -> Result<(), Refusal> {
    may_sign_in(user.state, user.two_factor_enabled)?;
    db.record_sign_in(user.id, session.peer_ip).await?;
    if let Some(old) = session.replaces {
        db.delete_session(old).await?;
    }
    let minutes = session
        .expire_delay_minutes
        .unwrap_or(DEFAULT_SESSION_MINUTES);
    db.insert_session(
        &secrets::digest(session.cookie_value),
        user.id,
        now_ms() + minutes.max(1) * 60_000,
    )
    .await?;
    Ok(())
}

/// Ends the session whose cookie digest is `session_digest`.
pub async fn sign_out(db: &TenantDb, session_digest: &str) -> Result<(), Refusal> {
    db.delete_session(session_digest).await?;
    Ok(())
}

/// Opens admin mode on `user`'s session for [`ADMIN_MODE_MINUTES`] once they give their
/// password again (with the sign-in lockout); `Unauthorized` when it is not theirs.
pub async fn enter_admin_mode(
    db: &TenantDb,
    session_digest: &str,
    user: &UserRow,
    password: &str,
) -> Result<(), Refusal> {
    let checked = if password.is_empty() {
        None
    } else {
        check_password(db, &user.username, password).await?
    };
    if checked.is_none_or(|checked| checked.id != user.id) {
        return Err(Refusal::Unauthorized);
    }
    db.set_session_admin_mode(session_digest, Some(now_ms() + ADMIN_MODE_MINUTES * 60_000))
        .await?;
    Ok(())
}

/// Closes admin mode on a session.
pub async fn leave_admin_mode(db: &TenantDb, session_digest: &str) -> Result<(), Refusal> {
    db.set_session_admin_mode(session_digest, None).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(result: Result<(), Refusal>) -> String {
        match result {
            Err(Refusal::Forbidden(Some(reason))) => reason,
            other => panic!("expected a refusal with a reason, got {other:?}"),
        }
    }

    #[test]
    fn active_and_deactivated_users_sign_in_unless_they_use_two_factor() {
        assert!(may_sign_in(UserState::Active, false).is_ok());
        assert!(may_sign_in(UserState::Deactivated, false).is_ok());
        assert!(reason(may_sign_in(UserState::Active, true)).starts_with("Two-factor"));
        assert!(reason(may_sign_in(UserState::BlockedPendingApproval, false)).contains("pending"));
        assert!(reason(may_sign_in(UserState::Blocked, false)).contains("blocked"));
    }
}
