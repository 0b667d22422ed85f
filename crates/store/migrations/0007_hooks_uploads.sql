-- Project hooks, push rules and uploads (portable SQL, as in 0001: BIGINT/TEXT only,
-- booleans as BIGINT 0/1).

-- A project's webhooks. `token` is the receiver's secret, encrypted with the instance key and
-- never shown. Delivery is not implemented yet: only the configuration is kept.
CREATE TABLE project_hooks (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    url TEXT NOT NULL,
    token TEXT,
    push_events BIGINT NOT NULL DEFAULT 1,
    push_events_branch_filter TEXT,
    issues_events BIGINT NOT NULL DEFAULT 0,
    confidential_issues_events BIGINT NOT NULL DEFAULT 0,
    merge_requests_events BIGINT NOT NULL DEFAULT 0,
    tag_push_events BIGINT NOT NULL DEFAULT 0,
    note_events BIGINT NOT NULL DEFAULT 0,
    confidential_note_events BIGINT NOT NULL DEFAULT 0,
    job_events BIGINT NOT NULL DEFAULT 0,
    pipeline_events BIGINT NOT NULL DEFAULT 0,
    wiki_page_events BIGINT NOT NULL DEFAULT 0,
    deployment_events BIGINT NOT NULL DEFAULT 0,
    releases_events BIGINT NOT NULL DEFAULT 0,
    enable_ssl_verification BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, project_id) REFERENCES projects (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX project_hooks_project ON project_hooks (tenant_id, project_id, id);

-- At most one push rule per project. Rules are stored, not yet enforced.
CREATE TABLE push_rules (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    commit_message_regex TEXT,
    commit_message_negative_regex TEXT,
    branch_name_regex TEXT,
    author_email_regex TEXT,
    file_name_regex TEXT,
    deny_delete_tag BIGINT NOT NULL DEFAULT 0,
    member_check BIGINT NOT NULL DEFAULT 0,
    prevent_secrets BIGINT NOT NULL DEFAULT 0,
    commit_committer_check BIGINT NOT NULL DEFAULT 0,
    reject_unsigned_commits BIGINT NOT NULL DEFAULT 0,
    -- megabytes; 0 means no limit
    max_file_size BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, project_id) REFERENCES projects (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX push_rules_project_id_unique ON push_rules (tenant_id, project_id);

-- Files attached to a project (markdown uploads), stored under
-- DATA_DIR/uploads/<tenant>/project/<project id>/<secret>/<filename>.
CREATE TABLE uploads (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    uploaded_by_id BIGINT,
    secret TEXT NOT NULL,
    filename TEXT NOT NULL,
    size BIGINT NOT NULL,
    content_type TEXT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, project_id) REFERENCES projects (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX uploads_secret_unique ON uploads (tenant_id, project_id, secret, filename);
