//! What push rules need to know about people: whose an email is, a pusher's verified emails
//! and GPG keys.

use super::TenantDb;

impl TenantDb {
    /// Whether `email` belongs to a user of the tenant: a user's primary email, or a confirmed
    /// secondary one (GitLab's `User.find_by_any_email(email, confirmed: true)`).
    pub async fn email_belongs_to_user(&self, email: &str) -> crate::Result<bool> {
        let lower = email.to_lowercase();
        let found: Option<i64> = self
            .query_scalar(
                "SELECT id FROM users WHERE tenant_id = $1 AND email_lower = $2 \
                 UNION ALL SELECT user_id FROM emails WHERE tenant_id = $1 AND email_lower = $2 \
                 AND confirmed_at IS NOT NULL LIMIT 1",
            )
            .bind(&lower)
            .fetch_optional(self.reader())
            .await?;
        Ok(found.is_some())
    }

    /// A user's verified emails, lowercase: the primary one once confirmed, and the confirmed
    /// secondary ones.
    pub async fn verified_emails(&self, user_id: i64) -> crate::Result<Vec<String>> {
        Ok(self.query_scalar(
            "SELECT email_lower FROM users WHERE tenant_id = $1 AND id = $2 AND confirmed_at IS NOT NULL \
             UNION ALL SELECT email_lower FROM emails WHERE tenant_id = $1 AND user_id = $2 \
             AND confirmed_at IS NOT NULL",
        )
        .bind(user_id)
        .fetch_all(self.reader())
        .await?)
    }

    /// The armored public keys of a user's GPG keys.
    pub async fn gpg_public_keys(&self, user_id: i64) -> crate::Result<Vec<String>> {
        Ok(self
            .query_scalar("SELECT public_key FROM gpg_keys WHERE tenant_id = $1 AND user_id = $2")
            .bind(user_id)
            .fetch_all(self.reader())
            .await?)
    }
}
