-- Soft-deleted issues (`DELETE /projects/:id/issues/:issue_iid`): the row stays, marked with
-- when and by whom, and every read leaves it out. Its iid stays taken (`issues_iid_unique`
-- still covers it), so a deleted issue's number is never given out again.
ALTER TABLE issues ADD COLUMN deleted_at BIGINT;
ALTER TABLE issues ADD COLUMN deleted_by_id BIGINT;

-- The list indexes hold live issues only, so a list's capped count stays a walk over one
-- index with no row lookups (queries say `deleted_at IS NULL`, which selects these indexes).
DROP INDEX issues_project_created;
DROP INDEX issues_project_state_created;
DROP INDEX issues_project_updated;
DROP INDEX issues_author;
CREATE INDEX issues_project_created ON issues (tenant_id, project_id, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX issues_project_state_created ON issues (tenant_id, project_id, state, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX issues_project_updated ON issues (tenant_id, project_id, updated_at, id) WHERE deleted_at IS NULL;
CREATE INDEX issues_author ON issues (tenant_id, author_id, created_at, id) WHERE deleted_at IS NULL;
