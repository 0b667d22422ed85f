-- Namespaces (personal and groups), members, projects and stars (portable SQL, as in 0001).

-- A user's personal namespace (kind 'user', owner_id set, path = username) or a group
-- (kind 'group', parent_id for subgroups). `traversal` is '/<root id>/.../<own id>/': the
-- descendants-or-self of a group are the rows whose traversal starts with the group's.
CREATE TABLE namespaces (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    kind TEXT NOT NULL,
    owner_id BIGINT,
    parent_id BIGINT,
    -- parent_id, or 0 for top-level namespaces (NULLs would not collide in the unique index)
    parent_key BIGINT NOT NULL,
    name TEXT NOT NULL,
    path TEXT NOT NULL,
    path_lower TEXT NOT NULL,
    full_path TEXT NOT NULL,
    full_path_lower TEXT NOT NULL,
    full_name TEXT NOT NULL,
    traversal TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    -- private, internal, public
    visibility TEXT NOT NULL DEFAULT 'private',
    visibility_level BIGINT NOT NULL DEFAULT 0,
    avatar_path TEXT,
    -- the long tail of group settings, as a JSON object
    settings TEXT NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, owner_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX namespaces_path_lower_unique ON namespaces (tenant_id, parent_key, path_lower);
CREATE UNIQUE INDEX namespaces_owner_id_unique ON namespaces (tenant_id, owner_id);
CREATE INDEX namespaces_full_path ON namespaces (tenant_id, full_path_lower);
CREATE INDEX namespaces_traversal ON namespaces (tenant_id, traversal);
CREATE INDEX namespaces_parent ON namespaces (tenant_id, parent_key, id);

-- Backfill: users made before namespaces existed get their personal namespace now, with the
-- user's id as namespace id (the tenant's namespace sequence starts above them).
INSERT INTO namespaces (tenant_id, id, kind, owner_id, parent_key, name, path, path_lower, full_path,
    full_path_lower, full_name, traversal, created_at, updated_at)
SELECT tenant_id, id, 'user', id, 0, name, username, username_lower, username, username_lower, name,
    '/' || CAST(id AS TEXT) || '/', created_at, updated_at
FROM users;
INSERT INTO id_sequences (tenant_id, name, last_value)
SELECT tenant_id, 'namespaces', MAX(id) FROM users GROUP BY tenant_id;

-- Memberships of projects (source_type 'Project') and groups ('Namespace').
CREATE TABLE members (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    source_type TEXT NOT NULL,
    source_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    access_level BIGINT NOT NULL,
    created_by_id BIGINT,
    -- 'YYYY-MM-DD'; the membership ends at the start of that day
    expires_at TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, source_type, source_id, user_id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX members_user ON members (tenant_id, user_id, source_type);

CREATE TABLE projects (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    namespace_id BIGINT NOT NULL,
    creator_id BIGINT,
    name TEXT NOT NULL,
    name_lower TEXT NOT NULL,
    path TEXT NOT NULL,
    path_lower TEXT NOT NULL,
    description TEXT,
    default_branch TEXT,
    visibility TEXT NOT NULL,
    -- 0 private, 10 internal, 20 public (GitLab's levels), for range filters
    visibility_level BIGINT NOT NULL,
    archived BIGINT NOT NULL DEFAULT 0,
    star_count BIGINT NOT NULL DEFAULT 0,
    forks_count BIGINT NOT NULL DEFAULT 0,
    open_issues_count BIGINT NOT NULL DEFAULT 0,
    -- JSON array of strings
    tag_list TEXT NOT NULL DEFAULT '[]',
    avatar_path TEXT,
    import_url TEXT,
    import_status TEXT NOT NULL DEFAULT 'none',
    import_error TEXT,
    -- disabled, private, enabled: the two feature levels lists filter on
    issues_access_level TEXT NOT NULL DEFAULT 'enabled',
    merge_requests_access_level TEXT NOT NULL DEFAULT 'enabled',
    repository_size BIGINT NOT NULL DEFAULT 0,
    storage_size BIGINT NOT NULL DEFAULT 0,
    wiki_size BIGINT NOT NULL DEFAULT 0,
    packages_size BIGINT NOT NULL DEFAULT 0,
    -- the long tail of feature flags, access levels and settings, as a JSON object
    settings TEXT NOT NULL DEFAULT '{}',
    marked_for_deletion_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    last_activity_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, namespace_id) REFERENCES namespaces (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX projects_path_lower_unique ON projects (tenant_id, namespace_id, path_lower);
CREATE UNIQUE INDEX projects_name_unique ON projects (tenant_id, namespace_id, name);
CREATE INDEX projects_visibility ON projects (tenant_id, visibility_level, id);
CREATE INDEX projects_created ON projects (tenant_id, created_at);
CREATE INDEX projects_updated ON projects (tenant_id, updated_at);
CREATE INDEX projects_last_activity ON projects (tenant_id, last_activity_at);
CREATE INDEX projects_name_lower ON projects (tenant_id, name_lower);
CREATE INDEX projects_path ON projects (tenant_id, path_lower);
CREATE INDEX projects_archived ON projects (tenant_id, archived, id);

CREATE TABLE project_stars (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    project_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, project_id, user_id),
    FOREIGN KEY (tenant_id, project_id) REFERENCES projects (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX project_stars_user ON project_stars (tenant_id, user_id, project_id);

CREATE TABLE project_custom_attributes (
    tenant_id BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (tenant_id, project_id, key),
    FOREIGN KEY (tenant_id, project_id) REFERENCES projects (tenant_id, id) ON DELETE CASCADE
);
