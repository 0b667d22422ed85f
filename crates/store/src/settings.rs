//! The per-tenant application settings row: the values that differ from the defaults, as JSON.

use super::{TenantDb, now_ms};
use crate::invalidation::Invalidation;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SettingsRow {
    pub id: i64,
    pub data: String,
    pub created_at: i64,
    pub updated_at: i64,
}

impl TenantDb {
    pub async fn load_settings(&self) -> crate::Result<Option<SettingsRow>> {
        Ok(self.query_as("SELECT id, data, created_at, updated_at FROM application_settings WHERE tenant_id = $1")
            .fetch_optional(self.reader())
            .await?)
    }

    /// Creates the tenant's settings row if it has none.
    pub async fn ensure_settings(&self) -> crate::Result<()> {
        let now = now_ms();
        Ok(self
            .query(
                "INSERT INTO application_settings (tenant_id, id, data, created_at, updated_at) \
             VALUES ($1, 1, '{}', $2, $2) ON CONFLICT (tenant_id) DO NOTHING",
            )
            .bind(now)
            .execute(self.writer())
            .await
            .map(|_| ())?)
    }

    /// The row as the primary sees it (for read-modify-write).
    pub async fn load_settings_for_update(&self) -> crate::Result<Option<SettingsRow>> {
        Ok(self.query_as("SELECT id, data, created_at, updated_at FROM application_settings WHERE tenant_id = $1")
            .fetch_optional(self.writer())
            .await?)
    }

    /// Replaces the data if it is still `old_data` (optimistic concurrency: a concurrent PUT
    /// from another process makes this return `false`, and the caller retries on fresh data).
    pub async fn replace_settings(
        &self,
        old_data: &str,
        new_data: &str,
        updated_at: i64,
    ) -> crate::Result<bool> {
        let result = sqlx::query(
            "UPDATE application_settings SET data = $1, updated_at = $2 WHERE tenant_id = $3 AND data = $4",
        )
        .bind(new_data)
        .bind(updated_at)
        .bind(self.tenant_id())
        .bind(old_data)
        .execute(self.writer())
        .await?;
        let replaced = result.rows_affected() == 1;
        if replaced {
            self.announce(Invalidation::Settings {
                tenant_id: self.tenant_id(),
            })
            .await;
        }
        Ok(replaced)
    }
}
