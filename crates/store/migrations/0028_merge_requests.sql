-- Merge requests with their labels, assignees, reviewers, approvals and diff versions
-- (portable SQL, as in 0001: BIGINT/TEXT only, booleans as BIGINT 0/1, timestamps in
-- milliseconds).
--
-- Numbers (`iid`) come from the per-project counter row `id_sequences`
-- ('merge_request_iid:<project id>'), as issues' do. An MR lives in its target project
-- (`project_id`); `source_project_id` is the fork its branch is in, or the same project.

CREATE TABLE merge_requests (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    iid BIGINT NOT NULL,
    source_project_id BIGINT NOT NULL,
    source_branch TEXT NOT NULL,
    target_branch TEXT NOT NULL,
    author_id BIGINT NOT NULL,
    title TEXT NOT NULL,
    description TEXT,
    -- opened, closed, merged, locked
    state TEXT NOT NULL DEFAULT 'opened',
    -- kept from the title's `Draft:` prefix by the store, so lists filter on a column
    draft BIGINT NOT NULL DEFAULT 0,
    milestone_id BIGINT,
    discussion_locked BIGINT NOT NULL DEFAULT 0,
    squash BIGINT NOT NULL DEFAULT 0,
    force_remove_source_branch BIGINT NOT NULL DEFAULT 0,
    -- What the merge was asked (`should_remove_source_branch`); NULL until merged.
    should_remove_source_branch BIGINT,
    -- The diff of the latest version: the source head, the target head it was taken against
    -- (`start_sha`) and their merge base (`base_sha`). NULL until the first version.
    head_sha TEXT,
    start_sha TEXT,
    base_sha TEXT,
    -- unchecked, checking, can_be_merged, cannot_be_merged; `checked_heads` is the pair of
    -- heads ('<source>:<target>') the last check saw, so a check runs once per pair.
    merge_status TEXT NOT NULL DEFAULT 'unchecked',
    checked_heads TEXT,
    -- The target had commits the source lacks at that check: a fast-forward or semi-linear
    -- merge needs a rebase first.
    target_diverged BIGINT NOT NULL DEFAULT 0,
    merge_commit_sha TEXT,
    squash_commit_sha TEXT,
    merged_by_id BIGINT,
    merged_at BIGINT,
    closed_by_id BIGINT,
    closed_at BIGINT,
    rebase_in_progress BIGINT NOT NULL DEFAULT 0,
    merge_error TEXT,
    time_estimate BIGINT NOT NULL DEFAULT 0,
    total_time_spent BIGINT NOT NULL DEFAULT 0,
    upvotes BIGINT NOT NULL DEFAULT 0,
    downvotes BIGINT NOT NULL DEFAULT 0,
    user_notes_count BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, project_id) REFERENCES projects (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX merge_requests_iid_unique ON merge_requests (tenant_id, project_id, iid);
CREATE INDEX merge_requests_project_created ON merge_requests (tenant_id, project_id, created_at, id);
CREATE INDEX merge_requests_project_state_created ON merge_requests (tenant_id, project_id, state, created_at, id);
CREATE INDEX merge_requests_project_updated ON merge_requests (tenant_id, project_id, updated_at, id);
-- The MRs a push to a branch refreshes, and the "one open MR per pair of branches" rule.
CREATE INDEX merge_requests_source ON merge_requests (tenant_id, source_project_id, source_branch, state);
CREATE INDEX merge_requests_target ON merge_requests (tenant_id, project_id, target_branch, state);
CREATE INDEX merge_requests_author ON merge_requests (tenant_id, author_id, created_at, id);

CREATE TABLE merge_request_assignees (
    tenant_id BIGINT NOT NULL,
    merge_request_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    position BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, merge_request_id, user_id),
    FOREIGN KEY (tenant_id, merge_request_id) REFERENCES merge_requests (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX merge_request_assignees_user ON merge_request_assignees (tenant_id, user_id, merge_request_id);

CREATE TABLE merge_request_reviewers (
    tenant_id BIGINT NOT NULL,
    merge_request_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    position BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, merge_request_id, user_id),
    FOREIGN KEY (tenant_id, merge_request_id) REFERENCES merge_requests (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX merge_request_reviewers_user ON merge_request_reviewers (tenant_id, user_id, merge_request_id);

CREATE TABLE merge_request_labels (
    tenant_id BIGINT NOT NULL,
    merge_request_id BIGINT NOT NULL,
    label_id BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, merge_request_id, label_id),
    FOREIGN KEY (tenant_id, merge_request_id) REFERENCES merge_requests (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, label_id) REFERENCES labels (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX merge_request_labels_label ON merge_request_labels (tenant_id, label_id, merge_request_id);

CREATE TABLE merge_request_approvals (
    tenant_id BIGINT NOT NULL,
    merge_request_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, merge_request_id, user_id),
    FOREIGN KEY (tenant_id, merge_request_id) REFERENCES merge_requests (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);

-- One row per push that changed the MR's source head (GitLab's `merge_request_diffs`):
-- `GET .../versions`.
CREATE TABLE merge_request_versions (
    tenant_id BIGINT NOT NULL,
    id BIGINT NOT NULL,
    merge_request_id BIGINT NOT NULL,
    head_sha TEXT NOT NULL,
    start_sha TEXT NOT NULL,
    base_sha TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, merge_request_id) REFERENCES merge_requests (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX merge_request_versions_mr ON merge_request_versions (tenant_id, merge_request_id, id);
