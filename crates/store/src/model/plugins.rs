//! Uploaded plugins and their bindings to hooks.

use super::Flag;

/// A binding as every process polls it (joined with its plugin).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct BindingRow {
    pub tenant_id: i64,
    pub hook: String,
    pub plugin_id: i64,
    pub sha256: String,
    pub name: String,
    pub version: Option<String>,
    pub config: String,
    pub failure_policy: String,
    pub timeout_ms: i64,
    pub fuel: Option<i64>,
    pub memory_bytes: i64,
    /// JSON array of the origins granted to `outbound-http`, if any.
    pub outbound_http: Option<String>,
    pub updated_at: i64,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PluginRow {
    pub id: i64,
    pub sha256: String,
    pub name: String,
    pub version: Option<String>,
    pub world: String,
    pub api_version: String,
    pub size: i64,
    #[sqlx(try_from = "Flag")]
    pub built_in: bool,
    pub created_at: i64,
}
