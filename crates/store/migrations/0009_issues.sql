-- Issues with their labels, milestones, assignees, notes, award emoji, subscriptions, todos,
-- time logs and user agent details (portable SQL, as in 0001: BIGINT/TEXT only, booleans as
-- BIGINT 0/1, timestamps in milliseconds, dates as 'YYYY-MM-DD').
--
-- Issue numbers (`iid`) come from the per-project counter row `id_sequences` ('issue_iid:<project
-- id>'), taken in the transaction that inserts the issue: the row lock (PostgreSQL) or the single
-- writer (SQLite) makes them gap-free, and `issues_iid_unique` makes a duplicate impossible.

CREATE TABLE milestones (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    iid BIGINT NOT NULL,
    title TEXT NOT NULL,
    description TEXT,
    -- active, closed
    state TEXT NOT NULL DEFAULT 'active',
    due_date TEXT,
    start_date TEXT,
    closed_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, project_id) REFERENCES projects (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX milestones_title_unique ON milestones (tenant_id, project_id, title);
CREATE UNIQUE INDEX milestones_iid_unique ON milestones (tenant_id, project_id, iid);

CREATE TABLE labels (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    name TEXT NOT NULL,
    -- matching label names is case-insensitive
    name_lower TEXT NOT NULL,
    color TEXT NOT NULL,
    description TEXT,
    priority BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, project_id) REFERENCES projects (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX labels_name_lower_unique ON labels (tenant_id, project_id, name_lower);
CREATE INDEX labels_name ON labels (tenant_id, name_lower);

CREATE TABLE issues (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    iid BIGINT NOT NULL,
    author_id BIGINT NOT NULL,
    title TEXT NOT NULL,
    description TEXT,
    -- opened, closed
    state TEXT NOT NULL DEFAULT 'opened',
    confidential BIGINT NOT NULL DEFAULT 0,
    discussion_locked BIGINT NOT NULL DEFAULT 0,
    milestone_id BIGINT,
    due_date TEXT,
    -- seconds
    time_estimate BIGINT NOT NULL DEFAULT 0,
    total_time_spent BIGINT NOT NULL DEFAULT 0,
    -- kept with the award emoji and notes that change them, so lists need no aggregation
    upvotes BIGINT NOT NULL DEFAULT 0,
    downvotes BIGINT NOT NULL DEFAULT 0,
    user_notes_count BIGINT NOT NULL DEFAULT 0,
    closed_at BIGINT,
    closed_by_id BIGINT,
    moved_to_id BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, project_id) REFERENCES projects (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX issues_iid_unique ON issues (tenant_id, project_id, iid);
-- The project list's default page (newest first), with and without a state filter.
CREATE INDEX issues_project_created ON issues (tenant_id, project_id, created_at, id);
CREATE INDEX issues_project_state_created ON issues (tenant_id, project_id, state, created_at, id);
CREATE INDEX issues_project_updated ON issues (tenant_id, project_id, updated_at, id);
-- The global list's default scope (created_by_me).
CREATE INDEX issues_author ON issues (tenant_id, author_id, created_at, id);
CREATE INDEX issues_milestone ON issues (tenant_id, milestone_id);

CREATE TABLE issue_assignees (
    tenant_id BIGINT NOT NULL,
    issue_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    position BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, issue_id, user_id),
    FOREIGN KEY (tenant_id, issue_id) REFERENCES issues (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX issue_assignees_user ON issue_assignees (tenant_id, user_id, issue_id);

CREATE TABLE issue_labels (
    tenant_id BIGINT NOT NULL,
    issue_id BIGINT NOT NULL,
    label_id BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, issue_id, label_id),
    FOREIGN KEY (tenant_id, issue_id) REFERENCES issues (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, label_id) REFERENCES labels (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX issue_labels_label ON issue_labels (tenant_id, label_id, issue_id);

CREATE TABLE issue_notes (
    tenant_id BIGINT NOT NULL,
    id BIGINT NOT NULL,
    issue_id BIGINT NOT NULL,
    author_id BIGINT NOT NULL,
    body TEXT NOT NULL,
    system BIGINT NOT NULL DEFAULT 0,
    internal BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, issue_id) REFERENCES issues (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX issue_notes_issue ON issue_notes (tenant_id, issue_id, created_at);

CREATE TABLE issue_award_emoji (
    tenant_id BIGINT NOT NULL,
    id BIGINT NOT NULL,
    issue_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    name TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, issue_id) REFERENCES issues (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX issue_award_emoji_name_unique ON issue_award_emoji (tenant_id, issue_id, user_id, name);
CREATE INDEX issue_award_emoji_user ON issue_award_emoji (tenant_id, user_id, name);

-- An explicit choice; without a row, participants (author, assignees, commenters) are subscribed.
CREATE TABLE issue_subscriptions (
    tenant_id BIGINT NOT NULL,
    issue_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    subscribed BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, issue_id, user_id),
    FOREIGN KEY (tenant_id, issue_id) REFERENCES issues (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE todos (
    tenant_id BIGINT NOT NULL,
    id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    author_id BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    issue_id BIGINT NOT NULL,
    action_name TEXT NOT NULL,
    body TEXT NOT NULL,
    -- pending, done
    state TEXT NOT NULL DEFAULT 'pending',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, issue_id) REFERENCES issues (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX todos_user_issue ON todos (tenant_id, user_id, issue_id, state);

CREATE TABLE issue_timelogs (
    tenant_id BIGINT NOT NULL,
    id BIGINT NOT NULL,
    issue_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    -- seconds; negative entries subtract
    time_spent BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, issue_id) REFERENCES issues (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX issue_timelogs_issue ON issue_timelogs (tenant_id, issue_id);

-- What the creating request looked like (for spam review): GET .../user_agent_detail.
CREATE TABLE issue_user_agent_details (
    tenant_id BIGINT NOT NULL,
    issue_id BIGINT NOT NULL,
    user_agent TEXT NOT NULL,
    ip_address TEXT NOT NULL,
    submitted BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, issue_id),
    FOREIGN KEY (tenant_id, issue_id) REFERENCES issues (tenant_id, id) ON DELETE CASCADE
);
