-- Notes on merge requests and the discussions they form (portable SQL, as in 0001). Every note
-- belongs to a discussion (`discussion_id`, 40 hex digits as GitLab's): a note made on its own
-- is an individual note, alone in its discussion. A thread's notes are resolvable, and resolved
-- together (`resolved_by_id`, `resolved_at`). A diff note keeps its `position` (GitLab's JSON:
-- base/start/head sha, old/new path and line).

CREATE TABLE merge_request_notes (
    tenant_id BIGINT NOT NULL,
    id BIGINT NOT NULL,
    merge_request_id BIGINT NOT NULL,
    author_id BIGINT NOT NULL,
    body TEXT NOT NULL,
    system BIGINT NOT NULL DEFAULT 0,
    internal BIGINT NOT NULL DEFAULT 0,
    discussion_id TEXT NOT NULL,
    individual_note BIGINT NOT NULL DEFAULT 1,
    -- NULL (a note), DiscussionNote, DiffNote
    note_type TEXT,
    position TEXT,
    resolvable BIGINT NOT NULL DEFAULT 0,
    resolved_by_id BIGINT,
    resolved_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, merge_request_id) REFERENCES merge_requests (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX merge_request_notes_mr ON merge_request_notes (tenant_id, merge_request_id, created_at, id);
CREATE INDEX merge_request_notes_discussion ON merge_request_notes (tenant_id, merge_request_id, discussion_id);
