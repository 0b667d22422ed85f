//! Sending: the loop that claims due deliveries and one attempt of one delivery (also used by
//! the API's test and resend endpoints).
//!
//! An attempt formats the standard payload (`format`), sends it with GitLab's headers under
//! the hook's address policy (pinned to the addresses checked; `allow_local_requests_from_*`,
//! the allowlist and the operator's `--outbound-allow-networks`), with a 10 s limit and TLS
//! verified unless the hook turned `enable_ssl_verification` off, and writes the log entry,
//! the delivery's fate and the hook's auto-disabling state in one transaction.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::format::{self, Formatted};
use super::rules::{self, AlertStatus};
use crate::VERSION;
use crate::context::ApiContext;
use crate::context::requests_in_flight;
use crate::model::hooks::{DeliveryState, HookRow, SystemHookRow};
use crate::model::now_ms;
use crate::model::webhooks::{DeliveryRow, HookKind, LogRow};
use crate::outbound::AddressPolicy;
use crate::outbound::http::{Client, Request};
use crate::outbound::tls::Tls;
use crate::store::TenantDb;
use crate::store::webhooks::Settle;

/// GitLab's limit for a hook's request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a claimed delivery is this process's: the request's limit, the formatter and the
/// writes fit well within it; a process that dies leaves it to be claimed again after this.
pub const LEASE_MS: i64 = 30_000;
/// Deliveries in flight per process (one per hook at a time, so also the hooks served at once).
const MAX_IN_FLIGHT: usize = 32;
/// How often due retries are looked for when nothing wakes the sender.
const POLL: Duration = Duration::from_millis(500);
/// What the log keeps of a request's and a response's body.
const MAX_LOGGED_REQUEST: usize = 64 * 1024;
const MAX_LOGGED_RESPONSE: usize = 8 * 1024;

/// A hook as the sender needs it, project or system.
#[derive(Debug, Clone)]
pub struct Target {
    pub kind: HookKind,
    pub id: i64,
    pub url: String,
    /// The secret token, decrypted.
    pub token: Option<String>,
    pub verify_tls: bool,
    pub formatter: String,
    pub instance_url: String,
    pub uuid: String,
    /// Project hooks' auto-disabling state (system hooks are never disabled, as in GitLab).
    pub state: Option<DeliveryState>,
}

/// A target from a project or system hook row: both name the columns a target copies
/// alike (the token is decrypted here, for signing).
macro_rules! target_of {
    ($kind:expr, $hook:expr, $state:expr, $ctx:expr) => {
        Target {
            kind: $kind,
            id: $hook.id,
            url: $hook.url.clone(),
            token: $hook
                .token
                .as_deref()
                .and_then(|t| $ctx.secret_key.decrypt(t)),
            verify_tls: $hook.flag("enable_ssl_verification"),
            formatter: $hook.formatter.clone(),
            instance_url: $hook.instance_url.clone(),
            uuid: $hook.uuid.clone(),
            state: $state,
        }
    };
}

impl Target {
    pub fn project(hook: &HookRow, ctx: &ApiContext) -> Target {
        target_of!(HookKind::Project, hook, Some(hook.delivery), ctx)
    }

    pub fn system(hook: &SystemHookRow, ctx: &ApiContext) -> Target {
        target_of!(HookKind::System, hook, None, ctx)
    }
}

/// What one attempt sends.
#[derive(Debug, Clone)]
pub struct Message {
    pub trigger: String,
    pub event_name: String,
    pub payload: String,
    pub event_uuid: String,
    pub idempotency_key: String,
}

/// How an attempt went.
pub enum Attempt {
    /// A request was made (or refused); `success` when it got a 2xx answer.
    Made { log: LogRow, success: bool },
    /// The formatter chose not to send, or failed closed; logged, not the receiver's fault.
    NotSent { log: LogRow },
    /// The tenant's plugin instances were all busy: try again shortly.
    Busy,
}

impl Attempt {
    pub fn log(&self) -> Option<&LogRow> {
        match self {
            Attempt::Made { log, .. } | Attempt::NotSent { log } => Some(log),
            Attempt::Busy => None,
        }
    }
}

fn capped(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// The headers as the log keeps them: a JSON object, by name (the last value of a name).
fn header_map(headers: &[(String, String)]) -> String {
    let map: BTreeMap<&str, &str> = headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    serde_json::to_string(&map).unwrap_or_default()
}

/// What the delivery log shows in place of a secret.
const REDACTED: &str = "[REDACTED]";

/// Header names whose values are credentials, whoever set them (a formatter plugin may add an
/// `Authorization` or an API key for its receiver): the log, which a project's Maintainers
/// read, never shows them.
fn is_credential_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "authorization" | "proxy-authorization" | "cookie" | "x-gitlab-token"
    ) || [
        "token",
        "secret",
        "signature",
        "password",
        "api-key",
        "apikey",
        "auth",
    ]
    .iter()
    .any(|part| name.contains(part))
}

/// The headers as the delivery log keeps them: credentials redacted, and the hook's token
/// wherever it appears.
fn logged_headers(headers: &[(String, String)], token: Option<&str>) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            let value = if is_credential_header(name) {
                REDACTED.to_string()
            } else {
                redacted(value, token)
            };
            (name.clone(), value)
        })
        .collect()
}

/// `text` with the hook's token replaced, where a formatter copied it.
fn redacted(text: &str, token: Option<&str>) -> String {
    match token.filter(|t| !t.is_empty()) {
        Some(token) => text.replace(token, REDACTED),
        None => text.to_string(),
    }
}

/// GitLab's headers; the formatter's own come first and may not replace these.
fn headers(
    target: &Target,
    message: &Message,
    mut extra: Vec<(String, String)>,
) -> Vec<(String, String)> {
    const RESERVED: &[&str] = &["user-agent", "idempotency-key", "x-gitlab-"];
    extra.retain(|(name, _)| {
        let name = name.to_ascii_lowercase();
        !RESERVED.iter().any(|r| name.starts_with(r))
    });
    if !extra
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
    {
        extra.insert(0, ("Content-Type".into(), "application/json".into()));
    }
    extra.extend([
        ("User-Agent".into(), format!("GitLab/{VERSION}")),
        ("Idempotency-Key".into(), message.idempotency_key.clone()),
        ("X-Gitlab-Event".into(), message.event_name.clone()),
        ("X-Gitlab-Webhook-UUID".into(), target.uuid.clone()),
        ("X-Gitlab-Instance".into(), target.instance_url.clone()),
        ("X-Gitlab-Event-UUID".into(), message.event_uuid.clone()),
    ]);
    if let Some(token) = &target.token {
        extra.push(("X-Gitlab-Token".into(), token.clone()));
    }
    extra
}

/// One attempt of `message` to `target`, logged by the caller (`finish`).
pub async fn attempt(
    ctx: &ApiContext,
    db: &TenantDb,
    target: &Target,
    message: &Message,
) -> Attempt {
    let started = Instant::now();
    let mut log = LogRow {
        id: 0,
        hook_kind: target.kind.name().into(),
        hook_id: target.id,
        trigger_name: message.trigger.clone(),
        url: target.url.clone(),
        request_headers: "{}".into(),
        request_data: String::new(),
        response_headers: "{}".into(),
        response_body: String::new(),
        response_status: "internal error".into(),
        execution_duration_us: 0,
        internal_error_message: None,
        idempotency_key: message.idempotency_key.clone(),
        event_name: message.event_name.clone(),
        payload: message.payload.clone(),
        created_at: now_ms(),
    };
    let formatted = format::format(
        &ctx.plugins,
        format::Input {
            tenant_id: db.tenant_id(),
            formatter: &target.formatter,
            event_name: &message.event_name,
            payload: &message.payload,
            event_uuid: &message.event_uuid,
            instance_url: &target.instance_url,
        },
    )
    .await;
    let (extra, body, note) = match formatted {
        Formatted::Send {
            headers,
            body,
            note,
        } => (headers, body, note),
        Formatted::Skip => {
            log.response_status = "skipped".into();
            log.internal_error_message = Some("the formatter skipped this delivery".into());
            return Attempt::NotSent { log };
        }
        Formatted::Refused(reason) => {
            log.internal_error_message = Some(reason);
            return Attempt::NotSent { log };
        }
        Formatted::Busy => return Attempt::Busy,
    };
    let headers = headers(target, message, extra);
    let token = target.token.as_deref();
    log.request_headers = header_map(&logged_headers(&headers, token));
    log.request_data = capped(&redacted(&body, token), MAX_LOGGED_REQUEST);
    let settings = match ctx.settings.get(db).await {
        Ok(settings) => settings,
        Err(error) => {
            log.internal_error_message = Some(format!("the settings could not be read: {error}"));
            return Attempt::Made {
                log,
                success: false,
            };
        }
    };
    let networks = &ctx.config.outbound_allow_networks;
    let policy = match target.kind {
        HookKind::Project => AddressPolicy::for_hooks_and_services(networks, &*settings),
        HookKind::System => AddressPolicy::for_system_hooks(networks, &*settings),
    };
    let client = Client {
        policy,
        tls: if target.verify_tls {
            Tls::system()
        } else {
            Tls::unverified()
        },
    };
    let request = Request {
        method: "POST".into(),
        url: target.url.clone(),
        headers,
        body: body.into_bytes(),
    };
    let answer = client
        .deliver(request, Instant::now() + REQUEST_TIMEOUT)
        .await;
    log.execution_duration_us = started.elapsed().as_micros() as i64;
    let success = match answer {
        Ok(response) => {
            log.response_status = response.status.to_string();
            log.response_headers = header_map(&response.headers);
            log.response_body = capped(
                &String::from_utf8_lossy(&response.body),
                MAX_LOGGED_RESPONSE,
            );
            log.internal_error_message = note;
            (200..300).contains(&response.status)
        }
        Err(error) => {
            log.internal_error_message = Some(match note {
                Some(note) => format!("{error} ({note})"),
                None => error,
            });
            false
        }
    };
    Attempt::Made { log, success }
}

/// Writes what an attempt did: its log entry, the delivery's fate (`delivery` when it came
/// from the queue) and the hook's state. Returns the hook's new state.
pub async fn finish(
    db: &TenantDb,
    attempt: &Attempt,
    delivery: Option<&DeliveryRow>,
) -> crate::store::Result<Option<DeliveryState>> {
    let Some(log) = attempt.log() else {
        return Ok(None);
    };
    let now = now_ms();
    let (settle, success) = match attempt {
        Attempt::Made { success: true, .. } => (Settle::Done, Some(true)),
        Attempt::Made { success: false, .. } => (
            delivery
                .and_then(|d| rules::retry_at(d.attempts, now))
                .map_or(Settle::Done, Settle::RetryAt),
            Some(false),
        ),
        _ => (Settle::Done, None),
    };
    let next = move |state: DeliveryState| match success {
        Some(true) => rules::after_success(state),
        Some(false) => rules::after_failure(state, now),
        None => state,
    };
    db.finish_attempt(log, delivery.map(|d| d.id), settle, next)
        .await
}

/// Claims and sends due deliveries for the life of the process.
pub async fn run(ctx: ApiContext) {
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    loop {
        let free = in_flight.available_permits();
        if free > 0 {
            match ctx.db.claim_deliveries(free as i64, LEASE_MS).await {
                Ok(claimed) => {
                    for delivery in claimed {
                        let Ok(permit) = in_flight.clone().try_acquire_owned() else {
                            break;
                        };
                        tokio::spawn(deliver(ctx.clone(), delivery, permit));
                    }
                }
                // The process is shutting down: leases left behind expire and are sent again.
                Err(error) if error.is_pool_closed() => return,
                Err(error) => tracing::warn!(%error, "could not claim webhook deliveries"),
            }
        }
        tokio::select! {
            _ = super::WAKE.notified() => {}
            _ = tokio::time::sleep(POLL) => {}
        }
    }
}

/// Paces deliveries while the process serves requests (`--webhook-busy-interval-ms`): delivery
/// is asynchronous and durable, so under load it leaves the CPU to the requests and catches
/// up when they stop. Unpaced, on two cores, one hook's deliveries cost issue creates a
/// quarter of their throughput (docs/performance.md).
async fn pace(ctx: &ApiContext) {
    static NEXT: tokio::sync::Mutex<Option<Instant>> = tokio::sync::Mutex::const_new(None);
    let interval = Duration::from_millis(ctx.config.webhook_busy_interval_ms);
    if interval.is_zero() || requests_in_flight() == 0 {
        return;
    }
    let mut next = NEXT.lock().await;
    let now = Instant::now();
    if let Some(at) = *next
        && at > now
    {
        tokio::time::sleep_until(at.into()).await;
    }
    *next = Some(Instant::now() + interval);
}

/// Sends `delivery`, then the same hook's next ones while they are due: each claimed with one
/// index seek as its predecessor finishes, instead of a scan of the whole queue for every
/// delivery (`TenantDb::claim_next_delivery`), and leased before the pause (`pace`), so no
/// other sender takes it meanwhile.
async fn deliver(ctx: ApiContext, delivery: DeliveryRow, _permit: OwnedSemaphorePermit) {
    let mut next = Some(delivery);
    while let Some(delivery) = next.take() {
        pace(&ctx).await;
        if let Err(error) = deliver_one(&ctx, &delivery).await {
            tracing::warn!(
                tenant = delivery.tenant_id,
                delivery = delivery.id,
                error = format!("{error:#}"),
                "webhook delivery failed; it is retried when its lease ends"
            );
            break;
        }
        let db = ctx.db.tenant(delivery.tenant_id);
        match db
            .claim_next_delivery(&delivery.hook_kind, delivery.hook_id, LEASE_MS)
            .await
        {
            Ok(claimed) => next = claimed,
            Err(error) if error.is_pool_closed() => {}
            Err(error) => tracing::warn!(%error, "could not claim webhook deliveries"),
        }
    }
    // A permit is free: other hooks' deliveries (and this hook's retries) can go.
    super::wake();
}

async fn deliver_one(ctx: &ApiContext, delivery: &DeliveryRow) -> anyhow::Result<()> {
    let db = ctx.db.tenant(delivery.tenant_id);
    let target = match HookKind::parse(&delivery.hook_kind) {
        Some(HookKind::Project) => db
            .project_hook_by_id(delivery.hook_id)
            .await?
            .map(|h| Target::project(&h, ctx)),
        Some(HookKind::System) => db
            .system_hook(delivery.hook_id)
            .await?
            .map(|h| Target::system(&h, ctx)),
        None => None,
    };
    let Some(target) = target else {
        return Ok(db.drop_delivery(delivery.id).await?);
    };
    let now = now_ms();
    if let Some(state) = &target.state {
        match rules::alert_status(state, now) {
            AlertStatus::PermanentlyDisabled => return Ok(db.drop_delivery(delivery.id).await?),
            AlertStatus::TemporarilyDisabled => {
                let until = state.disabled_until.unwrap_or(now);
                return Ok(db.postpone_delivery(delivery.id, until).await?);
            }
            AlertStatus::Executable => {}
        }
    }
    let message = Message {
        trigger: delivery.trigger_name.clone(),
        event_name: delivery.event_name.clone(),
        payload: delivery.payload.clone(),
        event_uuid: delivery.event_uuid.clone(),
        idempotency_key: delivery.idempotency_key.clone(),
    };
    let attempt = attempt(ctx, &db, &target, &message).await;
    if let Attempt::Busy = attempt {
        return Ok(db.postpone_delivery(delivery.id, now + 1_000).await?);
    }
    finish(&db, &attempt, Some(delivery)).await?;
    metrics::counter!(
        "trellis_webhook_requests_total",
        "kind" => delivery.hook_kind.clone(),
        "outcome" => match &attempt {
            Attempt::Made { success: true, .. } => "success",
            Attempt::Made { success: false, .. } => "failure",
            _ => "not_sent",
        }
    )
    .increment(1);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_never_shows_credentials_or_the_token() {
        let headers = vec![
            ("Content-Type".to_string(), "application/json".to_string()),
            ("Authorization".to_string(), "Bearer abc".to_string()),
            ("X-Api-Key".to_string(), "k".to_string()),
            ("X-Receiver-Signature".to_string(), "sig".to_string()),
            ("X-Echo".to_string(), "has s3cret inside".to_string()),
            ("X-Gitlab-Token".to_string(), "s3cret".to_string()),
            ("Idempotency-Key".to_string(), "uuid".to_string()),
        ];
        let logged = logged_headers(&headers, Some("s3cret"));
        let value = |name: &str| {
            logged
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
                .unwrap()
        };
        assert_eq!(value("Content-Type"), "application/json");
        assert_eq!(value("Authorization"), REDACTED);
        assert_eq!(value("X-Api-Key"), REDACTED);
        assert_eq!(value("X-Receiver-Signature"), REDACTED);
        assert_eq!(value("X-Echo"), "has [REDACTED] inside");
        assert_eq!(value("X-Gitlab-Token"), REDACTED);
        assert_eq!(value("Idempotency-Key"), "uuid");
        assert_eq!(
            redacted("{\"t\":\"s3cret\"}", Some("s3cret")),
            "{\"t\":\"[REDACTED]\"}"
        );
        assert_eq!(redacted("x", Some("")), "x");
    }
}
