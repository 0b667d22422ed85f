//! Reading and changing a tenant's application settings: what `GET|PUT /application/settings`
//! and the admin console's settings pages both do. A change is validated as a whole against
//! the merged result (stored values plus the update) and written once; unknown keys are
//! ignored. The writing process replaces its cache entry, so it sees the change at once;
//! other processes see it when their cache entry expires (`--settings-cache-seconds`).

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::context::ApiContext;
use crate::model::now_ms;
use crate::services::Refusal;
use crate::settings::validate::{self, SettingsUpdate};
use crate::settings::{self, Settings};
use crate::tenants::Tenant;

/// The stored row (created on first use) and its settings, as the primary sees them.
async fn current_with_data(tenant: &Tenant) -> Result<(Settings, String), Refusal> {
    let db = &tenant.db;
    let row = match db.load_settings_for_update().await? {
        Some(row) => row,
        None => {
            db.ensure_settings().await?;
            db.load_settings_for_update().await?.ok_or_else(|| {
                Refusal::Internal(anyhow::anyhow!("settings row missing after insert"))
            })?
        }
    };
    let settings = Settings::from_stored(row.id, row.created_at, row.updated_at, &row.data);
    Ok((settings, row.data))
}

/// What is stored now (administrators read the row, not the cache: what they see is what is
/// stored).
pub async fn current(tenant: &Tenant) -> Result<Settings, Refusal> {
    Ok(current_with_data(tenant).await?.0)
}

/// Checks `update` against what is stored (the model rules on the merged result) and writes
/// it.
pub async fn update(
    ctx: &ApiContext,
    tenant: &Tenant,
    update: &SettingsUpdate,
) -> Result<Arc<Settings>, Refusal> {
    // Optimistic concurrency: an update racing another process's re-reads and re-validates.
    for _ in 0..5 {
        let (settings, old_data) = current_with_data(tenant).await?;
        let stored: Map<String, Value> = serde_json::from_str(&old_data).unwrap_or_default();
        let change = validate::validate(update, &stored)?;
        let data = settings::apply(&stored, change, &ctx.secret_key);
        let new_data = serde_json::to_string(&data).map_err(|e| Refusal::Internal(e.into()))?;
        let updated_at = now_ms().max(settings.updated_at + 1);
        if tenant
            .db
            .replace_settings(&old_data, &new_data, updated_at)
            .await?
        {
            let fresh = Arc::new(Settings::from_stored(
                settings.id,
                settings.created_at,
                updated_at,
                &new_data,
            ));
            ctx.settings.put(tenant.id, fresh.clone());
            return Ok(fresh);
        }
    }
    Err(Refusal::Conflict(
        "409 Conflict - settings changed concurrently, retry".into(),
    ))
}
