//! Plugin catalog, hook bindings, spam logs and user agent details.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::{Db, TenantDb, ids::next_id, now_ms};
use crate::invalidation::Invalidation;
use crate::model::plugins::{BindingRow, PluginRow};

const PLUGIN_COLUMNS: &str =
    "id, sha256, name, version, world, api_version, size, built_in, created_at";

/// A new catalog entry; `content` is `None` for built-ins (embedded in the binary).
pub struct NewPlugin<'a> {
    pub sha256: &'a str,
    pub name: &'a str,
    pub version: Option<&'a str>,
    pub world: &'a str,
    pub api_version: &'a str,
    pub size: i64,
    pub content: Option<&'a [u8]>,
}

const BINDING_SELECT: &str = "SELECT b.tenant_id, b.hook, b.plugin_id, p.sha256, p.name, \
     p.version, b.config, b.failure_policy, b.timeout_ms, b.fuel, b.memory_bytes, b.outbound_http, b.updated_at \
     FROM plugin_bindings b JOIN plugins p ON p.tenant_id = b.tenant_id AND p.id = b.plugin_id";

pub struct NewBinding<'a> {
    pub hook: &'a str,
    pub plugin_id: i64,
    pub config: &'a str,
    pub failure_policy: &'a str,
    pub timeout_ms: i64,
    pub fuel: Option<i64>,
    pub memory_bytes: i64,
    pub outbound_http: Option<String>,
}

pub struct SpamLogEntry<'a> {
    pub user_id: i64,
    pub source_ip: Option<&'a str>,
    pub user_agent: Option<&'a str>,
    pub noteable_type: &'a str,
    pub title: &'a str,
    pub description: &'a str,
    pub verdict: Option<&'a str>,
    pub reason: &'a str,
    pub plugin: &'a str,
}

impl Db {
    /// Every tenant's bindings, in a stable order (compared between polls).
    pub async fn all_plugin_bindings(&self) -> crate::Result<Vec<BindingRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{BINDING_SELECT} ORDER BY b.tenant_id, b.hook"
        )))
        .fetch_all(self.reader())
        .await?)
    }
}

impl TenantDb {
    pub async fn list_plugins(&self) -> crate::Result<Vec<PluginRow>> {
        Ok(self
            .query_as(sqlx::AssertSqlSafe(format!(
                "SELECT {PLUGIN_COLUMNS} FROM plugins WHERE tenant_id = $1 ORDER BY id"
            )))
            .fetch_all(self.reader())
            .await?)
    }

    pub async fn plugin(&self, id: i64) -> crate::Result<Option<PluginRow>> {
        Ok(self
            .query_as(sqlx::AssertSqlSafe(format!(
                "SELECT {PLUGIN_COLUMNS} FROM plugins WHERE tenant_id = $1 AND id = $2"
            )))
            .bind(id)
            .fetch_optional(self.reader())
            .await?)
    }

    pub async fn plugin_by_sha256(&self, sha256: &str) -> crate::Result<Option<PluginRow>> {
        Ok(self
            .query_as(sqlx::AssertSqlSafe(format!(
                "SELECT {PLUGIN_COLUMNS} FROM plugins WHERE tenant_id = $1 AND sha256 = $2"
            )))
            .bind(sha256)
            .fetch_optional(self.reader())
            .await?)
    }

    /// An uploaded plugin's binary.
    pub async fn plugin_content(&self, sha256: &str) -> anyhow::Result<Option<Vec<u8>>> {
        let content: Option<Option<String>> = self
            .query_scalar("SELECT content FROM plugins WHERE tenant_id = $1 AND sha256 = $2")
            .bind(sha256)
            .fetch_optional(self.reader())
            .await?;
        match content.flatten() {
            Some(text) => Ok(Some(STANDARD.decode(text)?)),
            None => Ok(None),
        }
    }

    /// Adds a plugin to the catalog, or returns the entry with the same sha256 (`false`).
    pub async fn insert_plugin(&self, new: &NewPlugin<'_>) -> crate::Result<(PluginRow, bool)> {
        if let Some(existing) = self.plugin_by_sha256(new.sha256).await? {
            return Ok((existing, false));
        }
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "plugins").await?;
        let inserted = self.query(
            "INSERT INTO plugins (tenant_id, id, sha256, name, version, world, api_version, size, \
             built_in, content, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
             ON CONFLICT (tenant_id, sha256) DO NOTHING",
        )
        .bind(id)
        .bind(new.sha256)
        .bind(new.name)
        .bind(new.version)
        .bind(new.world)
        .bind(new.api_version)
        .bind(new.size)
        .bind(i64::from(new.content.is_none()))
        .bind(new.content.map(|c| STANDARD.encode(c)))
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        let row = self
            .plugin_by_sha256(new.sha256)
            .await?
            .ok_or(sqlx::Error::RowNotFound)?;
        Ok((row, inserted.rows_affected() == 1))
    }

    /// Deletes an unbound plugin; `false` when it is bound (nothing deleted).
    pub async fn delete_plugin(&self, id: i64) -> crate::Result<bool> {
        let done = self
            .query(
                "DELETE FROM plugins WHERE tenant_id = $1 AND id = $2 AND NOT EXISTS \
             (SELECT 1 FROM plugin_bindings b WHERE b.tenant_id = $1 AND b.plugin_id = $2)",
            )
            .bind(id)
            .execute(self.writer())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn plugin_bindings(&self) -> crate::Result<Vec<BindingRow>> {
        Ok(self
            .query_as(sqlx::AssertSqlSafe(format!(
                "{BINDING_SELECT} WHERE b.tenant_id = $1 ORDER BY b.hook"
            )))
            .fetch_all(self.reader())
            .await?)
    }

    pub async fn bind_plugin(&self, new: &NewBinding<'_>) -> crate::Result<()> {
        let now = now_ms();
        self.query(
            "INSERT INTO plugin_bindings (tenant_id, hook, plugin_id, config, failure_policy, \
             timeout_ms, fuel, memory_bytes, outbound_http, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $10, $9, $9) \
             ON CONFLICT (tenant_id, hook) DO UPDATE SET plugin_id = $3, config = $4, \
             failure_policy = $5, timeout_ms = $6, fuel = $7, memory_bytes = $8, \
             outbound_http = $10, updated_at = $9",
        )
        .bind(new.hook)
        .bind(new.plugin_id)
        .bind(new.config)
        .bind(new.failure_policy)
        .bind(new.timeout_ms)
        .bind(new.fuel)
        .bind(new.memory_bytes)
        .bind(now)
        .bind(new.outbound_http.as_deref())
        .execute(self.writer())
        .await?;
        self.bindings_changed().await;
        Ok(())
    }

    /// `false` when the hook had no binding.
    pub async fn unbind_plugin(&self, hook: &str) -> crate::Result<bool> {
        let done = self
            .query("DELETE FROM plugin_bindings WHERE tenant_id = $1 AND hook = $2")
            .bind(hook)
            .execute(self.writer())
            .await?;
        let unbound = done.rows_affected() == 1;
        if unbound {
            self.bindings_changed().await;
        }
        Ok(unbound)
    }

    async fn bindings_changed(&self) {
        self.announce(Invalidation::PluginBindings {
            tenant_id: self.tenant_id(),
        })
        .await;
    }

    pub async fn insert_spam_log(&self, entry: &SpamLogEntry<'_>) -> crate::Result<i64> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "spam_logs").await?;
        let now = now_ms();
        self.query(
            "INSERT INTO spam_logs (tenant_id, id, user_id, source_ip, user_agent, via_api, \
             noteable_type, title, description, verdict, reason, plugin, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, 1, $6, $7, $8, $9, $10, $11, $12, $12)",
        )
        .bind(id)
        .bind(entry.user_id)
        .bind(entry.source_ip)
        .bind(entry.user_agent)
        .bind(entry.noteable_type)
        .bind(entry.title)
        .bind(entry.description)
        .bind(entry.verdict)
        .bind(entry.reason)
        .bind(entry.plugin)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(id)
    }
}
