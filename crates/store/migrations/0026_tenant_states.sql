-- Portable SQL: each statement runs unchanged on SQLite and PostgreSQL.
-- A suspended tenant's requests are refused. A tenant whose deletion is scheduled is suspended
-- and purged once `delete_after` has passed; a purged tenant keeps its row (its host released,
-- `deleted_at` set) so that its id, which names its directories and cache entries, is never
-- given to another tenant.
ALTER TABLE tenants ADD COLUMN suspended_at BIGINT;
ALTER TABLE tenants ADD COLUMN delete_after BIGINT;
ALTER TABLE tenants ADD COLUMN deleted_at BIGINT;
