//! `GET` and `PUT /application/settings`, administrators only. A PUT is validated as a whole
//! against the merged result (stored values plus the update) and written once; unknown keys
//! are ignored. The writing process replaces its cache entry, so it sees the change at once.

use std::sync::Arc;

use crate::http::routes::Router;
use axum::Json;
use axum::routing::get;
use serde_json::{Map, Value};

use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::request::Api;
use crate::model::now_ms;
use crate::settings::{self, Settings, validate};
use crate::views;

pub fn router() -> Router<ApiContext> {
    Router::new().route("/api/v4/application/settings", get(show).put(update))
}

/// The stored row (created on first use) and its settings, as the primary sees them.
async fn current(api: &Api) -> ApiResult<(Settings, String)> {
    let db = api.db();
    let row = match db.load_settings_for_update().await? {
        Some(row) => row,
        None => {
            db.ensure_settings().await?;
            db.load_settings_for_update().await?.ok_or_else(|| {
                ApiError::Internal(anyhow::anyhow!("settings row missing after insert"))
            })?
        }
    };
    let settings = Settings::from_stored(row.id, row.created_at, row.updated_at, &row.data);
    Ok((settings, row.data))
}

async fn show(api: Api) -> ApiResult<Json<Value>> {
    api.admin()?;
    // Administrators read the stored row, not the cache: what they see is what is stored.
    let (settings, _) = current(&api).await?;
    Ok(Json(views::settings::settings(&settings)))
}

async fn update(api: Api) -> ApiResult<Json<Value>> {
    api.admin()?;
    let db = api.db();
    // Optimistic concurrency: a PUT racing another process's PUT re-reads and re-validates.
    for _ in 0..5 {
        let (settings, old_data) = current(&api).await?;
        let stored: Map<String, Value> = serde_json::from_str(&old_data).unwrap_or_default();
        let change = validate::validate(&api.params, &stored)?;
        let data = settings::apply(&stored, change, &api.ctx.secret_key);
        let new_data = serde_json::to_string(&data).map_err(|e| ApiError::Internal(e.into()))?;
        let updated_at = now_ms().max(settings.updated_at + 1);
        if db
            .replace_settings(&old_data, &new_data, updated_at)
            .await?
        {
            let fresh = Arc::new(Settings::from_stored(
                settings.id,
                settings.created_at,
                updated_at,
                &new_data,
            ));
            api.ctx.settings.put(api.tenant.id, fresh.clone());
            return Ok(Json(views::settings::settings(&fresh)));
        }
    }
    Err(ApiError::Conflict(
        "409 Conflict - settings changed concurrently, retry".into(),
    ))
}
