//! The tenants table. Tenants are not tenant-scoped data, so these live on [`Db`].

use super::{Db, now_ms};
use crate::invalidation::Invalidation;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TenantRow {
    pub id: i64,
    pub host: String,
}

/// The tenant that answers every host no other tenant claims.
pub const DEFAULT_TENANT_HOST: &str = "";

impl Db {
    pub async fn list_tenants(&self) -> crate::Result<Vec<TenantRow>> {
        Ok(sqlx::query_as("SELECT id, host FROM tenants ORDER BY id")
            .fetch_all(self.reader())
            .await?)
    }

    pub async fn find_tenant(&self, host: &str) -> crate::Result<Option<TenantRow>> {
        Ok(
            sqlx::query_as("SELECT id, host FROM tenants WHERE host = $1")
                .bind(host)
                .fetch_optional(self.reader())
                .await?,
        )
    }

    /// Inserts a tenant row; the caller bootstraps its root user and settings.
    pub async fn insert_tenant(&self, host: &str) -> crate::Result<TenantRow> {
        // One statement, not a read then a write in one transaction: on SQLite a transaction
        // that reads first cannot wait for the write lock (its upgrade fails at once with
        // "database is locked" when a running server wrote meanwhile); a lone write waits
        // for it under `busy_timeout`.
        let tenant = sqlx::query_as(
            "INSERT INTO tenants (id, host, created_at) \
             SELECT COALESCE(MAX(id), 0) + 1, $1, $2 FROM tenants \
             RETURNING id, host, created_at",
        )
        .bind(host)
        .bind(now_ms())
        .fetch_one(self.writer())
        .await?;
        self.announce(Invalidation::Tenants).await;
        Ok(tenant)
    }
}
