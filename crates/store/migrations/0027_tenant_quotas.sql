-- Portable SQL: each statement runs unchanged on SQLite and PostgreSQL.
-- The operator's quotas on a tenant (`trellis tenant quota`); NULL is no limit.
ALTER TABLE tenants ADD COLUMN max_storage_bytes BIGINT;
ALTER TABLE tenants ADD COLUMN max_projects BIGINT;
ALTER TABLE tenants ADD COLUMN max_users BIGINT;
ALTER TABLE tenants ADD COLUMN max_requests_per_second BIGINT;
ALTER TABLE tenants ADD COLUMN max_plugin_instances BIGINT;
