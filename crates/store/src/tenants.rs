//! The tenants table. Tenants are not tenant-scoped data, so these live on [`Db`].

use super::{Db, TenantDb, now_ms};
use crate::invalidation::Invalidation;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TenantRow {
    pub id: i64,
    pub host: String,
    /// When the operator suspended it (`trellis tenant suspend`, or a scheduled deletion).
    pub suspended_at: Option<i64>,
    /// When its scheduled deletion is due.
    pub delete_after: Option<i64>,
    /// When it was purged: its rows and files are gone, its host released.
    pub deleted_at: Option<i64>,
    #[sqlx(flatten)]
    pub quotas: TenantQuotas,
}

/// The operator's limits on a tenant (`trellis tenant quota`); `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct TenantQuotas {
    /// Its projects' repositories and uploads together, in bytes.
    pub max_storage_bytes: Option<i64>,
    pub max_projects: Option<i64>,
    /// Human users (bots and the ghost user do not count).
    pub max_users: Option<i64>,
    /// Requests per second to the whole tenant, from all clients together.
    pub max_requests_per_second: Option<i64>,
    /// Its plugin instances running at once (its share of the plugin CPU); lowers the
    /// operator's per-tenant default, never raises it.
    pub max_plugin_instances: Option<i64>,
}

/// A tenant's quotas and what it uses of them.
#[derive(Debug, Clone, Copy)]
pub struct QuotaUsage {
    pub quotas: TenantQuotas,
    pub projects: i64,
    pub users: i64,
    /// Its projects' `storage_size` plus its uploads' sizes.
    pub storage_bytes: i64,
}

const TENANT_COLUMNS: &str = "id, host, suspended_at, delete_after, deleted_at, \
     max_storage_bytes, max_projects, max_users, max_requests_per_second, max_plugin_instances";

/// The tenant that answers every host no other tenant claims.
pub const DEFAULT_TENANT_HOST: &str = "";

impl Db {
    pub async fn list_tenants(&self) -> crate::Result<Vec<TenantRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {TENANT_COLUMNS} FROM tenants ORDER BY id"
        )))
        .fetch_all(self.reader())
        .await?)
    }

    pub async fn find_tenant(&self, host: &str) -> crate::Result<Option<TenantRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {TENANT_COLUMNS} FROM tenants WHERE host = $1"
        )))
        .bind(host)
        .fetch_optional(self.reader())
        .await?)
    }

    /// Inserts a tenant row; the caller bootstraps its root user and settings.
    pub async fn insert_tenant(&self, host: &str) -> crate::Result<TenantRow> {
        // One statement, not a read then a write in one transaction: on SQLite a transaction
        // that reads first cannot wait for the write lock (its upgrade fails at once with
        // "database is locked" when a running server wrote meanwhile); a lone write waits
        // for it under `busy_timeout`.
        let tenant = insert_tenant_row(self.writer(), host).await?;
        self.announce(Invalidation::Tenants).await;
        Ok(tenant)
    }

    /// Suspends the tenant (`Some(now)`) or lifts its suspension and any scheduled deletion
    /// (`None`); `false` when no live tenant has that id.
    pub async fn set_tenant_suspended(&self, id: i64, since: Option<i64>) -> crate::Result<bool> {
        let done = sqlx::query(
            "UPDATE tenants SET suspended_at = $1, delete_after = NULL \
             WHERE id = $2 AND deleted_at IS NULL",
        )
        .bind(since)
        .bind(id)
        .execute(self.writer())
        .await?;
        self.tenants_changed(done.rows_affected()).await
    }

    /// Suspends the tenant now and schedules its purge for `after`.
    pub async fn schedule_tenant_deletion(&self, id: i64, after: i64) -> crate::Result<bool> {
        let done = sqlx::query(
            "UPDATE tenants SET suspended_at = COALESCE(suspended_at, $1), delete_after = $2 \
             WHERE id = $3 AND deleted_at IS NULL",
        )
        .bind(now_ms())
        .bind(after)
        .bind(id)
        .execute(self.writer())
        .await?;
        self.tenants_changed(done.rows_affected()).await
    }

    /// Replaces the tenant's quotas; `false` when no live tenant has that id.
    pub async fn set_tenant_quotas(&self, id: i64, quotas: &TenantQuotas) -> crate::Result<bool> {
        let done = sqlx::query(
            "UPDATE tenants SET max_storage_bytes = $1, max_projects = $2, max_users = $3, \
             max_requests_per_second = $4, max_plugin_instances = $5 \
             WHERE id = $6 AND deleted_at IS NULL",
        )
        .bind(quotas.max_storage_bytes)
        .bind(quotas.max_projects)
        .bind(quotas.max_users)
        .bind(quotas.max_requests_per_second)
        .bind(quotas.max_plugin_instances)
        .bind(id)
        .execute(self.writer())
        .await?;
        self.tenants_changed(done.rows_affected()).await
    }

    /// Announces a change to the tenants table when `rows` changed; whether one did.
    async fn tenants_changed(&self, rows: u64) -> crate::Result<bool> {
        if rows == 0 {
            return Ok(false);
        }
        self.announce(Invalidation::Tenants).await;
        Ok(true)
    }

    pub async fn tenant_by_id(&self, id: i64) -> crate::Result<Option<TenantRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {TENANT_COLUMNS} FROM tenants WHERE id = $1"
        )))
        .bind(id)
        .fetch_optional(self.reader())
        .await?)
    }

    /// Tenants whose scheduled deletion is due at `now`.
    pub async fn tenants_due_for_deletion(&self, now: i64) -> crate::Result<Vec<i64>> {
        Ok(sqlx::query_scalar(
            "SELECT id FROM tenants WHERE delete_after IS NOT NULL AND delete_after <= $1 \
             AND deleted_at IS NULL ORDER BY id",
        )
        .bind(now)
        .fetch_all(self.reader())
        .await?)
    }

    /// Deletes every row of tenant `id` from every table that has a `tenant_id` (in one
    /// transaction), and marks the tenant deleted, releasing its host; `false` when its
    /// deletion is not (or no longer, or not yet) due, which leaves everything as it was. Tables are
    /// emptied in passes: one whose rows others still reference is tried again after them.
    pub async fn purge_tenant(&self, id: i64) -> crate::Result<bool> {
        let mut tx = self.writer().begin().await?;
        let marked = sqlx::query(
            "UPDATE tenants SET deleted_at = $1, host = $2 \
             WHERE id = $3 AND delete_after <= $1 AND deleted_at IS NULL",
        )
        .bind(now_ms())
        .bind(format!("#deleted-{id}"))
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if marked.rows_affected() == 0 {
            return Ok(false);
        }
        let tables_sql = match self.engine() {
            crate::Engine::Postgres => {
                "SELECT c.relname::text FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' \
                 WHERE c.relkind = 'r' AND n.nspname = current_schema() ORDER BY c.oid DESC"
            }
            crate::Engine::Sqlite => {
                "SELECT m.name FROM sqlite_master m WHERE m.type = 'table' AND EXISTS \
                 (SELECT 1 FROM pragma_table_info(m.name) p WHERE p.name = 'tenant_id') \
                 ORDER BY m.rowid DESC"
            }
        };
        let mut left: Vec<String> = sqlx::query_scalar(tables_sql).fetch_all(&mut *tx).await?;
        while !left.is_empty() {
            let tried = left.len();
            let mut referenced = Vec::new();
            for table in std::mem::take(&mut left) {
                sqlx::query("SAVEPOINT purge_table")
                    .execute(&mut *tx)
                    .await?;
                let delete = format!("DELETE FROM {table} WHERE tenant_id = $1");
                match sqlx::query(sqlx::AssertSqlSafe(delete))
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                {
                    Ok(_) => {
                        sqlx::query("RELEASE SAVEPOINT purge_table")
                            .execute(&mut *tx)
                            .await?;
                    }
                    Err(sqlx::Error::Database(error))
                        if error.kind() == sqlx::error::ErrorKind::ForeignKeyViolation =>
                    {
                        sqlx::query("ROLLBACK TO SAVEPOINT purge_table")
                            .execute(&mut *tx)
                            .await?;
                        referenced.push(table);
                    }
                    Err(error) => return Err(error.into()),
                }
            }
            if referenced.len() == tried {
                // Not one table could be emptied in a whole pass: rows that reference each
                // other across tables; fail rather than loop.
                return Err(sqlx::Error::Protocol(format!(
                    "the rows of tenant {id} in {} reference each other",
                    referenced.join(", ")
                ))
                .into());
            }
            left = referenced;
        }
        tx.commit().await?;
        self.announce(Invalidation::Tenants).await;
        Ok(true)
    }
}

/// Inserts a tenant row answering `host`, with the next tenant id, through `executor` (the
/// pool, or the transaction an import loads the tenant's rows in).
pub(crate) async fn insert_tenant_row<'e>(
    executor: impl sqlx::Executor<'e, Database = sqlx::Any>,
    host: &str,
) -> crate::Result<TenantRow> {
    Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO tenants (id, host, created_at) \
         SELECT COALESCE(MAX(id), 0) + 1, $1, $2 FROM tenants RETURNING {TENANT_COLUMNS}"
    )))
    .bind(host)
    .bind(now_ms())
    .fetch_one(executor)
    .await?)
}

impl TenantDb {
    /// The tenant's quotas, read now (a check before a write must not act on a registry that
    /// lags behind a change).
    pub async fn quotas(&self) -> crate::Result<TenantQuotas> {
        Ok(self
            .query_as(
                "SELECT max_storage_bytes, max_projects, max_users, max_requests_per_second, \
                 max_plugin_instances FROM tenants WHERE id = $1",
            )
            .fetch_one(self.reader())
            .await?)
    }

    /// The tenant's projects (those marked for deletion too: they hold their place until
    /// they are gone).
    pub async fn project_count(&self) -> crate::Result<i64> {
        Ok(self
            .query_scalar("SELECT COUNT(*) FROM projects WHERE tenant_id = $1")
            .fetch_one(self.reader())
            .await?)
    }

    /// The tenant's human users.
    pub async fn human_user_count(&self) -> crate::Result<i64> {
        Ok(self
            .query_scalar("SELECT COUNT(*) FROM users WHERE tenant_id = $1 AND user_type = 'human'")
            .fetch_one(self.reader())
            .await?)
    }

    /// Bytes the tenant stores: its projects' repositories (as last measured, after each
    /// push) and its uploads.
    pub async fn storage_bytes(&self) -> crate::Result<i64> {
        // PostgreSQL's SUM of BIGINT is NUMERIC, hence the casts.
        Ok(self
            .query_scalar(
                "SELECT CAST((SELECT COALESCE(SUM(storage_size), 0) FROM projects \
                 WHERE tenant_id = $1) AS BIGINT) + CAST((SELECT COALESCE(SUM(size), 0) \
                 FROM uploads WHERE tenant_id = $1) AS BIGINT)",
            )
            .fetch_one(self.reader())
            .await?)
    }

    /// The tenant's quotas with its usage of them.
    pub async fn quota_usage(&self) -> crate::Result<QuotaUsage> {
        Ok(QuotaUsage {
            quotas: self.quotas().await?,
            projects: self.project_count().await?,
            users: self.human_user_count().await?,
            storage_bytes: self.storage_bytes().await?,
        })
    }
}
