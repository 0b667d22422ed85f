//! Personal access tokens (impersonation tokens are the same rows with `impersonation`).
//! Only the SHA-256 digest of a token is stored; lookups go by digest.

use super::sql::Sql;
use super::users::user_columns;
use super::window::Window;
use super::{Flag, TenantDb, ids::next_id, now_ms, outbox};
use crate::events::{Event, EventKind};
use crate::model::tokens::TokenRow;
use crate::model::users::UserRow;
use sqlx::AssertSqlSafe;
const TOKEN_COLUMNS: &str =
    "id, user_id, name, scopes, impersonation, revoked, expires_at, last_used_at, created_at";

/// A token and its owner, read in one statement on the authentication path.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TokenWithUser {
    pub t_id: i64,
    pub t_scopes: String,
    #[sqlx(try_from = "Flag")]
    pub t_revoked: bool,
    pub t_expires_at: Option<String>,
    pub t_last_used_at: Option<i64>,
    #[sqlx(flatten)]
    pub user: UserRow,
}

pub struct NewToken<'a> {
    pub user_id: i64,
    pub name: &'a str,
    pub digest: &'a str,
    pub scopes: &'a [String],
    pub impersonation: bool,
    pub expires_at: Option<String>,
}

/// Which tokens a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenState {
    All,
    Active,
    Inactive,
}

pub struct TokenFilter {
    pub user_id: Option<i64>,
    pub impersonation: bool,
    pub state: TokenState,
    pub today: String,
}

impl TokenFilter {
    fn apply(&self, sql: &mut Sql, tenant_id: i64) {
        sql.push(" WHERE tenant_id = ").bind(tenant_id);
        sql.push(" AND impersonation = ").bind(self.impersonation);
        if let Some(user_id) = self.user_id {
            sql.push(" AND user_id = ").bind(user_id);
        }
        match self.state {
            TokenState::All => {}
            TokenState::Active => {
                sql.push(" AND revoked = 0 AND (expires_at IS NULL OR expires_at > ")
                    .bind(self.today.as_str())
                    .push(")");
            }
            TokenState::Inactive => {
                sql.push(" AND (revoked = 1 OR expires_at <= ")
                    .bind(self.today.as_str())
                    .push(")");
            }
        }
    }
}

impl TenantDb {
    /// Creates a token; `actor` is who asked for it (none from the command line).
    pub async fn insert_token(
        &self,
        token: NewToken<'_>,
        actor: Option<i64>,
    ) -> crate::Result<TokenRow> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "personal_access_tokens").await?;
        let row = self.query_as(AssertSqlSafe(format!(
            "INSERT INTO personal_access_tokens (tenant_id, id, user_id, name, token_digest, scopes, \
             impersonation, expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
             RETURNING {TOKEN_COLUMNS}"
        )))
        .bind(id)
        .bind(token.user_id)
        .bind(token.name)
        .bind(token.digest)
        .bind(token.scopes.join(" "))
        .bind(i64::from(token.impersonation))
        .bind(token.expires_at)
        .bind(now_ms())
        .fetch_one(&mut *tx)
        .await?;
        let row: TokenRow = row;
        let event = Event::new(EventKind::TokenCreated, actor, row.id).after(&row);
        outbox::commit(tx, self.tenant_id(), &[event]).await?;
        self.auth_changed().await;
        Ok(row)
    }

    pub async fn token_with_user(&self, digest: &str) -> crate::Result<Option<TokenWithUser>> {
        self.token_and_owner(
            "personal_access_tokens",
            "t.id AS t_id, t.scopes AS t_scopes, \
             t.revoked AS t_revoked, t.expires_at AS t_expires_at, t.last_used_at AS t_last_used_at",
            digest,
        )
        .await
    }

    /// The token of `table` (personal or OAuth access tokens) whose digest is `digest`, its
    /// `token_columns` (as `t`) beside its owner's user columns: what authenticating a request
    /// reads.
    pub(crate) async fn token_and_owner<T>(
        &self,
        table: &str,
        token_columns: &str,
        digest: &str,
    ) -> crate::Result<Option<T>>
    where
        T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
    {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {token_columns}, {} FROM {table} t \
             JOIN users u ON u.tenant_id = t.tenant_id AND u.id = t.user_id \
             WHERE t.tenant_id = $1 AND t.token_digest = $2",
                user_columns("u")
            )))
            .bind(digest)
            .fetch_optional(self.reader())
            .await?)
    }

    pub async fn touch_token(&self, id: i64) -> crate::Result<()> {
        sqlx::query(
            "UPDATE personal_access_tokens SET last_used_at = $1 WHERE tenant_id = $2 AND id = $3",
        )
        .bind(now_ms())
        .bind(self.tenant_id())
        .bind(id)
        .execute(self.writer())
        .await?;
        self.usage_recorded();
        Ok(())
    }

    pub async fn token_by_id(&self, id: i64) -> crate::Result<Option<TokenRow>> {
        self.find_by_id("personal_access_tokens", TOKEN_COLUMNS, id)
            .await
    }

    pub async fn count_tokens(&self, filter: &TokenFilter, cap: i64) -> crate::Result<i64> {
        let scope = |sql: &mut Sql| filter.apply(sql, self.tenant_id());
        self.count_up_to("personal_access_tokens", scope, cap).await
    }

    pub async fn list_tokens(
        &self,
        filter: &TokenFilter,
        window: &Window,
    ) -> crate::Result<Vec<TokenRow>> {
        let scope = |sql: &mut Sql| filter.apply(sql, self.tenant_id());
        self.page(TOKEN_COLUMNS, "personal_access_tokens", scope, window, "")
            .await
    }

    /// Revokes token `id` as `actor`; whether it was still valid.
    pub async fn revoke_token(&self, id: i64, actor: i64) -> crate::Result<bool> {
        let mut tx = self.writer().begin().await?;
        let revoked: Option<TokenRow> = self
            .query_as(AssertSqlSafe(format!(
                "UPDATE personal_access_tokens SET revoked = 1 WHERE tenant_id = $1 AND id = $2 AND revoked = 0 \
                 RETURNING {TOKEN_COLUMNS}"
            )))
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = &revoked {
            let event = Event::new(EventKind::TokenRevoked, Some(actor), id).after(row);
            outbox::record(&mut tx, self.tenant_id(), &[event]).await?;
        }
        tx.commit().await?;
        self.auth_changed().await;
        Ok(revoked.is_some())
    }
}
