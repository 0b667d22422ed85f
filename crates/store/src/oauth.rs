//! OAuth applications, authorization codes (grants) and access/refresh tokens. Secrets, codes
//! and tokens are stored as SHA-256 digests only; every lookup goes by digest.

use sqlx::AssertSqlSafe;

use super::{TenantDb, ids::next_id, now_ms};
use crate::model::oauth::ApplicationRow;
use crate::model::users::UserRow;

const APPLICATION_COLUMNS: &str =
    "id, owner_id, name, uid, secret_digest, redirect_uri, scopes, confidential, created_at";

/// The editable fields of an application.
pub struct ApplicationFields<'a> {
    pub name: &'a str,
    pub redirect_uri: &'a str,
    pub scopes: &'a str,
    pub confidential: bool,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct GrantRow {
    pub id: i64,
    pub application_id: i64,
    pub user_id: i64,
    pub redirect_uri: String,
    pub scopes: String,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub nonce: Option<String>,
    pub expires_at: i64,
    pub used_at: Option<i64>,
}

pub struct NewGrant<'a> {
    pub application_id: i64,
    pub user_id: i64,
    pub code_digest: &'a str,
    pub redirect_uri: &'a str,
    pub scopes: &'a str,
    pub code_challenge: Option<&'a str>,
    pub code_challenge_method: Option<&'a str>,
    pub nonce: Option<&'a str>,
    pub expires_at: i64,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AccessTokenRow {
    pub id: i64,
    pub application_id: i64,
    pub user_id: i64,
    pub scopes: String,
    pub grant_id: Option<i64>,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub created_at: i64,
}

const ACCESS_TOKEN_COLUMNS: &str =
    "id, application_id, user_id, scopes, grant_id, expires_at, revoked_at, created_at";

impl AccessTokenRow {
    pub fn is_active(&self, now: i64) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|at| at > now)
    }
}

pub struct NewAccessToken<'a> {
    pub application_id: i64,
    pub user_id: i64,
    pub token_digest: &'a str,
    pub refresh_digest: Option<&'a str>,
    pub scopes: &'a str,
    pub grant_id: Option<i64>,
    pub expires_at: Option<i64>,
}

/// An OAuth access token and its owner, read in one statement on the authentication path.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OauthTokenWithUser {
    pub t_id: i64,
    pub t_scopes: String,
    pub t_expires_at: Option<i64>,
    pub t_revoked_at: Option<i64>,
    #[sqlx(flatten)]
    pub user: UserRow,
}

/// How an exchange of a code or a refresh token ended.
pub enum Exchange {
    Issued(AccessTokenRow),
    /// The code or refresh token had already been used (replay, or a lost refresh race).
    AlreadyUsed,
}

impl TenantDb {
    pub async fn insert_application(
        &self,
        owner_id: Option<i64>,
        uid: &str,
        secret_digest: &str,
        fields: &ApplicationFields<'_>,
    ) -> crate::Result<ApplicationRow> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "oauth_applications").await?;
        let now = now_ms();
        let row = self.query_as(AssertSqlSafe(format!(
            "INSERT INTO oauth_applications (tenant_id, id, owner_id, name, uid, secret_digest, \
             redirect_uri, scopes, confidential, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) RETURNING {APPLICATION_COLUMNS}"
        )))
        .bind(id)
        .bind(owner_id)
        .bind(fields.name)
        .bind(uid)
        .bind(secret_digest)
        .bind(fields.redirect_uri)
        .bind(fields.scopes)
        .bind(i64::from(fields.confidential))
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(row)
    }

    pub async fn update_application(
        &self,
        id: i64,
        fields: &ApplicationFields<'_>,
    ) -> crate::Result<()> {
        Ok(sqlx::query(
            "UPDATE oauth_applications SET name = $1, redirect_uri = $2, scopes = $3, \
             confidential = $4, updated_at = $5 WHERE tenant_id = $6 AND id = $7",
        )
        .bind(fields.name)
        .bind(fields.redirect_uri)
        .bind(fields.scopes)
        .bind(i64::from(fields.confidential))
        .bind(now_ms())
        .bind(self.tenant_id())
        .bind(id)
        .execute(self.writer())
        .await
        .map(|_| ())?)
    }

    pub async fn renew_application_secret(&self, id: i64, digest: &str) -> crate::Result<()> {
        Ok(sqlx::query(
            "UPDATE oauth_applications SET secret_digest = $1, updated_at = $2 \
             WHERE tenant_id = $3 AND id = $4",
        )
        .bind(digest)
        .bind(now_ms())
        .bind(self.tenant_id())
        .bind(id)
        .execute(self.writer())
        .await
        .map(|_| ())?)
    }

    /// Deletes an application with its codes and tokens (cascade).
    pub async fn delete_application(&self, id: i64) -> crate::Result<bool> {
        let mut tx = self.writer().begin().await?;
        for table in ["oauth_access_tokens", "oauth_access_grants"] {
            self.query(AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE tenant_id = $1 AND application_id = $2"
            )))
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        let done = self
            .query("DELETE FROM oauth_applications WHERE tenant_id = $1 AND id = $2")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.auth_changed().await;
        Ok(done.rows_affected() == 1)
    }

    pub async fn application_by_id(&self, id: i64) -> crate::Result<Option<ApplicationRow>> {
        self.find_by_id("oauth_applications", APPLICATION_COLUMNS, id)
            .await
    }

    pub async fn application_by_uid(&self, uid: &str) -> crate::Result<Option<ApplicationRow>> {
        Ok(self.query_as(AssertSqlSafe(format!(
            "SELECT {APPLICATION_COLUMNS} FROM oauth_applications WHERE tenant_id = $1 AND uid = $2"
        )))
        .bind(uid)
        .fetch_optional(self.reader())
        .await?)
    }

    /// The applications a user owns, or with `None` the instance-wide ones (no owner).
    pub async fn applications_of(
        &self,
        owner_id: Option<i64>,
    ) -> crate::Result<Vec<ApplicationRow>> {
        let owner = if owner_id.is_some() {
            "owner_id = $2"
        } else {
            "owner_id IS NULL"
        };
        let sql = format!(
            "SELECT {APPLICATION_COLUMNS} FROM oauth_applications WHERE tenant_id = $1 AND {owner} ORDER BY id"
        );
        let mut query = self.query_as(AssertSqlSafe(sql));
        if let Some(owner_id) = owner_id {
            query = query.bind(owner_id);
        }
        Ok(query.fetch_all(self.reader()).await?)
    }

    pub async fn insert_grant(&self, grant: NewGrant<'_>) -> crate::Result<i64> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "oauth_access_grants").await?;
        self.query(
            "INSERT INTO oauth_access_grants (tenant_id, id, application_id, user_id, code_digest, \
             redirect_uri, scopes, code_challenge, code_challenge_method, nonce, expires_at, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(id)
        .bind(grant.application_id)
        .bind(grant.user_id)
        .bind(grant.code_digest)
        .bind(grant.redirect_uri)
        .bind(grant.scopes)
        .bind(grant.code_challenge)
        .bind(grant.code_challenge_method)
        .bind(grant.nonce)
        .bind(grant.expires_at)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(id)
    }

    pub async fn grant_by_code(&self, code_digest: &str) -> crate::Result<Option<GrantRow>> {
        Ok(self
            .query_as(
                "SELECT id, application_id, user_id, redirect_uri, scopes, code_challenge, \
             code_challenge_method, nonce, expires_at, used_at FROM oauth_access_grants \
             WHERE tenant_id = $1 AND code_digest = $2",
            )
            .bind(code_digest)
            .fetch_optional(self.reader())
            .await?)
    }

    /// Marks a code used and issues its token in one transaction. A code that was already
    /// used (a replay, or the loser of two concurrent exchanges) issues nothing.
    pub async fn exchange_grant(
        &self,
        grant_id: i64,
        token: NewAccessToken<'_>,
    ) -> crate::Result<Exchange> {
        self.claim_and_issue(
            "UPDATE oauth_access_grants SET used_at = $1 WHERE tenant_id = $2 AND id = $3 AND used_at IS NULL",
            grant_id,
            token,
        )
        .await
    }

    /// Revokes every token issued from a code (directly or by refreshing): what a replayed
    /// code triggers.
    pub async fn revoke_tokens_of_grant(&self, grant_id: i64) -> crate::Result<()> {
        self.stamp_auth(
            "UPDATE oauth_access_tokens SET revoked_at = $1 \
             WHERE tenant_id = $2 AND grant_id = $3 AND revoked_at IS NULL",
            &[grant_id],
        )
        .await?;
        Ok(())
    }

    pub async fn insert_access_token(
        &self,
        token: NewAccessToken<'_>,
    ) -> crate::Result<AccessTokenRow> {
        let mut tx = self.writer().begin().await?;
        let row = insert_access_token(&mut tx, self.tenant_id(), token).await?;
        tx.commit().await?;
        self.auth_changed().await;
        Ok(row)
    }

    /// Refresh-token rotation: revokes `old_id` (access and refresh token at once) and issues
    /// its successor, in one transaction. Of concurrent refreshes only one wins the revocation.
    pub async fn rotate_access_token(
        &self,
        old_id: i64,
        token: NewAccessToken<'_>,
    ) -> crate::Result<Exchange> {
        self.claim_and_issue(
            "UPDATE oauth_access_tokens SET revoked_at = $1 WHERE tenant_id = $2 AND id = $3 AND revoked_at IS NULL",
            old_id,
            token,
        )
        .await
    }

    /// Runs `claim` (an UPDATE of row `id` that only matches while it is unclaimed) and, when
    /// it claimed the row, issues `token` in the same transaction: of concurrent exchanges of
    /// one code or refresh token exactly one wins.
    async fn claim_and_issue(
        &self,
        claim: &'static str,
        id: i64,
        token: NewAccessToken<'_>,
    ) -> crate::Result<Exchange> {
        let mut tx = self.writer().begin().await?;
        let done = sqlx::query(claim)
            .bind(now_ms())
            .bind(self.tenant_id())
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() != 1 {
            return Ok(Exchange::AlreadyUsed);
        }
        let row = insert_access_token(&mut tx, self.tenant_id(), token).await?;
        tx.commit().await?;
        self.auth_changed().await;
        Ok(Exchange::Issued(row))
    }

    pub async fn access_token_by_digest(
        &self,
        digest: &str,
    ) -> crate::Result<Option<AccessTokenRow>> {
        self.access_token_where("token_digest", digest).await
    }

    pub async fn access_token_by_refresh(
        &self,
        digest: &str,
    ) -> crate::Result<Option<AccessTokenRow>> {
        self.access_token_where("refresh_digest", digest).await
    }

    async fn access_token_where(
        &self,
        column: &'static str,
        digest: &str,
    ) -> crate::Result<Option<AccessTokenRow>> {
        Ok(self.query_as(AssertSqlSafe(format!(
            "SELECT {ACCESS_TOKEN_COLUMNS} FROM oauth_access_tokens WHERE tenant_id = $1 AND {column} = $2"
        )))
        .bind(digest)
        .fetch_optional(self.reader())
        .await?)
    }

    pub async fn revoke_access_token(&self, id: i64) -> crate::Result<bool> {
        let revoked = self.stamp_auth(
            "UPDATE oauth_access_tokens SET revoked_at = $1 WHERE tenant_id = $2 AND id = $3 AND revoked_at IS NULL",
            &[id],
        )
        .await?;
        Ok(revoked == 1)
    }

    /// Whether the user already approved this application with exactly these scopes: a token
    /// of theirs for it that is not revoked carries the same scope set (Doorkeeper's
    /// `matching_token_for`).
    pub async fn has_matching_token(
        &self,
        application_id: i64,
        user_id: i64,
        scopes: &[&str],
    ) -> crate::Result<bool> {
        let rows: Vec<String> = self.query_scalar(
            "SELECT scopes FROM oauth_access_tokens WHERE tenant_id = $1 AND application_id = $2 \
             AND user_id = $3 AND revoked_at IS NULL",
        )
        .bind(application_id)
        .bind(user_id)
        .fetch_all(self.reader())
        .await?;
        let mut wanted: Vec<&str> = scopes.to_vec();
        wanted.sort_unstable();
        wanted.dedup();
        Ok(rows.iter().any(|stored| {
            let mut have: Vec<&str> = stored.split_whitespace().collect();
            have.sort_unstable();
            have.dedup();
            have == wanted
        }))
    }

    /// The applications a user has live (non-revoked) tokens for: what they authorized.
    pub async fn authorized_applications(
        &self,
        user_id: i64,
    ) -> crate::Result<Vec<ApplicationRow>> {
        let columns = APPLICATION_COLUMNS
            .split(", ")
            .map(|c| format!("a.{c}"))
            .collect::<Vec<_>>()
            .join(", ");
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {columns} FROM oauth_applications a WHERE a.tenant_id = $1 AND EXISTS \
             (SELECT 1 FROM oauth_access_tokens t WHERE t.tenant_id = a.tenant_id \
             AND t.application_id = a.id AND t.user_id = $2 AND t.revoked_at IS NULL) ORDER BY a.id"
            )))
            .bind(user_id)
            .fetch_all(self.reader())
            .await?)
    }

    /// Revokes every token a user gave an application (their authorization of it).
    pub async fn revoke_authorization(
        &self,
        application_id: i64,
        user_id: i64,
    ) -> crate::Result<bool> {
        let revoked = self
            .stamp_auth(
                "UPDATE oauth_access_tokens SET revoked_at = $1 WHERE tenant_id = $2 \
             AND application_id = $3 AND user_id = $4 AND revoked_at IS NULL",
                &[application_id, user_id],
            )
            .await?;
        Ok(revoked > 0)
    }

    /// The tenant's ID-token signing key: `(kid, encrypted PKCS#8)`.
    pub async fn signing_key(&self) -> crate::Result<Option<(String, String)>> {
        Ok(self
            .query_as("SELECT kid, private_key FROM oauth_signing_keys WHERE tenant_id = $1")
            .fetch_optional(self.reader())
            .await?)
    }

    /// Stores a signing key unless another request stored one first.
    pub async fn insert_signing_key(&self, kid: &str, private_key: &str) -> crate::Result<()> {
        Ok(self
            .query(
                "INSERT INTO oauth_signing_keys (tenant_id, kid, private_key, created_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id) DO NOTHING",
            )
            .bind(kid)
            .bind(private_key)
            .bind(now_ms())
            .execute(self.writer())
            .await
            .map(|_| ())?)
    }

    pub async fn oauth_token_with_user(
        &self,
        digest: &str,
    ) -> crate::Result<Option<OauthTokenWithUser>> {
        self.token_and_owner(
            "oauth_access_tokens",
            "t.id AS t_id, t.scopes AS t_scopes, t.expires_at AS t_expires_at, \
             t.revoked_at AS t_revoked_at",
            digest,
        )
        .await
    }
}

async fn insert_access_token(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    tenant_id: i64,
    token: NewAccessToken<'_>,
) -> crate::Result<AccessTokenRow> {
    let id = next_id(&mut **tx, tenant_id, "oauth_access_tokens").await?;
    Ok(sqlx::query_as(AssertSqlSafe(format!(
        "INSERT INTO oauth_access_tokens (tenant_id, id, application_id, user_id, token_digest, \
         refresh_digest, scopes, grant_id, expires_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING {ACCESS_TOKEN_COLUMNS}"
    )))
    .bind(tenant_id)
    .bind(id)
    .bind(token.application_id)
    .bind(token.user_id)
    .bind(token.token_digest)
    .bind(token.refresh_digest)
    .bind(token.scopes)
    .bind(token.grant_id)
    .bind(token.expires_at)
    .bind(now_ms())
    .fetch_one(&mut **tx)
    .await?)
}
