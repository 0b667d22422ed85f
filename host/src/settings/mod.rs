//! Application settings as the rest of the server reads them: stored overrides on top of
//! GitLab's defaults, cached per tenant for at most `--settings-cache-seconds`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::store::TenantDb;

#[derive(Debug, Clone)]
pub struct Settings {
    pub id: i64,
    pub created_at: i64,
    pub updated_at: i64,
    values: Map<String, Value>,
}

/// GitLab's default for the settings the server reads.
fn default_value(key: &str) -> Value {
    match key {
        "admin_mode" => json!(false),
        "personal_access_token_prefix" => json!("glpat-"),
        _ => Value::Null,
    }
}

impl Settings {
    pub fn from_stored(id: i64, created_at: i64, updated_at: i64, data: &str) -> Settings {
        let values = serde_json::from_str::<Map<String, Value>>(data).unwrap_or_default();
        Settings {
            id,
            created_at,
            updated_at,
            values,
        }
    }

    pub fn value(&self, key: &str) -> Value {
        self.values.get(key).cloned().unwrap_or_else(|| default_value(key))
    }

    pub fn bool(&self, key: &str) -> bool {
        self.value(key).as_bool().unwrap_or(false)
    }

    pub fn string(&self, key: &str) -> String {
        match self.value(key) {
            Value::String(s) => s,
            _ => String::new(),
        }
    }
}

pub struct SettingsCache {
    ttl: Duration,
    entries: Mutex<HashMap<i64, (Instant, Arc<Settings>)>>,
}

impl SettingsCache {
    pub fn new(ttl: Duration) -> Self {
        SettingsCache {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub async fn get(&self, db: &TenantDb) -> sqlx::Result<Arc<Settings>> {
        let tenant = db.tenant_id();
        if let Some((loaded, settings)) = self.entries.lock().expect("settings cache").get(&tenant)
            && loaded.elapsed() < self.ttl
        {
            return Ok(settings.clone());
        }
        let settings = Arc::new(match db.load_settings().await? {
            Some(row) => Settings::from_stored(row.id, row.created_at, row.updated_at, &row.data),
            None => Settings::from_stored(1, 0, 0, "{}"),
        });
        self.entries
            .lock()
            .expect("settings cache")
            .insert(tenant, (Instant::now(), settings.clone()));
        Ok(settings)
    }
}
