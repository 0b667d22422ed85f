-- GitLab's resource label events: who added or removed which label on an issue, and when
-- (`GET .../resource_label_events`). Labels are not notes in GitLab; their changes live here.
-- `label_id` is kept when the label is deleted later (the event then shows no label).
CREATE TABLE resource_label_events (
    tenant_id BIGINT NOT NULL,
    id BIGINT NOT NULL,
    issue_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    label_id BIGINT NOT NULL,
    action TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, issue_id) REFERENCES issues (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX resource_label_events_issue ON resource_label_events (tenant_id, issue_id, id);
