//! Rows users own beside their profile: SSH keys, GPG keys and secondary emails. The three
//! tables share one shape (`tenant_id, id, user_id, ...`), so listing, reading and deleting
//! one of a user's rows is written once over [`Owned`].

use sqlx::AssertSqlSafe;
use sqlx::any::AnyRow;

use super::sql::Sql;
use super::window::Window;
use super::{TenantDb, ids::next_id, now_ms, outbox};
use crate::events::{Event, EventKind};
use crate::model::keys::{EmailRow, GpgKeyRow, SshKeyRow};

/// A table of rows owned by a user.
pub trait Owned: for<'r> sqlx::FromRow<'r, AnyRow> + Send + Unpin + serde::Serialize {
    const TABLE: &'static str;
    const COLUMNS: &'static str;
    /// The event a removal records.
    const REMOVED: EventKind;
    fn id(&self) -> i64;
}

impl Owned for SshKeyRow {
    const TABLE: &'static str = "ssh_keys";
    const REMOVED: EventKind = EventKind::KeyRemoved;
    const COLUMNS: &'static str = "id, user_id, title, public_key, key_type, bits, fingerprint, \
        fingerprint_sha256, usage_type, expires_at, last_used_at, created_at";
    fn id(&self) -> i64 {
        self.id
    }
}

impl Owned for GpgKeyRow {
    const TABLE: &'static str = "gpg_keys";
    const REMOVED: EventKind = EventKind::GpgKeyRemoved;
    const COLUMNS: &'static str =
        "id, user_id, public_key, fingerprint, primary_keyid, emails, created_at";
    fn id(&self) -> i64 {
        self.id
    }
}

impl Owned for EmailRow {
    const TABLE: &'static str = "emails";
    const REMOVED: EventKind = EventKind::EmailRemoved;
    const COLUMNS: &'static str = "id, user_id, email, confirmed_at, created_at";
    fn id(&self) -> i64 {
        self.id
    }
}

pub struct NewSshKey<'a> {
    pub user_id: i64,
    pub title: &'a str,
    pub public_key: &'a str,
    pub key_type: &'a str,
    pub bits: i64,
    pub fingerprint: &'a str,
    pub fingerprint_sha256: &'a str,
    pub usage_type: &'a str,
    pub expires_at: Option<i64>,
}

pub struct NewGpgKey<'a> {
    pub user_id: i64,
    pub public_key: &'a str,
    pub fingerprint: &'a str,
    pub primary_keyid: &'a str,
    pub emails: &'a [String],
}

impl TenantDb {
    /// One page of `user_id`'s rows of `T`, oldest first.
    pub async fn list_owned<T: Owned>(
        &self,
        user_id: i64,
        window: &Window,
    ) -> crate::Result<Vec<T>> {
        let scope = self.owned_by(user_id);
        self.page(T::COLUMNS, T::TABLE, scope, window, "").await
    }

    pub async fn count_owned<T: Owned>(&self, user_id: i64, cap: i64) -> crate::Result<i64> {
        let scope = self.owned_by(user_id);
        self.count_up_to(T::TABLE, scope, cap).await
    }

    /// `WHERE` the tenant's rows of one user.
    fn owned_by(&self, user_id: i64) -> impl FnOnce(&mut Sql) {
        let tenant_id = self.tenant_id();
        move |sql| {
            sql.push(" WHERE tenant_id = ")
                .bind(tenant_id)
                .push(" AND user_id = ")
                .bind(user_id);
        }
    }

    /// Row `id` of `T` if it belongs to `user_id`.
    pub async fn owned<T: Owned>(&self, user_id: i64, id: i64) -> crate::Result<Option<T>> {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {} FROM {} WHERE tenant_id = $1 AND user_id = $2 AND id = $3",
                T::COLUMNS,
                T::TABLE
            )))
            .bind(user_id)
            .bind(id)
            .fetch_optional(self.reader())
            .await?)
    }

    /// Deletes row `id` of `T` if it belongs to `user_id`, as `actor`; whether a row went.
    pub async fn delete_owned<T: Owned>(
        &self,
        user_id: i64,
        id: i64,
        actor: i64,
    ) -> crate::Result<bool> {
        let mut tx = self.writer().begin().await?;
        let removed: Option<T> = self
            .query_as(AssertSqlSafe(format!(
                "DELETE FROM {} WHERE tenant_id = $1 AND user_id = $2 AND id = $3 RETURNING {}",
                T::TABLE,
                T::COLUMNS
            )))
            .bind(user_id)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(removed) = removed else {
            return Ok(false);
        };
        let event = Event::new(T::REMOVED, Some(actor), id).before(&removed);
        outbox::commit(tx, self.tenant_id(), &[event]).await?;
        Ok(true)
    }

    /// The tenant's SSH key with this `SHA256:` fingerprint: the key a client signs in with.
    pub async fn ssh_key_by_fingerprint(
        &self,
        fingerprint_sha256: &str,
    ) -> crate::Result<Option<SshKeyRow>> {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {} FROM ssh_keys WHERE tenant_id = $1 AND fingerprint_sha256 = $2",
                SshKeyRow::COLUMNS
            )))
            .bind(fingerprint_sha256)
            .fetch_optional(self.reader())
            .await?)
    }

    /// Records that key `id` was used to sign in, as GitLab does: at most once a day, so a
    /// busy key does not write on every fetch.
    pub async fn touch_ssh_key(&self, id: i64) -> crate::Result<()> {
        const DAY_MS: i64 = 24 * 60 * 60 * 1000;
        let now = now_ms();
        self.query(
            "UPDATE ssh_keys SET last_used_at = $3 WHERE tenant_id = $1 AND id = $2 \
             AND (last_used_at IS NULL OR last_used_at < $4)",
        )
        .bind(id)
        .bind(now)
        .bind(now - DAY_MS)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    pub async fn insert_ssh_key(&self, key: NewSshKey<'_>, actor: i64) -> crate::Result<SshKeyRow> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "ssh_keys").await?;
        let row = self
            .query_as(AssertSqlSafe(format!(
                "INSERT INTO ssh_keys (tenant_id, id, user_id, title, public_key, key_type, bits, \
             fingerprint, fingerprint_sha256, usage_type, expires_at, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12) RETURNING {}",
                SshKeyRow::COLUMNS
            )))
            .bind(id)
            .bind(key.user_id)
            .bind(key.title)
            .bind(key.public_key)
            .bind(key.key_type)
            .bind(key.bits)
            .bind(key.fingerprint)
            .bind(key.fingerprint_sha256)
            .bind(key.usage_type)
            .bind(key.expires_at)
            .bind(now_ms())
            .fetch_one(&mut *tx)
            .await?;
        let row: SshKeyRow = row;
        let event = Event::new(EventKind::KeyAdded, Some(actor), row.id).after(&row);
        outbox::commit(tx, self.tenant_id(), &[event]).await?;
        Ok(row)
    }

    pub async fn insert_gpg_key(&self, key: NewGpgKey<'_>, actor: i64) -> crate::Result<GpgKeyRow> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "gpg_keys").await?;
        let row = self.query_as(AssertSqlSafe(format!(
            "INSERT INTO gpg_keys (tenant_id, id, user_id, public_key, fingerprint, primary_keyid, \
             emails, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING {}",
            GpgKeyRow::COLUMNS
        )))
        .bind(id)
        .bind(key.user_id)
        .bind(key.public_key)
        .bind(key.fingerprint)
        .bind(key.primary_keyid)
        .bind(key.emails.join("\n"))
        .bind(now_ms())
        .fetch_one(&mut *tx)
        .await?;
        let row: GpgKeyRow = row;
        let event = Event::new(EventKind::GpgKeyAdded, Some(actor), row.id).after(&row);
        outbox::commit(tx, self.tenant_id(), &[event]).await?;
        Ok(row)
    }

    /// Adds a secondary email, confirmed at once when `confirmation_digest` is `None` (else
    /// unconfirmed, awaiting the mailed token). `Ok(None)` when the address is already some
    /// user's primary email; a duplicate secondary email fails on `emails_email_lower_unique`.
    pub async fn insert_email(
        &self,
        user_id: i64,
        email: &str,
        confirmation_digest: Option<&str>,
    ) -> crate::Result<Option<EmailRow>> {
        let mut tx = self.writer().begin().await?;
        let lower = email.to_lowercase();
        let primary: Option<i64> = self
            .query_scalar("SELECT id FROM users WHERE tenant_id = $1 AND email_lower = $2")
            .bind(&lower)
            .fetch_optional(&mut *tx)
            .await?;
        if primary.is_some() {
            return Ok(None);
        }
        let id = next_id(&mut *tx, self.tenant_id(), "emails").await?;
        let now = now_ms();
        let row = self.query_as(AssertSqlSafe(format!(
            "INSERT INTO emails (tenant_id, id, user_id, email, email_lower, confirmed_at, created_at, \
             updated_at, confirmation_token_digest) VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8) RETURNING {}",
            EmailRow::COLUMNS
        )))
        .bind(id)
        .bind(user_id)
        .bind(email)
        .bind(&lower)
        .bind(confirmation_digest.is_none().then_some(now))
        .bind(now)
        .bind(confirmation_digest)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(row))
    }
}
