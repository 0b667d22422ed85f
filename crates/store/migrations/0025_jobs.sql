-- The job queue: background work that must outlive the process that asked for it (imports and
-- mirror pulls, fork copies, housekeeping). Every process runs workers that claim due rows by
-- setting `lease_until` and `locked_by` (PostgreSQL: FOR UPDATE SKIP LOCKED, so processes never
-- claim the same row); a worker renews its lease while the job runs, so a row whose lease ran
-- out belongs to a process that died and is claimed again by any process. A failed attempt
-- moves `run_at` later (exponential backoff) until `max_attempts`, then the row is 'failed'.
-- Finished rows are 'done', kept a week for the record, their `args` cleared (an import's
-- URL may hold credentials). `unique_key` makes enqueueing
-- idempotent: at most one queued job per tenant, kind and key.
CREATE TABLE jobs (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    kind TEXT NOT NULL,
    unique_key TEXT NOT NULL,
    args TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'queued',
    attempts BIGINT NOT NULL DEFAULT 0,
    max_attempts BIGINT NOT NULL,
    run_at BIGINT NOT NULL,
    lease_until BIGINT,
    locked_by TEXT,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    finished_at BIGINT,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX jobs_due ON jobs (state, run_at);
CREATE UNIQUE INDEX jobs_queued_once ON jobs (tenant_id, kind, unique_key) WHERE state = 'queued';
