//! Password sign-in shared by the web sign-in page and the OAuth password grant: the user by
//! username or email, the lockout (10 failures lock for 10 minutes, as GitLab's Devise
//! configuration), and bcrypt verification off the async threads.

use std::sync::LazyLock;

use crate::auth::secrets;
use crate::model::now_ms;
use crate::model::users::UserRow;
use crate::store::TenantDb;

/// A hash to verify against when the login is unknown, so that unknown and known logins take
/// the same time.
static DUMMY_DIGEST: LazyLock<String> =
    LazyLock::new(|| secrets::hash_password("not a password").unwrap_or_default());

async fn verify(password: &str, digest: Option<String>) -> bool {
    let password = password.to_string();
    let known = digest.is_some();
    let ok = tokio::task::spawn_blocking(move || {
        let digest = digest.unwrap_or_else(|| DUMMY_DIGEST.clone());
        secrets::verify_password(&password, &digest)
    })
    .await
    .unwrap_or(false);
    ok && known
}

/// The user `login` names if `password` is theirs and the account is not locked. A wrong
/// password counts toward the lock. `None` for an unknown login, a wrong password and a
/// locked account alike, after the same bcrypt work for each: the answer must not tell which
/// accounts exist (as Devise's paranoid mode, which gives a locked account the message of a
/// wrong password). Account states (blocked, deactivated) are the caller's to judge.
pub async fn check(
    db: &TenantDb,
    login: &str,
    password: &str,
) -> crate::store::Result<Option<UserRow>> {
    let Some(user) = db.sign_in_candidate(login).await? else {
        verify(password, None).await;
        return Ok(None);
    };
    let matches = verify(password, user.password_digest.clone()).await;
    if user.is_locked(now_ms()) {
        return Ok(None);
    }
    if matches {
        return Ok(Some(user));
    }
    db.record_failed_sign_in(user.id).await?;
    Ok(None)
}
