//! Application settings as the rest of the server reads them: stored overrides on top of
//! GitLab's defaults, cached per tenant for at most `--settings-cache-seconds`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub mod catalog;
pub mod crypto;
pub mod validate;

use serde_json::{Map, Value};

pub use crypto::SecretKey;

use crate::store::TenantDb;

#[derive(Debug, Clone)]
pub struct Settings {
    pub id: i64,
    pub created_at: i64,
    pub updated_at: i64,
    values: Map<String, Value>,
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

    /// The value of a setting (deprecated aliases read their replacement), else GitLab's
    /// default. Write-only secrets read as `null` here: use [`Settings::secret`].
    pub fn value(&self, key: &str) -> Value {
        let key = catalog::canonical(key);
        if catalog::entry(key).is_some_and(|e| e.secret) {
            return Value::Null;
        }
        self.values
            .get(key)
            .cloned()
            .unwrap_or_else(|| catalog::default_of(key))
    }

    /// The plaintext of a write-only secret, if one is set and `key` decrypts it.
    pub fn secret(&self, name: &str, key: &SecretKey) -> Option<String> {
        match self.values.get(catalog::canonical(name)) {
            Some(Value::String(stored)) => key.decrypt(stored),
            _ => None,
        }
    }

    /// Whether a write-only secret is set.
    pub fn has_secret(&self, name: &str) -> bool {
        matches!(self.values.get(catalog::canonical(name)), Some(Value::String(s)) if !s.is_empty())
    }

    /// The stored overrides (secrets encrypted).
    pub fn stored(&self) -> &Map<String, Value> {
        &self.values
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

/// The stored overrides after `update`: secrets encrypted with `key`, `null` secrets removed.
pub fn apply(
    stored: &Map<String, Value>,
    update: validate::Update,
    key: &SecretKey,
) -> Map<String, Value> {
    let mut data = stored.clone();
    for (name, value) in update {
        let secret = catalog::entry(&name).is_some_and(|e| e.secret);
        match value {
            Value::Null if secret => {
                data.remove(&name);
            }
            Value::String(plain) if secret => {
                data.insert(name, Value::String(key.encrypt(&plain)));
            }
            value => {
                data.insert(name, value);
            }
        }
    }
    data
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

    /// Replaces the tenant's entry after this process changed the settings, so that it sees
    /// the change at once (other processes see it when their entry expires).
    pub fn put(&self, tenant: i64, settings: Arc<Settings>) {
        self.entries
            .lock()
            .expect("settings cache")
            .insert(tenant, (Instant::now(), settings));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn apply_encrypts_secrets_and_values_resolve_aliases() {
        let key = SecretKey::from_bytes(&[3u8; 32]).unwrap();
        let mut update = validate::Update::new();
        update.insert("spam_filter_api_key".into(), json!("k-123"));
        update.insert(
            "password_authentication_enabled_for_web".into(),
            json!(false),
        );
        let data = apply(&Map::new(), update, &key);
        let text = serde_json::to_string(&data).unwrap();
        assert!(!text.contains("k-123"));
        let settings = Settings::from_stored(1, 0, 0, &text);
        assert_eq!(settings.value("spam_filter_api_key"), Value::Null);
        assert!(settings.has_secret("spam_filter_api_key"));
        assert_eq!(
            settings.secret("spam_filter_api_key", &key).as_deref(),
            Some("k-123")
        );
        assert_eq!(settings.value("signin_enabled"), json!(false));
        assert_eq!(settings.value("default_projects_limit"), json!(100000));

        let mut clear = validate::Update::new();
        clear.insert("spam_filter_api_key".into(), Value::Null);
        let data = apply(&data, clear, &key);
        assert!(!data.contains_key("spam_filter_api_key"));
    }
}
