//! Webhook delivery: the dispatcher's cursor over each tenant's outbox, the delivery queue
//! (`webhook_deliveries`), the delivery log (`webhook_logs`) and project hooks' auto-disabling
//! state. The rules (what to queue, when to retry, when a hook is disabled) are in
//! `crate::webhooks`; this is their SQL.
//!
//! Claiming spans tenants (one sender serves them all), so it is a method of [`Db`]; every
//! other statement is a tenant's.

use sqlx::{Any, AssertSqlSafe, Transaction};

use super::hooks::hook_columns;
use super::ids::next_ids;
use super::sql::{Arg, Sql};
use super::window::Window;
use super::{Db, Engine, TenantDb, now_ms};
use crate::events::EventKind;
use crate::model::hooks::{DeliveryState, HookRow, SystemHookRow};
use crate::model::webhooks::{DeliveryRow, EventRow, HookKind, LogRow, NewDelivery};

const DELIVERY_COLUMNS: &str = "tenant_id, id, hook_kind, hook_id, trigger_name, event_name, \
     payload, event_uuid, idempotency_key, attempts";

const LOG_COLUMNS: &str = "id, hook_kind, hook_id, trigger_name, url, request_headers, \
     request_data, response_headers, response_body, response_status, execution_duration_us, \
     internal_error_message, idempotency_key, event_name, payload, created_at";

/// The newest log entries kept per hook.
pub const LOG_ENTRIES_KEPT: i64 = 100;

/// What a finished attempt does to its queued delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// Delivered, skipped or given up: the delivery leaves the queue.
    Done,
    /// Try again at this time (ms).
    RetryAt(i64),
}

impl Db {
    /// Claims up to `limit` due deliveries for `lease_ms`: for each hook only the oldest queued
    /// delivery, and only when no other is leased, so a hook's deliveries go out one at a
    /// time and in order whichever process sends them. PostgreSQL skips rows another process
    /// is claiming (`FOR UPDATE SKIP LOCKED`); SQLite's single writer serialises claims.
    /// Each hook's oldest delivery comes from one pass over `webhook_deliveries_hook` (a
    /// grouped covering-index scan, about 5 times cheaper than a `MIN` subquery for every due
    /// delivery with 20,000 queued).
    pub async fn claim_deliveries(
        &self,
        limit: i64,
        lease_ms: i64,
    ) -> crate::Result<Vec<DeliveryRow>> {
        let now = now_ms();
        let lock = match self.engine() {
            Engine::Postgres => " FOR UPDATE OF d SKIP LOCKED",
            Engine::Sqlite => "",
        };
        let statement = format!(
            "UPDATE webhook_deliveries SET lease_until = $1, attempts = attempts + 1, updated_at = $2 \
             WHERE (tenant_id, id) IN (\
               SELECT d.tenant_id, d.id FROM (SELECT tenant_id, MIN(id) AS id \
                 FROM webhook_deliveries GROUP BY tenant_id, hook_kind, hook_id) head \
               JOIN webhook_deliveries d ON d.tenant_id = head.tenant_id AND d.id = head.id \
               WHERE d.next_attempt_at <= $2 AND (d.lease_until IS NULL OR d.lease_until < $2) \
               ORDER BY d.next_attempt_at, d.id LIMIT $3{lock}) \
             RETURNING {DELIVERY_COLUMNS}"
        );
        Ok(sqlx::query_as(AssertSqlSafe(statement))
            .bind(now + lease_ms)
            .bind(now)
            .bind(limit)
            .fetch_all(self.writer())
            .await?)
    }

    /// The tenants whose outbox has events the dispatcher has not read.
    pub async fn tenants_with_undispatched_events(&self) -> crate::Result<Vec<i64>> {
        Ok(sqlx::query_scalar(
            "SELECT t.id FROM tenants t WHERE EXISTS (SELECT 1 FROM domain_events e \
             WHERE e.tenant_id = t.id AND e.id > COALESCE((SELECT c.last_event_id FROM \
             webhook_cursors c WHERE c.tenant_id = t.id), 0))",
        )
        .fetch_all(self.reader())
        .await?)
    }
}

impl TenantDb {
    /// Claims the oldest queued delivery of one hook when it is due and not leased: what the
    /// sender asks for right after finishing that hook's previous delivery. The search is
    /// one index seek (`webhook_deliveries_hook`), where [`Db::claim_deliveries`] visits every
    /// due delivery of every hook to find the oldest of each: with thousands queued for one
    /// hook, claiming through it after each delivery held SQLite's single writer for
    /// milliseconds a time, and slowed the API's writes beside it (docs/performance.md).
    pub async fn claim_next_delivery(
        &self,
        hook_kind: &str,
        hook_id: i64,
        lease_ms: i64,
    ) -> crate::Result<Option<DeliveryRow>> {
        let now = now_ms();
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "UPDATE webhook_deliveries SET lease_until = $2, attempts = attempts + 1, \
             updated_at = $3 WHERE tenant_id = $1 AND id = (SELECT MIN(o.id) FROM \
             webhook_deliveries o WHERE o.tenant_id = $1 AND o.hook_kind = $4 AND o.hook_id = $5) \
             AND next_attempt_at <= $3 AND (lease_until IS NULL OR lease_until < $3) \
             RETURNING {DELIVERY_COLUMNS}"
            )))
            .bind(now + lease_ms)
            .bind(now)
            .bind(hook_kind)
            .bind(hook_id)
            .fetch_optional(self.writer())
            .await?)
    }

    // ---- dispatching ----------------------------------------------------------

    /// How far the outbox has been dispatched (0 before the first event).
    pub async fn webhook_cursor(&self) -> crate::Result<i64> {
        let found: Option<i64> = self
            .query_scalar("SELECT last_event_id FROM webhook_cursors WHERE tenant_id = $1")
            .fetch_optional(self.reader())
            .await?;
        Ok(found.unwrap_or(0))
    }

    /// Up to `limit` outbox events after `cursor`, oldest first.
    pub async fn events_after(&self, cursor: i64, limit: i64) -> crate::Result<Vec<EventRow>> {
        Ok(self
            .query_as(
                "SELECT id, kind, actor_id, project_id, subject_id, payload, created_at \
             FROM domain_events WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3",
            )
            .bind(cursor)
            .bind(limit)
            .fetch_all(self.reader())
            .await?)
    }

    /// The project's newest outbox events of `kinds`, newest first (test deliveries are built
    /// from them).
    pub async fn recent_project_events(
        &self,
        project_id: i64,
        kinds: &[EventKind],
        limit: i64,
    ) -> crate::Result<Vec<EventRow>> {
        let mut sql = self.sql(
            "SELECT id, kind, actor_id, project_id, subject_id, payload, created_at \
             FROM domain_events WHERE tenant_id = ",
        );
        sql.push(" AND project_id = ")
            .bind(project_id)
            .push(" AND kind IN (")
            .bind_list(kinds.iter().map(|kind| kind.as_str()))
            .push(") ORDER BY id DESC LIMIT ")
            .bind(limit);
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    /// Every project hook of `project_ids`.
    pub async fn hooks_of_projects(&self, project_ids: &[i64]) -> crate::Result<Vec<HookRow>> {
        if project_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = self.sql(&format!(
            "SELECT {} FROM project_hooks WHERE tenant_id = ",
            hook_columns()
        ));
        sql.push(" AND project_id IN (")
            .bind_list(project_ids.iter().copied())
            .push(") ORDER BY id");
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    /// Queues `deliveries` and moves the cursor from `from` to `to` in one transaction. False
    /// (and nothing written) when another process moved the cursor first.
    pub async fn dispatch(
        &self,
        from: i64,
        to: i64,
        deliveries: &[NewDelivery],
    ) -> crate::Result<bool> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let moved = if from == 0 {
            sqlx::query(
                "INSERT INTO webhook_cursors (tenant_id, last_event_id) VALUES ($1, $2) \
                 ON CONFLICT (tenant_id) DO NOTHING",
            )
            .bind(tenant_id)
            .bind(to)
            .execute(&mut *tx)
            .await?
        } else {
            sqlx::query(
                "UPDATE webhook_cursors SET last_event_id = $3 \
                 WHERE tenant_id = $1 AND last_event_id = $2",
            )
            .bind(tenant_id)
            .bind(from)
            .bind(to)
            .execute(&mut *tx)
            .await?
        };
        if moved.rows_affected() != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        insert_deliveries(&mut tx, tenant_id, deliveries, now_ms()).await?;
        tx.commit().await?;
        Ok(true)
    }

    // ---- sending --------------------------------------------------------------

    /// Writes the log entry of an attempt (keeping the newest [`LOG_ENTRIES_KEPT`] of its
    /// hook), settles its queued delivery (if it came from the queue) and, for project
    /// hooks, stores the auto-disabling state `next_state` computes from the current one;
    /// all in one transaction. Returns the new state (project hooks).
    pub async fn finish_attempt(
        &self,
        log: &LogRow,
        delivery_id: Option<i64>,
        settle: Settle,
        next_state: impl FnOnce(DeliveryState) -> DeliveryState,
    ) -> crate::Result<Option<DeliveryState>> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        insert_log(&mut tx, tenant_id, log).await?;
        if let Some(id) = delivery_id {
            match settle {
                Settle::Done => {
                    sqlx::query("DELETE FROM webhook_deliveries WHERE tenant_id = $1 AND id = $2")
                        .bind(tenant_id)
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                }
                Settle::RetryAt(at) => {
                    sqlx::query(
                        "UPDATE webhook_deliveries SET next_attempt_at = $3, lease_until = NULL, \
                         updated_at = $4 WHERE tenant_id = $1 AND id = $2",
                    )
                    .bind(tenant_id)
                    .bind(id)
                    .bind(at)
                    .bind(now_ms())
                    .execute(&mut *tx)
                    .await?;
                }
            }
        }
        let state = if log.hook_kind == HookKind::Project.name() {
            let current: Option<(i64, i64, Option<i64>)> = sqlx::query_as(
                "SELECT recent_failures, backoff_count, disabled_until FROM project_hooks \
                 WHERE tenant_id = $1 AND id = $2",
            )
            .bind(tenant_id)
            .bind(log.hook_id)
            .fetch_optional(&mut *tx)
            .await?;
            match current {
                Some((recent_failures, backoff_count, disabled_until)) => {
                    let current = DeliveryState {
                        recent_failures,
                        backoff_count,
                        disabled_until,
                    };
                    let next = next_state(current);
                    if next != current {
                        sqlx::query(
                            "UPDATE project_hooks SET recent_failures = $3, backoff_count = $4, \
                             disabled_until = $5 WHERE tenant_id = $1 AND id = $2",
                        )
                        .bind(tenant_id)
                        .bind(log.hook_id)
                        .bind(next.recent_failures)
                        .bind(next.backoff_count)
                        .bind(next.disabled_until)
                        .execute(&mut *tx)
                        .await?;
                    }
                    Some(next)
                }
                None => None,
            }
        } else {
            None
        };
        tx.commit().await?;
        Ok(state)
    }

    /// Puts a claimed delivery back, due at `at`, without counting an attempt (its hook is
    /// disabled until then).
    pub async fn postpone_delivery(&self, id: i64, at: i64) -> crate::Result<()> {
        Ok(self
            .query(
                "UPDATE webhook_deliveries SET next_attempt_at = $3, lease_until = NULL, \
             attempts = attempts - 1, updated_at = $4 WHERE tenant_id = $1 AND id = $2",
            )
            .bind(id)
            .bind(at)
            .bind(now_ms())
            .execute(self.writer())
            .await
            .map(|_| ())?)
    }

    /// Drops a queued delivery whose hook is gone.
    pub async fn drop_delivery(&self, id: i64) -> crate::Result<()> {
        Ok(self
            .query("DELETE FROM webhook_deliveries WHERE tenant_id = $1 AND id = $2")
            .bind(id)
            .execute(self.writer())
            .await
            .map(|_| ())?)
    }

    /// A project hook by id alone (the sender knows no project).
    pub async fn project_hook_by_id(&self, id: i64) -> crate::Result<Option<HookRow>> {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {} FROM project_hooks WHERE tenant_id = $1 AND id = $2",
                hook_columns()
            )))
            .bind(id)
            .fetch_optional(self.reader())
            .await?)
    }

    // ---- the log --------------------------------------------------------------

    /// A window of a hook's log, newest first unless the window says otherwise; `status`
    /// keeps entries whose status is in the list.
    pub async fn hook_logs(
        &self,
        kind: HookKind,
        hook_id: i64,
        statuses: Option<&[String]>,
        window: &Window,
    ) -> crate::Result<Vec<LogRow>> {
        let tenant_id = self.tenant_id();
        let statuses = statuses.map(<[String]>::to_vec);
        let scope = move |sql: &mut Sql| {
            sql.push(" WHERE tenant_id = ")
                .bind(tenant_id)
                .push(" AND hook_kind = ")
                .bind(kind.name())
                .push(" AND hook_id = ")
                .bind(hook_id);
            if let Some(statuses) = statuses {
                sql.push(" AND response_status IN (")
                    .bind_list(statuses)
                    .push(")");
            }
        };
        self.page(LOG_COLUMNS, "webhook_logs", scope, window, "")
            .await
    }

    pub async fn hook_log(
        &self,
        kind: HookKind,
        hook_id: i64,
        id: i64,
    ) -> crate::Result<Option<LogRow>> {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {LOG_COLUMNS} FROM webhook_logs WHERE tenant_id = $1 AND hook_kind = $2 \
             AND hook_id = $3 AND id = $4"
            )))
            .bind(kind.name())
            .bind(hook_id)
            .bind(id)
            .fetch_optional(self.reader())
            .await?)
    }

    // ---- system hooks ---------------------------------------------------------

    pub async fn system_hooks(&self) -> crate::Result<Vec<SystemHookRow>> {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {SYSTEM_HOOK_COLUMNS} FROM system_hooks WHERE tenant_id = $1 ORDER BY id"
            )))
            .fetch_all(self.reader())
            .await?)
    }

    /// A window of the system hooks, and their count up to `cap`.
    pub async fn list_system_hooks(&self, window: &Window) -> crate::Result<Vec<SystemHookRow>> {
        let tenant_id = self.tenant_id();
        let scope = move |sql: &mut Sql| {
            sql.push(" WHERE tenant_id = ").bind(tenant_id);
        };
        self.page(SYSTEM_HOOK_COLUMNS, "system_hooks", scope, window, "")
            .await
    }

    pub async fn count_system_hooks(&self, cap: i64) -> crate::Result<i64> {
        let tenant_id = self.tenant_id();
        let scope = move |sql: &mut Sql| {
            sql.push(" WHERE tenant_id = ").bind(tenant_id);
        };
        self.count_up_to("system_hooks", scope, cap).await
    }

    pub async fn system_hook(&self, id: i64) -> crate::Result<Option<SystemHookRow>> {
        self.find_by_id("system_hooks", SYSTEM_HOOK_COLUMNS, id)
            .await
    }

    pub async fn insert_system_hook(&self, hook: &SystemHookRow) -> crate::Result<SystemHookRow> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let id = next_ids(&mut *tx, tenant_id, "system_hooks", 1).await?;
        let now = now_ms();
        let mut sql = Sql::new(
            "INSERT INTO system_hooks (tenant_id, id, url, token, formatter, instance_url, uuid, \
             created_at, updated_at",
        );
        for (name, _) in &hook.flags {
            sql.push(", ").push(name);
        }
        sql.push(") VALUES (")
            .bind(tenant_id)
            .push(", ")
            .bind(id)
            .push(", ")
            .bind(&hook.url)
            .push(", ")
            .bind(hook.token.clone())
            .push(", ")
            .bind(&hook.formatter)
            .push(", ")
            .bind(&hook.instance_url)
            .push(", ")
            .bind(&hook.uuid)
            .push(", ")
            .bind(now)
            .push(", ")
            .bind(now);
        for (_, on) in &hook.flags {
            sql.push(", ").bind(*on);
        }
        sql.push(&format!(") RETURNING {SYSTEM_HOOK_COLUMNS}"));
        let row = sql.query_as().fetch_one(&mut *tx).await?;
        tx.commit().await?;
        Ok(row)
    }

    pub async fn update_system_hook(
        &self,
        hook: &SystemHookRow,
    ) -> crate::Result<Option<SystemHookRow>> {
        let mut sql = Sql::new("UPDATE system_hooks SET updated_at = ");
        sql.bind(now_ms())
            .push(", url = ")
            .bind(&hook.url)
            .push(", token = ")
            .bind(hook.token.clone())
            .push(", formatter = ")
            .bind(&hook.formatter)
            .push(", instance_url = ")
            .bind(&hook.instance_url)
            .push(", uuid = ")
            .bind(&hook.uuid);
        for (name, on) in &hook.flags {
            sql.push(&format!(", {name} = ")).bind(*on);
        }
        sql.push(" WHERE tenant_id = ")
            .bind(self.tenant_id())
            .push(" AND id = ")
            .bind(hook.id)
            .push(&format!(" RETURNING {SYSTEM_HOOK_COLUMNS}"));
        Ok(sql.query_as().fetch_optional(self.writer()).await?)
    }

    /// Deletes a system hook with its queued deliveries and its log.
    pub async fn delete_system_hook(&self, id: i64) -> crate::Result<bool> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        for table in ["webhook_deliveries", "webhook_logs"] {
            sqlx::query(AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE tenant_id = $1 AND hook_kind = 'system' AND hook_id = $2"
            )))
            .bind(tenant_id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        let done = sqlx::query("DELETE FROM system_hooks WHERE tenant_id = $1 AND id = $2")
            .bind(tenant_id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    /// Deletes a project hook's queued deliveries and log (the hook row itself goes through
    /// `delete_hook`; a project's deletion cascades to its hooks only).
    pub async fn forget_project_hook(&self, id: i64) -> crate::Result<()> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        for table in ["webhook_deliveries", "webhook_logs"] {
            sqlx::query(AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE tenant_id = $1 AND hook_kind = 'project' AND hook_id = $2"
            )))
            .bind(tenant_id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        Ok(tx.commit().await?)
    }
}

const SYSTEM_HOOK_COLUMNS: &str = "id, url, token, formatter, instance_url, uuid, created_at, \
     push_events, tag_push_events, merge_requests_events, repository_update_events, \
     enable_ssl_verification";

impl sqlx::FromRow<'_, sqlx::any::AnyRow> for SystemHookRow {
    fn from_row(row: &sqlx::any::AnyRow) -> sqlx::Result<Self> {
        use sqlx::Row;
        Ok(SystemHookRow {
            id: row.try_get("id")?,
            url: row.try_get("url")?,
            token: row.try_get("token")?,
            flags: crate::model::hooks::SYSTEM_HOOK_FLAGS
                .iter()
                .map(|(name, _)| Ok((*name, row.try_get::<i64, _>(*name)? != 0)))
                .collect::<sqlx::Result<_>>()?,
            formatter: row.try_get("formatter")?,
            instance_url: row.try_get("instance_url")?,
            uuid: row.try_get("uuid")?,
            created_at: row.try_get("created_at")?,
        })
    }
}

async fn insert_deliveries(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    deliveries: &[NewDelivery],
    now: i64,
) -> crate::Result<()> {
    // Bounded statements: SQLite allows 32,766 parameters, 12 per row.
    for chunk in deliveries.chunks(500) {
        let first = next_ids(
            &mut **tx,
            tenant_id,
            "webhook_deliveries",
            chunk.len() as i64,
        )
        .await?;
        let mut sql = Sql::new(
            "INSERT INTO webhook_deliveries (tenant_id, id, hook_kind, hook_id, event_id, \
             trigger_name, event_name, payload, event_uuid, idempotency_key, next_attempt_at, \
             created_at, updated_at) VALUES ",
        );
        for (n, d) in chunk.iter().enumerate() {
            sql.push_row(
                n == 0,
                [
                    Arg::from(tenant_id),
                    Arg::from(first + n as i64),
                    Arg::from(d.hook_kind.name()),
                    Arg::from(d.hook_id),
                    Arg::from(d.event_id),
                    Arg::from(d.trigger.as_str()),
                    Arg::from(d.event_name.as_str()),
                    Arg::from(d.payload.as_str()),
                    Arg::from(d.event_uuid.as_str()),
                    Arg::from(d.idempotency_key.as_str()),
                    Arg::from(now),
                    Arg::from(now),
                    Arg::from(now),
                ],
            );
        }
        sql.query().execute(&mut **tx).await?;
    }
    Ok(())
}

async fn insert_log(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    log: &LogRow,
) -> crate::Result<()> {
    let id = next_ids(&mut **tx, tenant_id, "webhook_logs", 1).await?;
    sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO webhook_logs (tenant_id, {LOG_COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)"
    )))
    .bind(tenant_id)
    .bind(id)
    .bind(&log.hook_kind)
    .bind(log.hook_id)
    .bind(&log.trigger_name)
    .bind(&log.url)
    .bind(&log.request_headers)
    .bind(&log.request_data)
    .bind(&log.response_headers)
    .bind(&log.response_body)
    .bind(&log.response_status)
    .bind(log.execution_duration_us)
    .bind(log.internal_error_message.clone())
    .bind(&log.idempotency_key)
    .bind(&log.event_name)
    .bind(&log.payload)
    .bind(log.created_at)
    .execute(&mut **tx)
    .await?;
    // Keep the newest entries of this hook only.
    sqlx::query(
        "DELETE FROM webhook_logs WHERE tenant_id = $1 AND hook_kind = $2 AND hook_id = $3 \
         AND id < (SELECT id FROM webhook_logs WHERE tenant_id = $1 AND hook_kind = $2 \
         AND hook_id = $3 ORDER BY id DESC LIMIT 1 OFFSET $4)",
    )
    .bind(tenant_id)
    .bind(&log.hook_kind)
    .bind(log.hook_id)
    .bind(LOG_ENTRIES_KEPT - 1)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
