//! Plugin catalog entries and hook bindings (`/application/plugins`, `/application/plugin_hooks`).

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::timestamp;
use crate::model::plugins::{BindingRow, PluginRow};
use crate::plugins::spam::{SpamAction, SpamOutcome};
use crate::plugins::{CallStats, Hook};

#[derive(Serialize, ToSchema)]
pub struct PluginView {
    pub id: i64,
    pub name: String,
    pub version: Option<String>,
    pub world: String,
    pub api_version: String,
    pub sha256: String,
    pub size: i64,
    pub built_in: bool,
    pub created_at: String,
}

pub fn plugin(row: &PluginRow) -> PluginView {
    PluginView {
        id: row.id,
        name: row.name.clone(),
        version: row.version.clone(),
        world: row.world.clone(),
        api_version: row.api_version.clone(),
        sha256: row.sha256.clone(),
        size: row.size,
        built_in: row.built_in,
        created_at: timestamp(row.created_at),
    }
}

/// A hook and what is bound to it: the binding's fields are null when nothing is, and
/// `failure_policy` is then the hook's default.
#[derive(Serialize, ToSchema)]
pub struct PluginHookView {
    pub hook: &'static str,
    pub world: &'static str,
    pub plugin: Option<PluginView>,
    /// The binding's configuration, as the plugin reads it.
    pub config: Value,
    pub failure_policy: String,
    pub timeout_ms: Option<i64>,
    pub fuel: Option<i64>,
    pub memory_bytes: Option<i64>,
    pub updated_at: Option<String>,
}

pub fn hook(hook: Hook, binding: Option<(&BindingRow, &PluginRow)>) -> PluginHookView {
    let unbound = PluginHookView {
        hook: hook.name(),
        world: hook.world().world_name(),
        plugin: None,
        config: Value::Null,
        failure_policy: hook.default_policy().name().to_string(),
        timeout_ms: None,
        fuel: None,
        memory_bytes: None,
        updated_at: None,
    };
    match binding {
        None => unbound,
        Some((b, p)) => PluginHookView {
            plugin: Some(plugin(p)),
            config: serde_json::from_str::<Value>(&b.config).unwrap_or(Value::Null),
            failure_policy: b.failure_policy.clone(),
            timeout_ms: Some(b.timeout_ms),
            fuel: b.fuel,
            memory_bytes: Some(b.memory_bytes),
            updated_at: Some(timestamp(b.updated_at)),
            ..unbound
        },
    }
}

/// The answer of a spam-check test call.
#[derive(Serialize, ToSchema)]
pub struct SpamTestView {
    /// The plugin that judged, `name@version`.
    pub plugin: String,
    /// Null when the plugin failed.
    pub verdict: Option<&'static str>,
    pub reason: String,
    /// `ok`, or how the call failed.
    pub outcome: &'static str,
    pub action: &'static str,
    pub duration_ms: f64,
    pub fuel: u64,
    pub peak_memory_bytes: usize,
}

pub fn spam_test(outcome: &SpamOutcome, stats: &CallStats) -> SpamTestView {
    SpamTestView {
        plugin: outcome.plugin.to_string(),
        verdict: outcome.verdict.map(|v| v.name()),
        reason: outcome.reason.clone(),
        outcome: outcome.error.as_ref().map_or("ok", |e| e.outcome()),
        action: match outcome.action {
            SpamAction::Proceed => "proceed",
            SpamAction::NeedsCaptcha => "needs_captcha",
            SpamAction::Refuse => "refuse",
            SpamAction::RefuseAndBlock => "refuse_and_block",
        },
        duration_ms: stats.elapsed.as_secs_f64() * 1000.0,
        fuel: stats.fuel,
        peak_memory_bytes: stats.peak_memory,
    }
}
