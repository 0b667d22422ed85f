-- Webhook and system hook delivery (host/src/webhooks): what each hook is sent, when, and what
-- came back. Portable SQL as in 0001 (BIGINT/TEXT, booleans as BIGINT 0/1, times in ms).

-- A project hook's delivery state and Trellis's additions. `recent_failures` counts
-- consecutive failed requests (4 disable the hook for a while, 40 for good, as GitLab does),
-- `backoff_count` how often it was disabled in a row, `disabled_until` until when.
-- `instance_url` is the tenant's URL as the request that saved the hook saw it (payload links
-- and X-Gitlab-Instance). `uuid` is X-Gitlab-Webhook-UUID. `formatter` names the formatter
-- every delivery goes through (docs/plugins.md).
ALTER TABLE project_hooks ADD COLUMN branch_filter_strategy TEXT NOT NULL DEFAULT 'wildcard';
ALTER TABLE project_hooks ADD COLUMN formatter TEXT NOT NULL DEFAULT 'gitlab';
ALTER TABLE project_hooks ADD COLUMN instance_url TEXT NOT NULL DEFAULT '';
ALTER TABLE project_hooks ADD COLUMN uuid TEXT NOT NULL DEFAULT '';
ALTER TABLE project_hooks ADD COLUMN recent_failures BIGINT NOT NULL DEFAULT 0;
ALTER TABLE project_hooks ADD COLUMN backoff_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE project_hooks ADD COLUMN disabled_until BIGINT;

-- The instance's system hooks (administrators). GitLab never disables them automatically.
CREATE TABLE system_hooks (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    url TEXT NOT NULL,
    token TEXT,
    push_events BIGINT NOT NULL DEFAULT 0,
    tag_push_events BIGINT NOT NULL DEFAULT 0,
    merge_requests_events BIGINT NOT NULL DEFAULT 0,
    repository_update_events BIGINT NOT NULL DEFAULT 1,
    enable_ssl_verification BIGINT NOT NULL DEFAULT 1,
    formatter TEXT NOT NULL DEFAULT 'gitlab',
    instance_url TEXT NOT NULL DEFAULT '',
    uuid TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

-- How far each tenant's outbox has been turned into deliveries. The dispatcher inserts the
-- deliveries of a batch of events and moves this cursor in one transaction.
CREATE TABLE webhook_cursors (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    last_event_id BIGINT NOT NULL,
    PRIMARY KEY (tenant_id)
);

-- The delivery queue: one row per (event, hook) still to be sent; a row leaves the queue when
-- it is delivered, skipped by its formatter or given up (the log keeps what happened).
-- `hook_kind` is 'project' or 'system'. `payload` is the standard (GitLab) payload, built
-- once when the event is dispatched, so every attempt sends the same content with the same
-- `idempotency_key`. A sender claims a row by setting `lease_until`; a crash leaves the lease
-- to expire and the row is sent again. Each hook's rows go out one at a time in id order.
CREATE TABLE webhook_deliveries (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    hook_kind TEXT NOT NULL,
    hook_id BIGINT NOT NULL,
    event_id BIGINT,
    trigger_name TEXT NOT NULL,
    event_name TEXT NOT NULL,
    payload TEXT NOT NULL,
    event_uuid TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    lease_until BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at);
CREATE INDEX webhook_deliveries_hook ON webhook_deliveries (tenant_id, hook_kind, hook_id, id);

-- The delivery log: one row per request made (or refused), the newest 100 per hook kept,
-- request and response bodies capped (host/src/webhooks/log.rs).
CREATE TABLE webhook_logs (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    hook_kind TEXT NOT NULL,
    hook_id BIGINT NOT NULL,
    delivery_id BIGINT,
    trigger_name TEXT NOT NULL,
    url TEXT NOT NULL,
    request_headers TEXT NOT NULL,
    request_data TEXT NOT NULL,
    response_headers TEXT NOT NULL,
    response_body TEXT NOT NULL,
    response_status TEXT NOT NULL,
    execution_duration_us BIGINT NOT NULL,
    internal_error_message TEXT,
    idempotency_key TEXT NOT NULL,
    event_name TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX webhook_logs_hook ON webhook_logs (tenant_id, hook_kind, hook_id, id);
