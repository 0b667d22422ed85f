-- What users do to a merge request for themselves, as on issues (0009, 0014): award emoji on
-- it (`note_id` 0) or on its notes, subscriptions (an explicit choice; without a row,
-- participants are subscribed), to-do items, and time logs (seconds; negative entries
-- subtract). Portable SQL, as in 0001.

CREATE TABLE merge_request_award_emoji (
    tenant_id BIGINT NOT NULL,
    id BIGINT NOT NULL,
    merge_request_id BIGINT NOT NULL,
    note_id BIGINT NOT NULL DEFAULT 0,
    user_id BIGINT NOT NULL,
    name TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, merge_request_id) REFERENCES merge_requests (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX merge_request_award_emoji_name_unique ON merge_request_award_emoji (tenant_id, merge_request_id, note_id, user_id, name);
CREATE INDEX merge_request_award_emoji_user ON merge_request_award_emoji (tenant_id, user_id, name);

CREATE TABLE merge_request_subscriptions (
    tenant_id BIGINT NOT NULL,
    merge_request_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    subscribed BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, merge_request_id, user_id),
    FOREIGN KEY (tenant_id, merge_request_id) REFERENCES merge_requests (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE merge_request_todos (
    tenant_id BIGINT NOT NULL,
    id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    author_id BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    merge_request_id BIGINT NOT NULL,
    action_name TEXT NOT NULL,
    body TEXT NOT NULL,
    -- pending, done
    state TEXT NOT NULL DEFAULT 'pending',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, merge_request_id) REFERENCES merge_requests (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX merge_request_todos_user ON merge_request_todos (tenant_id, user_id, merge_request_id, state);

CREATE TABLE merge_request_timelogs (
    tenant_id BIGINT NOT NULL,
    id BIGINT NOT NULL,
    merge_request_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    time_spent BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, merge_request_id) REFERENCES merge_requests (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX merge_request_timelogs_mr ON merge_request_timelogs (tenant_id, merge_request_id);
