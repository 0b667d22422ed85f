//! Typed configuration: the administrator binds a plugin with a JSON document, which the plugin
//! reads as its own `serde` type. No document (or `null`) means the type's default.

use serde::de::DeserializeOwned;

use crate::host_bindings::trellis::policy::host;

/// Parses a configuration document (`validate-config` receives it as an argument).
pub fn parse<T: DeserializeOwned + Default>(json: &str) -> Result<T, String> {
    let trimmed = json.trim();
    if trimmed.is_empty() || trimmed == "null" {
        return Ok(T::default());
    }
    serde_json::from_str(trimmed).map_err(|e| format!("invalid configuration: {e}"))
}

/// The configuration of the current call.
pub fn current<T: DeserializeOwned + Default>() -> Result<T, String> {
    parse(&host::config())
}
