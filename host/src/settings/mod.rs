//! Application settings as the rest of the server reads them: stored overrides on top of
//! GitLab's defaults, cached per tenant for at most `--settings-cache-seconds`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub mod catalog;
mod crate_reads;
pub mod crypto;
pub mod keys;
pub mod validate;

use serde_json::{Map, Value};

pub use crypto::SecretKey;
use keys::{Key, SecretSetting};

use crate::store::TenantDb;

#[derive(Debug, Clone)]
pub struct Settings {
    pub id: i64,
    pub created_at: i64,
    pub updated_at: i64,
    values: Map<String, Value>,
    /// What each catalog setting reads as, in catalog order, resolved once when the settings
    /// are loaded: every request reads several, and each was four lookups and a parse.
    effective: Vec<Value>,
}

impl Settings {
    pub fn from_stored(id: i64, created_at: i64, updated_at: i64, data: &str) -> Settings {
        let values = serde_json::from_str::<Map<String, Value>>(data).unwrap_or_default();
        let effective = catalog::CATALOG
            .iter()
            .map(|entry| {
                let name = catalog::canonical(entry.name);
                if catalog::entry(name).is_some_and(|target| target.secret) {
                    return Value::Null;
                }
                values
                    .get(name)
                    .cloned()
                    .unwrap_or_else(|| catalog::default_of(name))
            })
            .collect();
        Settings {
            id,
            created_at,
            updated_at,
            values,
            effective,
        }
    }

    /// A setting's value: `settings.get(keys::ADMIN_MODE)`.
    pub fn get<K: Key>(&self, key: K) -> K::Value {
        K::read(self.value(key.name()))
    }

    /// The JSON value of a catalog setting, for the view that lists them all.
    pub fn catalog_value(&self, entry: &catalog::Entry) -> Value {
        self.value(entry.name)
    }

    /// The value of a setting (deprecated aliases read their replacement), else GitLab's
    /// default. Write-only secrets read as `null` here: use [`Settings::secret`].
    fn value(&self, key: &str) -> Value {
        match catalog::position(key) {
            Some(at) => self.effective[at].clone(),
            None => self.values.get(key).cloned().unwrap_or(Value::Null),
        }
    }

    /// The plaintext of a write-only secret, if one is set and `key` decrypts it.
    pub fn secret(&self, secret: SecretSetting, key: &SecretKey) -> Option<String> {
        match self.values.get(secret.name()) {
            Some(Value::String(stored)) => key.decrypt(stored),
            _ => None,
        }
    }

    /// The stored overrides (secrets encrypted).
    pub fn stored(&self) -> &Map<String, Value> {
        &self.values
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

    pub async fn get(&self, db: &TenantDb) -> crate::store::Result<Arc<Settings>> {
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
    /// the change at once (other processes hear of it: `invalidation`).
    pub fn put(&self, tenant: i64, settings: Arc<Settings>) {
        self.entries
            .lock()
            .expect("settings cache")
            .insert(tenant, (Instant::now(), settings));
    }

    /// Drops the tenant's entry: another process changed its settings.
    pub fn forget(&self, tenant: i64) {
        self.entries.lock().expect("settings cache").remove(&tenant);
    }

    /// Drops every entry: changes may have gone unheard.
    pub fn forget_all(&self) {
        self.entries.lock().expect("settings cache").clear();
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
        update.insert("external_auth_client_key".into(), json!("k-123"));
        update.insert(
            "password_authentication_enabled_for_web".into(),
            json!(false),
        );
        let data = apply(&Map::new(), update, &key);
        let text = serde_json::to_string(&data).unwrap();
        assert!(!text.contains("k-123"));
        let settings = Settings::from_stored(1, 0, 0, &text);
        let entry = |name| catalog::entry(name).unwrap();
        assert_eq!(
            settings.catalog_value(entry("external_auth_client_key")),
            Value::Null
        );
        assert_eq!(
            settings
                .secret(keys::EXTERNAL_AUTH_CLIENT_KEY, &key)
                .as_deref(),
            Some("k-123")
        );
        assert!(!settings.get(keys::PASSWORD_AUTHENTICATION_ENABLED_FOR_WEB));
        assert_eq!(
            settings.catalog_value(entry("signin_enabled")),
            json!(false)
        );
        assert_eq!(settings.get(keys::DEFAULT_PROJECTS_LIMIT), Some(100000));

        let mut clear = validate::Update::new();
        clear.insert("external_auth_client_key".into(), Value::Null);
        let data = apply(&data, clear, &key);
        assert!(!data.contains_key("external_auth_client_key"));
    }
}
