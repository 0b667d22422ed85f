//! The application settings object: id, created_at, updated_at and every setting of the
//! catalog in its order, deprecated aliases showing their replacement's value. Write-only
//! secrets are always `null`: they are never returned, in clear or encrypted. The schema of
//! the settings is built from the same catalog, each with the type of its kind.

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{Schema, Type};
use utoipa::{PartialSchema, ToSchema};

use super::catalog_schema::{Property, list, map_of, object, typed};
use super::timestamp;
use crate::settings::Settings;
use crate::settings::catalog::{CATALOG, Entry, Kind};

#[derive(Serialize, ToSchema)]
pub struct SettingsView {
    pub id: i64,
    pub created_at: String,
    pub updated_at: String,
    #[serde(flatten)]
    pub settings: CatalogSettings,
}

/// Every setting of the catalog, by name.
#[derive(Serialize)]
#[serde(transparent)]
pub struct CatalogSettings(Map<String, Value>);

pub fn settings(settings: &Settings) -> SettingsView {
    SettingsView {
        id: settings.id,
        created_at: timestamp(settings.created_at),
        updated_at: timestamp(settings.updated_at),
        // `Settings::catalog_value` resolves aliases and reads secrets as null.
        settings: CatalogSettings(
            CATALOG
                .iter()
                .map(|entry| (entry.name.to_string(), settings.catalog_value(entry)))
                .collect(),
        ),
    }
}

/// The schema of a setting's value. Secrets always read null; strings and lists may be set
/// to null (a blank value), as may numbers without a default; booleans never are.
fn schema_of(entry: &Entry) -> Schema {
    let nullable = entry.secret
        || entry.default_value().is_null()
        || matches!(entry.kind, Kind::Str | Kind::StrList | Kind::IntList);
    match entry.kind {
        Kind::Bool => typed(Type::Boolean, nullable),
        Kind::Int => typed(Type::Integer, nullable),
        Kind::Float => typed(Type::Number, nullable),
        Kind::Str => typed(Type::String, nullable),
        Kind::StrList => list(Type::String, nullable),
        Kind::IntList => list(Type::Integer, nullable),
        Kind::IntMap => map_of(Type::Integer, nullable),
    }
}

impl PartialSchema for CatalogSettings {
    fn schema() -> RefOr<Schema> {
        object(
            CATALOG
                .iter()
                .map(|entry| Property::always(entry.name, schema_of(entry))),
        )
    }
}

impl ToSchema for CatalogSettings {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each default is a value its schema allows, so a tenant that changed nothing is
    /// described by the document.
    #[test]
    fn every_default_matches_its_schema() {
        for entry in CATALOG {
            let schema = serde_json::to_value(schema_of(entry)).unwrap();
            let allowed: Vec<&str> = match &schema["type"] {
                Value::String(one) => vec![one.as_str()],
                Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let default = entry.default_value();
            let found = match &default {
                Value::Null => "null",
                Value::Bool(_) => "boolean",
                Value::Number(n) if n.is_i64() => "integer",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                Value::Array(_) => "array",
                Value::Object(_) => "object",
            };
            let fits =
                allowed.contains(&found) || (found == "integer" && allowed.contains(&"number"));
            assert!(fits, "{}: default {default} is not {allowed:?}", entry.name);
        }
    }
}
