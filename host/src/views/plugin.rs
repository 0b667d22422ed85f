//! Plugin catalog entries and hook bindings (`/application/plugins`, `/application/plugin_hooks`).

use serde_json::{Value, json};

use super::timestamp;
use crate::model::plugins::{BindingRow, PluginRow};
use crate::plugins::spam::{SpamAction, SpamOutcome};
use crate::plugins::{CallStats, Hook};

pub fn plugin(row: &PluginRow) -> Value {
    json!({
        "id": row.id,
        "name": row.name,
        "version": row.version,
        "world": row.world,
        "api_version": row.api_version,
        "sha256": row.sha256,
        "size": row.size,
        "built_in": row.built_in,
        "created_at": timestamp(row.created_at),
    })
}

/// A hook and what is bound to it (`plugin` null when nothing is).
pub fn hook(hook: Hook, binding: Option<(&BindingRow, &PluginRow)>) -> Value {
    let world = hook.world().world_name();
    match binding {
        None => json!({
            "hook": hook.name(),
            "world": world,
            "plugin": null,
            "config": null,
            "failure_policy": hook.default_policy().name(),
            "timeout_ms": null,
            "fuel": null,
            "memory_bytes": null,
            "updated_at": null,
        }),
        Some((b, p)) => json!({
            "hook": hook.name(),
            "world": world,
            "plugin": plugin(p),
            "config": serde_json::from_str::<Value>(&b.config).unwrap_or(Value::Null),
            "failure_policy": b.failure_policy,
            "timeout_ms": b.timeout_ms,
            "fuel": b.fuel,
            "memory_bytes": b.memory_bytes,
            "updated_at": timestamp(b.updated_at),
        }),
    }
}

/// The answer of a spam-check test call.
pub fn spam_test(outcome: &SpamOutcome, stats: &CallStats) -> Value {
    json!({
        "plugin": &*outcome.plugin,
        "verdict": outcome.verdict.map(|v| v.name()),
        "reason": outcome.reason,
        "outcome": outcome.error.as_ref().map_or("ok", |e| e.outcome()),
        "action": match outcome.action {
            SpamAction::Proceed => "proceed",
            SpamAction::NeedsCaptcha => "needs_captcha",
            SpamAction::Refuse => "refuse",
            SpamAction::RefuseAndBlock => "refuse_and_block",
        },
        "duration_ms": stats.elapsed.as_secs_f64() * 1000.0,
        "fuel": stats.fuel,
        "peak_memory_bytes": stats.peak_memory,
    })
}
