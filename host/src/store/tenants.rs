//! The tenants table. Tenants are not tenant-scoped data, so these live on [`Db`].

use super::{Db, now_ms};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TenantRow {
    pub id: i64,
    pub host: String,
    pub created_at: i64,
}

/// The tenant that answers every host no other tenant claims.
pub const DEFAULT_TENANT_HOST: &str = "";

impl Db {
    pub async fn list_tenants(&self) -> sqlx::Result<Vec<TenantRow>> {
        sqlx::query_as("SELECT id, host, created_at FROM tenants ORDER BY id")
            .fetch_all(self.reader())
            .await
    }

    pub async fn find_tenant(&self, host: &str) -> sqlx::Result<Option<TenantRow>> {
        sqlx::query_as("SELECT id, host, created_at FROM tenants WHERE host = $1")
            .bind(host)
            .fetch_optional(self.reader())
            .await
    }

    /// Inserts a tenant row; the caller bootstraps its root user and settings.
    pub async fn insert_tenant(&self, host: &str) -> sqlx::Result<TenantRow> {
        let mut tx = self.writer().begin().await?;
        let id: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) + 1 FROM tenants")
            .fetch_one(&mut *tx)
            .await?;
        let row = sqlx::query_as(
            "INSERT INTO tenants (id, host, created_at) VALUES ($1, $2, $3) RETURNING id, host, created_at",
        )
        .bind(id)
        .bind(host)
        .bind(now_ms())
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(row)
    }
}
