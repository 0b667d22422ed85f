-- Rate-limit counters shared by every process on one PostgreSQL database (portable SQL, as in
-- 0001). One row per (tenant, rule and subject, fixed window); a request adds one with a single
-- INSERT ... ON CONFLICT DO UPDATE on the primary key. Processes on SQLite count in memory and
-- never touch this table. `expires_at` (Unix seconds: the window's end) lets a background task
-- delete finished windows. No foreign key to tenants: the insert on every limited request
-- should not pay for a referential check, and stale rows expire on their own.

CREATE TABLE rate_limit_counters (
    tenant_id BIGINT NOT NULL,
    -- '<rule>:<period>:<subject>', e.g. 'throttle_authenticated_api:60:user:42'
    key TEXT NOT NULL,
    -- Unix seconds, a multiple of the period
    window_start BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    count BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, key, window_start)
);
CREATE INDEX rate_limit_counters_expires ON rate_limit_counters (expires_at);
