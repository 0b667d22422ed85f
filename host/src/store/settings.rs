//! The per-tenant application settings row: the values that differ from the defaults, as JSON.

use super::{TenantDb, now_ms};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SettingsRow {
    pub id: i64,
    pub data: String,
    pub created_at: i64,
    pub updated_at: i64,
}

impl TenantDb {
    pub async fn load_settings(&self) -> sqlx::Result<Option<SettingsRow>> {
        sqlx::query_as("SELECT id, data, created_at, updated_at FROM application_settings WHERE tenant_id = $1")
            .bind(self.tenant_id())
            .fetch_optional(self.reader())
            .await
    }

    /// Creates the tenant's settings row if it has none.
    pub async fn ensure_settings(&self) -> sqlx::Result<()> {
        let now = now_ms();
        sqlx::query(
            "INSERT INTO application_settings (tenant_id, id, data, created_at, updated_at) \
             VALUES ($1, 1, '{}', $2, $2) ON CONFLICT (tenant_id) DO NOTHING",
        )
        .bind(self.tenant_id())
        .bind(now)
        .execute(self.writer())
        .await
        .map(|_| ())
    }
}
