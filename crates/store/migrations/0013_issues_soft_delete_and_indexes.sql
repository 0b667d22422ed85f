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

-- The search index (`search=`) is engine-specific (SQLite FTS5, PostgreSQL pg_trgm), so it is
-- not here: `store::issue_search` sets it up after the migrations.

-- A label filter walks one index in the list's order: `issue_labels` carries copies of its
-- issue's project, creation time and deletion (kept in step by the store on create, update of
-- `created_at`, delete), so `labels=` pages read `per_page` entries of `issue_labels_walk`
-- newest first, and its capped count is a covering walk of the label's entries.
ALTER TABLE issue_labels ADD COLUMN project_id BIGINT;
ALTER TABLE issue_labels ADD COLUMN created_at BIGINT;
ALTER TABLE issue_labels ADD COLUMN deleted_at BIGINT;
UPDATE issue_labels SET
    project_id = (SELECT i.project_id FROM issues i WHERE i.tenant_id = issue_labels.tenant_id AND i.id = issue_labels.issue_id),
    created_at = (SELECT i.created_at FROM issues i WHERE i.tenant_id = issue_labels.tenant_id AND i.id = issue_labels.issue_id);
CREATE INDEX issue_labels_walk ON issue_labels (tenant_id, label_id, project_id, created_at, issue_id) WHERE deleted_at IS NULL;
