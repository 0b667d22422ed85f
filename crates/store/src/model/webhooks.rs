//! Webhook delivery rows: the outbox events the dispatcher reads, the queued deliveries the
//! senders claim, and the delivery log the hook events API shows.

use crate::events::EventKind;

/// Which table a hook lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookKind {
    Project,
    System,
}

impl HookKind {
    pub fn name(self) -> &'static str {
        match self {
            HookKind::Project => "project",
            HookKind::System => "system",
        }
    }

    pub fn parse(name: &str) -> Option<HookKind> {
        match name {
            "project" => Some(HookKind::Project),
            "system" => Some(HookKind::System),
            _ => None,
        }
    }
}

/// One row of `domain_events`, as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EventRow {
    pub id: i64,
    pub kind: EventKind,
    pub actor_id: Option<i64>,
    pub project_id: Option<i64>,
    pub subject_id: i64,
    pub payload: String,
    pub created_at: i64,
}

/// A delivery to queue: what the dispatcher decided for one event and one hook.
#[derive(Debug, Clone)]
pub struct NewDelivery {
    pub hook_kind: HookKind,
    pub hook_id: i64,
    pub event_id: Option<i64>,
    /// GitLab's trigger name in the log (`issue_hooks`, `push_hooks`, `system_hooks`...).
    pub trigger: String,
    /// The `X-Gitlab-Event` header (`Issue Hook`, `System Hook`...).
    pub event_name: String,
    /// The standard payload (JSON text).
    pub payload: String,
    pub event_uuid: String,
    pub idempotency_key: String,
}

/// A queued delivery, as a sender claimed it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeliveryRow {
    pub tenant_id: i64,
    pub id: i64,
    pub hook_kind: String,
    pub hook_id: i64,
    pub trigger_name: String,
    pub event_name: String,
    pub payload: String,
    pub event_uuid: String,
    pub idempotency_key: String,
    pub attempts: i64,
}

/// One request made for a hook (or refused before it was made), for the delivery log.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LogRow {
    pub id: i64,
    pub hook_kind: String,
    pub hook_id: i64,
    pub trigger_name: String,
    pub url: String,
    /// JSON object of the headers sent (the secret token redacted).
    pub request_headers: String,
    /// The body sent (capped).
    pub request_data: String,
    /// JSON object of the headers received.
    pub response_headers: String,
    pub response_body: String,
    /// The status code, or `internal error` when no response came back.
    pub response_status: String,
    pub execution_duration_us: i64,
    pub internal_error_message: Option<String>,
    pub idempotency_key: String,
    pub event_name: String,
    /// The standard payload the request was formatted from, for resending.
    pub payload: String,
    pub created_at: i64,
}
