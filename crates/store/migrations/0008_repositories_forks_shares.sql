-- Repositories, forks and group shares of projects (portable SQL, as in 0001).

-- The project this one was forked from (NULL when none; cleared when the source is deleted).
ALTER TABLE projects ADD COLUMN forked_from_id BIGINT;
-- Commits on the default branch, refreshed whenever the server changes the repository.
ALTER TABLE projects ADD COLUMN commit_count BIGINT NOT NULL DEFAULT 0;
-- Language shares of the default branch as a JSON object {"Rust": 60.5, ...}, refreshed with
-- the statistics; `with_programming_language` filters on it.
ALTER TABLE projects ADD COLUMN repository_languages TEXT NOT NULL DEFAULT '{}';
CREATE INDEX projects_forked_from ON projects (tenant_id, forked_from_id, id);

-- A project shared with a group: the group's members get up to `group_access` in the project.
CREATE TABLE project_group_links (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    group_id BIGINT NOT NULL,
    group_access BIGINT NOT NULL,
    -- 'YYYY-MM-DD'; the share ends at the start of that day
    expires_at TEXT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, project_id, group_id),
    FOREIGN KEY (tenant_id, project_id) REFERENCES projects (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, group_id) REFERENCES namespaces (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX project_group_links_group ON project_group_links (tenant_id, group_id, project_id);
