//! Web sign-in: password candidates with their lockout state, failed-attempt counting, and
//! server-side sessions (stored by the SHA-256 digest of the cookie value).

use sqlx::any::AnyArguments;
use sqlx::query::Query;
use sqlx::{Any, AssertSqlSafe, Transaction};

use super::users::{USER_COLUMNS, user_columns};
use super::{TenantDb, now_ms};
use crate::model::users::UserRow;

/// Failed password attempts that lock an account (Devise's `maximum_attempts`, as GitLab).
pub const MAX_FAILED_ATTEMPTS: i64 = 10;
/// How long a lock lasts (Devise's `unlock_in`, as GitLab): 10 minutes.
pub const LOCK_MS: i64 = 10 * 60 * 1000;

impl TenantDb {
    /// The user a sign-in names, by username or email (case-insensitive).
    pub async fn sign_in_candidate(&self, login: &str) -> crate::Result<Option<UserRow>> {
        let login = login.trim().to_lowercase();
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {USER_COLUMNS} FROM users \
             WHERE tenant_id = $1 AND (username_lower = $2 OR email_lower = $2)"
            )))
            .bind(login)
            .fetch_optional(self.reader())
            .await?)
    }

    /// Counts a wrong password; the tenth in a row locks the account for [`LOCK_MS`]. A lock
    /// that has run out starts the count afresh (Devise's lockable).
    pub async fn record_failed_sign_in(&self, user_id: i64) -> crate::Result<()> {
        let now = now_ms();
        let count = self.query(
            "UPDATE users SET \
             failed_attempts = CASE WHEN locked_until IS NOT NULL AND locked_until <= $3 THEN 1 \
                 ELSE failed_attempts + 1 END, \
             locked_until = CASE WHEN locked_until IS NOT NULL AND locked_until <= $3 THEN NULL \
                 WHEN failed_attempts + 1 >= $4 THEN $5 ELSE locked_until END \
             WHERE tenant_id = $1 AND id = $2",
        );
        let count = count.bind(user_id).bind(now).bind(MAX_FAILED_ATTEMPTS);
        self.update_sign_in_state(count.bind(now + LOCK_MS)).await
    }

    /// A successful sign-in: clears failed attempts, records the sign-in, and reactivates a
    /// deactivated user (GitLab reactivates on sign-in).
    pub async fn record_sign_in(&self, user_id: i64, ip: Option<&str>) -> crate::Result<()> {
        let record = self.query(
            "UPDATE users SET failed_attempts = 0, locked_until = NULL, \
             last_sign_in_at = current_sign_in_at, last_sign_in_ip = current_sign_in_ip, \
             current_sign_in_at = $3, current_sign_in_ip = $4, \
             state = CASE WHEN state = 'deactivated' THEN 'active' ELSE state END \
             WHERE tenant_id = $1 AND id = $2",
        );
        self.update_sign_in_state(record.bind(user_id).bind(now_ms()).bind(ip))
            .await
    }

    /// Runs an update of a user's sign-in state (lock, state), which the token cache holds.
    async fn update_sign_in_state(
        &self,
        update: Query<'_, Any, AnyArguments>,
    ) -> crate::Result<()> {
        update.execute(self.writer()).await?;
        self.auth_changed().await;
        Ok(())
    }

    pub async fn insert_session(
        &self,
        id_digest: &str,
        user_id: i64,
        expires_at: i64,
    ) -> crate::Result<()> {
        let now = now_ms();
        let mut tx = self.writer().begin().await?;
        // Expired sessions are cleared as new ones are made, so the table stays small.
        self.query("DELETE FROM web_sessions WHERE tenant_id = $1 AND expires_at <= $2")
            .bind(now)
            .execute(&mut *tx)
            .await?;
        self.query(
            "INSERT INTO web_sessions (tenant_id, id_digest, user_id, expires_at, created_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(id_digest)
        .bind(user_id)
        .bind(expires_at)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        Ok(tx.commit().await?)
    }

    /// The user of a live session.
    pub async fn session_user(&self, id_digest: &str) -> crate::Result<Option<UserRow>> {
        Ok(self.query_as(AssertSqlSafe(format!(
            "SELECT {} FROM web_sessions s JOIN users u ON u.tenant_id = s.tenant_id AND u.id = s.user_id \
             WHERE s.tenant_id = $1 AND s.id_digest = $2 AND s.expires_at > $3",
            user_columns("u")
        )))
        .bind(id_digest)
        .bind(now_ms())
        .fetch_optional(self.reader())
        .await?)
    }

    /// Until when a live session is in admin mode (`None`: it is not).
    pub async fn session_admin_mode_until(&self, id_digest: &str) -> crate::Result<Option<i64>> {
        let until: Option<Option<i64>> = self
            .query_scalar(
                "SELECT admin_mode_until FROM web_sessions \
                 WHERE tenant_id = $1 AND id_digest = $2 AND expires_at > $3",
            )
            .bind(id_digest)
            .bind(now_ms())
            .fetch_optional(self.reader())
            .await?;
        Ok(until.flatten())
    }

    /// Opens (`Some`) or closes (`None`) a session's admin mode.
    pub async fn set_session_admin_mode(
        &self,
        id_digest: &str,
        until: Option<i64>,
    ) -> crate::Result<()> {
        self.query(
            "UPDATE web_sessions SET admin_mode_until = $2 WHERE tenant_id = $1 AND id_digest = $3",
        )
        .bind(until)
        .bind(id_digest)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    pub async fn delete_session(&self, id_digest: &str) -> crate::Result<()> {
        Ok(self
            .query("DELETE FROM web_sessions WHERE tenant_id = $1 AND id_digest = $2")
            .bind(id_digest)
            .execute(self.writer())
            .await
            .map(|_| ())?)
    }
}

/// Ends every web session of a user, inside the transaction that changes their password:
/// whoever signed in with the old password is signed out (GitLab, through Devise, does the
/// same), whichever path changed it.
pub(super) async fn end_web_sessions(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    user_id: i64,
) -> crate::Result<()> {
    Ok(
        sqlx::query("DELETE FROM web_sessions WHERE tenant_id = $1 AND user_id = $2")
            .bind(tenant_id)
            .bind(user_id)
            .execute(&mut **tx)
            .await
            .map(|_| ())?,
    )
}
