//! The application settings object: id, created_at, updated_at and every setting of the
//! catalog in its order, deprecated aliases showing their replacement's value. Write-only
//! secrets are always `null`: they are never returned, in clear or encrypted.

use serde_json::{Map, Value, json};

use super::timestamp;
use crate::settings::Settings;
use crate::settings::catalog::CATALOG;

pub fn settings(settings: &Settings) -> Value {
    let mut out = Map::new();
    out.insert("id".into(), json!(settings.id));
    out.insert("created_at".into(), json!(timestamp(settings.created_at)));
    out.insert("updated_at".into(), json!(timestamp(settings.updated_at)));
    for entry in CATALOG {
        // `Settings::catalog_value` resolves aliases and reads secrets as null.
        out.insert(entry.name.into(), settings.catalog_value(entry));
    }
    Value::Object(out)
}
