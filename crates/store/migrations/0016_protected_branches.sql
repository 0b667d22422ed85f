-- Protected branches (GitLab's `/projects/:id/protected_branches`): a name or wildcard pattern
-- per project, whether force pushes are allowed, and who may push, merge and unprotect. The
-- access levels are rows of their own, as GitLab's `push_access_levels` (each with its id), so
-- the API can list, add and remove them.
CREATE TABLE protected_branches (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    name TEXT NOT NULL,
    allow_force_push BIGINT NOT NULL DEFAULT 0,
    code_owner_approval_required BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, project_id) REFERENCES projects (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX protected_branches_name_unique ON protected_branches (tenant_id, project_id, name);

-- `kind` is `push`, `merge` or `unprotect`; `access_level` GitLab's number (0: no one,
-- 30: developers and maintainers, 40: maintainers, 60: administrators).
CREATE TABLE protected_branch_access_levels (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    protected_branch_id BIGINT NOT NULL,
    kind TEXT NOT NULL,
    access_level BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, protected_branch_id) REFERENCES protected_branches (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX protected_branch_access_levels_branch ON protected_branch_access_levels (tenant_id, protected_branch_id);
