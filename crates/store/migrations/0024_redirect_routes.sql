-- The old full paths of moved and renamed projects (GitLab's `redirect_routes`): the REST API
-- redirects reads at an old path to the project and refuses writes there, and git keeps
-- serving it. A path is released when a project or namespace takes it again.
CREATE TABLE redirect_routes (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    path_lower TEXT NOT NULL,
    project_id BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, path_lower),
    FOREIGN KEY (tenant_id, project_id) REFERENCES projects (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX redirect_routes_project ON redirect_routes (tenant_id, project_id);
