-- Protected tags (GitLab's `/projects/:id/protected_tags`): a tag name or wildcard pattern per
-- project, and the level allowed to create it (0: no one, 30: developers and maintainers, 40:
-- maintainers, 60: administrators). GitLab's other entries (users, groups, deploy keys) are
-- Premium features, so one level is all a tag has.
CREATE TABLE protected_tags (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    name TEXT NOT NULL,
    create_access_level BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, project_id) REFERENCES projects (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX protected_tags_name_unique ON protected_tags (tenant_id, project_id, name);
