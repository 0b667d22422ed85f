//! The dispatcher: reads each tenant's outbox after its cursor, decides which hooks each
//! event is for and queues a delivery per (event, hook), moving the cursor in the same
//! transaction, so every event is queued exactly once whatever crashes or races (a process
//! that lost the race to move the cursor writes nothing).
//!
//! A hook receives the events that happen after it was created, as in GitLab; project hooks
//! that are disabled (temporarily or for good) receive nothing, as in GitLab.

use std::collections::HashMap;
use std::time::Duration;

use rand::RngCore;
use serde_json::Value;

use super::branch_filter;
use super::payload::{self, Audience, BatchRows, Candidate, Loader};
use super::rules::{self, AlertStatus};
use crate::context::ApiContext;
use crate::context::requests_in_flight;
use crate::model::now_ms;
use crate::model::webhooks::{EventRow, HookKind, NewDelivery};
use crate::settings::keys;
use crate::store::TenantDb;

/// Events read per transaction.
const BATCH: i64 = 200;
/// How often the outbox is read.
const TICK: Duration = Duration::from_millis(100);

/// A random (version 4) UUID, for `X-Gitlab-Event-UUID`, `Idempotency-Key` and hooks' UUIDs.
pub fn uuid_v4() -> String {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex = hex::encode(bytes);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Dispatches every tenant's new events, for the life of the process.
pub async fn run(ctx: ApiContext) {
    let mut interval = tokio::time::interval(TICK);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let tenants = match ctx.db.tenants_with_undispatched_events().await {
            Ok(tenants) => tenants,
            // The process is shutting down: what is left waits in the outbox for the next start.
            Err(error) if error.is_pool_closed() => return,
            Err(error) => {
                tracing::warn!(%error, "could not read the outbox");
                continue;
            }
        };
        let batch = batch_size(&ctx);
        for tenant_id in tenants {
            match dispatch_tenant(&ctx, tenant_id, batch).await {
                Ok(true) => super::wake(),
                Ok(false) => {}
                Err(error) => tracing::warn!(
                    tenant = tenant_id,
                    error = format!("{error:#}"),
                    "could not dispatch webhook events"
                ),
            }
        }
    }
}

/// How many of a tenant's events one tick reads: a full batch, or while the process serves
/// requests as many as the sender then delivers in a tick (`--webhook-busy-interval-ms`), so
/// that building payloads also leaves the CPU to the requests. The outbox keeps the rest,
/// and the next quiet tick catches up.
fn batch_size(ctx: &ApiContext) -> i64 {
    let interval = ctx.config.webhook_busy_interval_ms;
    if interval == 0 || requests_in_flight() == 0 {
        return BATCH;
    }
    (TICK.as_millis() as i64 / interval as i64).clamp(1, BATCH)
}

/// One batch of a tenant's events; true when deliveries were queued.
async fn dispatch_tenant(ctx: &ApiContext, tenant_id: i64, batch: i64) -> anyhow::Result<bool> {
    let db = ctx.db.tenant(tenant_id);
    let cursor = db.webhook_cursor().await?;
    let events = db.events_after(cursor, batch).await?;
    let Some(last) = events.last().map(|e| e.id) else {
        return Ok(false);
    };
    let deliveries = deliveries_for(ctx, &db, &events).await?;
    let queued = !deliveries.is_empty();
    Ok(db.dispatch(cursor, last, &deliveries).await? && queued)
}

/// A hook an event may go to.
struct Hook<'a> {
    kind: HookKind,
    id: i64,
    instance_url: &'a str,
}

async fn deliveries_for(
    ctx: &ApiContext,
    db: &TenantDb,
    events: &[EventRow],
) -> anyhow::Result<Vec<NewDelivery>> {
    let recorded: Vec<Value> = events.iter().map(payload::recorded).collect();
    let mut project_ids: Vec<i64> = events.iter().filter_map(|e| e.project_id).collect();
    project_ids.sort_unstable();
    project_ids.dedup();
    let project_hooks = db.hooks_of_projects(&project_ids).await?;
    let system_hooks = db.system_hooks().await?;
    if project_hooks.is_empty() && system_hooks.is_empty() {
        return Ok(Vec::new());
    }
    let settings = ctx.settings.get(db).await?;
    let avatar_service = settings.get(keys::AVATAR_SERVICE_ENABLED);
    let now = now_ms();
    let rows = BatchRows::default();
    let mut deliveries = Vec::new();
    for (event, recorded) in events.iter().zip(&recorded) {
        let event_uuid = uuid_v4();
        for candidate in payload::candidates(event, recorded) {
            let hooks: Vec<Hook> = match &candidate.audience {
                Audience::Project {
                    project_id,
                    toggle,
                    branch,
                } => project_hooks
                    .iter()
                    .filter(|h| {
                        h.project_id == *project_id
                            && h.created_at <= event.created_at
                            && h.flag(toggle)
                            && rules::alert_status(&h.delivery, now) == AlertStatus::Executable
                            && branch.as_deref().is_none_or(|b| {
                                branch_filter::matches(
                                    &h.branch_filter_strategy,
                                    h.push_events_branch_filter.as_deref(),
                                    b,
                                )
                            })
                    })
                    .map(|h| Hook {
                        kind: HookKind::Project,
                        id: h.id,
                        instance_url: &h.instance_url,
                    })
                    .collect(),
                Audience::System { toggle } => system_hooks
                    .iter()
                    .filter(|h| {
                        h.created_at <= event.created_at && toggle.is_none_or(|t| h.flag(t))
                    })
                    .map(|h| Hook {
                        kind: HookKind::System,
                        id: h.id,
                        instance_url: &h.instance_url,
                    })
                    .collect(),
            };
            if hooks.is_empty() {
                continue;
            }
            queue(
                db,
                &rows,
                &ctx.config.storage.data_dir,
                avatar_service,
                event,
                recorded,
                &candidate,
                &hooks,
                &event_uuid,
                &mut deliveries,
            )
            .await?;
        }
    }
    Ok(deliveries)
}

/// Builds the candidate's body once per instance URL its hooks know, and queues it for each.
#[allow(clippy::too_many_arguments)]
async fn queue(
    db: &TenantDb,
    rows: &BatchRows,
    data_dir: &std::path::Path,
    avatar_service: bool,
    event: &EventRow,
    recorded: &Value,
    candidate: &Candidate,
    hooks: &[Hook<'_>],
    event_uuid: &str,
    deliveries: &mut Vec<crate::model::webhooks::NewDelivery>,
) -> anyhow::Result<()> {
    let mut bodies: HashMap<&str, Option<String>> = HashMap::new();
    for hook in hooks {
        if !bodies.contains_key(hook.instance_url) {
            let loader = Loader {
                db,
                rows,
                data_dir,
                base_url: hook.instance_url,
                avatar_service,
            };
            let body = loader.build(event, recorded, candidate).await?;
            bodies.insert(hook.instance_url, body);
        }
        let Some(Some(body)) = bodies.get(hook.instance_url) else {
            continue;
        };
        deliveries.push(NewDelivery {
            hook_kind: hook.kind,
            hook_id: hook.id,
            event_id: Some(event.id),
            trigger: candidate.trigger.to_string(),
            event_name: candidate.event_name.to_string(),
            payload: body.clone(),
            event_uuid: event_uuid.to_string(),
            idempotency_key: uuid_v4(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_version_4() {
        let id = uuid_v4();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(id, uuid_v4());
    }
}
